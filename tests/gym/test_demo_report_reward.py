"""The demo and the tear sheet of its top answer show the same reward (the group's card)."""

from __future__ import annotations

import re

from gymkit.demo import score_demo, write_demo_report


def test_demo_tear_sheet_shows_the_demo_reward(tmp_path):
    run = score_demo("us46-default")
    top = run.top_index()
    assert top is not None
    alone = run.env.score(run.completions[top])
    path = write_demo_report(run, tmp_path, generated_at="")
    html = path.read_text(encoding="utf-8")
    shown = set(re.findall(r"<b>([+-]\d+\.\d{3})</b>", html))
    assert f"{run.cards[top].reward:+.3f}" in shown
    if f"{alone.reward:+.3f}" != f"{run.cards[top].reward:+.3f}":   # R2 moved it in the group
        assert f"{alone.reward:+.3f}" not in shown
