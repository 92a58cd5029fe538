"""No look-ahead (hypothesis-built formulas over the whole operator set) and determinism
across processes."""

from __future__ import annotations

import csv
import hashlib
import subprocess
import sys
from importlib import resources

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gymkit.data import Panel
from gymkit.data.default import default_market
from gymkit.dsl.ast import Call, Field, Level, Num, Window
from gymkit.dsl.cache import EvalCache
from gymkit.dsl.evaluator import evaluate
from gymkit.dsl.operators import EXPR, FIELDS, LEVELS, OPERATORS, WINDOW

T, N = 90, 6


def _random_panel(seed: int) -> Panel:
    """A small OHLCV-consistent panel with cap, sectors, industries and a listing gap."""
    rng = np.random.default_rng(seed)
    close = 50.0 * np.exp(np.cumsum(rng.normal(0, 0.02, (T, N)), axis=0))
    open_ = close * np.exp(rng.normal(0, 0.01, (T, N)))
    high = np.maximum(open_, close) * (1 + rng.uniform(0, 0.02, (T, N)))
    low = np.minimum(open_, close) * (1 - rng.uniform(0, 0.02, (T, N)))
    volume = rng.integers(1_000, 100_000, (T, N)).astype(float)
    for a in (open_, high, low, close, volume):
        a[:12, 5] = np.nan
    dates = np.datetime64("2020-01-01") + np.arange(T)
    return Panel(dates, [f"S{i}" for i in range(N)], open_, high, low, close, volume,
                 cap=close * 1e6, sector=["a", "a", "b", "b", "", "c"],
                 industry=["x", "y", "y", "z", "z", "z"])


def _scramble_after(panel: Panel, k: int, seed: int) -> Panel:
    """The same panel with every field after row k replaced by random values."""
    rng = np.random.default_rng(seed)
    fields = {}
    for name in ("open", "high", "low", "close", "volume", "cap"):
        a = np.array(getattr(panel, name))
        a[k + 1:] = rng.uniform(0.5, 2.0, a[k + 1:].shape) * np.nanmean(a)
        fields[name] = a
    return panel.replace(**fields)


_numbers = st.sampled_from([0.0, -0.0, 1.0, -1.0, 0.5, 2.0, 3.0, 1e-9]).map(Num)
_leaves = st.one_of(_numbers, st.sampled_from(sorted(FIELDS)).map(Field),
                    st.integers(1, 12).map(lambda d: Call("adv", (Window(d),))))
_windows = st.integers(1, 12).map(Window)
_levels = st.sampled_from(LEVELS).map(Level)
_OPS = sorted(op for op in OPERATORS if op != "adv")


def _calls(children):
    def build(op):
        parts = [children if k == EXPR else _windows if k == WINDOW else _levels
                 for k in OPERATORS[op].args]
        return st.tuples(*parts).map(lambda args: Call(op, args))
    return st.sampled_from(_OPS).flatmap(build)


formulas = st.recursive(_leaves, _calls, max_leaves=8)
BASE = _random_panel(1)


@settings(max_examples=120, derandomize=True, deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(expr=formulas, k=st.integers(0, T - 2), seed=st.integers(0, 2**16))
def test_no_formula_looks_ahead(expr, k, seed):
    later = _scramble_after(BASE, k, seed)
    for cache in (None, EvalCache()):
        a = evaluate(expr, BASE, cache=cache)
        b = evaluate(expr, later, cache=cache)
        assert a[:k + 1].tobytes() == b[:k + 1].tobytes(), (expr, k)


def test_every_operator_is_reachable_by_the_strategy():
    assert set(_OPS) | {"adv"} == set(OPERATORS)


_SCRIPT = """
import csv, hashlib
from importlib import resources
from gymkit.data.default import default_market
from gymkit.dsl.evaluator import evaluate
rows = csv.DictReader(resources.files("gymkit.dsl").joinpath("alpha101.tsv").open(),
                      delimiter="\\t")
h = hashlib.sha256()
panel = default_market()
for r in rows:
    h.update(evaluate(r["formula"], panel).tobytes())
print(h.hexdigest())
"""


def test_two_processes_give_byte_identical_arrays():
    digests = {subprocess.run([sys.executable, "-c", _SCRIPT], capture_output=True, text=True,
                              check=True).stdout.strip() for _ in range(2)}
    assert len(digests) == 1
    rows = csv.DictReader(resources.files("gymkit.dsl").joinpath("alpha101.tsv").open(),
                          delimiter="\t")
    h = hashlib.sha256()
    for r in rows:
        h.update(evaluate(r["formula"], default_market(), cache=None).tobytes())
    assert digests == {h.hexdigest()}
