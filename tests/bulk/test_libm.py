"""gymkit.bulk.libm: the device path of log / power / signed_power gives the CPU scorer's bits.

The device path (double-double position check, host fallback near midpoints) is forced on
CPU tensors here, so CI (no GPU) tests the arithmetic the CUDA path runs.  The oracle is
the CPU scorer's own Numba kernel (glibc's libm).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from gymkit.bulk import libm  # noqa: E402
from gymkit.dsl.kernels import KERNELS  # noqa: E402


def _bits_equal(ref: np.ndarray, got: np.ndarray) -> np.ndarray:
    """Per value: same NaN-ness and, where not NaN, the same 64 bits."""
    ref, got = np.asarray(ref, dtype=np.float64), np.asarray(got, dtype=np.float64)
    nan = np.isnan(ref)
    return (nan == np.isnan(got)) & (nan | (ref.view(np.int64) == got.view(np.int64)))


def _hostile(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = np.abs(rng.normal(size=n)) * rng.choice([1e-300, 1e-8, 1e-3, 1.0, 1.0001, 100.0, 1e6, 1e200], n)
    x *= rng.choice([-1.0, 1.0], n)
    special = [0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 2.0, 4.0, 0.5, 5e-324, 1e-310,
               1.0000000000000002, 0.9999999999999999, 8.0, 3.0, -8.0, -2.0, 1e308, 10.0, math.e]
    x[: len(special)] = special
    y = rng.choice([3.0, 1.5, -1.0, 0.25, 1 / 3, -0.7, 2.5, 0.0, -2.0, 7.0, 11.0, 0.1, 20.0,
                    -3.0, 1e-5, 150.0, 0.5, 2.0, np.nan, np.inf], n)
    y[::7] = rng.normal(size=y[::7].size) * 4
    return x, y


@pytest.mark.parametrize("name", ["log", "power", "signed_power"])
def test_device_path_bit_identical_to_numba(name: str) -> None:
    x, y = _hostile(60_000, {"log": 1, "power": 2, "signed_power": 3}[name])
    X, Y = torch.tensor(x), torch.tensor(y)
    if name == "log":
        ref, got = KERNELS["log"](x), libm._log_dd(X)
    else:
        ref, got = KERNELS[name](x, y), libm._pow_dd(X, Y, name)
    ok = _bits_equal(ref, got.numpy())
    i = np.flatnonzero(~ok)[:3]
    assert ok.all(), f"{name}: {(~ok).sum()} values differ, e.g. x={x[i]}, y={y[i]}, numba={ref[i]}, got={got.numpy()[i]}"


def test_chunked_device_path_equals_one_piece(monkeypatch: pytest.MonkeyPatch) -> None:
    x, y = _hostile(5_000, 11)
    X, Y = torch.tensor(x).view(50, 100), torch.tensor(y).view(50, 100)
    monkeypatch.setattr(libm, "force_device_path", True)
    whole = [libm.log_exact(X), libm.pow_exact(X, Y), libm.pow_exact(X, Y[:1], signed=True)]
    monkeypatch.setattr(libm, "CHUNK", 777)
    pieces = [libm.log_exact(X), libm.pow_exact(X, Y), libm.pow_exact(X, Y[:1], signed=True)]
    for w, p in zip(whole, pieces, strict=True):
        assert w.shape == (50, 100) and _bits_equal(w.numpy(), p.numpy()).all()
    assert _bits_equal(KERNELS["signed_power"](x.reshape(50, 100), y.reshape(50, 100)[:1]), pieces[2].numpy()).all()


def test_the_host_fallback_is_what_makes_it_exact(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without the host fallback the correctly rounded result differs from glibc's on some
    values (glibc is within 0.52 ULP, not correctly rounded): the gate above can fail."""
    rng = np.random.default_rng(5)
    x = np.abs(rng.normal(size=200_000)) * rng.choice([1e-3, 1.0, 100.0, 1e6], 200_000)
    y = rng.choice([3.0, 1.5, -1.0, 0.25, 1 / 3, -0.7, 2.5, 7.0], 200_000)
    monkeypatch.setattr(libm, "_fill_from_host", lambda out, hard, name, *args, **kw: out)
    for ref, got in ((KERNELS["log"](x), libm._log_dd(torch.tensor(x))),
                     (KERNELS["power"](x, y), libm._pow_dd(torch.tensor(x), torch.tensor(y), "power"))):
        wrong = ~_bits_equal(ref, got.numpy())
        assert 0 < wrong.sum() < 0.01 * x.size


