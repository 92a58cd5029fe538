"""verl adapter, through verl's own loader, dataset and reward managers.

verl's full requirements pin transformers < 5.11 (TRL's needs newer) and pull its GPU stack, so
it is not in the ``test`` extra; its wheel installs without them: :data:`VERL_INSTALL` (the
commands docs/trainers.md gives).  Where verl is importable the verl-path tests run here;
where it is not, :func:`test_verl_path_in_an_overlay_venv` runs those same tests (and the docs
example) in an overlay venv: a venv on top of this one (this environment's packages visible
through a ``site.addsitedir`` .pth, so torch, transformers and gymkit are not reinstalled)
where :data:`VERL_INSTALL` has run.  Skipped, saying why, only when the package index cannot
deliver verl.

Path exercised: ``gymkit briefs --format verl-parquet`` → verl's ``RLHFDataset`` + ``collate_fn``
→ ``DataProto.from_single_dict`` (what verl's trainer does with a batch) + the rollout's
``prompts`` / ``responses`` / ``attention_mask`` → verl's ``get_custom_reward_fn`` (its
``load_extern_object``, on ``pkg://`` and on the plain file path) → verl's naive reward-loop
manager and its batch reward manager.  Every score is compared with ``env.score_group``.
"""

from __future__ import annotations

import importlib.util
import math
import os
import re
import subprocess
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

import gymkit.adapters.verl as gverl
from gymkit.adapters.common import INTERNAL_REWARD, brief_text_of

from .conftest import GROUP, VALID
from .overlay import overlay_venv


@pytest.fixture(scope="module")
def parquet(tmp_path_factory):
    from gymkit.cli import main

    path = tmp_path_factory.mktemp("verl") / "probe.parquet"
    assert main(["briefs", "--split", "probe", "--format", "verl-parquet", "--out", str(path)]) == 0
    return path


def test_verl_parquet_carries_brief_id_and_text(parquet) -> None:
    t = pq.read_table(parquet).to_pylist()
    assert len(t) == 50 and set(t[0]) == {"data_source", "prompt", "ability", "reward_model",
                                          "extra_info"}
    assert t[0]["reward_model"]["ground_truth"] == t[0]["extra_info"]["brief_id"]
    assert brief_text_of(t[0]["extra_info"]["brief_id"]) == t[0]["extra_info"]["brief"]
    assert t[0]["data_source"] == gverl.DATA_SOURCE
    assert [m["role"] for m in t[0]["prompt"]] == ["system", "user"]


def test_entry_module_has_no_relative_imports() -> None:
    """verl runs a file path with spec_from_file_location (no parent package)."""
    import ast
    from pathlib import Path

    tree = ast.parse(Path(gverl.__file__).read_text(encoding="utf-8"))
    assert not [n for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.level]


def test_unknown_data_source_is_a_one_line_error() -> None:
    for bad in ("gymkit/us46-defualt", "openai/gsm8k", None):
        with pytest.raises(ValueError, match="unknown data_source") as ei:
            gverl.compute_score(bad, GROUP[0], "x", None)
        assert "\n" not in str(ei.value)
    with pytest.raises(ValueError, match=r"sample 1: unknown data_source 'gsm8k'"):
        gverl.compute_score_batch(["gymkit", "gsm8k"], GROUP[:2], ["a", "b"])


def test_the_dict_reports_the_brief_channel_its_score_counts(env) -> None:
    """A row that names its brief is scored with it (R13 counts in ``score``), and the dict says
    so in ``brief_compliance``; a row without one carries 0.0 there: every sample has the same
    keys, and ``score`` is explained by the channels shown."""
    from gymkit.briefs import generate_briefs, split_briefs

    b = split_briefs(generate_briefs(500, 0), "train")[0]
    answer = "<alpha>rank(-ts_delta(close, 3))</alpha>"
    with_brief, without = gverl.compute_score_batch(
        ["gymkit", "gymkit"], [answer, answer], [b.brief_id, ""], [{"brief_id": b.brief_id}, {}])
    card = env.score_group([answer], brief=b.text)[0]
    assert with_brief["score"] == card.reward and with_brief["brief_compliance"] < 0
    assert with_brief["brief_compliance"] == card.channels["brief_compliance"]
    assert without["brief_compliance"] == 0.0 and set(with_brief) == set(without)
    assert without["score"] == env.score_group([answer])[0].reward != with_brief["score"]


