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


@pytest.mark.parametrize("cmd", ["sft", "rl"])
def test_steps_and_seed_out_of_range_are_usage_errors(tmp_path: Path, capsys, cmd) -> None:
    """``--steps -3`` ran no RL step and spent the holdout look on the warm start; ``--steps 0``
    silently ran the default (500 steps); ``--seed -1`` said "expected non-negative integer"
    without naming the option."""
    for flag, value, message in (("--steps", "0", "--steps: must be >= 1, not 0"),
                                 ("--steps", "-3", "--steps: must be >= 1, not -3"),
                                 ("--seed", "-1", "--seed: must be >= 0, not -1")):
        assert main(["train", cmd, "--run", str(tmp_path), flag, value]) == 2
        assert message in capsys.readouterr().err
    assert not any(tmp_path.iterdir())


def _one_error(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    return err[0]


def test_a_device_torch_cannot_use_is_one_line_before_any_work(tmp_path: Path, capsys) -> None:
    """``--device cuda`` on a CPU-only build was "internal error: AssertionError: Torch not
    compiled with CUDA enabled" (exit 3), after the warm start's pairs were generated."""
    import torch

    devices = ["bogus"] + ([] if torch.cuda.is_available() else ["cuda"])
    for dev in devices:
        for cmd in ("sft", "rl"):
            assert main(["train", cmd, "--run", str(tmp_path), "--ci", "--device", dev]) == 1
            line = _one_error(capsys)
            assert line.startswith(f"gymkit train: error: --device {dev}: torch cannot use it here")
    assert not any(tmp_path.iterdir())


def test_an_unwritable_run_folder_and_an_unknown_environment_are_one_line(tmp_path: Path, capsys) -> None:
    """A read-only run folder failed only when the trained policy was saved (an internal error);
    an unknown environment left an empty RUN/sft behind."""
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    assert main(["train", "sft", "--run", str(blocker / "run"), "--ci"]) == 1
    assert "cannot write the run there" in _one_error(capsys)
    assert main(["train", "sft", "--run", str(tmp_path / "w"), "--env", "nosuch"]) == 1
    assert "unknown environment 'nosuch'" in _one_error(capsys)
    assert not (tmp_path / "w").exists()


def test_report_on_an_incomplete_run_names_the_file(tmp_path: Path, capsys) -> None:
    rl = tmp_path / "rl"
    rl.mkdir()
    (rl / "table.json").write_text("")  # a run killed while writing its table
    assert main(["train", "report", str(tmp_path)]) == 1
    line = _one_error(capsys)
    assert f"{rl / 'table.json'}: not the JSON an RL run writes" in line
    (rl / "table.json").write_text(json.dumps({"rows": []}))  # JSON, but not a run's table
    assert main(["train", "report", str(tmp_path)]) == 1
    assert f"{rl / 'table.json'}: not the table an RL run writes" in _one_error(capsys)
    (rl / "table.json").write_text(json.dumps({"rows": [], "shipped": "0", "holdout": {}}))
    assert main(["train", "report", str(tmp_path)]) == 1
    assert f"{rl / 'log.jsonl'}: missing; the RL run is incomplete" in _one_error(capsys)


def test_a_new_rl_run_clears_only_what_an_rl_run_and_its_report_wrote(tmp_path) -> None:
    """An earlier run's outputs go (a re-run left its checkpoints, table and report beside the
    new logs); a ledger kept in RUN/rl and a user's own files in RUN/report stay; a warm start
    linked into RUN/rl (an earlier checkpoint) is refused before anything is removed."""
    from gymkit.train.rl import RL_OUTPUTS, fresh_rl_dir

    rl, report = tmp_path / "rl", tmp_path / "report"
    for name in RL_OUTPUTS:
        (rl / name / "x" if name in ("checkpoints", "trl") else rl / name).parent.mkdir(parents=True, exist_ok=True)
        (rl / name / "x" if name in ("checkpoints", "trl") else rl / name).write_text("old")
    (rl / "ledger.sqlite").write_text("looks")
    report.mkdir()
    for name in ("index.html", "report.json", "notes.md"):
        (report / name).write_text("old")
    lines: list[str] = []
    assert fresh_rl_dir(tmp_path, lines.append) == rl
    assert sorted(p.name for p in rl.iterdir()) == ["checkpoints", "ledger.sqlite"]
    assert not any((rl / "checkpoints").iterdir())
    assert sorted(p.name for p in report.iterdir()) == ["notes.md"]
    assert lines == [f"cleared the earlier RL run from {rl} (and its report)"]
    (report / "notes.md").unlink()
    (report / "index.html").write_text("old")
    fresh_rl_dir(tmp_path)
    assert not report.exists()  # emptied by the clearing, so removed
    step = rl / "checkpoints" / "step-0020"
    step.mkdir()
    (tmp_path / "sft").symlink_to(step)
    with pytest.raises(ValueError, match=r"lies inside .*rl, which a new RL run clears"):
        fresh_rl_dir(tmp_path)
    assert step.is_dir()
