"""``gymkit audit``: passes on the default environment and on the real panel, writes a JSON
report, and fails — naming the check — on deliberately leaky configurations."""

from __future__ import annotations

import json

import pytest

from gymkit.audit.checks import CHECK_NAMES, run_checks
from gymkit.audit.determinism import check_determinism
from gymkit.audit.target import build_target, load_answers
from gymkit.cli import main
from gymkit.config import EnvConfig
from gymkit.data import REAL_DATA_PATH
from gymkit.data.splits import Split

from .conftest import inject_operator, lead_kernel


def test_every_check_passes_on_the_default_environment(audit) -> None:
    assert list(audit) == list(CHECK_NAMES)
    failed = {n: (r.figure, r.detail) for n, r in audit.items() if not r.passed}
    assert not failed, failed


def test_cli_prints_the_checklist_and_writes_json(tmp_path, capsys) -> None:
    out = tmp_path / "report.json"
    rc = main(["audit", "--checks", "static_lookback,hand_play,non_triviality,native_engine",
               "--json", str(out)])
    text = capsys.readouterr().out
    assert rc == 0, text
    assert "PASS  hand_play" in text and "4 checks: 4 PASS, 0 FAIL" in text
    report = json.loads(out.read_text())
    assert report["passed"] and report["failed"] == []
    assert [c["name"] for c in report["checks"]] == ["static_lookback", "hand_play",
                                                      "non_triviality", "native_engine"]
    assert len(report["holdout_sha256"]) == 64 and report["env_id"] == "us46-default"


def test_cli_fails_naming_the_check_on_a_leaky_split(monkeypatch, capsys, tmp_path) -> None:
    """A test-only configuration whose scoring sees the holdout rows (unseeded archive, so
    the environment builds fast)."""
    config = tmp_path / "leaky.toml"
    EnvConfig(env_id="leaky-test", archive={"seed": "none"}).save(config)
    monkeypatch.setattr(Split, "train", lambda self, panel: panel)
    rc = main(["audit", "--config", str(config), "--checks", "frozen_holdout,static_lookback"])
    text = capsys.readouterr().out
    assert rc == 1
    assert "FAIL  frozen_holdout" in text and "PASS  static_lookback" in text
    assert "-> FAIL (frozen_holdout)" in text


def test_cli_fails_naming_the_check_with_a_look_ahead_operator(monkeypatch, capsys) -> None:
    inject_operator(monkeypatch, "lead", lead_kernel)
    rc = main(["audit", "--checks", "static_lookback"])
    text = capsys.readouterr().out
    assert rc == 1 and "FAIL  static_lookback" in text and "lead: LOOK-AHEAD" in text


def test_cli_rejects_unknown_checks_and_bad_markets(capsys) -> None:
    assert main(["audit", "--checks", "nope"]) == 1
    assert "unknown audit check(s) ['nope']" in capsys.readouterr().err
    assert main(["audit", "--market", "/no/such/file.csv"]) == 1
    assert "--market '/no/such/file.csv' is neither" in capsys.readouterr().err


def test_answer_files_are_read_as_groups(tmp_path) -> None:
    a = tmp_path / "a.json"
    a.write_text(json.dumps([["<alpha>rank(close)</alpha>", "x"], ["y"]]))
    assert load_answers(a) == [["<alpha>rank(close)</alpha>", "x"], ["y"]]
    b = tmp_path / "b.jsonl"
    b.write_text('{"group": 1, "completion": "p"}\n{"group": 1, "completion": "q"}\n'
                 '{"group": 2, "completion": "r"}\n')
    assert load_answers(b) == [["p", "q"], ["r"]]
    c = tmp_path / "c.txt"
    c.write_text("p\nq\n\nr\n")
    assert load_answers(c) == [["p", "q"], ["r"]]
    with pytest.raises(ValueError, match="no answers found"):
        (tmp_path / "d.txt").write_text("\n\n")
        load_answers(tmp_path / "d.txt")


def test_variance_on_given_answers(target) -> None:
    """Groups of one repeated invalid answer have no variance: the check fails.  (A repeated
    VALID answer does vary: R9 charges each repeat -0.3.)"""
    from gymkit.audit.checklist import check_variance
    from gymkit.audit.target import AuditTarget

    same = AuditTarget(target.config, target.market, target.spec,
                       answers=[["no tag"] * 4] * 3)
    same._env = target.env
    res = check_variance(same)
    assert not res.passed and res.figure.startswith("0/3 groups with reward variance")


@pytest.mark.real
@pytest.mark.skipif(not REAL_DATA_PATH.is_file(), reason="../shared/data/real is absent")
def test_every_check_passes_on_the_real_panel() -> None:
    """The whole audit on the real 46-stock panel (split adapted: last 252 sessions held out).
    The determinism check runs without its process pool here to keep CI short (the pool leg
    is the same code as on the default market, where it runs; ``gymkit audit --market real``
    runs it in full)."""
    real = build_target("us46-default", market="real")
    assert any(n.startswith("split adapted to the panel") for n in real.notes)
    results = run_checks(real, [n for n in CHECK_NAMES if n != "determinism"])
    results.append(check_determinism(real, workers=0))
    failed = {r.name: (r.figure, r.detail) for r in results if not r.passed}
    assert not failed, failed
    assert len(results) == len(CHECK_NAMES)
