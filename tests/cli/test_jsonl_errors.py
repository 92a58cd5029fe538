"""Every JSONL reader (score-file, briefs/probe answers, report answers) names FILE:LINE of a
line that is not JSON, counting blank lines, and reads the good lines around it."""

from __future__ import annotations

import pytest

from gymkit.jsonl import iter_json_lines, read_jsonl
from gymkit.report.api import read_answers
from gymkit.scorefile import read_records

GOOD = '{"completion": "<alpha>rank(close)</alpha>", "id": "a"}'


@pytest.mark.parametrize("read", [
    read_records,
    lambda p: read_jsonl(p, ("completion",), "need a string field 'completion'"),
    read_answers,
], ids=["scorefile", "read_jsonl", "report"])
def test_a_bad_line_is_named_with_its_file_and_line(tmp_path, read):
    path = tmp_path / "answers.jsonl"
    path.write_text(f"{GOOD}\n\n{{bad\n{GOOD}\n", encoding="utf-8")
    with pytest.raises(ValueError, match=rf"^{path}:3: not valid JSON \("):
        read(path)


def test_blank_lines_are_skipped_and_numbers_kept(tmp_path):
    path = tmp_path / "answers.jsonl"
    path.write_text(f"\n{GOOD}\n   \n{GOOD}\n", encoding="utf-8")
    assert [n for n, _ in iter_json_lines(path)] == [2, 4]
