"""``gymkit jepa`` re-executes itself in portable mode: every flag a user types must reach the
re-executed process (a dropped flag would silently run another configuration)."""

from __future__ import annotations

import argparse

import pytest

from gymkit.jepa.train import _argv_of, configure

CASES = [
    ["worlds"],
    ["worlds", "--draws", "3", "--shifts", "selective", "--seed", "7", "--quiet"],
    ["train", "--short", "--epochs", "2", "--threads", "1", "--device", "cpu",
     "--checkpoint", "/tmp/x.npz"],
    ["worlds", "--market", "m.parquet", "--lenient", "--adjust", "--columns", "date=Date",
     "--split", "train_end=2019-12-31", "--out", "/tmp/w"],
    ["check", "--market", "m.csv"],
]


def _parse(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser()
    configure(p)
    return p.parse_args(argv)


@pytest.mark.parametrize("argv", CASES, ids=lambda a: " ".join(a[:3]))
def test_every_flag_survives_the_portable_reexec(argv: list[str]) -> None:
    args = _parse(argv)
    again = _argv_of(args)
    assert again[0] == "jepa"
    assert vars(_parse(again[1:])) == vars(args)
