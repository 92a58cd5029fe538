"""The playbook's pre-run checklist items that are not leak checks (§7).

``hand_play``
    A known-good formula, written only with the fields, group levels and operators the
    prompt advertises, earns a positive reward.  The prompt is parsed for its vocabulary and
    every candidate must parse against that vocabulary alone.  Candidates: the textbook
    formulas of :data:`gymkit.audit.formulas.KNOWN_GOOD`, then the 101-alpha corpus.
    On a market without planted effects (a user's market) it tests that a competent answer is
    reachable from the prompt's vocabulary: a positive reward, or failing that one above every
    naive baseline's (the reward still ranks it first); not that any particular effect exists.
``non_triviality``
    Naive baselines (:data:`gymkit.audit.formulas.NAIVE_BASELINES`: empty answers, refusals,
    constants, ``x - x``, availability masks, warm-up indicators, noise, the same-close
    look-ahead), each scored alone, earn no positive reward — the same gates on every market;
    on a user's market it also means no naive answer profits from that market's luck.
``variance``
    Groups of sample answers (``--answers``, or the built-in sampler over the 101-alpha corpus
    with mutations) have non-zero reward variance in most groups (> 1/2), and the mean share of
    non-zero GDPO advantages exceeds 1/2 (below it the floor trap starves training).
``native_engine``
    What it checks, honestly: (1) scoring calls the package's own evaluator and oracle (object
    identity, not a mock or a regex), and every kernel of the registry is defined in
    ``gymkit.dsl.kernels`` (the numba engine); (2) on this market, the engine's values and the
    book's gross P&L equal an independent pandas reference (:mod:`gymkit.audit.reference`)
    for a few formulas to 1e-9 relative.  It does not re-derive every operator (the test
    suite's parity tests do).
"""

from __future__ import annotations

import re
import warnings

import numpy as np

from gymkit.dsl import DSLError, parse
from gymkit.dsl.ast import Call, Node

from .formulas import KNOWN_GOOD, NAIVE_BASELINES, sample_groups, tag
from .result import CheckResult
from .target import AuditTarget

__all__ = ["check_hand_play", "check_native_engine", "check_non_triviality", "check_variance",
           "prompt_vocabulary"]


def prompt_vocabulary(prompt: str) -> tuple[list[str], list[str], list[str]]:
    """(fields, group levels, operators) the prompt advertises."""
    def grab(label: str) -> list[str]:
        m = re.search(rf"{label}: ([^.\n]*)\.", prompt)
        words = m.group(1).split() if m else []
        return [] if words == ["none"] else words
    return grab("Fields"), grab("Group levels"), grab("Operators")


def _ops(node: Node) -> set[str]:
    if not isinstance(node, Call):
        return set()
    out = {node.op}
    for a in node.args:
        out |= _ops(a)
    return out


def check_hand_play(target: AuditTarget) -> CheckResult:
    """A known-good formula scores > 0 using only the prompt's vocabulary (on a market
    without planted effects: > 0, or above every naive baseline; module doc)."""
    from gymkit.seed_archive import alpha101_formulas

    env = target.env
    fields, levels, ops = prompt_vocabulary(env.observation())
    tried, best = 0, (-np.inf, "")
    for source in (KNOWN_GOOD, tuple(f for _, f in alpha101_formulas())):
        for formula in source:
            try:
                expr = parse(formula, fields=fields, levels=levels)
            except DSLError:
                continue
            if not _ops(expr) <= set(ops):
                continue
            tried += 1
            reward = env.score(tag(formula)).reward
            if reward > best[0]:
                best = (reward, formula)
        if best[0] > 0:
            break
    planted = _planted(target)
    if planted or best[0] > 0:
        ok, bar = best[0] > 0, "0"
    else:  # no planted effect to find: the reward must still rank a competent answer first
        naive = max(env.score(a).reward for _, a in NAIVE_BASELINES)
        ok, bar = best[0] > naive, f"the best naive baseline's {naive:.3f}"
    return CheckResult(
        "hand_play", ok,
        f"best of {tried} formulas in the prompt's vocabulary: reward {best[0]:.3f}"
        + (f" ({best[1][:60]})" if best[1] else "") + f"; must exceed {bar}",
        (f"prompt vocabulary: {len(fields)} fields, {len(levels)} levels, {len(ops)} operators",
         _HAND_PLAY_TESTS[planted]))


#: What hand_play tests, by market: planted effects (the embedded market) or not.
_HAND_PLAY_TESTS = {
    True: "what it tests: the default market's planted effects are reachable — a textbook "
          "formula written in the prompt's vocabulary earns a positive reward",
    False: "what it tests: on a market without planted effects, that a competent answer is "
           "reachable from the prompt's vocabulary (textbook formulas, then the paper's 101): "
           "its reward is positive, or at least above every naive baseline's (a real market "
           "owes no positive Sharpe after costs); it claims no particular effect exists",
}
#: What non_triviality tests, by market.
_NAIVE_TESTS = {
    True: "what it tests: the gates (tag, constants, x - x, masks, calendar, noise, same-close "
          "look-ahead) hold on the default market",
    False: "what it tests: the same gates on this market, where no planted effect exists: a "
           "naive answer cannot earn a positive reward by this market's luck either",
}


