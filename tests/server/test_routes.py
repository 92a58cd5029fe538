"""Probes, info, metrics, the OpenAPI spec, /v1/advantages, and the archive commit protocol."""

from __future__ import annotations

import numpy as np
import pytest

from gymkit.advantages import gdpo_advantages

from .conftest import running_server
from .corpus import INVALID, VALID

ROUTES = {"/health", "/ready", "/v1/info", "/metrics", "/v1/score", "/v1/score_group",
          "/v1/advantages", "/v1/archive", "/v1/archive/commit", "/get_reward", "/v1/rm", "/verify",
          "/seed_session", "/aggregate_metrics"}


@pytest.fixture(scope="module")
def srv(env):
    with running_server(env, workers=2) as s:
        yield s


def test_probes_info_and_openapi(srv, env) -> None:
    """Assertion: health/ready up; info carries fingerprints, the whole channel table (R1-R13), limits;
    the spec lists every route."""
    with srv.client() as c:
        assert c.get("/health").json() == {"status": "ok"}
        ready = c.get("/ready").json()
        info = c.get("/v1/info").json()
        spec = c.get("/openapi.json").json()
    assert ready["ready"] and ready["workers_alive"] == 2
    assert info["env_fingerprint"] == env.fingerprint
    assert info["data_fingerprint"] == env.data_fingerprint
    assert len(info["channels"]) == 13 and info["channels"][-1]["name"] == "brief_compliance"
    assert [r["name"] for r in info["channels"] if r["active"]] == list(env.channels)
    assert info["limits"]["max_completions"] == srv.settings.max_completions
    assert ROUTES <= set(spec["paths"])


def test_advantages_route_is_the_pure_function(srv) -> None:
    """Assertion: /v1/advantages returns gdpo_advantages' numbers; bad shapes are 422."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(8, 3))
    valid = [True] * 6 + [False] * 2
    adv, info = gdpo_advantages(x, np.array([3.0, 1.0, 0.5]), np.array(valid), floor=-0.5)
    with srv.client() as c:
        r = c.post("/v1/advantages", json={"channels": x.tolist(), "valid": valid,
                                           "priorities": [3.0, 1.0, 0.5], "floor": -0.5})
        assert r.status_code == 200
        assert np.array_equal(np.array(r.json()["advantages"]), adv)
        assert r.json()["diagnostics"]["n_eligible"] == info.n_eligible
        r = c.post("/v1/advantages", json={"channels": [[1.0, 2.0], [1.0]], "valid": [True, True]})
        assert r.status_code == 422 and "channels[1]" in r.json()["error"]["message"]
        r = c.post("/v1/advantages", json={"channels": [[1.0]], "valid": ["yes"]})
        assert r.status_code == 422


def test_advantages_route_gives_score_group_s_advantages_with_the_documented_guard(srv) -> None:
    """A client that rebuilds a group's channel matrix from its cards gets /v1/score_group's
    advantages from /v1/advantages only if ``guarded`` marks the answers whose reward the motif
    guard capped (valid, metrics.motif_guard, Σ priority·channel > 0), as the spec now says;
    marking every answer the guard fired on (the old description) gives other advantages."""
    with srv.client() as c:
        group = c.post("/v1/score_group", json={"completions": VALID}).json()
        info = c.get("/v1/info").json()
        prio = {ch["name"]: ch["priority"] for ch in info["channels"] if ch["active"]}
        names = group["channels"]
        cards = [e["card"] for e in group["cards"]]
        fired = [cd["valid"] and bool(cd["metrics"].get("motif_guard")) for cd in cards]
        capped = [f and sum(prio[n] * v for n, v in cd["channels"].items() if n in prio) > 0
                  for f, cd in zip(fired, cards, strict=True)]
        assert any(capped) and fired != capped  # the corpus has both kinds
        body = {"channels": [[cd["channels"][n] for n in names] for cd in cards],
                "valid": [cd["valid"] for cd in cards],
                "priorities": [prio[n] for n in names], "core": names.index("cpcv")}
        same = c.post("/v1/advantages", json=body | {"guarded": capped}).json()
        other = c.post("/v1/advantages", json=body | {"guarded": fired}).json()
    assert same["advantages"] == group["advantages"]
    assert other["advantages"] != group["advantages"]


def test_metrics_after_traffic(srv) -> None:
    """Assertion: the scrape has requests by route/status, phase histograms, card error codes,
    queue depth and the share of non-zero advantages."""
    with srv.client() as c:
        c.post("/v1/score_group", json={"completions": VALID[:3] + INVALID[:2]})
        c.post("/v1/score", json={"completions": []})
        text = c.get("/metrics").text
    assert 'gymkit_requests_total{route="/v1/score_group",method="POST",status="200"}' in text
    assert 'gymkit_requests_total{route="/v1/score",method="POST",status="422"}' in text
    assert 'gymkit_phase_duration_seconds_bucket{phase="cpcv",le="+Inf"}' in text
    assert 'gymkit_errors_total{kind="card",code="missing_tag"}' in text
    assert 'gymkit_errors_total{kind="server",code="invalid_request"}' in text
    assert "gymkit_queue_depth 0" in text
    assert "gymkit_advantage_share_nonzero_count" in text


def test_archive_commit_is_idempotent_and_shared_by_all_workers(env) -> None:
    """Assertion: a commit bumps the version once (a retry returns the same bytes, another body
    under the same id is 409, a stale expected_version is 409); afterwards every worker scores
    against the new archive, with cards equal to in-process scoring after the same commit."""
    blob = env.archive_snapshot()
    try:
        with running_server(env, workers=2) as srv, srv.client() as c:
            v0 = c.get("/v1/archive").json()["version"]
            body = {"request_id": "commit-1", "completions": VALID[:3] + INVALID[:1]}
            r1 = c.post("/v1/archive/commit", json=body)
            r2 = c.post("/v1/archive/commit", json=body)
            assert r1.status_code == 200 and r1.content == r2.content
            assert r1.json()["version"] > v0 and r1.json()["previous_version"] == v0
            r = c.post("/v1/archive/commit", json={**body, "completions": VALID[:1]})
            assert r.status_code == 409 and r.json()["error"]["code"] == "request_id_conflict"
            r = c.post("/v1/archive/commit", json={"request_id": "commit-2",
                                                   "completions": VALID[:1], "expected_version": v0})
            assert r.status_code == 409 and r.json()["error"]["code"] == "archive_version_conflict"
            assert c.get("/v1/archive").json()["digest"] == r1.json()["digest"]
            bodies = [c.post("/v1/score", json={"completions": VALID[:2]}).content for _ in range(6)]
            env.commit(VALID[:3] + INVALID[:1])
            assert env.archive.version == r1.json()["version"]
            want = b'{"cards":[' + b",".join(
                b'{"card_sha256":"' + __import__("hashlib").sha256(t.encode()).hexdigest().encode()
                + b'","card":' + t.encode() + b"}" for t in (env.score(a).to_json() for a in VALID[:2])
            ) + b"]}"
            assert set(bodies) == {want}
    finally:
        env.archive_restore(blob)
