"""``gymkit env show --market FILE`` as a user types it: what it prints and writes is the
environment ``gymkit score --market FILE`` scores with (same config, same fingerprint), and the
description names the market it runs on; the default environment's text and fingerprint stay."""

from __future__ import annotations

import json

import pytest

import gymkit
from gymkit.data import default_market

GOOD = "rank(-ts_sum(returns, 5))"
DEFAULT_LINE = ("us46-default: 46 synthetic US stocks (embedded market), 12-channel reward, "
                "train window only")


pytestmark = pytest.mark.usefixtures("own_gymkit_cache")


@pytest.fixture(scope="module")
def market(eight_stock_csv):
    return eight_stock_csv()


def test_the_shown_toml_round_trips_to_the_environment_score_uses(market, tmp_path, cli):
    rc, toml, _ = cli("env", "show", "us46-default", "--market", str(market), "--toml")
    assert rc == 0 and 'seed = "alpha101"' in toml
    shown = tmp_path / "shown.toml"
    shown.write_text(toml)
    rc, out, _ = cli("score", GOOD, "--market", str(market), "--json")
    direct = json.loads(out)
    rc2, out, _ = cli("score", GOOD, "--env", str(shown), "--market", str(market), "--json")
    again = json.loads(out)
    assert rc == rc2 == 0 and direct["valid"]
    assert again["env_fingerprint"] == direct["env_fingerprint"]
    assert again["channels"] == direct["channels"] and again["reward"] == direct["reward"]
    rc, out, _ = cli("env", "show", "us46-default", "--market", str(market))
    assert rc == 0 and f"\n  fingerprint   {direct['env_fingerprint']}" in out
    assert "\n  archive       alpha101 seed, capacity 1024\n" in out
    assert f"\n  market        user: {market}, 8 stocks, " in out
    # R3 has no stress worlds for this market: the summary says so, as the cards' notes do
    assert "      R3   jepa_stress" in out and "note          jepa_stress: stress worlds not" in out


def test_the_description_names_the_market_and_the_default_stays_byte_for_byte(market, tmp_path,
                                                                               cli):
    rc, out, _ = cli("env", "show", "us46-default", "--market", str(market))
    assert rc == 0
    assert out.splitlines()[0] == ("us46-default: a user-supplied market, 12-channel reward, "
                                   "train window only")
    assert "embedded market" not in out
    mine = tmp_path / "mine.toml"
    mine.write_text(f'market = "{market}"\n')
    rc, out, _ = cli("env", "show", str(mine))
    assert rc == 0 and out.splitlines()[0] == (f"us46-default: the market file {market}, "
                                               "12-channel reward, train window only")
    assert "\n  split         train " + str(default_market().dates[0]) in out  # derived split
    rc, out, _ = cli("env", "show", "us46-default")
    default = gymkit.registry.make("us46-default")
    assert rc == 0 and out.splitlines()[0] == DEFAULT_LINE
    assert out.rstrip().endswith(f"\n  fingerprint   {default.fingerprint}")
    rc, out, _ = cli("env", "show", "us46-default", "--toml")
    assert gymkit.EnvConfig.from_toml(out) == gymkit.registry.ENVIRONMENTS["us46-default"]
    assert f'description = "{DEFAULT_LINE.split(": ", 1)[1]}"' in out


def test_the_tear_sheet_names_the_user_market(market, tmp_path, cli):
    rc, _, _ = cli("report", GOOD, "--market", str(market), "--out", str(tmp_path / "r"),
                   "--no-timestamp")
    html = (tmp_path / "r" / "index.html").read_text(encoding="utf-8")
    assert rc == 0 and "us46-default: a user-supplied market, 12-channel reward" in html
    assert "embedded market" not in html


def test_env_show_defaults_to_the_default_environment_as_other_commands_do(market, cli):
    """``gymkit env show --market FILE`` (no id) was a usage error; every other command defaults
    to us46-default, and so does this one: the same text as naming it."""
    rc, named, _ = cli("env", "show", "us46-default", "--market", str(market))
    rc2, bare, _ = cli("env", "show", "--market", str(market))
    assert rc == rc2 == 0 and bare == named


def test_a_group_scored_on_a_user_market_names_that_market(market, cli):
    """A new user's group table on their own file was headed "on us46-default", as if scored on
    the embedded market."""
    rc, out, _ = cli("score", GOOD, "rank(-returns)", "--market", str(market))
    assert rc == 0 and f"one group of 2 answers, us46-default on the market {market} (" in out
    rc, out, _ = cli("score", GOOD, "rank(-returns)")
    assert rc == 0 and "one group of 2 answers, us46-default (" in out
