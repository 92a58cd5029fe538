"""One answer size limit everywhere an answer enters: score-file and the verl adapter."""

from __future__ import annotations

import json

from gymkit.cli import main
from gymkit.dsl.extract import MAX_ANSWER_CHARS
from gymkit.verifiers.channels import INVALID_REWARDS

ANSWER = "<alpha>rank(-returns)</alpha>"
TOO_LONG = "<think>" + "x" * MAX_ANSWER_CHARS + "</think>" + ANSWER


def test_score_file_rejects_an_answer_over_the_limit_and_scores_the_rest(tmp_path, capsys):
    src, out = tmp_path / "answers.jsonl", tmp_path / "cards.jsonl"
    src.write_text("\n".join(json.dumps({"id": i, "completion": c})
                             for i, c in enumerate([TOO_LONG, ANSWER])) + "\n")
    assert main(["score-file", str(src), "--out", str(out), "--no-progress"]) == 0
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    assert rows[0]["valid"] is False and rows[0]["error"]["code"] == "answer_too_long"
    assert rows[0]["reward"] == INVALID_REWARDS["text"]
    assert rows[1]["valid"] is True


def test_verl_compute_score_rejects_an_answer_over_the_limit():
    from gymkit.adapters import verl

    res = verl.compute_score("gymkit/us46-default", TOO_LONG, None, {})
    assert res["valid"] == 0.0 and res["score"] == INVALID_REWARDS["text"]
    assert res["internal_error"] == 0.0
