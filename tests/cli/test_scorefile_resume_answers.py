"""``gymkit score-file`` resumes only the cards of this input's answers: ids alone are not
enough (a text file's ids are its line numbers), so an output written for another or an edited
input is refused in one line and left as it was; a group that a stopped run wrote only in part
is scored again whole, as an uninterrupted run scores it."""

from __future__ import annotations

import json

import pytest

from gymkit.cli import main


def _jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _run(capsys, src, out, *extra):
    rc = main(["score-file", str(src), "--out", str(out), "--workers", "1", "--no-progress", *extra])
    return rc, capsys.readouterr().err.strip().splitlines()


@pytest.mark.parametrize("out_name", ["cards.jsonl", "cards.parquet"])
def test_an_edited_or_another_input_is_refused_and_the_output_kept(tmp_path, capsys, out_name):
    out = tmp_path / out_name
    first = tmp_path / "first.txt"
    first.write_text("rank(-returns)\nts_rank(volume, 10)\n", encoding="utf-8")
    rc, _ = _run(capsys, first, out)
    assert rc == 0
    before = out.read_bytes()
    # the same ids (line numbers), another answer on line 2: its card would be kept silently
    edited = tmp_path / "edited.txt"
    edited.write_text("rank(-returns)\nbad((\nrank(close)\n", encoding="utf-8")
    rc, err = _run(capsys, edited, out)
    assert rc == 1 and err[-1].startswith(f"gymkit score-file: error: {out}: row 2 (id '1') was "
                                          f"scored for another answer than {edited}'s record "
                                          "(line 2); resuming would mix the two in one file")
    assert err[-1].endswith("pass --restart or another --out")
    # other ids altogether: the output's rows are not this input's
    other = _jsonl(tmp_path / "other.jsonl", [{"id": "x", "formula": "rank(-returns)"}])
    rc, err = _run(capsys, other, out)
    assert rc == 1 and f"{out}: row 1 has id '0', which {other} does not have" in err[-1]
    assert out.read_bytes() == before
    # the input itself, grown by a line: resumed, the new line scored
    grown = tmp_path / "grown.txt"
    grown.write_text("rank(-returns)\nts_rank(volume, 10)\nrank(close)\n", encoding="utf-8")
    rc, err = _run(capsys, grown, out)
    assert rc == 0 and "1 scored" in err[-1] and "2 already in" in err[-1]
    rc, _ = _run(capsys, grown, tmp_path / f"fresh{out.suffix}")
    assert out.read_bytes() == (tmp_path / f"fresh{out.suffix}").read_bytes()


def test_a_row_without_a_digest_is_refused(tmp_path, capsys):
    src = _jsonl(tmp_path / "a.jsonl", [{"id": "a", "formula": "rank(-returns)"}])
    out = tmp_path / "cards.jsonl"
    assert _run(capsys, src, out)[0] == 0
    row = json.loads(out.read_text())
    del row["answer_digest"]
    out.write_text(json.dumps(row) + "\n")
    rc, err = _run(capsys, src, out)
    assert rc == 1 and "row 1 (id 'a') has no answer_digest (written by an older gymkit)" in err[-1]


GROUPS = [{"id": f"{g}{i}", "prompt": g, "formula": f}
          for g in ("p", "q")
          for i, f in enumerate(["rank(-returns)", "rank(close)", "rank(-ts_delta(close, 3))"])]


def test_a_group_stopped_mid_write_is_scored_again_whole(tmp_path, capsys):
    src = _jsonl(tmp_path / "groups.jsonl", GROUPS)
    full = tmp_path / "full.jsonl"
    assert _run(capsys, src, full, "--group-field", "prompt")[0] == 0
    lines = full.read_bytes().splitlines(keepends=True)
    assert len(lines) == 6
    part = tmp_path / "part.jsonl"
    part.write_bytes(b"".join(lines[:4]) + lines[4][:30])  # died writing group q's second row
    rc, err = _run(capsys, src, part, "--group-field", "prompt")
    assert rc == 0 and "3 scored" in err[-1] and "3 already in" in err[-1]
    assert part.read_bytes() == full.read_bytes()


def test_a_group_grown_after_it_was_scored_is_refused(tmp_path, capsys):
    src = _jsonl(tmp_path / "groups.jsonl", GROUPS)
    out = tmp_path / "cards.jsonl"
    assert _run(capsys, src, out, "--group-field", "prompt")[0] == 0
    grown = _jsonl(tmp_path / "grown.jsonl", [*GROUPS[:3], {"id": "p9", "prompt": "p",
                                                            "formula": "rank(open)"}, *GROUPS[3:]])
    before = out.read_bytes()
    rc, err = _run(capsys, grown, out, "--group-field", "prompt")
    assert rc == 1 and f"{out}: group 'p' is partly scored (3 of 4 answers)" in err[-1]
    assert out.read_bytes() == before


def test_a_stopped_group_is_not_cut_when_the_resume_is_refused(tmp_path, capsys):
    """The stopped group's rows are cut only once the resume is accepted: resumed on another
    environment, the output keeps every complete row it had."""
    src = _jsonl(tmp_path / "groups.jsonl", GROUPS)
    full = tmp_path / "full.jsonl"
    assert _run(capsys, src, full, "--group-field", "prompt")[0] == 0
    lines = full.read_bytes().splitlines(keepends=True)
    part = tmp_path / "part.jsonl"
    part.write_bytes(b"".join(lines[:4]))  # group p whole, group q's first row
    rc, err = _run(capsys, src, part, "--group-field", "prompt", "--env", "us46-harsh")
    assert rc == 1 and "was scored on another environment" in err[-1]
    assert part.read_bytes() == b"".join(lines[:4])


def test_ctrl_c_says_where_the_rows_are_and_the_same_command_resumes(tmp_path, capsys):
    """Interrupted mid-file, score-file says how many new rows it kept and where; the rows are
    whole, and the same call finishes the file with the bytes of an uninterrupted run."""
    import io

    import gymkit
    from gymkit.scorefile import score_file

    real = gymkit.make("us46-default")

    class StopsAtThird:
        def __init__(self) -> None:
            self.calls = 0

        def __getattr__(self, name):
            return getattr(real, name)

        def score(self, *a, **k):
            self.calls += 1
            if self.calls == 3:
                raise KeyboardInterrupt
            return real.score(*a, **k)

    src = tmp_path / "f.txt"
    src.write_text("rank(-returns)\nrank(close)\nrank(open)\nrank(-ts_delta(close, 3))\n")
    out, full = tmp_path / "cards.jsonl", tmp_path / "full.jsonl"
    stream = io.StringIO()
    with pytest.raises(KeyboardInterrupt):
        score_file(src, out, env=StopsAtThird(), stream=stream)
    assert (f"score-file: stopped after 2 new row(s), kept in {out}; the same command resumes"
            in stream.getvalue())
    assert len(out.read_text().splitlines()) == 2
    score_file(src, out, env=real, progress=False)
    score_file(src, full, env=real, progress=False)
    assert out.read_bytes() == full.read_bytes()


def test_workers_below_one_is_a_usage_error(tmp_path, capsys):
    src = tmp_path / "f.txt"
    src.write_text("rank(-returns)\n")
    rc = main(["score-file", str(src), "--out", str(tmp_path / "o.jsonl"), "--workers", "0"])
    assert rc == 2 and "--workers: must be >= 1, not 0" in capsys.readouterr().err
