"""``gymkit score-file`` on bad records: each becomes an error row naming its line and reason,
the run finishes, and a resume skips everything already written (error rows included)."""

from __future__ import annotations

import json

from gymkit.cli import main

GOOD = '{"id": "%s", "completion": "<alpha>rank(-ts_sum(returns, 5))</alpha>"}'


def _rows(path):
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()]


def test_jsonl_surrogate_and_bad_lines_become_error_rows(tmp_path, capsys) -> None:
    """Assertion: a JSONL file with a lone surrogate, a 0xFF byte, a line that is not JSON and
    a record without an answer: exit 0, every line has a row, each bad one says
    'FILE:LINE: reason' with its code; running again scores nothing new."""
    src = tmp_path / "answers.jsonl"
    src.write_bytes(b"\n".join([
        (GOOD % "a").encode(),
        b'{"id": "s", "completion": "<alpha>rank(close)</alpha>\\ud800"}',
        b'{"id": "f", "completion": "\xff"}',
        b"{not json",
        b'{"id": "n", "text": "no answer"}',
        (GOOD % "z").encode(),
    ]) + b"\n")
    out = tmp_path / "cards.jsonl"
    assert main(["score-file", str(src), "--out", str(out), "--no-progress"]) == 0
    err = capsys.readouterr().err
    assert "6 scored (2 valid)" in err and "4 bad records" in err
    rows = {r["id"]: r for r in _rows(out)}
    assert rows["a"]["valid"] and rows["z"]["valid"]
    assert rows["s"]["error"]["code"] == "invalid_unicode"
    assert rows["s"]["error"]["message"].startswith(f"{src}:2: unpaired surrogate")
    assert rows["2"]["error"]["message"] == f"{src}:3: not valid UTF-8 (byte 0xff at column 28)"
    assert rows["3"]["error"]["message"].startswith(f"{src}:4: not valid JSON (")
    assert rows["n"]["error"]["message"] == f"{src}:5: no string 'completion' (or 'formula') field"
    assert [r["line"] for r in _rows(out) if not r["valid"]] == [2, 3, 4, 5]
    before = out.read_bytes()
    assert main(["score-file", str(src), "--out", str(out), "--no-progress"]) == 0
    assert "0 scored (0 valid), 6 already in" in capsys.readouterr().err
    assert out.read_bytes() == before


def test_text_file_with_a_0xff_byte_finishes(tmp_path, capsys) -> None:
    """Assertion: a plain text file whose second line holds a 0xFF byte: exit 0, the good lines
    are scored, the bad one is an error row naming line 2 and the byte's column."""
    src = tmp_path / "formulas.txt"
    src.write_bytes(b"rank(close)\nrank(\xffopen)\nrank(-returns)\n")
    out = tmp_path / "cards.jsonl"
    assert main(["score-file", str(src), "--out", str(out), "--no-progress"]) == 0
    rows = _rows(out)
    assert [r["id"] for r in rows] == ["0", "1", "2"]
    assert rows[1]["error"] == {"code": "bad_record",
                                "message": f"{src}:2: not valid UTF-8 (byte 0xff at column 6)"}
    assert rows[0]["formula"] == "rank(close)" and rows[2]["formula"] == "rank(-returns)"
