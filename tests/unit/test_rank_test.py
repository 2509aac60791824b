"""diff's one-sided rank test against scipy: the exact Mann-Whitney distribution without ties,
the exact permutation distribution of mid-ranks with ties (scipy.stats.permutation_test over
every split), and the tie-corrected normal approximation beyond the exact limit. scipy is a
test-only reference, never imported by Inspector."""
import random
from typing import Any

import numpy as np
import pytest
from scipy import stats  # type: ignore[import-untyped]  # no stubs in the test deps

from inspector.compare.diff import _EXACT_RANK_MAX, latency_significance, rank_test_p


def exact_permutation_p(before: list[float], after: list[float]) -> float:
    """P(after's mid-rank sum >= observed) over every split of the pooled mid-ranks."""
    ranks = stats.rankdata(after + before)
    res = stats.permutation_test((ranks[:len(after)], ranks[len(after):]),
                                 lambda x, y, axis: np.sum(x, axis=axis), vectorized=True,
                                 permutation_type="independent", alternative="greater",
                                 n_resamples=np.inf)
    return res.pvalue


@pytest.mark.parametrize("seed", range(12))
def test_without_ties_equals_scipy_exact(seed):
    rng = random.Random(seed)
    n, m = rng.randint(2, 30), rng.randint(2, 30)
    shift = rng.choice([0.0, 0.3, 1.0])
    before = [rng.gauss(0, 1) for _ in range(n)]
    after = [rng.gauss(shift, 1) for _ in range(m)]
    want = stats.mannwhitneyu(after, before, alternative="greater", method="exact").pvalue
    assert rank_test_p(before, after) == pytest.approx(want, rel=1e-9, abs=1e-15)


@pytest.mark.parametrize("seed", range(24))
def test_with_ties_equals_the_exact_permutation_distribution(seed):
    rng = random.Random(100 + seed)
    n, m = rng.randint(3, 8), rng.randint(3, 8)        # C(16, 8) = 12870 splits at most
    levels = rng.randint(2, 4)                          # heavily tied per-interval values
    before = [float(rng.randrange(levels)) for _ in range(n)]
    after = [float(rng.randrange(levels) + rng.choice([0, 0, 1])) for _ in range(m)]
    assert rank_test_p(before, after) == pytest.approx(exact_permutation_p(before, after),
                                                       rel=1e-9)


def test_the_tied_case_the_old_test_was_too_eager_on():
    # 5 intervals each, p99s quantised to 100 us: the after run's two lowest tie the before
    # run's highest. Ignoring ties gave p = 1/126 = 0.0079 < 0.01; the permutation count of
    # the tied ranks gives 3/252 = 0.0119.
    before = [100.0, 100, 200, 200, 300]
    after = [300.0, 300, 400, 400, 400]
    p = rank_test_p(before, after)
    assert p == pytest.approx(exact_permutation_p(before, after), rel=1e-9)
    assert p == pytest.approx(3 / 252)
    naive = stats.mannwhitneyu(after, before, alternative="greater", method="exact").pvalue
    assert naive < 0.01 < p          # scipy's exact method assumes no ties, as the old code did


def test_all_equal_values_are_no_evidence():
    assert rank_test_p([5.0] * 4, [5.0] * 4) == pytest.approx(1.0)
    assert rank_test_p([5.0] * 80, [5.0] * 80) == 1.0
    assert rank_test_p([], [1.0]) == 1.0


@pytest.mark.parametrize("levels", [3, 10, None])
def test_beyond_the_exact_limit_equals_scipys_tie_corrected_normal(levels):
    rng = random.Random(levels or 7)
    n = _EXACT_RANK_MAX // 2 + 10      # intervals per run: beyond the exact limit together

    def draw(shift):
        return [float(rng.randrange(levels) + shift) if levels else rng.gauss(shift, 1)
                for _ in range(n)]
    before, after = draw(0), draw(0.2 if levels is None else rng.choice([0, 1]))
    want = stats.mannwhitneyu(after, before, alternative="greater", method="asymptotic",
                              use_continuity=True).pvalue
    assert rank_test_p(before, after) == pytest.approx(want, rel=1e-6)


def test_largest_exact_case_is_quick():
    import time
    rng = random.Random(3)
    before = [float(rng.randrange(40)) for _ in range(_EXACT_RANK_MAX // 2)]
    after = [float(rng.randrange(40)) for _ in range(_EXACT_RANK_MAX // 2)]
    start = time.process_time()      # CPU time: a loaded machine's waits are not the test's
    p = rank_test_p(before, after)
    assert time.process_time() - start < 1.0
    assert 0 < p <= 1


def test_significance_rule_no_longer_flags_the_tied_case():
    before = {"p99_us": 300.0, "intervals": {"p99_us": [100.0, 100, 200, 200, 300]}}
    after: dict[str, Any] = {"p99_us": 400.0, "intervals": {"p99_us": [300.0, 300, 400, 400, 400]}}
    significant, note = latency_significance(before, after)
    assert not significant and "within the run-to-run spread" in note
    # one bucket more and the rank test is sure: every after interval above every before one
    after["intervals"]["p99_us"] = [400.0] * 5
    significant, note = latency_significance(before, after)
    assert significant and "rank test p=0.004" in note
