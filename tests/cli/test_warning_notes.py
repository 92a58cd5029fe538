"""Warnings reach a CLI user as ``gymkit: note:`` lines, each once, with no Python source line
(a new user saw ``/…/gymkit/env.py:275: RuntimeWarning: only 0% of advantages …`` followed by
the code line, and each data warning of ``gymkit audit --market`` three times)."""

from __future__ import annotations

import json
import subprocess
import sys


def test_a_low_signal_group_is_one_note_line(tmp_path):
    src = tmp_path / "answers.jsonl"
    rows = [{"id": f"a{i}", "group": g, "completion": "rank(close)"}  # no tag: invalid
            for g in ("g1", "g2") for i in range(3)]
    src.write_text("".join(json.dumps({**r, "id": f"{r['group']}-{r['id']}"}) + "\n" for r in rows))
    out = tmp_path / "cards.jsonl"
    proc = subprocess.run([sys.executable, "-m", "gymkit.cli", "score-file", str(src), "--out",
                           str(out), "--group-field", "group", "--workers", "1"],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    notes = [x for x in proc.stderr.splitlines() if "advantages are non-zero" in x]
    assert notes == ["gymkit: note: only 0% of advantages are non-zero (valid 0/3, eligible 0); "
                     "check the advantage floor and validity rules"]
    assert "Warning" not in proc.stderr and ".py:" not in proc.stderr
