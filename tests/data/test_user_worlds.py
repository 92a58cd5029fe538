"""``gymkit jepa --market``: the train window only, written to the market's own cache folder
(never the package); ``make(market=...)`` looks there and names the command when absent."""

from __future__ import annotations

import numpy as np

import gymkit
from gymkit.data import default_market
from gymkit.data.splits import resolve_split
from gymkit.jepa.train import _user_train
from gymkit.worlds_cache import worlds_dir

M = default_market().take_rows(slice(0, 900))


def test_training_panel_is_the_train_window_and_holdout_changes_nothing(tmp_path,
                                                                       monkeypatch) -> None:
    monkeypatch.setenv("GYMKIT_CACHE_DIR", str(tmp_path))
    train, split = _user_train(M)
    assert split == resolve_split(M.dates, None)[0] and train.T == M.T - 252
    hold = split.holdout_mask(M.dates)[:, None]
    poisoned = M.replace(close=np.where(hold, M.close * 5.0, M.close))
    train2, split2 = _user_train(poisoned)
    assert train2.fingerprint == train.fingerprint and split2 == split
    assert worlds_dir(train2, split2) == worlds_dir(train, split)
    assert worlds_dir(train, split).is_relative_to(tmp_path)


def test_make_names_the_command_when_a_user_market_has_no_worlds(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("GYMKIT_CACHE_DIR", str(tmp_path))
    env = gymkit.make("us46-default", market=M, archive={"seed": "none"})
    note = next(n for n in env.notes if n.startswith("jepa_stress:"))
    assert note.endswith("run: gymkit jepa train --market FILE && gymkit jepa worlds --market "
                         "FILE)")
