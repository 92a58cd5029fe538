"""The report entry points: study → page → ``out_dir/index.html``; reading answers files."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from gymkit.card import ScoreCard
from gymkit.env import Environment
from gymkit.jsonl import parse_json_line

from .analysis import as_completion, study_formula, study_group
from .build import answers_page, formula_page

__all__ = ["answers_report", "formula_report", "read_answers", "write_page"]


def write_page(html_text: str, out_dir: str | Path) -> Path:
    """Write ``html_text`` to ``out_dir/index.html`` (directories created); return the path."""
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise ValueError(f"report output {out} exists and is not a directory")
    out.mkdir(parents=True, exist_ok=True)
    path = out / "index.html"
    path.write_text(html_text, encoding="utf-8")
    return path


def _notes(env: Environment, look_note: str | None) -> tuple[str, ...]:
    return (*env.notes, look_note) if look_note else tuple(env.notes)


def formula_report(env: Environment, text: str, out_dir: str | Path, *, holdout: bool = False,
                   generated_at: str | None = None, label: str | None = None,
                   card: ScoreCard | None = None, look_note: str | None = None) -> Path:
    """Write the tear sheet of one answer (a bare formula or a completion); return its path.

    Train figures only unless ``holdout=True`` (claim the look first: :mod:`gymkit.holdout`);
    ``look_note``: which look that was (printed among the page's notes: a forced look shows).

    ``card``: its card as scored in a group (the demo passes it: the same reward shown)."""
    study = study_formula(env, text, holdout=holdout, label=label, card=card)
    return write_page(formula_page(study, _notes(env, look_note), generated_at), out_dir)


def answers_report(env: Environment, texts: Sequence[str], out_dir: str | Path, *,
                   labels: Sequence[str] | None = None, holdout: bool = False,
                   generated_at: str | None = None, look_note: str | None = None) -> Path:
    """Write the group and book tear sheet of ``texts`` scored as one group; return its path
    (``holdout``, ``look_note`` as in :func:`formula_report`)."""
    study = study_group(env, texts, labels, holdout=holdout)
    return write_page(answers_page(study, _notes(env, look_note), generated_at), out_dir)


def read_answers(path: str | Path) -> tuple[list[str], list[str]]:
    """Read an answers file; return (labels, answers ready to score).

    JSONL: one object per line with ``completion`` (a whole answer, taken verbatim) or
    ``formula`` (a bare formula, wrapped in ``<alpha>``) and an optional ``label`` or
    ``id``.  Any other file: one answer per non-empty line (a line without ``<alpha>`` is
    taken as a bare formula and wrapped).  Raises ``ValueError`` naming the line for a JSON
    object without either key.
    """
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"answers file {p} not found")
    lines = [(i + 1, ln) for i, ln in enumerate(p.read_text(encoding="utf-8").splitlines())
             if ln.strip()]
    labels: list[str] = []
    texts: list[str] = []
    as_json = bool(lines) and all(ln.lstrip().startswith("{") for _, ln in lines)
    for n, ln in lines:
        if as_json:
            obj = parse_json_line(ln, f"{p}:{n}")
            if not isinstance(obj, dict):
                raise ValueError(f"{p}:{n}: a JSON line must be an object")
            text = obj.get("completion")
            if text is None and isinstance(obj.get("formula"), str):
                text = as_completion(obj["formula"])
            if not isinstance(text, str):
                raise ValueError(f"{p}:{n}: a JSON line needs a string 'completion' or 'formula'")
            label = obj.get("label", obj.get("id", f"line {n}"))
            texts.append(text)
            labels.append(str(label))
        else:
            texts.append(as_completion(ln.strip()))
            labels.append(f"line {n}")
    if not texts:
        raise ValueError(f"answers file {p} holds no answers")
    return labels, texts
