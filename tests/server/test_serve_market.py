"""``gymkit serve --market FILE`` as a user types it: the server scores on that market exactly
as ``gymkit score --market FILE`` does (same card, same environment fingerprint)."""

from __future__ import annotations

import json
import os
import signal

import httpx
import pytest

from gymkit.cli import main

from .cli_server import free_port, start_serve, wait_ready

ANSWERS = ["rank(-ts_sum(returns, 5))", "-ts_corr(rank(close), rank(ts_delta(volume, 1)), 10)"]


@pytest.fixture(scope="module")
def market(eight_stock_csv):
    return eight_stock_csv()


def test_serve_market_scores_as_score_market(market, tmp_path, capsys, monkeypatch) -> None:
    monkeypatch.setenv("GYMKIT_CACHE_DIR", str(tmp_path / "cache"))  # inherited by the server
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    proc = start_serve(port, "--archive-db", ":memory:", "--market", str(market),
                       env=os.environ.copy())
    try:
        wait_ready(proc, url)
        r = httpx.post(url + "/v1/score", timeout=120,
                       json={"completions": [f"<alpha>{a}</alpha>" for a in ANSWERS]})
        assert r.status_code == 200, r.text[:500]
        served = [e["card"] for e in r.json()["cards"]]
        info = httpx.get(url + "/v1/info", timeout=30).json()
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
    assert any(n.startswith("split adapted to the panel") for n in info["notes"])
    for answer, card in zip(ANSWERS, served, strict=True):
        assert main(["score", answer, "--market", str(market), "--json"]) == 0
        cli_card = json.loads(capsys.readouterr().out)
        assert card["env_fingerprint"] == cli_card["env_fingerprint"] == info["env_fingerprint"]
        assert card["reward"] == cli_card["reward"] and card["channels"] == cli_card["channels"]
        assert card == cli_card


def test_a_port_another_server_holds_is_one_line_before_start_up(capsys, monkeypatch) -> None:
    """It was uvicorn's "address already in use" after the whole start-up (about 14 s), and
    an internal error (exit 3)."""
    import socket

    from gymkit.cli import options

    def built(*_: object, **__: object) -> None:
        raise AssertionError("the environment was built before the port was checked")

    monkeypatch.setattr(options, "make_env", built)
    with socket.socket() as held:
        held.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        held.bind(("127.0.0.1", 0))
        held.listen(1)
        port = held.getsockname()[1]
        assert main(["serve", "--port", str(port), "--archive-db", ":memory:"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"gymkit serve: error: --port {port}: cannot listen"), err
