"""Every worked example of docs/trainers.md runs as written, through the trainer library's own code.

Each block is read from the markdown and executed verbatim but for the lines marked ``# knob``,
which are replaced by test-only values that are about size or about reaching no network: a tiny
model built here instead of a hub model (with its tokenizer and a generation bias toward
whole-answer tokens, so an untrained one-layer model emits answers), a one-token, two-step
budget, a smaller group, a fake OpenAI server on 127.0.0.1 instead of a real endpoint.  A knob
never carries a setting a user would also need (device, precision, ...): those stay in the
verbatim text, and :func:`run` refuses a knob that is not a ``# knob`` line of the example.
Results are compared with ``env.score``.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gymkit.adapters.common import brief_text_of

from .conftest import GROUP, make_tokenizer, real_verifiers
from .fake_openai import FakeOpenAI

DOC = Path(__file__).resolve().parents[2] / "docs" / "trainers.md"
ANSWER = "<alpha>rank(ts_std(volume, 8))</alpha>"


def example(name: str) -> str:
    """The python block after ``<!-- example: name -->`` in docs/trainers.md."""
    m = re.search(rf"<!-- example: {name} -->\n```python\n(.*?)```", DOC.read_text(), re.S)
    assert m, f"docs/trainers.md has no example {name!r}"
    return m.group(1)


def run(name: str, given: dict | None = None, **knobs: str) -> dict:
    """Execute example ``name`` with its ``# knob`` lines replaced by ``knobs`` (name = source).

    ``given``: objects the replacement sources may name (a model built by the test).
    """
    lines = example(name).splitlines()
    seen = set()
    for i, line in enumerate(lines):
        key = line.split("=", 1)[0].strip()
        if "# knob" in line and key in knobs:
            lines[i] = f"{key} = {knobs[key]}"
            seen.add(key)
    assert seen == set(knobs), f"knobs not in the example: {set(knobs) - seen}"
    ns: dict = {"__name__": f"docs_example_{name}", **(given or {})}
    exec(compile("\n".join(lines), f"docs/trainers.md:{name}", "exec"), ns)  # our own doc
    return ns


def test_every_example_is_tested() -> None:
    names = re.findall(r"<!-- example: ([\w-]+) -->", DOC.read_text())
    assert sorted(names) == sorted(["trl", "verl", "verifiers", "vf-eval", "gymnasium", "skyrl"])


def _bash_blocks() -> list[str]:
    """The shell blocks of docs/trainers.md but the vf-eval one (test_verifiers_v04_rollout)."""
    text = re.sub(r"<!-- example: vf-eval -->\n```bash\n.*?```", "", DOC.read_text(), flags=re.S)
    return re.findall(r"^```bash\n(.*?)^```", text, re.S | re.M)


@pytest.mark.slow
def test_command_blocks_run_as_written(env, tmp_path) -> None:
    """Every ``gymkit`` command of the page's shell blocks, typed as written, in one directory.

    The files they read are the user's (sampled answers, probe answers, rollouts, a market
    file): written here in the documented shapes; the holdout ledger is this test's own.
    """
    import json
    import os
    import subprocess
    import sys

    import pandas as pd
    import pyarrow.parquet as pq

    from gymkit.briefs import check_compliance, generate_briefs, probe_briefs, split_briefs
    from gymkit.data import default_market
    from gymkit.dsl.parser import parse

    lines = [ln for b in _bash_blocks() for ln in b.splitlines() if ln.strip()]
    assert lines and all(ln.startswith("gymkit ") for ln in lines), lines
    train = split_briefs(generate_briefs(), "train")[:3]
    probe = probe_briefs(generate_briefs())[:6]

    def write(name: str, rows: list[dict]) -> None:
        (tmp_path / name).write_text("".join(json.dumps(r) + "\n" for r in rows))

    write("samples.jsonl", [{"brief_id": b.brief_id, "completion": a}
                            for b in train for a in GROUP])
    write("probe_answers.jsonl", [{"checkpoint": "step-0", "brief_id": b.brief_id,
                                   "completion": GROUP[i]} for i, b in enumerate(probe)])
    # rollouts as a policy writes them: mostly weak, one a verified answer to its brief (the
    # planted volume effect, reward > 0.5, every facet of a train brief met), which the
    # documented export keeps (export-sft refuses to write an empty file)
    good = "rank(ts_std(volume, 20) / ts_mean(volume, 20) * ts_std(returns, 250) / ts_std(returns, 20))"
    fits = next(b for b in split_briefs(generate_briefs(), "train")
                if check_compliance(parse(good), b).score == 0.0)
    write("rollouts.jsonl", [{"brief_id": b.brief_id, "completion": GROUP[i]}
                             for i, b in enumerate(probe)]
          + [{"brief_id": fits.brief_id, "completion": f"<alpha>{good}</alpha>"}])
    m = default_market()  # the user's own market: plain OHLCV, no cap, sector or industry
    pd.DataFrame([{"date": str(m.dates[t]), "ticker": m.tickers[j], "open": m.open[t, j],
                   "high": m.high[t, j], "low": m.low[t, j], "close": m.close[t, j],
                   "volume": m.volume[t, j]} for t in range(700) for j in range(8)]
                 ).to_csv(tmp_path / "prices.csv", index=False)
    shell = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
             "GYMKIT_HOLDOUT_LEDGER": str(tmp_path / "ledger.sqlite")}
    for line in lines:
        p = subprocess.run(["bash", "-euo", "pipefail", "-c", line], cwd=tmp_path, env=shell,
                           capture_output=True, text=True, timeout=900)
        assert p.returncode == 0, f"docs/trainers.md: `{line}` exited {p.returncode}: " \
            f"{(p.stderr or p.stdout).strip()[-600:]}"
    count = {n: len((tmp_path / n).read_text().splitlines())
             for n in ("train.jsonl", "probe.jsonl", "kept.jsonl", "my_train.jsonl")}
    solved = [sum(c.valid and c.reward > 0 for c in env.score_group(GROUP, brief=b.text))
              for b in train]  # the filter's rule: solved in some but not all tries
    kept = sum(0 < n < len(GROUP) for n in solved)
    assert count == {"train.jsonl": 376, "probe.jsonl": 50, "kept.jsonl": kept, "my_train.jsonl": 376}
    # briefs on the user's market: its own vocabulary, and a data_source naming it
    own = "Fields: open high low close vwap returns volume. Group levels: none."
    mine = json.loads((tmp_path / "my_train.jsonl").read_text().splitlines()[0])
    row = pq.read_table(tmp_path / "my_train.parquet").to_pylist()[0]
    assert own in mine["prompt"][0]["content"] and own in row["prompt"][0]["content"]
    assert row["data_source"] == f"gymkit/us46-default@{(tmp_path / 'prices.csv').resolve()}"
    assert (tmp_path / "train.parquet").stat().st_size
    sft = pq.read_table(tmp_path / "sft.parquet").to_pylist()
    assert [(r["brief_id"], r["formula"]) for r in sft] == [(fits.brief_id, good)]
    assert any((tmp_path / "probe-results").iterdir())


def test_gymnasium_example(env) -> None:
    pytest.importorskip("gymnasium")
    ns = run("gymnasium")
    brief = brief_text_of(ns["info"]["brief_id"])
    assert ns["reward"] == env.score_group([ANSWER], brief=brief)[0].reward
    assert ns["terminated"] and ns["info"]["valid"]


def test_skyrl_example(env) -> None:
    pytest.importorskip("skyrl_gym")
    ns = run("skyrl")
    card = env.score_group([ANSWER], brief=brief_text_of(ns["row"]["extra_info"]["brief_id"]))[0]
    assert ns["out"]["reward"] == card.reward and ns["out"]["done"]


def test_verl_example(env) -> None:
    pytest.importorskip("verl", reason="verl not installed (pip install --no-deps verl)")
    ns = run("verl")
    assert ns["out"]["score"] == env.score_group([ANSWER], brief=None)[0].reward


def test_verifiers_example(env, monkeypatch) -> None:
    vf = real_verifiers()
    from gymkit.adapters.verifiers_env import verifiers_api

    if verifiers_api() != "legacy":
        pytest.skip("example run by test_verifiers_v1 on verifiers >= 0.3")
    fake = FakeOpenAI(GROUP)
    monkeypatch.setenv("OPENAI_API_KEY", "not-a-key")
    try:
        ns = run("verifiers", base_url=repr(fake.url), model="'fake'")
    finally:
        fake.close()
    rows = ns["out"]["outputs"]
    assert len(rows) == 6 and isinstance(ns["vf_env"], vf.SingleTurnEnv)
    for r in rows:
        text = r["completion"][-1].content
        card = env.score_group([text], brief=brief_text_of(r["info"]["brief_id"]))[0]
        assert r["reward"] == card.reward


def test_trl_example_configures_as_written(tmp_path, monkeypatch) -> None:
    """The TRL block up to the trainer, with no line changed, builds its GRPOConfig here.

    The user-facing failure this pins: TRL's GRPOConfig defaults to ``bf16=True``, which
    refuses a machine without a GPU ("Your setup doesn't support bf16/gpu"); the example derives
    ``bf16``/``use_cpu`` from the machine instead, so it runs as written on a CPU and still
    trains in bf16 on a GPU that has it.  Nothing is downloaded: the model id is only read by
    ``GRPOTrainer``."""
    pytest.importorskip("trl")
    import torch

    source = example("trl")
    head, sep, _ = source.partition("trainer = GRPOTrainer(")
    assert sep, "the trl example no longer builds GRPOTrainer"
    monkeypatch.chdir(tmp_path)
    ns: dict = {"__name__": "docs_example_trl_config"}
    exec(compile(head, "docs/trainers.md:trl", "exec"), ns)  # our own doc, every line as written
    cfg = ns["cfg"]
    gpu = torch.cuda.is_available()
    assert cfg.use_cpu is (not gpu)
    assert cfg.bf16 is bool(gpu and torch.cuda.is_bf16_supported())
    assert cfg.num_generations == ns["G"] == cfg.per_device_train_batch_size


def test_trl_example_trains_and_logs_gymkit_metrics(env, tmp_path, monkeypatch) -> None:
    """The documented GRPO configuration, two steps on a tiny from-config model, as written.

    Knobs (test-only, about size): ``model``/``tokenizer`` = a one-layer Qwen2 built here and
    its tokenizer; ``G`` = 4; ``extra`` = a one-token completion, ``max_steps=2`` and a
    ``sequence_bias`` toward the whole-answer tokens (the untrained model's stand-in for a
    policy that writes answers).  Device and precision come from the example's own lines: a knob
    that set them would collide with its ``bf16=``/``use_cpu=`` arguments (a TypeError)."""
    pytest.importorskip("trl")
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    from gymkit.adapters.datasets import brief_rows
    from gymkit.briefs import generate_briefs

    prompt = brief_rows(generate_briefs(1))[0]["prompt"]
    tok = make_tokenizer(GROUP + [m["content"] for m in prompt], whole=GROUP)
    bias = {(tok.convert_tokens_to_ids(a),): 8.0 for a in GROUP}  # answers are whole tokens
    torch.manual_seed(0)
    tiny = Qwen2ForCausalLM(Qwen2Config(
        vocab_size=len(tok), hidden_size=16, intermediate_size=32, num_hidden_layers=1,
        num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=8192,
        pad_token_id=tok.pad_token_id, eos_token_id=tok.eos_token_id))
    monkeypatch.chdir(tmp_path)
    extra = "{'max_completion_length': 1, 'max_steps': 2, 'generation_kwargs': {'sequence_bias': BIAS}}"
    ns = run("trl", {"TINY": tiny, "TOK": tok, "BIAS": bias},
             model="TINY", tokenizer="TOK", G="4", extra=extra)
    trainer = ns["trainer"]
    logs = [h for h in trainer.state.log_history if "gymkit/valid_share" in h]
    assert len(logs) == 2 and trainer.state.global_step == 2
    for h in logs:
        assert 0.0 <= h["gymkit/valid_share"] <= 1.0 and h["gymkit/internal_share"] == 0.0
        assert h["reward"] == pytest.approx(0.0, abs=1e-5)  # TRL's column: a zero-sum advantage
    # the last step's logged gymkit reward is the mean card.reward of the completions TRL made
    from gymkit.adapters.common import completion_text

    texts = [completion_text(c) for c in trainer._logs["completion"]]
    prompts = [completion_text(p) for p in trainer._logs["prompt"]]
    assert len(texts) == 4 and len(set(prompts)) == 1  # one whole group per step
    brief = next(b.text for b in generate_briefs() if b.text in prompts[0])
    cards = env.score_group(texts, brief=brief)
    h = logs[-1]
    assert h["gymkit/reward"] == pytest.approx(sum(c.reward for c in cards) / 4, rel=1e-6)
    assert h["gymkit/valid_share"] == sum(c.valid for c in cards) / 4
    want, _ = env.group_advantages(cards)
    got = list(trainer._logs["rewards"]["gymkit_gdpo_advantage"])
    assert got == pytest.approx([float(a) for a in want], abs=1e-5)
    assert any(h["gymkit/valid_share"] > 0 for h in logs)  # the biased tiny model hits answers