def test_a_brief_of_another_seed_counts_and_an_unknown_one_is_refused(env) -> None:
    """Rows of ``gymkit briefs --seed 1`` carry their brief's text in extra_info, so R13 counts
    as for the default briefs; an id found nowhere (no text) is a one-line error naming the
    sample, not a silent score without the brief; a text that is not the id's likewise."""
    from gymkit.adapters.datasets import verl_rows
    from gymkit.briefs import generate_briefs, split_briefs

    row = verl_rows(split_briefs(generate_briefs(40, 1), "train"))[0]
    bid = row["extra_info"]["brief_id"]
    assert brief_text_of(bid) is None  # not a default brief
    answer = "<alpha>rank(ts_std(volume, 8))</alpha>"
    got = gverl.compute_score(row["data_source"], answer, bid, row["extra_info"])
    card = env.score_group([answer], brief=row["extra_info"]["brief"])[0]
    assert got["score"] == card.reward and got["brief_compliance"] == card.channels[
        "brief_compliance"] < 0
    with pytest.raises(ValueError, match=r"^sample 1: unknown brief_id 'deadbeefdeadbeef': not a "
                       r"brief of the default generator \(n=500, seed=0\)"):
        gverl.compute_score_batch(["gymkit"] * 2, [answer] * 2, [bid, "deadbeefdeadbeef"],
                                  [row["extra_info"], {"brief_id": "deadbeefdeadbeef"}])
    with pytest.raises(ValueError, match=r"^sample 0: the row's brief text is not brief "):
        gverl.compute_score("gymkit", answer, bid, {**row["extra_info"], "brief": "x"})


def test_rows_without_a_brief_group_by_their_dataset_row_not_all_together(env) -> None:
    """verl's batch manager hands one call the samples of many prompts.  Rows that name no brief
    used to form one group, so the same answer to two different prompts took R9's duplicate
    penalty; they now group by ``extra_info["index"]`` (verl's n rollouts of one prompt share
    it), and a row with neither is scored alone."""
    a, b = GROUP[0], GROUP[1]
    alone = env.score_group([a])[0].reward
    got = gverl.compute_score_batch(["gymkit"] * 4, [a, a, a, b], ["", "", "", ""],
                                    [{"index": 0}, {"index": 1}, {"index": 2}, {"index": 2}])
    assert got[0]["score"] == got[1]["score"] == alone
    pair = env.score_group([a, b])
    assert [got[2]["score"], got[3]["score"]] == [pair[0].reward, pair[1].reward]
    none = gverl.compute_score_batch(["gymkit"] * 2, [a, a], ["", ""], None)
    assert none[0]["score"] == none[1]["score"] == alone


def test_internal_error_is_flagged_not_invalid(env, monkeypatch) -> None:
    def boom(c, brief=None):
        raise RuntimeError("worker died")
    monkeypatch.setattr(env, "score_group", boom)
    res = gverl.compute_score("gymkit/us46-default", GROUP[0], None, None)
    assert res["internal_error"] == 1.0 and res["valid"] == 0.0
    assert res["score"] == INTERNAL_REWARD  # the table's lowest: never above an answer


# ------------------------------------------------------------------ the real verl
REPO = Path(__file__).resolve().parents[2]
#: verl without its pinned requirements, then the modules its reward path imports.
VERL_INSTALL = [["pip", "install", "--no-deps", "verl==0.9.1"],
                ["pip", "install", "ray==2.60.0", "tensordict==0.10.0", "omegaconf", "codetiming"]]
