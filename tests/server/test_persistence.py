"""The archive and the commit ledger persist in SQLite: restarts, several servers, the token rule.

Every server here is real HTTP on 127.0.0.1 (``running_server``); the database is a file in
the test's temporary directory.
"""

from __future__ import annotations

import hashlib
import sqlite3

from gymkit.archive_db import ArchiveDB

from .cli_server import free_port, start_serve, wait_ready
from .conftest import running_server
from .corpus import VALID


def _db_rows(path) -> dict[str, list]:
    """Every table of the database file, as sorted rows (bytes included)."""
    with sqlite3.connect(path) as c:
        return {t: sorted(c.execute(f"SELECT * FROM {t}").fetchall())
                for t in ("archive_head", "archive_versions", "commit_ledger")}


def test_archive_and_ledger_survive_a_restart_byte_identical(env, tmp_path) -> None:
    """Assertion: after a restart on the same --archive-db the archive (version, digest, snapshot
    bytes) and the ledger come back byte-identical; replaying request r1 returns the same bytes
    and adds nothing; cards are scored against the committed archive, not the seed."""
    db = str(tmp_path / "archive.sqlite3")
    with running_server(env, workers=2, archive_db=db) as srv, srv.client() as c:
        seed = c.get("/v1/archive").json()
        r1 = c.post("/v1/archive/commit", json={"request_id": "r1", "completions": VALID[:3]})
        assert r1.status_code == 200 and r1.json()["added"] > 0
        state = c.get("/v1/archive").json()
        blob = srv.pool._archive_blob
    assert state["version"] > seed["version"]
    before = _db_rows(db)
    assert ArchiveDB(db).head(env.fingerprint).snapshot == blob
    with running_server(env, workers=2, archive_db=db) as srv, srv.client() as c:
        assert c.get("/v1/archive").json() == state
        assert _db_rows(db) == before
        again = c.post("/v1/archive/commit", json={"request_id": "r1", "completions": VALID[:3]})
        assert again.content == r1.content
        assert c.get("/v1/archive").json() == state
        card = c.post("/v1/score", json={"completions": VALID[:1]}).json()["cards"][0]["card"]
        assert (card["archive_version"], card["archive_digest"]) == (state["version"], state["digest"])
        clash = c.post("/v1/archive/commit", json={"request_id": "r1", "completions": VALID[:1]})
        assert clash.status_code == 409 and clash.json()["error"]["code"] == "request_id_conflict"
    assert _db_rows(db) == before  # the replay and the refused clash wrote nothing


def test_two_servers_on_one_db_never_reuse_a_version(env, tmp_path) -> None:
    """Assertion: two servers sharing a database file take turns: B's commit starts from A's
    head, versions strictly increase and are never written twice, and A then scores against
    B's archive; an id used on A is remembered on B."""
    db = str(tmp_path / "shared.sqlite3")
    with running_server(env, archive_db=db) as a, running_server(env, archive_db=db) as b, \
            a.client() as ca, b.client() as cb:
        ra = ca.post("/v1/archive/commit", json={"request_id": "a1", "completions": VALID[:2]})
        rb = cb.post("/v1/archive/commit", json={"request_id": "b1", "completions": VALID[2:4]})
        assert ra.status_code == rb.status_code == 200
        assert rb.json()["previous_version"] == ra.json()["version"]
        assert rb.json()["version"] > ra.json()["version"]
        assert cb.post("/v1/archive/commit", json={"request_id": "a1",
                                                   "completions": VALID[:2]}).content == ra.content
        card = ca.post("/v1/score", json={"completions": VALID[:1]}).json()["cards"][0]["card"]
        assert card["archive_version"] == rb.json()["version"]
        assert card["archive_digest"] == rb.json()["digest"]
    versions = [v for v, *_ in ArchiveDB(db).versions(env.fingerprint)]
    assert versions == sorted(set(versions)) and len(versions) == 3  # seed, a1, b1


def test_commits_need_the_token_beyond_loopback(env) -> None:
    """Assertion: a server configured for a non-loopback address without a token scores but
    refuses commits (403 commits_disabled); with a token, a commit with it succeeds and one
    without it is 401."""
    with running_server(env, host="0.0.0.0") as srv, srv.client() as c:
        assert c.post("/v1/score", json={"completions": VALID[:1]}).status_code == 200
        r = c.post("/v1/archive/commit", json={"request_id": "x", "completions": VALID[:1]})
        assert r.status_code == 403 and r.json()["error"]["code"] == "commits_disabled"
    token = hashlib.sha256(b"t").hexdigest()
    with running_server(env, host="0.0.0.0", token=token) as srv, srv.client() as c:
        body = {"request_id": "y", "completions": VALID[:1]}
        assert c.post("/v1/archive/commit", json=body).status_code == 401
        r = c.post("/v1/archive/commit", json=body, headers={"Authorization": f"Bearer {token}"})
        assert r.status_code == 200


def _serve(db: str, port: int):
    return start_serve(port, "--archive-db", db)


def test_gymkit_serve_archive_db_survives_a_sigterm_restart(tmp_path) -> None:
    """Assertion: `gymkit serve --archive-db PATH` as a user types it: a commit, SIGTERM, a new
    `gymkit serve` on the same file reports the same archive and replays the commit's bytes."""
    import signal

    import httpx

    db, port = str(tmp_path / "cli.sqlite3"), free_port()
    url = f"http://127.0.0.1:{port}"
    state = first = None
    for round_ in range(2):
        proc = _serve(db, port)
        try:
            wait_ready(proc, url)
            r = httpx.post(url + "/v1/archive/commit", timeout=60,
                           json={"request_id": "cli-1", "completions": VALID[:2]})
            assert r.status_code == 200
            if round_ == 0:
                first, state = r.content, httpx.get(url + "/v1/archive").json()
            else:
                assert r.content == first
                assert httpx.get(url + "/v1/archive").json() == state
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=60)
    assert state is not None and state["version"] > 0
