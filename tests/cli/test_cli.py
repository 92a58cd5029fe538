"""The command line: help reads like a manual, exit codes, one-line errors, score, env, demo, report."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib

import pytest

import gymkit
from gymkit.cli import COMMANDS, main

GOOD = "rank(-ts_sum(returns, 5))"


def run(capsys, *argv):
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def test_help_is_a_manual_with_examples_and_exit_codes():
    p = subprocess.run([sys.executable, "-m", "gymkit.cli", "--help"], capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 0
    for section in ("start here:", "examples:", "exit codes:", "gymkit demo", "--debug"):
        assert section in p.stdout
    for cmd in COMMANDS:
        assert cmd.name in p.stdout
    assert "gymkit score-file answers.jsonl --out cards.jsonl" in p.stdout


def test_subcommand_help_shows_its_examples(capsys):
    rc, out, _ = run(capsys, "score", "--help")
    assert rc == 0 and "examples:" in out and "gymkit score -" in out


@pytest.mark.parametrize("argv", [[], ["bogus"], ["score"], ["score-file", "x.jsonl"],
                                  ["report", "--out", "/tmp/unused-gymkit-report"]])
def test_usage_errors_exit_2(capsys, argv):
    rc, _out, _err = run(capsys, *argv)
    assert rc == 2


@pytest.mark.parametrize(("argv", "bad", "near"), [(["scroe", GOOD], "scroe", "score"),
                                                   (["train", "reserch"], "reserch", "research"),
                                                   (["briefs", "--format", "verl-parqet"],
                                                    "verl-parqet", "verl-parquet")])
def test_a_mistyped_choice_names_the_nearest_one(capsys, argv, bad, near):
    """A mistyped command, subcommand or option value: usage error (exit 2) naming the nearest
    choice; a word near nothing gets no guess."""
    rc, _, err = run(capsys, *argv)
    assert rc == 2 and f"invalid choice: {bad!r}" in err
    assert err.rstrip().endswith(f"; did you mean {near!r}?")
    rc, _, err = run(capsys, "zzz")
    assert rc == 2 and "invalid choice: 'zzz'" in err and "did you mean" not in err


def test_user_error_is_one_line_exit_1_and_debug_shows_traceback(capsys):
    rc, _out, err = run(capsys, "env", "show", "no-such-env")
    assert rc == 1
    assert err.strip().count("\n") == 0 and err.startswith("gymkit env: error: unknown environment")
    assert "Traceback" not in err
    rc, _, err = run(capsys, "--debug", "env", "show", "no-such-env")
    from gymkit.registry import list_envs

    assert rc == 1 and "Traceback" in err
    assert err.rstrip().endswith(f"registered: {sorted(list_envs())}")


def test_internal_error_exits_3(capsys, monkeypatch):
    import gymkit.cli.env as sc

    def boom(args):
        raise RuntimeError("kaput")

    monkeypatch.setattr(sc, "run", boom)
    rc, _, err = run(capsys, "env", "list")
    assert rc == 3 and "internal error: RuntimeError: kaput" in err and "--debug" in err
    assert "Traceback" not in err


def test_score_prints_a_table_with_every_channel(capsys, shared_env):
    rc, out, _ = run(capsys, "score", GOOD)
    assert rc == 0 and out.startswith("VALID")
    env = shared_env()
    for name in env.channels:
        assert f" {name} " in out
    card = env.score(f"<alpha>{GOOD}</alpha>")
    assert f"reward {card.reward:+.3f}" in out and "net Sharpe" in out


def test_score_without_a_brief_says_how_to_give_one_on_the_command_line(capsys):
    """R13 is off without a brief; the note named only the Python call, which a shell user
    cannot type (the third walkthrough).  It names the CLI's flag too, and the flag works; and
    the score-file and HTTP doors, whose users read the same note in /v1/info and the cards."""
    from gymkit.briefs import generate_briefs

    rc, out, _ = run(capsys, "score", GOOD)
    assert rc == 0 and "note: brief_compliance: counts only when a brief is given" in out
    assert "`gymkit score --brief ID`" in out
    assert "score-file: a record's brief_id or brief" in out and "HTTP: the request's brief" in out
    brief = generate_briefs()[0]
    rc, out, _ = run(capsys, "score", GOOD, "--brief", brief.brief_id)
    assert rc == 0 and " brief_compliance " in out and "note: brief_compliance" not in out


def test_score_json_is_the_card(capsys, shared_env):
    rc, out, _ = run(capsys, "score", GOOD, "--json")
    assert rc == 0
    card = shared_env().score(f"<alpha>{GOOD}</alpha>")
    assert json.loads(out) == card.to_dict(timings=False)


def test_score_group_and_invalid_answer(capsys, monkeypatch):
    import io

    monkeypatch.setattr(sys, "stdin", io.StringIO("rank(close\n\n"))
    rc, out, _ = run(capsys, "score", GOOD, "rank(-returns)", "-")
    assert rc == 0 and "one group of 3 answers" in out and "[syntax]" in out
    rc, out, _ = run(capsys, "score", "rank(close")
    assert rc == 0 and out.startswith("INVALID")  # an invalid answer is a result, not an error


def test_env_list_and_show(capsys):
    rc, out, _ = run(capsys, "env", "list")
    assert rc == 0 and out.startswith("us46-default")
    rc, out, _ = run(capsys, "env", "show", "us46-default")
    assert rc == 0 and "R1   cpcv" in out and "R3   jepa_stress" in out and "stress worlds" in out
    rc, out, _ = run(capsys, "env", "show", "us46-default", "--toml")
    assert rc == 0
    assert gymkit.EnvConfig.from_toml(out) == gymkit.registry.ENVIRONMENTS["us46-default"]
    assert tomllib.loads(out)["env_id"] == "us46-default"


def test_demo_writes_the_tear_sheet_and_prints_its_path_last(capsys, tmp_path):
    out_dir = tmp_path / "demo"
    rc, out, _ = run(capsys, "demo", "--out", str(out_dir), "--no-timestamp")
    assert rc == 0
    lines = out.rstrip().splitlines()
    assert "tear sheet of the top answer" in lines[-2]
    assert lines[-2].endswith(str((out_dir / "index.html").resolve()))
    html = (out_dir / "index.html").read_text()
    assert '<section id="channels"' in html and "Generated" not in html
    assert "sessions" in out and "GDPO:" in out
    # every note names the answers it is about: the capped factor clone (#3) is named
    notes = [ln.strip() for ln in lines if ln.strip().startswith("note")]
    assert notes and all(n.startswith("note (#") for n in notes)
    assert any(n.startswith("note (#3") and "reward capped at 0" in n for n in notes)


def test_demo_json_and_no_report(capsys, tmp_path):
    rc, out, _err = run(capsys, "demo", "--json", "--no-report", "--out", str(tmp_path / "x"))
    assert rc == 0 and not (tmp_path / "x").exists()
    rows = [json.loads(line) for line in out.splitlines()]
    assert len(rows) == 12 and {"label", "advantage", "valid", "channels"} <= set(rows[0])


def test_report_cli_is_reproducible(capsys, tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    for d in (a, b):
        rc, out, _ = run(capsys, "report", GOOD, "--out", str(d), "--no-timestamp", "--no-holdout")
        assert rc == 0 and out.startswith("tear sheet: ")
    assert (a / "index.html").read_bytes() == (b / "index.html").read_bytes()
    rc, _, _ = run(capsys, "report", GOOD, "--out", str(tmp_path / "c"), "--no-holdout")
    assert rc == 0 and "Generated " in (tmp_path / "c" / "index.html").read_text()


def test_report_cli_answers_file(capsys, tmp_path):
    f = tmp_path / "answers.jsonl"
    f.write_text("\n".join(json.dumps({"formula": x, "label": x[:10]}) for x in
                           [GOOD, "rank(ts_std(volume, 20))", "rank(close"]) + "\n")
    rc, _out, _ = run(capsys, "report", "--answers", str(f), "--out", str(tmp_path / "r"),
                     "--no-holdout", "--no-timestamp")
    assert rc == 0
    html = (tmp_path / "r" / "index.html").read_text()
    assert '<section id="heatmap"' in html and "syntax" in html
    rc, _, err = run(capsys, "report", "--answers", str(tmp_path / "missing.jsonl"), "--out", str(tmp_path / "r"))
    assert rc == 1 and "not found" in err


def test_an_invalid_formula_points_at_where_it_fails(capsys):
    """A new user read "at 26" and counted characters: the card table now shows the formula
    with a caret under the offending character, and a long formula around that spot."""
    from gymkit.cli.score import _caret

    rc, out, _ = run(capsys, "score", "rank(ts_mean(close, 5)) + )")
    lines = out.splitlines()
    i = next(k for k, x in enumerate(lines) if x.startswith("  [syntax] "))
    assert rc == 0 and lines[i + 1] == "  rank(ts_mean(close, 5)) + )"
    assert lines[i + 2] == "  " + " " * 26 + "^"  # the ')' at offset 26
    long = "rank(close) + " * 20 + "?" + " + rank(open)" * 10
    at = long.index("?")
    shown, caret = _caret(long, at, width=10)
    assert shown == "  …" + long[at - 10:at + 10] + "…" and shown[caret.index("^")] == "?"
    assert _caret("rank(close)", None) == [] and _caret(None, 3) == [] and _caret("a\nb", 1) == []


def test_the_group_table_marks_a_capped_answer_and_explains_its_marks(capsys):
    """A new user saw the best-CPCV answer of a group get a negative advantage and an invalid
    one a cpcv of -0.80, with nothing on the table saying why: the factor clone is marked
    'cap' (R10) and each mark used has a footnote."""
    rc, out, _ = run(capsys, "score", "rank(-ts_sum(returns, 5))", "rank(close", "ts_mean(volume, 5)")
    rows = out.splitlines()
    assert rc == 0 and rows[2].split()[:2] == ["0", "cap"] and rows[3].split()[:2] == ["1", "NO"]
    assert rows[4].split()[:2] == ["2", "yes"]
    assert rows[5].startswith("  cap: valid, but R10 (motif guard) capped its reward at 0")
    assert rows[6] == "  NO: invalid; its cpcv is the fixed gate penalty, its advantage never positive"
    rc, out, _ = run(capsys, "score", "ts_mean(volume, 5)", "rank(ts_std(volume, 8))")
    assert rc == 0 and "cap:" not in out and "NO:" not in out  # no mark, no footnote