HAVE_VERL = importlib.util.find_spec("verl") is not None
requires_verl = pytest.mark.skipif(
    not HAVE_VERL, reason="verl not importable here: test_verl_path_in_an_overlay_venv runs "
    "these tests in a venv where it is installed")
#: The verl-path tests (run in the overlay when verl is absent here).
VERL_TESTS = ["tests/adapters/test_verl.py", "tests/adapters/test_docs.py::test_verl_example"]


def test_docs_give_the_verl_install() -> None:
    text = (REPO / "docs" / "trainers.md").read_text()
    cmd = " && ".join(" ".join(c) for c in VERL_INSTALL)
    assert f"`{cmd}`" in text, f"docs/trainers.md should give the verl install: {cmd}"


@pytest.mark.slow
def test_verl_path_in_an_overlay_venv(serial_pytest_opts) -> None:
    """Where verl is not importable (the ``test`` extra), its tests run in the overlay venv.

    ``GYMKIT_FORCE_VERL_OVERLAY=1`` runs it where verl is importable too (to check this test).
    """
    if HAVE_VERL and not os.environ.get("GYMKIT_FORCE_VERL_OVERLAY"):
        pytest.skip("verl is importable here, so the verl-path tests ran in this process")
    if os.environ.get("GYMKIT_IN_VERL_OVERLAY"):
        pytest.skip("already inside the overlay venv")
    install = VERL_INSTALL
    if HAVE_VERL:  # forced here: this environment's verl would satisfy the first command
        install = [[*VERL_INSTALL[0], "--ignore-installed"], *VERL_INSTALL[1:]]
    py = overlay_venv("verl-overlay", install) / "bin" / "python"
    where = subprocess.run([str(py), "-c", "import verl, gymkit; print(verl.__version__, "
                            "verl.__file__, gymkit.__file__)"], capture_output=True, text=True,
                           check=True).stdout.split()
    assert where[0] == "0.9.1" and where[1].startswith(str(py.parent.parent))
    assert Path(where[2]).resolve().is_relative_to(REPO)  # this checkout's gymkit
    env = {**os.environ, "GYMKIT_IN_VERL_OVERLAY": "1"}
    p = subprocess.run([str(py), "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", *serial_pytest_opts,
                        *VERL_TESTS], cwd=REPO, env=env, capture_output=True, text=True,
                       timeout=1800)
    summary = p.stdout.strip().splitlines()[-1] if p.stdout.strip() else p.stderr[-2000:]
    assert p.returncode == 0, f"verl-path tests failed in the overlay: {p.stdout[-4000:]}"
    passed = int(re.search(r"(\d+) passed", summary).group(1))
    # every verl-path test ran: only this test itself (and nothing else) may skip there
    assert re.search(r"(\d+) skipped", summary).group(1) == "1", summary
    assert passed >= 8, summary


def _config(path: str, name: str):
    from omegaconf import OmegaConf

    return OmegaConf.create({"reward": {"custom_reward_function": {
        "path": path, "name": name, "reward_kwargs": {}}}})


def _batch(parquet, tokenizer, completions):
    """A verl batch of one brief and these responses, built the way verl's trainer builds it."""
    import torch
    from omegaconf import OmegaConf
    from verl import DataProto
    from verl.utils.dataset.rl_dataset import RLHFDataset, collate_fn

    ds = RLHFDataset(data_files=str(parquet), tokenizer=tokenizer,
                     config=OmegaConf.create({"max_prompt_length": 100_000,
                                              "filter_overlong_prompts": False,
                                              "cache_dir": str(parquet.parent)}))
    rows = collate_fn([ds[0] for _ in completions])
    batch = DataProto.from_single_dict(rows)
    prompt = tokenizer.apply_chat_template(list(rows["raw_prompt"][0]), tokenize=False,
                                           add_generation_prompt=True)
    p_ids = tokenizer(prompt)["input_ids"]
    enc = [tokenizer(c + tokenizer.eos_token)["input_ids"] for c in completions]
    width = max(map(len, enc))
    pad = tokenizer.pad_token_id
    resp = torch.tensor([e + [pad] * (width - len(e)) for e in enc])
    mask = torch.tensor([[1] * len(p_ids) + [1] * len(e) + [0] * (width - len(e)) for e in enc])
    prompts = torch.tensor([p_ids] * len(completions))
    batch = batch.union(DataProto.from_dict(tensors={
        "prompts": prompts, "responses": resp, "attention_mask": mask,
        "input_ids": torch.cat([prompts, resp], dim=1)}))
    return batch, rows["extra_info"][0]["brief_id"]


