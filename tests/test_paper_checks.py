"""The papers' own checks: stated properties of GAP/xGAP/eGAP and Kishida's worked example."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch

import gaprank.metrics as M


def _random_query(rng, n=30, c=3):
    return rng.normal(size=n), rng.integers(0, c + 1, size=n)


@pytest.mark.parametrize("t", [1, 2, 3])
def test_gap_is_ap_when_one_g_is_one(t):
    rng = np.random.default_rng(t)
    scores, labels = rng.normal(size=(8, 40)), rng.integers(0, 4, size=(8, 40))
    g = np.eye(3)[t - 1]
    np.testing.assert_allclose(M.gap(scores, labels, g=g, reduction="none"),
                               M.average_precision(scores, labels, threshold=t, reduction="none"), rtol=1e-12)
    # eGAP and xGAP collapse to the same binary AP (Ferrante et al., sec. 6: correlation 1)
    np.testing.assert_allclose(M.egap(scores, labels, g=g, reduction="none"),
                               M.average_precision(scores, labels, threshold=t, reduction="none"), rtol=1e-12)
    np.testing.assert_allclose(M.xgap(scores, labels, g=g, reduction="none"),
                               M.average_precision(scores, labels, threshold=t, reduction="none"), rtol=1e-12)


def test_ideal_ranking_scores_one_and_xgap_egap_top_grade_rule():
    rng = np.random.default_rng(3)
    labels = rng.integers(0, 4, size=50)
    labels[:3] = [1, 2, 3]  # every grade present
    ideal_scores = labels.astype(float) + rng.uniform(0, 0.1, size=50)
    g = [0.2, 0.3, 0.5]
    for fn in (M.gap, M.xgap, M.egap, M.average_precision, M.generalized_ap, M.ndcg):
        kwargs = {"g": g} if fn in (M.gap, M.xgap, M.egap) else {}
        assert fn(ideal_scores, labels, **kwargs) == pytest.approx(1.0)
    # without the top grade the ideal xGAP / eGAP is sum_{k <= tau} g_k (FORMULAS.md note)
    labels2 = np.where(labels == 3, 2, labels)
    ideal2 = labels2 + rng.uniform(0, 0.1, size=50)
    assert M.gap(ideal2, labels2, g=g) == pytest.approx(1.0)
    assert M.xgap(ideal2, labels2, g=g) == pytest.approx(0.5)
    assert M.egap(ideal2, labels2, g=g) == pytest.approx(0.5)


def test_swapping_with_a_lower_graded_document_below_lowers_gap():
    rng = np.random.default_rng(4)
    g = [0.3, 0.3, 0.4]
    checked = 0
    for _ in range(30):
        labels = rng.integers(0, 4, size=12)
        order_scores = np.arange(12, 0, -1, dtype=float)  # rank = input order
        base = M.gap(order_scores, labels, g=g)
        for a, b in itertools.combinations(range(12), 2):
            if labels[a] > labels[b]:
                swapped = labels.copy()
                swapped[[a, b]] = swapped[[b, a]]
                assert M.gap(order_scores, swapped, g=g) < base
                checked += 1
    assert checked > 100


@pytest.mark.parametrize("g1", [0.5, 0.3, 0.8])
def test_few_highly_relevant_limits(g1):
    """R(1) = n, R(2) = 1, run = n grade-1 documents then the grade-2 one: as n grows
    GAP -> 1, xGAP -> 1 - g2^2, eGAP -> g1 (GAP/xGAP/eGAP papers)."""
    g = [g1, 1 - g1]
    limits = {M.gap: 1.0, M.xgap: 1 - g[1] ** 2, M.egap: g1}
    for fn, limit in limits.items():
        gaps = []
        for n in (100, 10_000, 100_000):
            labels = np.ones(n + 1, dtype=np.int64)
            labels[-1] = 2
            scores = np.arange(n + 1, 0, -1, dtype=float)
            gaps.append(abs(fn(scores, labels, g=g) - limit))
        # O(1/n) convergence: the error shrinks ~10x per 10x documents and is tiny at n = 1e5
        assert gaps[0] > gaps[1] > gaps[2] and gaps[1] / gaps[2] > 5 and gaps[2] < 5e-5, (fn.__name__, gaps)


def _kishida_patterns():
    """All 136 outputs of length 5 built from three documents of grades 3, 2, 1 (Kishida sec. 4.3)."""
    out = []
    for pattern in itertools.product(range(4), repeat=5):
        nonzero = [x for x in pattern if x]
        if len(nonzero) == len(set(nonzero)):
            out.append(pattern)
    return np.array(out)


def _kishida_measures(patterns):
    scores = np.tile(np.arange(5, 0, -1, dtype=float), (len(patterns), 1))
    counts = np.stack([[int((p == 0).sum()), 1, 1, 1] for p in patterns])
    kw = dict(grade_counts=counts, reduction="none")
    v_s = M.sliding_ratio(scores, patterns, **kw)
    v_d = np.mean([M.ndcg(scores, patterns, k=i, gain="linear", discount="jk", **kw) for i in range(1, 6)], axis=0)
    v_q = M.q_measure(scores, patterns, **kw)
    v_g = M.generalized_ap(scores, patterns, **kw)
    ap = M.average_precision(scores, patterns, **kw)
    return np.stack([v_s, v_d, v_q, v_g]), ap


def test_kishida_table_3_statistics_over_136_patterns():
    patterns = _kishida_patterns()
    assert len(patterns) == 136
    values, _ = _kishida_measures(patterns)
    # Kishida 2005, Table 3: average / std. dev. of v_S', v_D, v_Q, v_G
    np.testing.assert_allclose(values.mean(1), [0.488, 0.443, 0.503, 0.410], atol=5e-4)
    np.testing.assert_allclose(values.std(1, ddof=1), [0.245, 0.250, 0.240, 0.228], atol=5e-4)


def test_kishida_table_4_correlations():
    values, ap = _kishida_measures(_kishida_patterns())
    corr = np.corrcoef(np.vstack([values, ap]))
    expected = {(1, 0): 0.969, (2, 0): 0.885, (2, 1): 0.840, (3, 0): 0.963, (3, 1): 0.940, (3, 2): 0.961,
                (4, 0): 0.857, (4, 1): 0.829, (4, 2): 0.928, (4, 3): 0.894}
    for (i, j), value in expected.items():
        assert corr[i, j] == pytest.approx(value, abs=5e-4), (i, j)


@pytest.mark.parametrize(
    "pattern, expected",
    [
        ("32000", [0.923, 0.933, 0.667, 0.733]),
        ("00123", [0.331, 0.184, 0.513, 0.304]),
        ("03210", [0.558, 0.610, 0.750, 0.622]),
        ("30000", [0.692, 0.640, 0.333, 0.400]),
        ("00003", [0.138, 0.046, 0.121, 0.080]),
    ],
)
def test_kishida_table_5_patterns(pattern, expected):
    values, _ = _kishida_measures(np.array([[int(ch) for ch in pattern]]))
    np.testing.assert_allclose(values[:, 0], expected, atol=5e-4)


def test_torch_batch_on_the_same_patterns_matches_numpy():
    patterns = _kishida_patterns()
    scores = np.tile(np.arange(5, 0, -1, dtype=float), (len(patterns), 1))
    for fn in (M.generalized_ap, M.q_measure, M.sliding_ratio, M.gap, M.egap, M.xgap):
        a = fn(scores, patterns, reduction="none")
        b = fn(torch.tensor(scores), torch.tensor(patterns), reduction="none")
        np.testing.assert_allclose(b.numpy(), a, rtol=1e-12)
