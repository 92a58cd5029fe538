"""Parity: the server's cards are byte-identical to ``env.score`` / ``env.score_group``.

For a corpus of valid, invalid and hostile answers, with 1 and with 2 workers, each card in
the response body is exactly the bytes of ``card.to_json()`` of the in-process API, its
``card_sha256`` is the sha256 of those bytes, and a retry returns the same response bytes.
"""

from __future__ import annotations

import hashlib
import json
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from .conftest import running_server
from .corpus import CORPUS, VALID


@pytest.fixture(scope="module", params=[1, 2], ids=["1worker", "2workers"])
def srv(request, env):
    """A server with 1 or 2 workers."""
    with running_server(env, workers=request.param) as s:
        yield s


@pytest.fixture(scope="module")
def expected(env) -> list[str]:
    """In-process card JSON of every corpus answer."""
    return [env.score(c).to_json() for c in CORPUS]


def test_score_cards_are_byte_identical_to_env_score(srv, expected) -> None:
    """Assertion: every card's bytes appear verbatim, in order, with the right sha256."""
    with srv.client() as c:
        r = c.post("/v1/score", json={"completions": CORPUS})
    assert r.status_code == 200
    raw = r.content
    entries = r.json()["cards"]
    assert len(entries) == len(CORPUS)
    pos = 0
    for e, text in zip(entries, expected, strict=True):
        b = text.encode("utf-8")
        at = raw.find(b'"card":' + b, pos)
        assert at >= 0, "card bytes differ from env.score(...).to_json()"
        pos = at + len(b)
        assert e["card_sha256"] == hashlib.sha256(b).hexdigest()
        assert "timings" not in e


def test_retry_returns_the_same_bytes_under_concurrency(srv) -> None:
    """Assertion: 8 concurrent identical requests (spread over the workers) give one body."""
    body = {"completions": CORPUS[:10]}
    with srv.client() as c, ThreadPoolExecutor(4) as ex:
        bodies = list(ex.map(lambda _: c.post("/v1/score", json=body).content, range(8)))
    assert len(set(bodies)) == 1


def test_score_group_matches_env_score_group_and_advantages(srv, env) -> None:
    """Assertion: group cards byte-identical, advantages and diagnostics equal in-process GDPO."""
    group = VALID + VALID[:2] + ["no tag", "<alpha>close - close</alpha>"]
    cards = env.score_group(group, brief="brief-7")
    adv, info = env.group_advantages(cards)
    with srv.client() as c:
        r = c.post("/v1/score_group", json={"completions": group, "brief": "brief-7"})
    assert r.status_code == 200
    for card in cards:
        assert b'"card":' + card.to_json().encode() in r.content
    got = r.json()
    assert got["channels"] == list(env.channels)
    assert np.array_equal(np.array(got["advantages"]), adv)
    assert got["diagnostics"]["share_nonzero"] == info.share_nonzero
    assert [e["card"]["brief_digest"] for e in got["cards"]] == [cards[0].brief_digest] * len(group)


def test_include_timings_adds_only_timings(srv, expected) -> None:
    """Assertion: with include_timings the card bytes are unchanged and every phase is timed."""
    with srv.client() as c:
        r = c.post("/v1/score", json={"completions": CORPUS[:1], "include_timings": True})
    e = r.json()["cards"][0]
    assert json.dumps(e["card"], separators=(",", ":"), ensure_ascii=False) == expected[0]
    assert set(e["timings"]) >= {"parse", "evaluate", "book", "cpcv", "total"}


def test_score_group_with_a_generated_brief_counts_compliance(srv, env) -> None:
    """Assertion: a generated brief's text sent as ``brief`` makes R13 count over HTTP exactly
    as in ``env.score_group`` (same card bytes; the channel present on every valid card)."""
    from gymkit.briefs import generate_briefs

    brief = generate_briefs(5, 0)[0].text
    group = VALID[:3]
    cards = env.score_group(group, brief=brief)
    assert all("brief_compliance" in c.channels for c in cards if c.valid)
    with srv.client() as c:
        r = c.post("/v1/score_group", json={"completions": group, "brief": brief})
    assert r.status_code == 200
    for card in cards:
        assert b'"card":' + card.to_json().encode() in r.content


def test_score_group_takes_a_generated_brief_s_id_and_refuses_an_unknown_one(srv, env) -> None:
    """Trainers carry brief ids (dataset rows, `gymkit briefs`): an id sent as ``brief`` was
    scored as if it were the brief's text, so R13 silently did not count.  A known id now gives
    the text's cards byte for byte; an id-shaped value no generated brief has is a 422."""
    from gymkit.briefs import generate_briefs

    b = generate_briefs()[3]
    group = VALID[:3]
    with srv.client() as c:
        by_text = c.post("/v1/score_group", json={"completions": group, "brief": b.text})
        by_id = c.post("/v1/score_group", json={"completions": group, "brief": b.brief_id})
        typo = c.post("/v1/score_group", json={"completions": group, "brief": "0123456789abcdef"})
    assert by_text.status_code == by_id.status_code == 200
    assert by_id.content == by_text.content
    assert any("brief_compliance" in e["card"]["channels"] for e in by_id.json()["cards"])
    assert typo.status_code == 422 and typo.json()["error"]["code"] == "unknown_brief"
    assert "'0123456789abcdef' has the form of a brief id" in typo.json()["error"]["message"]
