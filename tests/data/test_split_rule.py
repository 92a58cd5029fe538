"""The one split rule: derived on a user market, completed from a partial split, the same in
``make`` and ``audit``; too-short train or empty holdout is a one-line error."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gymkit
from gymkit.audit.target import build_target
from gymkit.config import EnvConfig, split_for_market
from gymkit.data import DEFAULT_SPLIT, default_market
from gymkit.data.splits import SPLIT_NOTE, Split, resolve_split

MARKET = default_market()
LATE = MARKET.take_rows(slice(1000, None))  # a "user" market: 2016-.. 2026, not the default


def test_derived_split_on_the_default_market_is_its_registry_split() -> None:
    split, note = resolve_split(MARKET.dates, None, min_train=380)
    assert split == DEFAULT_SPLIT and note.startswith(SPLIT_NOTE)


def test_make_on_a_user_market_derives_the_split_and_says_so() -> None:
    short = MARKET.take_rows(slice(0, 2000))  # ends 2020: the default holdout is not on it
    env = gymkit.make("us46-default", market=short, archive={"seed": "none"})
    d = [str(x) for x in short.dates]
    assert env.config.split == {"train_start": d[0], "train_end": d[-253],
                                "holdout_start": d[-252], "holdout_end": d[-1]}
    assert env.notes[0] == (
        f"{SPLIT_NOTE} (no split given; rule: the last 252 sessions are the holdout, the train "
        f"window everything before): train {d[0]}..{d[-253]} (1748 sessions), holdout "
        f"{d[-252]}..{d[-1]} (252 sessions)")
    card = env.score("<alpha>rank(-ts_sum(returns, 5))</alpha>")
    assert card.notes[0] == env.notes[0] and card.valid
    other = gymkit.make("us46-default", market=short, archive={"seed": "none"},
                        split={"train_end": d[-300]})
    assert other.fingerprint != env.fingerprint  # the split is in the environment fingerprint


@pytest.mark.parametrize(("split", "message"), [
    ({"train_end": "2013-01-01"}, "split leaves 126 train sessions (2012-06-29..2012-12-31); the "
     "train window needs at least 380 (burn-in, CPCV blocks and the 2-day horizon), 3810 with "
     "this 3430-session holdout: give a longer panel or a shorter holdout (--split "
     "train_end=DATE, split={'train_end': DATE})"),
    ({"holdout_start": "2027-01-05"}, "split leaves the holdout empty: holdout_start 2027-01-05 is "
     "after holdout_end 2026-08-21 (the panel spans 2012-06-29..2026-08-21)"),
    ({"train_end": "2019-13-01"}, "split train_end = '2019-13-01' is not a date (expected "
     "YYYY-MM-DD)"),
    ({"test_end": "2019-01-01"}, "unknown split key(s) ['test_end']; expected some of "
     "['train_start', 'train_end', 'holdout_start', 'holdout_end']"),
    # the date the user wrote is named, not a holdout_start derived from it
    ({"train_end": "2030-01-01"}, "split train_end 2030-01-01 leaves no session after it for the "
     "holdout (the panel spans 2012-06-29..2026-08-21)"),
    ({"train_end": "2020-01-01", "holdout_end": "2019-06-01"}, "split train_end 2020-01-01 "
     "leaves no session before holdout_end 2019-05-31 for the holdout"),
    # numpy would read "20191328" as the year 20,191,328
    ({"train_end": "20191328"}, "split train_end = '20191328' is not a date (expected "
     "YYYY-MM-DD)"),
])
def test_bad_splits_are_one_line_errors(split: dict, message: str) -> None:
    with pytest.raises(ValueError) as info:
        gymkit.make("us46-default", split=split, archive={"seed": "none"})
    assert str(info.value) == message


def test_split_dates_that_are_not_sessions_name_the_resolved_sessions() -> None:
    """A Saturday ``train_end`` is the Friday before it, a holiday ``holdout_start`` the next
    session: in the split, in the note, hence in the config ``make`` and ``env show`` use."""
    split, note = resolve_split(MARKET.dates, {"train_end": "2019-12-28"})  # a Saturday
    assert (split.train_end, split.holdout_start) == ("2019-12-27", "2019-12-30")
    assert "train 2012-06-29..2019-12-27 (1886 sessions), holdout 2019-12-30.." in note
    split, note = resolve_split(MARKET.dates, {"holdout_start": "2020-01-01"})  # New Year's Day
    assert (split.train_end, split.holdout_start) == ("2019-12-31", "2020-01-02")
    assert note.endswith("train 2012-06-29..2019-12-31 (1888 sessions), holdout "
                         "2020-01-02..2026-08-21 (1668 sessions)")
    every = {"train_start": "2012-07-04", "train_end": "2019-12-28",
             "holdout_start": "2020-01-01", "holdout_end": "2026-08-22"}  # all four off-calendar
    assert resolve_split(MARKET.dates, every)[0] == Split("2012-07-05", "2019-12-27",
                                                          "2020-01-02", "2026-08-21")
    made, _ = split_for_market(EnvConfig(market="user"), MARKET.dates, {"train_end": "2019-12-28"})
    assert made.split["train_end"] == "2019-12-27"


def test_an_explicit_split_off_the_panel_is_refused() -> None:
    cfg = EnvConfig(split={"train_start": "2012-06-29", "train_end": "2030-01-01",
                           "holdout_start": "2030-01-02", "holdout_end": "2030-12-31"})
    with pytest.raises(ValueError, match=r"^split leaves the holdout empty: no session of the "
                                         r"panel \(2012-06-29..2026-08-21\)"):
        gymkit.make(cfg)


_DAY = st.integers(min_value=0, max_value=LATE.T - 1)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(keys=st.sets(st.sampled_from(["train_start", "train_end", "holdout_start",
                                     "holdout_end"])), days=st.lists(_DAY, min_size=4,
                                                                     max_size=4))
def test_partial_splits_resolve_the_same_in_make_and_audit(keys: set, days: list) -> None:
    """Property: any partial split resolves to the same dates (or the same error) through
    the rule, ``split_for_market`` (make), and the audit target's resolution."""
    days = sorted(days)
    partial = {k: str(LATE.dates[days[i]]) for i, k in enumerate(
        ["train_start", "train_end", "holdout_start", "holdout_end"]) if k in keys}
    cfg = EnvConfig(market="user", archive={"seed": "none"})
    try:
        made, _ = split_for_market(cfg, LATE.dates, partial)
    except ValueError as exc:
        with pytest.raises(ValueError) as info:
            build_target(config=cfg, market=LATE, split=partial)
        assert str(info.value) == str(exc)
        return
    target = build_target(config=cfg, market=LATE, split=partial)
    assert target.config.split == made.split
    # the same partial split written in the config (a TOML's [split] table) resolves the same
    in_config = EnvConfig.from_toml(cfg.replace(split=partial).to_toml())
    assert split_for_market(in_config, LATE.dates)[0].split == made.split
    hold = made.split_obj.holdout_mask(LATE.dates)
    assert hold.any() and made.split_obj.train(LATE).T >= cfg.min_train_sessions
    assert np.all(LATE.dates[hold] > np.datetime64(made.split["train_end"]))


