"""One compiled signature per kernel where callers differ only in array flags (issue 22's cold
start: each extra signature is a full Numba compile on a fresh install)."""

from __future__ import annotations

import numpy as np

from gymkit.dsl import kernels as K
from gymkit.dsl.kernels import elementwise
from gymkit.verifiers.cpcv import CPCV, _grouped_sharpes


def test_cpcv_sharpes_compile_once_for_writable_and_read_only_returns() -> None:
    rng = np.random.default_rng(0)
    net = rng.normal(0.0, 0.01, 700)
    frozen = net.copy()
    frozen.setflags(write=False)
    cpcv = CPCV()
    a = cpcv.sharpes(net)
    b = cpcv.sharpes(frozen)
    c = cpcv.sharpes(net[::-1][::-1])  # a view
    assert all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))
    assert all(np.array_equal(x, y) for x, y in zip(a, c, strict=True))
    assert len(_grouped_sharpes.signatures) == 1, _grouped_sharpes.signatures


def test_an_elementwise_operator_compiles_one_engine_signature() -> None:
    x = np.arange(12.0).reshape(3, 4)
    frozen = x.copy()
    frozen.setflags(write=False)
    for lhs, rhs in ((x, frozen), (frozen, 2), (1.5, x), (x.T, np.float32(3.0)), (True, 2.0)):
        K.sub(lhs, rhs)
    assert len(elementwise._sub_engine.signatures) == 1, elementwise._sub_engine.signatures