@requires_verl
@pytest.mark.parametrize("how", ["pkg", "file"])
def test_verl_loader_and_naive_manager_give_the_card(how, parquet, tokenizer, env) -> None:
    """verl's get_custom_reward_fn loads us both ways; its naive manager gets env.score's reward."""
    from verl.experimental.reward_loop.reward_manager import get_reward_manager_cls
    from verl.trainer.ppo.reward import get_custom_reward_fn

    path = "pkg://gymkit.adapters.verl" if how == "pkg" else gverl.__file__
    cfg = _config(path, "compute_score")
    fn = get_custom_reward_fn(cfg)
    manager = get_reward_manager_cls("naive")(cfg, tokenizer, fn)
    batch, bid = _batch(parquet, tokenizer, GROUP)
    for i, (c, ok) in enumerate(zip(GROUP, VALID, strict=True)):
        out = manager.loop.run_until_complete(manager.run_single(batch[i:i + 1]))
        card = env.score_group([c], brief=brief_text_of(bid))[0]
        assert out["reward_score"] == card.reward and card.valid == ok
        info = out["reward_extra_info"]
        assert info["valid"] == float(ok) and info["internal_error"] == 0.0
        assert [info[k] for k in env.channels] == [card.channels[k] for k in env.channels]
        assert info["brief_compliance"] == card.channels["brief_compliance"]
        assert all(isinstance(v, float) and math.isfinite(v) for v in info.values())


@requires_verl
def test_verl_batch_manager_scores_each_brief_as_a_group(parquet, tokenizer, env) -> None:
    """verl's BatchRewardManager with compute_score_batch: one group per brief (R2 filled)."""
    from verl.trainer.ppo.reward import get_custom_reward_fn
    from verl.workers.reward_manager import get_reward_manager_cls

    fn = get_custom_reward_fn(_config(gverl.__file__, "compute_score_batch"))
    manager = get_reward_manager_cls("batch")(tokenizer=tokenizer, num_examine=0,
                                              compute_score=fn)
    batch, bid = _batch(parquet, tokenizer, GROUP)
    out = manager(batch, return_dict=True)
    cards = env.score_group(GROUP, brief=brief_text_of(bid))
    lengths = batch.batch["attention_mask"][:, batch.batch["prompts"].shape[1]:].sum(-1)
    got = [float(out["reward_tensor"][i, int(n) - 1]) for i, n in enumerate(lengths)]
    assert got == [float(np.float32(c.reward)) for c in cards]  # verl's float32 reward tensor
    assert out["reward_extra_info"]["score"] == [c.reward for c in cards]
    assert out["reward_extra_info"]["pbo"] == [c.channels["pbo"] for c in cards]
    assert any(c.channels["pbo"] != 0.0 for c in cards)  # the group channel is really filled
    assert out["reward_extra_info"]["brief_compliance"] == [c.channels["brief_compliance"]
                                                            for c in cards]


