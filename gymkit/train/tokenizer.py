"""A word-level tokenizer over the DSL vocabulary plus the words of the design briefs.

Built by the project from its own tables (no hub): special tokens, the ``<alpha>`` tags,
every DSL operator, field and group level, the punctuation of the grammar, the integers
1..252 (windows), a few numeric literals, then every word of the generated briefs.
Encoding a formula never fails: an unknown piece becomes ``<unk>`` (which the gate rejects
once decoded).  A brief made by :mod:`gymkit.briefs` is encoded as its six facets, one token
each (``mechanism=volume_var`` ...: the same information as its sentence, 6 tokens instead
of ~90, which is what makes CPU training affordable); any other brief text as its words.  Saved and loaded as one JSON file; the same vocabulary gives the same ids.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from pathlib import Path

__all__ = ["BOS", "EOS", "PAD", "RESEARCH_TOKENS", "SEP", "TAG_CLOSE", "TAG_OPEN", "UNK", "Tokenizer",
           "brief_pieces", "build_tokenizer", "research_tokenizer", "text_pieces"]

PAD, BOS, SEP, EOS, UNK = "<pad>", "<bos>", "<sep>", "<eos>", "<unk>"
TAG_OPEN, TAG_CLOSE = "<alpha>", "</alpha>"
SPECIALS = (PAD, BOS, SEP, EOS, UNK, TAG_OPEN, TAG_CLOSE)
PUNCT = ("(", ")", ",", "+", "-", "*", "/", "<", ">", "?", ":", "^")
LITERALS = ("0.5", "0.001", "1.5", "2.0", "0.1", "0.25")
_FORMULA_RE = re.compile(r"</?alpha>|[A-Za-z_][A-Za-z_0-9]*|\d+\.\d+|\d+|<=|>=|==|!=|\S")
_BRIEF_RE = re.compile(r"[a-z0-9_]+|[^\sa-z0-9_]")
_NO_SPACE_BEFORE = {")", ",", TAG_CLOSE}
_NO_SPACE_AFTER = {"(", TAG_OPEN}


class Tokenizer:
    """Token <-> id tables; ``encode_brief``, ``encode_answer`` and ``decode`` (module doc)."""

    def __init__(self, tokens: Sequence[str]) -> None:
        self.tokens = list(tokens)
        self.ids = {t: i for i, t in enumerate(self.tokens)}
        if len(self.ids) != len(self.tokens):
            raise ValueError("tokenizer vocabulary holds a duplicate token")
        for s in SPECIALS:
            if s not in self.ids:
                raise ValueError(f"tokenizer vocabulary lacks the special token {s}")
        self.pad_id, self.bos_id, self.sep_id = self.ids[PAD], self.ids[BOS], self.ids[SEP]
        self.eos_id, self.unk_id = self.ids[EOS], self.ids[UNK]

    def __len__(self) -> int:
        return len(self.tokens)

    def _ids(self, pieces: Iterable[str]) -> list[int]:
        return [self.ids.get(p, self.unk_id) for p in pieces]

    def encode_brief(self, brief: str) -> list[int]:
        """Prompt ids: ``<bos>`` + the brief's facet tokens (or its words) + ``<sep>``."""
        return [self.bos_id, *self._ids(brief_pieces(brief)), self.sep_id]

    def encode_answer(self, formula: str) -> list[int]:
        """Answer ids: ``<alpha>`` + formula pieces + ``</alpha>`` + ``<eos>``."""
        return [self.ids[TAG_OPEN], *self._ids(_FORMULA_RE.findall(formula)),
                self.ids[TAG_CLOSE], self.eos_id]

    def decode(self, ids: Iterable[int]) -> str:
        """Completion text of answer ids, stopping at ``<eos>``; pads dropped, anything else kept."""
        out: list[str] = []
        for i in ids:
            t = self.tokens[i] if 0 <= i < len(self.tokens) else UNK
            if t == EOS:
                break
            if t in (PAD, BOS, SEP):
                continue
            out.append(t)
        text = ""
        prev = ""
        for t in out:
            glue = (not text or t in _NO_SPACE_BEFORE or prev in _NO_SPACE_AFTER
                    or (t == "(" and (prev[:1].isalpha() or prev[:1] == "_")))
            text += t if glue else " " + t
            prev = t
        return text

    def save(self, path: str | Path) -> None:
        """Write the vocabulary as JSON (``{"tokens": [...]}``)."""
        Path(path).write_text(json.dumps({"tokens": self.tokens}, indent=0) + "\n", encoding="utf-8")

    @classmethod
    def load(cls, path: str | Path) -> Tokenizer:
        """Read a vocabulary written by :meth:`save`."""
        return cls(json.loads(Path(path).read_text(encoding="utf-8"))["tokens"])


