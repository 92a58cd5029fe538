"""One default environment per session, shared with the adapters' per-process cache."""

from __future__ import annotations

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
