"""`gymkit train` flags as a user types them: policy size, pairs and scoring workers.

A larger warm start is built with the size asked for (the saved config says so); a count
below 1 is a usage error (exit 2) naming the option, and sizes that do not fit together or a
worker count the TRL trainer cannot use are one-line errors (exit 1), each before any work.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gymkit.cli import main


@pytest.mark.parametrize("argv, rc, message", [
    (["--layers", "0"], 2, "--layers: must be >= 1, not 0"),
    (["--width", "100", "--heads", "8"], 1, "multiple of --heads"),
    (["--pairs", "0"], 2, "--pairs: must be >= 1, not 0"),
])
def test_bad_policy_sizes_are_one_line_errors(tmp_path: Path, capsys, argv, rc, message) -> None:
    assert main(["train", "sft", "--run", str(tmp_path), *argv]) == rc
    err = [ln for ln in capsys.readouterr().err.strip().splitlines()  # less argparse's usage
           if not ln.startswith(("usage:", " "))]
    assert len(err) == 1 and message in err[0]
    assert not (tmp_path / "sft").exists()


def test_workers_are_refused_for_the_trl_trainer_and_below_one(tmp_path: Path, capsys) -> None:
    (tmp_path / "sft").mkdir()
    (tmp_path / "sft" / "config.json").write_text("{}")
    assert main(["train", "rl", "--run", str(tmp_path), "--trainer", "trl", "--workers", "2"]) == 1
    assert "--workers applies to --trainer gymkit" in capsys.readouterr().err
    for flag in ("--workers", "--probe-every", "--threads"):  # a usage error, as in score-file
        assert main(["train", "rl", "--run", str(tmp_path), flag, "0"]) == 2
        assert f"{flag}: must be >= 1, not 0" in capsys.readouterr().err
    for flag in ("--layers", "--width", "--heads", "--pairs"):
        assert main(["train", "sft", "--run", str(tmp_path), flag, "-1"]) == 2
        assert f"{flag}: must be >= 1, not -1" in capsys.readouterr().err
    assert main(["serve", "--workers", "0"]) == 2
    assert "--workers: must be >= 1, not 0" in capsys.readouterr().err
    assert not (tmp_path / "rl").exists()


def test_a_larger_policy_is_built_as_asked(tmp_path: Path) -> None:
    assert main(["train", "sft", "--run", str(tmp_path), "--ci", "--steps", "2", "--pairs", "64",
                 "--layers", "3", "--width", "128", "--heads", "8"]) == 0
    pol = json.loads((tmp_path / "sft" / "policy.json").read_text())
    assert (pol["layers"], pol["width"], pol["heads"]) == (3, 128, 8)
    hf = json.loads((tmp_path / "sft" / "config.json").read_text())  # the transformers config
    assert (hf["num_hidden_layers"], hf["hidden_size"], hf["num_attention_heads"]) == (3, 128, 8)
    assert json.loads((tmp_path / "sft" / "summary.json").read_text())["n_pairs"] <= 64