def brief_pieces(brief: str) -> list[str]:
    """The prompt pieces of a brief: ``facet=key`` tokens of a generated brief, else its words."""
    from gymkit.briefs import FACETS, brief_from_text

    b = brief_from_text(brief)
    if b is not None:
        return [f"{f}={b.facets[f]}" for f in FACETS]
    return _BRIEF_RE.findall(brief.lower())


def build_tokenizer(briefs: Iterable[str] | None = None) -> Tokenizer:
    """The project's tokenizer: DSL vocabulary (module doc) + words of ``briefs``.

    ``briefs`` defaults to the texts of :func:`gymkit.briefs.generate_briefs` (train, holdout
    and probe alike: a word is a word); the order is fixed, so the ids are reproducible.
    """
    from gymkit.briefs import generate_briefs
    from gymkit.dsl.operators import FIELDS, LEVELS, NAMES

    if briefs is None:
        briefs = [b.text for b in generate_briefs()]
    tokens: list[str] = list(SPECIALS)
    seen = set(tokens)

    def add(t: str) -> None:
        if t not in seen:
            seen.add(t)
            tokens.append(t)

    for t in (*sorted(NAMES), *sorted(FIELDS), *LEVELS, *PUNCT, *LITERALS):
        add(t.lower())
    for d in range(1, 253):
        add(str(d))
    from gymkit.briefs import FACETS

    for f, opts in FACETS.items():
        for o in opts:
            add(f"{f}={o.key}")
    words: set[str] = set()
    for text in briefs:
        words.update(_BRIEF_RE.findall(text.lower()))
    for w in sorted(words):
        add(w)
    return Tokenizer(tokens)


#: Tokens a multi-turn research policy (:mod:`gymkit.train.research_rl`) adds after a
#: vocabulary's own: the tool verbs it writes (``<submit> i`` names its i-th backtest), and the
#: bucketed observation it reads (``obs:<field>:<bucket>``; ``obs:calls:K``, K = 0..32 calls left).
RESEARCH_TOKENS: tuple[str, ...] = (
    "<backtest>", "<describe>", "<submit>", "<obs>", "</obs>",
    "obs:valid", "obs:invalid", "obs:error", "obs:described", "obs:over",
    *(f"obs:reward:{i}" for i in range(9)), *(f"obs:cpcv:{i}" for i in range(9)),
    *(f"obs:corr:{i}" for i in range(4)), *(f"obs:calls:{i}" for i in range(33)),
)


def research_tokenizer(tok: Tokenizer) -> Tokenizer:
    """``tok`` with :data:`RESEARCH_TOKENS` appended (those it lacks, in that order).

    Backward compatible: every existing token keeps its id, so a single-turn policy's
    encodings are unchanged and its embedding table only grows at the end; idempotent."""
    have = set(tok.tokens)
    return Tokenizer([*tok.tokens, *(t for t in RESEARCH_TOKENS if t not in have)])


def text_pieces(text: str) -> list[str]:
    """The pieces :meth:`Tokenizer.encode_answer` splits a formula (or any answer text) into."""
    return _FORMULA_RE.findall(text)
