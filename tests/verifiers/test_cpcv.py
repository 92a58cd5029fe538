"""CPCV: the score, blocks, purge/embargo sets, path assignment (DESIGN §4)."""

from __future__ import annotations

import numpy as np
import pytest

from gymkit.verifiers import CPCV, cpcv_score, sharpe

from .conftest import load_reference

REF = load_reference()


def test_seed_worked_examples():
    assert cpcv_score(np.full(15, 0.8)) == pytest.approx(0.80, abs=1e-12)
    s = np.array([3.0] * 3 + [-0.2] * 12)
    assert s.mean() == pytest.approx(0.44)
    assert cpcv_score(s) == pytest.approx(-0.20, abs=1e-12)


def test_blocks_have_array_split_sizes():
    cv = CPCV()
    for n in (6, 7, 100, 3050, 3051):
        blocks = cv.blocks(n)
        assert [hi - lo for lo, hi in blocks] == [len(a) for a in np.array_split(np.arange(n), 6)]
        assert blocks[0][0] == 0 and blocks[-1][1] == n
    with pytest.raises(ValueError, match="at least 6"):
        cv.blocks(5)


@pytest.mark.parametrize("n,purge,embargo", [(3050, 10, 5), (250, 10, 5), (97, 3, 7), (60, 0, 0)])
def test_split_sets_match_reference(n, purge, embargo):
    cv = CPCV(purge=purge, embargo=embargo)
    sets = REF.cpcv_sets(n, purge=purge, embargo=embargo)
    assert cv.get_n_splits() == 15 == len(sets)
    for (ins, test), (rt, ri) in zip(cv.split(n), sets, strict=True):
        assert test.tolist() == rt and ins.tolist() == ri
        assert not set(test.tolist()) & set(ins.tolist())


def test_purge_before_and_embargo_after_each_test_block():
    cv = CPCV()
    n = 600  # blocks of 100
    ins, test = next(iter(cv.split(n)))  # split 0: blocks 0 and 1 are the test set
    assert test.tolist() == list(range(200))
    assert ins[0] == 205  # 5 embargoed after block 1, no purge before block 0
    ins, test = list(cv.split(n))[5]  # blocks (1, 2)
    assert set(range(90, 100)).isdisjoint(ins) and 89 in ins  # 10 purged before block 1
    assert set(range(300, 305)).isdisjoint(ins) and 305 in ins  # 5 embargoed after block 2


def test_sharpes_are_sharpes_of_concatenated_days():
    rng = np.random.default_rng(0)
    r = rng.normal(0.0005, 0.01, 640)
    cv = CPCV()
    test, ins = cv.sharpes(r)
    for s, (i_idx, t_idx) in enumerate(cv.split(r.size)):
        assert test[s] == pytest.approx(sharpe(r[t_idx]), rel=1e-12)
        assert ins[s] == pytest.approx(sharpe(r[i_idx]), rel=1e-12)
    res = cv.evaluate(r)
    assert res.score == pytest.approx(test.mean() - 0.5 * test.std(), rel=1e-12)
    # no fitted parameters: every recombined path is the whole window
    np.testing.assert_allclose(res.path_sharpes, sharpe(r), rtol=1e-12)


def test_path_assignment_takes_each_blocks_jth_occurrence():
    cv = CPCV()
    a = cv.path_assignment()
    assert a.shape == (6, 5) and cv.n_paths == 5
    tb = cv.test_blocks
    for b in range(6):
        occ = [s for s in range(15) if b in tb[s]]
        assert a[b].tolist() == occ
    # split-specific returns: path j of block b must come from split a[b, j]
    n = 60
    split_returns = np.vstack([np.full(n, float(s)) + np.arange(n) * 1e-3 for s in range(15)])
    blocks = cv.blocks(n)
    for j in range(5):
        series = np.concatenate([split_returns[a[b, j], lo:hi] for b, (lo, hi) in enumerate(blocks)])
        assert cv.path_sharpes(split_returns[0], split_returns)[j] == pytest.approx(sharpe(series))


def test_path_assignment_matches_skfolio():
    skm = pytest.importorskip("skfolio.model_selection")
    sk = skm.CombinatorialPurgedCV(n_folds=6, n_test_folds=2)
    np.testing.assert_array_equal(CPCV().path_assignment(), sk.recombined_paths)
    np.testing.assert_array_equal(CPCV().test_blocks, sk.test_set_index)


@pytest.mark.parametrize("purge,embargo", [(10, 5), (3, 0), (0, 4)])
def test_in_sample_sets_match_skfolio_with_mapped_parameters(purge, embargo):
    # skfolio purges `purged_size` days before a test fold and `purged_size + embargo_size`
    # after it; with n divisible by 6 its folds equal ours.  Ours (purge=p, embargo=p+e)
    # must then equal skfolio (purged_size=p, embargo_size=e).
    skm = pytest.importorskip("skfolio.model_selection")
    n = 600
    sk = skm.CombinatorialPurgedCV(n_folds=6, n_test_folds=2, purged_size=purge, embargo_size=embargo)
    ours = CPCV(purge=purge, embargo=purge + embargo)
    x = np.zeros((n, 1))
    for (ins, test), (sk_train, sk_tests) in zip(ours.split(n), sk.split(x), strict=True):
        np.testing.assert_array_equal(ins, sk_train)
        np.testing.assert_array_equal(test, np.concatenate(sk_tests))


def test_bad_parameters_are_rejected():
    with pytest.raises(ValueError, match="n_test_blocks"):
        CPCV(n_blocks=6, n_test_blocks=6)
    with pytest.raises(ValueError, match="purge"):
        CPCV(purge=-1)
    with pytest.raises(ValueError, match="non-empty"):
        cpcv_score(np.array([]))