@requires_verl
def test_verl_scores_briefs_of_another_seed_with_their_brief(tmp_path, tokenizer, env) -> None:
    """``gymkit briefs --seed 1`` rows through verl's loader and batch manager: each answer is
    scored with its seed-1 brief (R13 counts), as ``env.score_group`` with that text."""
    from verl.trainer.ppo.reward import get_custom_reward_fn
    from verl.workers.reward_manager import get_reward_manager_cls

    from gymkit.cli import main

    path = tmp_path / "seed1.parquet"
    assert main(["briefs", "--seed", "1", "--n", "40", "--split", "train", "--format",
                 "verl-parquet", "--out", str(path)]) == 0
    fn = get_custom_reward_fn(_config(gverl.__file__, "compute_score_batch"))
    manager = get_reward_manager_cls("batch")(tokenizer=tokenizer, num_examine=0,
                                              compute_score=fn)
    batch, bid = _batch(path, tokenizer, GROUP)
    text = pq.read_table(path).to_pylist()[0]["extra_info"]["brief"]
    assert brief_text_of(bid) is None and text
    out = manager(batch, return_dict=True)
    cards = env.score_group(GROUP, brief=text)
    assert out["reward_extra_info"]["score"] == [c.reward for c in cards]
    assert out["reward_extra_info"]["brief_compliance"] == [c.channels["brief_compliance"]
                                                            for c in cards]
    assert any(c.channels["brief_compliance"] < 0 for c in cards)


@requires_verl
def test_verl_manager_refuses_a_foreign_data_source(parquet, tokenizer) -> None:
    from verl.trainer.ppo.reward import get_custom_reward_fn
    from verl.workers.reward_manager import get_reward_manager_cls

    fn = get_custom_reward_fn(_config("pkg://gymkit.adapters.verl", "compute_score_batch"))
    manager = get_reward_manager_cls("batch")(tokenizer=tokenizer, num_examine=0,
                                              compute_score=fn)
    batch, _ = _batch(parquet, tokenizer, GROUP[:2])
    batch.non_tensor_batch["data_source"][1] = "gymkit/us46-defualt"
    with pytest.raises(ValueError, match="sample 1: unknown data_source 'gymkit/us46-defualt'"):
        manager(batch, return_dict=True)


@requires_verl
@pytest.mark.usefixtures("own_gymkit_cache")
def test_verl_scores_rows_of_a_user_market_on_that_market(eight_stock_csv, tokenizer,
                                                          tmp_path) -> None:
    """``gymkit briefs --market FILE --format verl-parquet`` (the CLI as typed) → verl's dataset
    and batch manager → the cards of ``gymkit.make(market=FILE)``, not of the default market
    (before, the row's ``data_source`` ``gymkit/us46-default@FILE`` was refused by name)."""
    from verl.trainer.ppo.reward import get_custom_reward_fn
    from verl.workers.reward_manager import get_reward_manager_cls

    import gymkit
    from gymkit.cli import main
    from gymkit.data import load_panel

    market = eight_stock_csv("Name")
    path = tmp_path / "own.parquet"
    assert main(["briefs", "--market", str(market), "--split", "probe", "--format",
                 "verl-parquet", "--out", str(path)]) == 0
    fn = get_custom_reward_fn(_config("pkg://gymkit.adapters.verl", "compute_score_batch"))
    manager = get_reward_manager_cls("batch")(tokenizer=tokenizer, num_examine=0,
                                              compute_score=fn)
    answers = ["<alpha>rank(-ts_delta(close, 3))</alpha>", "<alpha>rank(ts_std(volume, 8))</alpha>",
               "<alpha>rank(cap)</alpha>"]  # this market has no cap: invalid here
    batch, bid = _batch(path, tokenizer, answers)
    assert batch.non_tensor_batch["data_source"][0] == f"gymkit/us46-default@{market.resolve()}"
    out = manager(batch, return_dict=True)
    own = gymkit.make("us46-default", market=load_panel(market))
    cards = own.score_group(answers, brief=brief_text_of(bid))
    assert [c.valid for c in cards] == [True, True, False]
    assert out["reward_extra_info"]["score"] == [c.reward for c in cards]
    default = gymkit.make("us46-default").score_group(answers, brief=brief_text_of(bid))
    assert [c.reward for c in default] != [c.reward for c in cards]