def _planted(target: AuditTarget) -> bool:
    """True when the target runs on the embedded default market (planted effects)."""
    return target.spec.kind == "default"


def check_non_triviality(target: AuditTarget) -> CheckResult:
    """Every naive baseline, scored alone, has reward <= 0."""
    env = target.env
    rows = []
    for label, answer in NAIVE_BASELINES:
        card = env.score(answer)
        rows.append((card.reward, label, card.valid))
    worst = max(rows)
    bad = [f"{label}: reward {r:.3f} (valid {v})" for r, label, v in rows if r > 0]
    return CheckResult(
        "non_triviality", not bad,
        f"max reward of {len(rows)} naive baselines = {worst[0]:.3f} ({worst[1]}); "
        f"{sum(v for _, _, v in rows)} of them valid", (*bad, _NAIVE_TESTS[_planted(target)]))


def check_variance(target: AuditTarget) -> CheckResult:
    """Most groups vary in reward; mean share of non-zero GDPO advantages > 1/2."""
    env = target.env
    source = "given answers" if target.answers else "built-in sampler (101 alphas + mutations)"
    groups = target.answers or sample_groups(env.setup.train)
    varying, shares = 0, []
    for g in groups:
        cards = env.score_group(g)
        rewards = np.array([c.reward for c in cards])
        varying += bool(len(g) > 1 and np.ptp(rewards) > 0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            _, info = env.group_advantages(cards)
        shares.append(info.share_nonzero)
    share = float(np.mean(shares))
    ok = varying / len(groups) > 0.5 and share > 0.5
    return CheckResult(
        "variance", ok,
        f"{varying}/{len(groups)} groups with reward variance; mean share of non-zero GDPO "
        f"advantages {share:.2f}",
        (f"source: {source}; group sizes {sorted({len(g) for g in groups})}",
         f"share of non-zero advantages per group: {' '.join(f'{s:.2f}' for s in shares)}"))


def check_native_engine(target: AuditTarget) -> CheckResult:
    """Scoring is bound to the package's numba engine, which equals the pandas reference."""
    import gymkit.scoring as scoring
    from gymkit.dsl import evaluator
    from gymkit.dsl.kernels import KERNELS
    from gymkit.dsl.operators import OPERATORS
    from gymkit.oracle import env_backtest
    from gymkit.verifiers import oracle
    from gymkit.verifiers.windows import judged_window

    from .reference import REFERENCE_FORMULAS, reference_evaluate, reference_gross

    problems = []
    if scoring.evaluate is not evaluator.evaluate:
        problems.append("gymkit.scoring.evaluate is not gymkit.dsl.evaluator.evaluate")
    if scoring.backtest is not oracle.backtest:
        problems.append("gymkit.scoring.backtest is not gymkit.verifiers.oracle.backtest")
    foreign = sorted(op for op in OPERATORS
                     if getattr(KERNELS.get(op), "__module__", None) != "gymkit.dsl.kernels")
    problems += [f"kernel of {op} is not defined in gymkit.dsl.kernels" for op in foreign]
    env = target.env
    setup = env.setup
    train = setup.train
    rows = judged_window(train, setup.split, "train", setup.burn_in).rows
    err_v = err_g = 0.0
    compared = 0
    for formula in REFERENCE_FORMULAS:
        try:
            expr = parse(formula, fields=setup.fields, levels=setup.levels)
        except DSLError:
            continue
        run = env_backtest(env, expr, "train", cached=False)
        got, bt = run.values, run.result
        want = np.broadcast_to(reference_evaluate(expr, train), got.shape)
        if not np.array_equal(np.isnan(got), np.isnan(want)):
            problems.append(f"{formula}: NaN pattern differs from the reference")
            continue
        with np.errstate(invalid="ignore"):
            rel = np.abs(got - want) / np.maximum(1.0, np.abs(want))
        err_v = max(err_v, float(np.nanmax(rel)) if np.isfinite(rel).any() else 0.0)
        ref = reference_gross(np.asarray(got), train, rows)
        err_g = max(err_g, float(np.max(np.abs(bt.gross - ref))))
        compared += 1
    if err_v > 1e-9:
        problems.append(f"values differ from the reference by {err_v:.1e} (relative)")
    if err_g > 1e-12:
        problems.append(f"gross P&L differs from the reference by {err_g:.1e}")
    if compared == 0:
        problems.append("no reference formula could be compared on this market")
    n_native = len(OPERATORS) - len(foreign)
    return CheckResult(
        "native_engine", not problems,
        f"scoring -> gymkit numba engine ({n_native}/{len(OPERATORS)} kernels); {compared} "
        f"formulas = pandas reference (values {err_v:.0e} rel, gross P&L {err_g:.0e})",
        tuple(problems))