def test_host_share_is_the_margin_band() -> None:
    """The share of values sent to the host is about twice the margin (the band around a
    midpoint), not more: the double-double check settles the rest on the device."""
    rng = np.random.default_rng(9)
    x = np.abs(rng.normal(size=100_000)) * rng.choice([1e-3, 1.0, 100.0], 100_000) + 1e-6
    libm.stats.update(cells=0, host=0)
    libm._log_dd(torch.tensor(x))
    share = libm.stats["host"] / libm.stats["cells"]
    assert 1.5 * libm.LOG_MARGIN < share < 2.5 * libm.LOG_MARGIN, share


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(allow_nan=True, allow_infinity=True, width=64), min_size=1, max_size=40),
       st.lists(st.floats(min_value=-40, max_value=40, allow_nan=False) | st.sampled_from([0.0, 1.0, 3.0, -1.0]),
                min_size=1, max_size=40))
def test_property_power_and_log_match_numba(xs: list[float], ys: list[float]) -> None:
    n = min(len(xs), len(ys))
    x, y = np.array(xs[:n]), np.array(ys[:n])
    X, Y = torch.tensor(x), torch.tensor(y)
    assert _bits_equal(KERNELS["log"](x), libm._log_dd(X).numpy()).all()
    for name in ("power", "signed_power"):
        assert _bits_equal(KERNELS[name](x, y), libm._pow_dd(X, Y, name).numpy()).all(), name


def test_dd_log_accuracy() -> None:
    """dd_log against 40-digit decimal logarithms, within what the margins assume: absolute
    error <= 2^-73 (pow's position) and relative <= 2^-62 (log's own ULP)."""
    from decimal import Decimal, getcontext

    getcontext().prec = 40
    rng = np.random.default_rng(4)
    x = np.concatenate([np.exp(rng.uniform(-700, 700, 300)), 1.0 + rng.normal(size=100) * 1e-9,
                        [1.0, 1.0000000000000002, 0.9999999999999999, 2.0, 0.5, 1e-300, 1.7e308]])
    hi, lo = libm.dd_log(torch.tensor(x))
    for xi, h, low in zip(x, hi.tolist(), lo.tolist(), strict=True):
        exact = Decimal(float(xi)).ln()
        err = abs((Decimal(h) + Decimal(low)) - exact)
        assert err <= min(abs(exact) * Decimal(2) ** -62, Decimal(2) ** -73), (xi, err)


def test_overflow_and_underflow_settled_on_the_device() -> None:
    """pow values clearly past overflow or under half the least subnormal need no host
    (they were a fifth of all pow values of the benchmark formulas); those near either
    threshold still go there; every value keeps Numba's bits, signed zeros included."""
    rng = np.random.default_rng(12)
    x = np.exp(rng.uniform(-8.0, 8.0, 40_000)) * rng.choice([-1.0, 1.0], 40_000)
    y = np.round(rng.uniform(-3000.0, 3000.0, 40_000))  # integers: negative bases are real
    w = y * np.log(np.abs(x))
    far = (w > 709.79) | (w < -745.2)
    X, Y = torch.tensor(x), torch.tensor(y)
    for name in ("power", "signed_power"):
        libm.stats.update(cells=0, host=0)
        got = libm._pow_dd(X[far], Y[far], name)
        assert _bits_equal(KERNELS[name](x[far], y[far]), got.numpy()).all(), name
        assert libm.stats["host"] == 0, libm.stats
        assert (np.signbit(got.numpy()) & (got.numpy() == 0.0)).any()  # -0.0 from odd negative bases
    near = (np.abs(w) > 700.0) & ~far
    libm.stats.update(cells=0, host=0)
    got = libm._pow_dd(X[near], Y[near], "power")
    assert _bits_equal(KERNELS["power"](x[near], y[near]), got.numpy()).all()
    assert libm.stats["host"] == near.sum() > 0


