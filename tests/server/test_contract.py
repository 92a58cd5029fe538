"""The documented error contract, through real HTTP on 127.0.0.1: every code the docs name is
the one a client gets, 405s say what is allowed, /v1/info is valid JSON numbers only."""

from __future__ import annotations

import json

import pytest

from gymkit.server.settings import HARD_MAX_ANSWER_CHARS

from .conftest import running_server
from .corpus import VALID


@pytest.fixture(scope="module")
def srv(env):
    with running_server(env, workers=1) as s:
        yield s


def test_lone_surrogate_is_invalid_unicode(srv) -> None:
    """Assertion: a JSON answer holding "\\ud800" is 422 invalid_unicode naming the field."""
    with srv.client() as c:
        for route, body in (("/v1/score", b'{"completions": ["<alpha>close</alpha>\\ud800"]}'),
                            ("/v1/rm", b'{"response": "\\ud800"}')):
            r = c.post(route, content=body, headers={"content-type": "application/json"})
            assert r.status_code == 422, r.text
            err = r.json()["error"]
            assert err["code"] == "invalid_unicode" and "surrogate" in err["message"]
    assert r.json()["error"]["message"].startswith("body.response")


def test_answer_over_the_hard_ceiling_is_answer_too_long(srv) -> None:
    """Assertion: an answer longer than 1,048,576 characters is 422 answer_too_long (was
    invalid_request), like one over the configured limit."""
    with srv.client() as c:
        for n in (HARD_MAX_ANSWER_CHARS + 1, srv.settings.max_answer_chars + 1):
            r = c.post("/v1/score", json={"completions": ["x" * n]})
            assert r.status_code == 422
            assert r.json()["error"]["code"] == "answer_too_long", r.text[:300]
            assert r.json()["error"]["message"] == (
                f"body.completions[0]: {n} characters, the limit is {srv.settings.max_answer_chars}")


def test_the_completions_limit_reads_the_same_at_any_size(srv) -> None:
    """Assertion: over the configured limit (256) and over the schema's hard ceiling (1024) a
    client gets the same code and the same sentence, naming the configured limit."""
    with srv.client() as c:
        for n in (srv.settings.max_completions + 1, 2000):
            r = c.post("/v1/score", json={"completions": ["<alpha>close</alpha>"] * n})
            assert r.status_code == 422 and r.json()["error"] == {
                "code": "too_many_completions",
                "message": f"body.completions: {n} items, the limit is "
                           f"{srv.settings.max_completions}"}, r.text[:300]


def test_a_body_without_a_json_content_type_is_415_saying_so(srv) -> None:
    """Assertion: curl -d's default (form encoding) got a 422 about dictionaries; now 415
    naming the content type to send."""
    with srv.client() as c:
        r = c.post("/v1/score", content=json.dumps({"completions": VALID[:1]}),
                   headers={"content-type": "application/x-www-form-urlencoded"})
    assert r.status_code == 415 and r.json()["error"] == {
        "code": "unsupported_media_type",
        "message": "request body must be JSON: send 'content-type: application/json' (got "
                   "'application/x-www-form-urlencoded')"}


def test_405_has_allow_and_a_json_body(srv) -> None:
    """Assertion: a wrong method is 405 with an Allow header naming the route's method and the
    {"error": {"code": "method_not_allowed", ...}} body."""
    with srv.client() as c:
        r = c.get("/v1/score")
        assert r.status_code == 405 and "POST" in r.headers["allow"]
        assert r.json()["error"]["code"] == "method_not_allowed"
        r = c.delete("/v1/archive")
        assert r.status_code == 405 and "GET" in r.headers["allow"]


def test_info_value_ranges_are_numbers_and_400_is_documented(srv) -> None:
    """Assertion: every channel's value_range in /v1/info is two JSON numbers (no null), and the
    spec documents the 400 (malformed JSON) on every scoring and archive POST route."""
    with srv.client() as c:
        info = c.get("/v1/info").json()
        spec = c.get("/openapi.json").json()
    for row in info["channels"]:
        lo, hi = row["value_range"]
        assert isinstance(lo, float | int) and isinstance(hi, float | int) and lo <= hi, row
    assert "null" not in json.dumps([r["value_range"] for r in info["channels"]])
    for path in ("/v1/score", "/v1/score_group", "/v1/advantages", "/v1/archive/commit",
                 "/get_reward", "/v1/rm", "/verify"):
        assert "400" in spec["paths"][path]["post"]["responses"], path


def test_malformed_json_is_400_with_the_documented_shape(srv) -> None:
    """Assertion: a body that is not JSON is 400 malformed_json (documented above)."""
    with srv.client() as c:
        r = c.post("/v1/score", content=b"{", headers={"content-type": "application/json"})
        assert r.status_code == 400 and r.json()["error"]["code"] == "malformed_json"
        assert c.post("/v1/score", json={"completions": VALID[:1]}).status_code == 200


def test_spec_publishes_the_configured_limits(env) -> None:
    """Assertion: /openapi.json of a server with max_completions=16 and max_answer_chars=2000
    says maxItems 16 and maxLength 2000 for the answers /v1/score takes (not the hard
    ceilings the server would refuse), and a request at the published limit is accepted."""
    with running_server(env, max_completions=16, max_answer_chars=2000) as srv, srv.client() as c:
        spec = c.get("/openapi.json").json()
        comp = spec["components"]["schemas"]["ScoreRequest"]["properties"]["completions"]
        assert comp["maxItems"] == 16 and comp["items"]["maxLength"] == 2000
        slime = spec["components"]["schemas"]["SlimeRequest"]["properties"]["response"]
        assert slime["maxLength"] == 2000
        r = c.post("/v1/score", json={"completions": ["x" * 2000]})
        assert r.status_code == 200
        r = c.post("/v1/score", json={"completions": ["x" * 2001]})
        assert r.status_code == 422 and r.json()["error"]["code"] == "answer_too_long"
