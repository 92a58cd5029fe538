"""CI: the short configuration end to end (warm start + 20 RL steps on a 2-layer model).

Proves: no invalid answer ever gets a positive advantage (every rollout of every step), the
log, table and report are written with the seed-shaped columns, and a repeat with the same
seed is byte-identical (warm-start weights, and the first RL steps' log and rollouts), also
when the repeat scores its answers in two worker processes (``workers=2``).
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from gymkit.train.cli import ci_configs
from gymkit.train.report import COLUMNS, write_report
from gymkit.train.rl import run_rl
from gymkit.train.sft import run_sft

PREFIX = 3  # RL steps of the repeat


def _lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines()


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    sft, rl = ci_configs()
    a, b = tmp_path_factory.mktemp("run-a"), tmp_path_factory.mktemp("run-b")
    quiet = lambda line: None  # noqa: E731
    run_sft(sft, a, log=quiet)
    run_rl(rl, a, ledger=a / "ledger.sqlite", log=quiet)
    write_report(a)
    run_sft(sft, b, log=quiet)
    for stale in (b / "rl" / "table.json", b / "rl" / "checkpoints" / "step-0020" / "model.safetensors",
                  b / "report" / "index.html"):  # an earlier, longer run in the same folder
        stale.parent.mkdir(parents=True, exist_ok=True)
        stale.write_text("earlier run")
    run_rl(replace(rl, steps=PREFIX), b, ledger=b / "ledger.sqlite", log=quiet, workers=2)
    return a, b


def test_a_run_into_a_used_folder_leaves_nothing_of_the_earlier_run(runs: tuple[Path, Path]) -> None:
    """A re-run kept the earlier run's checkpoints, table and report beside its own logs; cut
    short, ``gymkit train report`` printed the old table over the new curves."""
    _, b = runs
    assert not (b / "report").exists()
    assert sorted(p.name for p in (b / "rl" / "checkpoints").iterdir()) == ["step-0000", "step-0003"]
    assert json.loads((b / "rl" / "table.json").read_text())["shipped"] in ("0", "3")


def test_a_damaged_warm_start_is_one_line_and_keeps_the_earlier_rl_run(runs: tuple[Path, Path], tmp_path: Path,
                                                                       capsys) -> None:
    import shutil

    from gymkit.cli import main

    a, _ = runs
    run = tmp_path / "run"
    shutil.copytree(a / "sft", run / "sft")
    (run / "rl").mkdir()
    (run / "rl" / "table.json").write_text("{}")
    model = run / "sft" / "model.safetensors"
    model.write_bytes(model.read_bytes()[:100])  # a save cut short
    assert main(["train", "rl", "--run", str(run), "--ci"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "cannot load the policy saved there" in err[0], err
    assert (run / "rl" / "table.json").read_text() == "{}"


def test_no_invalid_answer_ever_gets_a_positive_advantage(runs: tuple[Path, Path]) -> None:
    a, _ = runs
    rollouts = [json.loads(x) for x in _lines(a / "rl" / "rollouts.jsonl")]
    assert len(rollouts) == 20 * 4 * 12
    invalid = [r for r in rollouts if not r["valid"]]
    assert invalid, "the policy samples unconstrained: some answers must be malformed"
    assert all(r["advantage"] <= 1e-12 for r in invalid)
    assert any(r["valid"] for r in rollouts)
    log = [json.loads(x) for x in _lines(a / "rl" / "log.jsonl")]
    assert [r["step"] for r in log] == list(range(1, 21))
    for rec in log:
        assert rec["max_invalid_adv"] is None or rec["max_invalid_adv"] <= 1e-12
        for key in ("reward", "channels", "valid_share", "nonzero_adv_share", "kl", "entropy",
                    "zeta", "families"):
            assert key in rec
    assert any(rec["nonzero_adv_share"] > 0 for rec in log)  # the policy did get a signal


def test_updates_use_gdpo_batch_normalised_advantages(runs: tuple[Path, Path]) -> None:
    """Each step's update divides the env's GDPO advantages by their population std."""
    import numpy as np

    a, _ = runs
    rollouts = [json.loads(x) for x in _lines(a / "rl" / "rollouts.jsonl")]
    log = [json.loads(x) for x in _lines(a / "rl" / "log.jsonl")]
    for rec in log:
        adv = np.array([r["advantage"] for r in rollouts if r["step"] == rec["step"]])
        want = float(adv.std()) if adv.std() > 1e-12 else 1.0
        assert rec["adv_scale"] == pytest.approx(want, rel=1e-12)
    assert max(rec["adv_scale"] for rec in log) > 1.0  # the raw GDPO sum is larger than unit


def test_the_warm_start_follows_its_briefs(runs: tuple[Path, Path]) -> None:
    a, _ = runs
    summary = json.loads((a / "sft" / "summary.json").read_text())
    assert summary["config"]["directed"] is True
    assert summary["brief_compliant_share"] >= 0.9


def test_table_and_report_are_written_with_the_seed_columns(runs: tuple[Path, Path]) -> None:
    a, _ = runs
    table = json.loads((a / "rl" / "table.json").read_text())
    assert [r["step"] for r in table["rows"]] == [0, 10, 20]
    assert table["shipped"] in {"0", "10", "20"}
    best = max(table["rows"], key=lambda r: r["train_cpcv"])
    assert table["shipped"] == best["checkpoint"]  # selected on probe train CPCV only
    assert table["holdout"]["status"] in ("scored", "no valid answer: no holdout")
    rep = json.loads((a / "report" / "report.json").read_text())
    assert set(COLUMNS) <= set(rep["table"][0])
    page = (a / "report" / "index.html").read_text()
    assert page.count("<tr>") >= 4
    n_probe = table["rows"][0]["n"]  # the run's own probe size (--ci: 20)
    assert f"Train vs. holdout ({n_probe} frozen probe briefs" in page
    for ck in rep["redteam"].values():
        assert len(ck) <= 20
    # the read-out's IC to 4 places (read against the 0.005 threshold; "+0.00" hid it) and
    # turnover in %/day, as the legend gives the floor
    top = next(x for ck in rep["redteam"].values() for x in ck if x["valid"])
    assert f"<td>{top['ic']:+.4f}</td><td>{100 * top['turnover']:.1f}%</td>" in page
    for step in ("0000", "0010", "0020"):
        assert (a / "rl" / "checkpoints" / f"step-{step}" / "model.safetensors").is_file()


def test_the_same_seed_gives_byte_identical_runs_with_any_number_of_scoring_workers(runs: tuple[Path, Path]) -> None:
    a, b = runs
    for name in ("model.safetensors", "log.jsonl", "summary.json"):
        if name == "summary.json":
            sa = json.loads((a / "sft" / name).read_text())
            sb = json.loads((b / "sft" / name).read_text())
            sa.pop("train_seconds"), sb.pop("train_seconds")
            assert sa == sb
        else:
            assert (a / "sft" / name).read_bytes() == (b / "sft" / name).read_bytes()
    assert _lines(a / "rl" / "log.jsonl")[:PREFIX] == _lines(b / "rl" / "log.jsonl")
    n = PREFIX * 4 * 12
    assert _lines(a / "rl" / "rollouts.jsonl")[:n] == _lines(b / "rl" / "rollouts.jsonl")
    probe_a = [json.loads(x) for x in _lines(a / "rl" / "probe.jsonl")]
    probe_b = [json.loads(x) for x in _lines(b / "rl" / "probe.jsonl")]
    assert [r for r in probe_a if r["checkpoint"] == "0"] == [r for r in probe_b if r["checkpoint"] == "0"]
