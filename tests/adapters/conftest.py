"""One default environment per session, shared with the adapters' per-process cache."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

from gymkit.adapters.common import clear_memo, get_env
from gymkit.briefs import generate_briefs, probe_briefs

#: A group of answers: valid ones, a missing tag, a parse error, a static book.
GROUP = [
    "<alpha>rank(ts_std(volume, 8) / ts_std(close, 8))</alpha>",
    "<think>volume co-movement</think><alpha>-1 * ts_corr(rank(open), rank(volume), 10)</alpha>",
    "no tag at all",
    "<alpha>rank(close - open) / (high - low + 0.001)</alpha>",
    "<alpha>rank(ts_delta(close, 5)</alpha>",
    "<alpha>rank(ts_delta(volume, 3))</alpha>",
]
VALID = [True, True, False, True, False, True]


@pytest.fixture(scope="session")
def env():
    return get_env("us46-default")


@pytest.fixture(scope="session")
def brief_ids() -> list[str]:
    return [b.brief_id for b in probe_briefs(generate_briefs())]


@pytest.fixture(autouse=True)
def _fresh_memo():
    clear_memo()
    yield
    clear_memo()


def make_tokenizer(texts: list[str], whole: list[str] | None = None):
    """A small byte-level BPE tokenizer trained here (no hub), with a ChatML chat template.

    Byte-level, so every text round-trips exactly through encode/decode; it stands in for a
    model's tokenizer where a trainer library needs one (verl's reward managers, TRL).
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    specials = ["<|pad|>", "<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    tok.train_from_iterator(texts, trainers.BpeTrainer(
        vocab_size=512, special_tokens=specials, show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<|pad|>",
                                   eos_token="<|im_end|>")
    if whole:  # whole answers as single tokens: a tiny random model can then sample them
        fast.add_tokens(list(whole))
    fast.chat_template = (
        "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n"
        "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
    return fast


@pytest.fixture(scope="session")
def tokenizer():
    return make_tokenizer(GROUP)


REPO = Path(__file__).resolve().parents[2]


def real_verifiers():
    """The ``verifiers`` library (skip if absent), never the checkout's ``verifiers/`` folder.

    ``python -m pytest`` from the checkout root puts the root first on ``sys.path``, where the
    source folder of ``gymkit.verifiers`` would import as a top-level ``verifiers`` and shadow
    the library; the root is left out while importing it.
    """
    mod = sys.modules.get("verifiers")
    if mod is None:
        saved = sys.path[:]
        sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != REPO]
        try:
            mod = importlib.import_module("verifiers")
        except ImportError:
            pytest.skip("verifiers is an optional extra")
        finally:
            sys.path[:] = saved
    where = Path(getattr(mod, "__file__", "") or ".").resolve()
    assert not where.is_relative_to(REPO / "verifiers"), (
        f"'verifiers' was imported from the checkout ({where}), not the library")
    return mod