# ------------------------------------------------ the fused Triton kernels (the CUDA path)
@pytest.fixture
def interpreted_libm(monkeypatch: pytest.MonkeyPatch):
    """libm's Triton kernels in Triton's interpreter on CPU tensors, with a fresh self-check."""
    pytest.importorskip("triton")
    from gymkit.bulk import libm_triton

    monkeypatch.setenv("TRITON_INTERPRET", "1")
    monkeypatch.setattr(libm_triton, "interpret", True)
    monkeypatch.setattr(libm_triton, "status", {"triton": None})
    monkeypatch.setattr(libm, "force_device_path", True)
    yield libm_triton
    libm_triton._KERNELS.clear()  # built for the interpreter: never reused on a device


def test_libm_kernels_pass_their_self_check_and_give_numbas_bits(interpreted_libm) -> None:
    """One kernel per operator: the self-check holds (same host flags, defined mask and
    settled bits as the torch chain), and every value, host fallback included, is Numba's."""
    lt = interpreted_libm
    assert lt.use(torch.device("cpu")), lt.status
    x, y = lt.hostile(30_000, 7)
    X, Y = torch.tensor(x).view(300, 100), torch.tensor(y).view(300, 100)
    assert _bits_equal(KERNELS["log"](x), libm.log_exact(X).numpy().ravel()).all()
    for name in ("power", "signed_power"):
        got = libm.pow_exact(X, Y, signed=name == "signed_power")
        assert got.shape == (300, 100)
        ok = _bits_equal(KERNELS[name](x, y), got.numpy().ravel())
        i = np.flatnonzero(~ok)[:3]
        assert ok.all(), f"{name}: {(~ok).sum()} differ, e.g. x={x[i]}, y={y[i]}"
    # a broadcast exponent row (the shape ops hands over for a scalar or a row)
    got = libm.pow_exact(X, Y[:1], signed=True)
    assert _bits_equal(KERNELS["signed_power"](x.reshape(300, 100), y.reshape(300, 100)[:1]), got.numpy()).all()
    # the kernels' host flags are the chain's: the same values travel
    _, code = lt.pow_codes(X, Y, False)
    _, hard, ok = libm._pow_chain(X, Y, False)
    assert torch.equal(code == 2, hard) and torch.equal(code > 0, ok) and 0 < int(hard.sum()) < hard.numel() // 5


@pytest.mark.parametrize("fault", ["one_ulp", "one_flag"])
def test_a_libm_kernel_that_differs_is_refused(interpreted_libm, monkeypatch: pytest.MonkeyPatch, fault: str) -> None:
    """A kernel one ULP off on one settled value, or one that keeps one host value on the
    device, fails the self-check: the torch chain is used instead."""
    lt = interpreted_libm
    lt._build()
    real = lt.pow_codes

    def broken(a, b, signed):
        out, code = real(a, b, signed)
        out, code = out.clone(), code.clone()
        i = int(torch.nonzero(code == (1 if fault == "one_ulp" else 2))[0, 0])
        if fault == "one_ulp":
            out[i] = torch.nextafter(out[i], torch.tensor(math.inf, dtype=out.dtype))
        else:
            code[i] = 1
        return out, code

    monkeypatch.setattr(lt, "pow_codes", broken)
    assert not lt._self_check(torch.device("cpu"))