def test_a_partial_split_in_a_toml_is_completed_on_the_market(tmp_path, cli) -> None:
    """A TOML whose [split] names only train_end gets the environment ``--split train_end=``
    gives (same split, same fingerprint), not the registry's dates for the rest: before, the
    missing keys were filled from the default split and ``train_end=2024-12-28`` left the
    sessions 2024-12-30..2025-08-20 in neither window, silently."""
    cfg = EnvConfig(split={"train_end": "2024-12-28"})
    assert cfg.split == {"train_end": "2024-12-28"} and cfg.split_partial
    assert EnvConfig.from_toml(cfg.to_toml()) == cfg
    with pytest.raises(ValueError, match="is partial: it is completed on a market"):
        _ = cfg.split_obj
    path = tmp_path / "partial.toml"
    cfg.save(path)
    env = gymkit.make(path, archive={"seed": "none"})
    flag = gymkit.make("us46-default", split={"train_end": "2024-12-28"}, archive={"seed": "none"})
    assert env.config.split == flag.config.split == {
        "train_start": "2012-06-29", "train_end": "2024-12-27",
        "holdout_start": "2024-12-30", "holdout_end": "2026-08-21"}
    assert env.fingerprint == flag.fingerprint and env.notes[0] == flag.notes[0]
    by_hand = gymkit.Environment(cfg.replace(archive={"seed": "none"}), MARKET)
    assert by_hand.config.split == env.config.split
    shown = [cli("env", "show", str(path)), cli("env", "show", "us46-default", "--split",
                                                 "train_end=2024-12-28")]
    assert [rc for rc, _, _ in shown] == [0, 0]
    lines = [[ln for ln in out.splitlines() if ln.lstrip().startswith(("split ", "fingerprint"))]
             for _, out, _ in shown]
    assert lines[0] == lines[1] and "holdout 2024-12-30 .. 2026-08-21" in lines[0][0]
    with pytest.raises(ValueError, match=r"^split train_end = '2024-13-28' is not a date"):
        EnvConfig(split={"train_end": "2024-13-28"})


def test_the_basic_date_form_is_the_iso_date() -> None:
    """``20191228`` (text, or a TOML integer) is 2019-12-28, not the year 20,191,228: it used to
    resolve to an empty holdout with an error about a date the user never wrote."""
    iso = gymkit.make("us46-default", split={"train_end": "2019-12-28"}, archive={"seed": "none"})
    for value in ("20191228", 20191228):
        env = gymkit.make("us46-default", split={"train_end": value}, archive={"seed": "none"})
        assert env.config.split == iso.config.split and env.fingerprint == iso.fingerprint
    cfg = EnvConfig.from_toml(EnvConfig(split={"train_end": 20191228}).to_toml())
    assert cfg.split == {"train_end": "2019-12-28"}
