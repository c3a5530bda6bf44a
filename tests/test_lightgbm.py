"""gaprank.lightgbm: native LambdaRank reproduced, gradients against finite differences and the PyTorch
loss, eval values against gaprank.metrics, edge queries, and LightGBM's own machinery (importance,
early stopping, LGBMRanker).

One private unit on purpose: the cost model that cuts LambdaMART's queries into buckets
(``_grouped.pair_cost_cut``)."""

from __future__ import annotations

import copy
import itertools
import pickle
import subprocess
import sys
import textwrap

import lightgbm as lgb
import numpy as np
import pytest
import torch
from shared import g_for, pad_by_group

import gaprank
from gaprank import GaprankInputError
from gaprank.lightgbm import lambdarank_objective, ranking_feval, sklearn_objective

METRICS = ("gap", "xgap", "egap", "ap", "ndcg")
G = (0.5, 0.5)
BASE = dict(verbosity=-1, num_threads=1, seed=7, deterministic=True, force_row_wise=True)


@pytest.fixture(scope="module")
def ohsumed(ohsumed_fold1):
    return ohsumed_fold1


def _random_queries(rng, sizes, max_label=2):
    y = np.concatenate([rng.integers(0, max_label + 1, n) for n in sizes]).astype(np.float64)
    s = rng.normal(size=y.size)
    return s, y, np.asarray(sizes)


# ---------------------------------------------------------------- native LambdaRank, reproduced


@pytest.mark.parametrize(
    "native_params, ours",
    [
        ({}, dict(truncation_level=30, norm=True)),  # LightGBM's defaults
        ({"lambdarank_truncation_level": 5, "lambdarank_norm": False, "sigmoid": 2.0, "label_gain": [0, 1, 5]},
         dict(truncation_level=5, norm=False, sigma=2.0, label_gain=[0, 1, 5])),
    ],
)
def test_ndcg_objective_reproduces_native_lambdarank(ohsumed, native_params, ours):
    X, y, group = ohsumed.train.to_flat()
    Xt = ohsumed.test.features
    for rounds, tol in ((1, 1e-6), (20, 1e-3)):
        native = lgb.train({**BASE, **native_params, "objective": "lambdarank"}, lgb.Dataset(X, y, group=group),
                           num_boost_round=rounds)
        mine = lgb.train({**BASE, "objective": lambdarank_objective("ndcg", **ours)}, lgb.Dataset(X, y, group=group),
                         num_boost_round=rounds)
        for features in (X, Xt):
            a, b = native.predict(features), mine.predict(features)
            assert np.abs(a).max() > 0.01  # the models did learn something
            np.testing.assert_allclose(b, a, rtol=0, atol=tol)


def test_first_round_gradients_equal_native_with_weights(ohsumed):
    """Per-document weights multiply grad and hess, as in LightGBM's lambdarank."""
    X, y, group = ohsumed.train.to_flat()
    w = np.random.default_rng(0).uniform(0.5, 2.0, y.size)
    params = {**BASE, "min_data_in_leaf": 20}
    native = lgb.train({**params, "objective": "lambdarank"}, lgb.Dataset(X, y, group=group, weight=w), 1)
    mine = lgb.train({**params, "objective": lambdarank_objective("ndcg", truncation_level=30, norm=True)},
                     lgb.Dataset(X, y, group=group, weight=w), 1)
    np.testing.assert_allclose(mine.predict(X), native.predict(X), atol=1e-6)


# ---------------------------------------------------------------- gradients and hessians


def _pair_cost(s, y, deltas, sigma, keep):
    """C(s) = sum over kept pairs l_i > l_j of |dM_ij| log(1 + exp(-sigma (s_i - s_j))), dM frozen."""
    total = 0.0
    for i in range(s.size):
        for j in range(s.size):
            if y[i] > y[j] and keep[i, j]:
                total += abs(deltas[i, j]) * np.logaddexp(0.0, -sigma * (s[i] - s[j]))
    return total


def _idcg(y, k):
    ideal = np.sort(y)[::-1][:k]
    return float(((2.0**ideal - 1) / np.log2(np.arange(2, ideal.size + 2))).sum())


@pytest.mark.parametrize("metric", METRICS)
@pytest.mark.parametrize("truncation", [None, 2])
def test_grad_hess_are_derivatives_of_the_pairwise_cost(metric, truncation):
    rng = np.random.default_rng(11)
    sigma = 1.7
    for n in (2, 3, 6):
        y = rng.integers(0, 3, n).astype(float)
        y[:2] = [2, 0]  # at least one pair
        s = rng.normal(size=n)
        obj = lambdarank_objective(metric, g=g_for(metric, G), sigma=sigma, truncation_level=truncation)
        grad, hess = obj.gradients(s, y, [n])
        # the oracle: swap deltas by brute force recomputation (tests/test_swap_deltas.py), frozen
        deltas = gaprank.swap_deltas(torch.tensor(s), torch.tensor(y, dtype=torch.long), measure=metric,
                                     g=g_for(metric, G)).numpy()
        if metric == "ndcg" and truncation is not None:  # LightGBM's rule: the ideal DCG at the truncation level
            deltas *= _idcg(y, None) / _idcg(y, truncation)
        rank = np.empty(n, int)
        rank[np.argsort(-s, kind="stable")] = np.arange(n)
        top = n if truncation is None else truncation
        keep = np.minimum(rank[:, None], rank[None, :]) < top  # the higher-ranked document in the top k
        eps = 1e-5
        for i in range(n):
            e = np.zeros(n)
            e[i] = eps
            c_plus, c0, c_minus = (_pair_cost(s + d, y, deltas, sigma, keep) for d in (e, 0 * e, -e))
            assert grad[i] == pytest.approx((c_plus - c_minus) / (2 * eps), abs=1e-7)
            assert hess[i] == pytest.approx((c_plus - 2 * c0 + c_minus) / eps**2, abs=2e-4)


@pytest.mark.parametrize("metric", METRICS)
@pytest.mark.parametrize("k", [None, 4])
def test_grad_equals_pytorch_lambdarank_gradient(metric, k):
    rng = np.random.default_rng(3)
    s, y, sizes = _random_queries(rng, [9, 1, 14, 5, 30, 7])
    grad, _ = lambdarank_objective(metric, g=g_for(metric, G), sigma=0.8, truncation_level=k,
                                   precision="float64").gradients(s, y, sizes)
    # the same queries, padded, through the PyTorch loss (sum over queries: no mean scaling)
    scores, mask = pad_by_group(s, sizes)
    labels, _ = pad_by_group(y.astype(np.int64), sizes)
    st = torch.tensor(scores, requires_grad=True)
    gaprank.lambdarank_loss(st, torch.tensor(labels), measure=metric, g=g_for(metric, G), sigma=0.8, truncation_level=k,
                            mask=torch.tensor(mask), reduction="sum").backward()
    np.testing.assert_allclose(grad, st.grad.numpy()[mask], rtol=1e-12, atol=1e-14)
    assert np.abs(grad).max() > 1e-3
    # the torch engine's default float32 pair arithmetic: the same numbers to float32 rounding (the compiled
    # kernel, which serves this measure by default, computes in float64)
    objective32 = lambdarank_objective(metric, g=g_for(metric, G), sigma=0.8, truncation_level=k, backend="torch")
    grad32, _ = objective32.gradients(s, y, sizes)
    assert grad32.dtype == np.float64
    np.testing.assert_allclose(grad32, grad, rtol=0, atol=1e-6 * np.abs(grad).max())
    assert not np.array_equal(grad32, grad)  # it did run in float32


def test_bucketing_does_not_change_gradients():
    """Queries of very different lengths land in different buckets; each query alone gives the same."""
    rng = np.random.default_rng(5)
    s, y, sizes = _random_queries(rng, [3, 200, 17, 60, 2, 121, 18])
    obj = lambdarank_objective("egap", g=G, norm=True, precision="float64")
    grad, hess = obj.gradients(s, y, sizes)
    start = 0
    for n in sizes:
        alone = lambdarank_objective("egap", g=G, norm=True, precision="float64")
        g1, h1 = alone.gradients(s[start:start + n], y[start:start + n], [n])
        np.testing.assert_allclose(grad[start:start + n], g1, rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(hess[start:start + n], h1, rtol=1e-12, atol=1e-15)
        start += n


def test_pair_cost_cut_is_the_cheapest_cut():
    """The dynamic programme against every way of cutting a few lengths into contiguous buckets."""
    from gaprank._grouped import BUCKET_COST, SLOT_COST, pair_cost_cut

    def cost(sizes, bounds, rows):
        total = 0.0
        for first, last in bounds:
            width = sizes[last - 1]
            upper = width - 1 if rows is None else min(rows, width - 1)
            total += BUCKET_COST + (last - first) * (upper * width + SLOT_COST * width)
        return total

    rng = np.random.default_rng(0)
    for rows in (None, 30):
        for _ in range(20):
            sizes = np.sort(rng.choice([2, 3, 5, 9, 40, 80, 120, 300, 700, 1000], size=rng.integers(1, 9)))
            bounds = pair_cost_cut(sizes, rows)
            assert bounds[0][0] == 0 and bounds[-1][1] == sizes.size
            assert all(a[1] == b[0] for a, b in zip(bounds, bounds[1:], strict=False))
            cuts = [i for i in range(1, sizes.size) if sizes[i] != sizes[i - 1]]
            best = min(cost(sizes, list(zip([0, *chosen], [*chosen, sizes.size], strict=True)), rows)
                       for r in range(len(cuts) + 1) for chosen in itertools.combinations(cuts, r))
            assert cost(sizes, bounds, rows) == pytest.approx(best, rel=1e-12)


@pytest.mark.parametrize("metric, truncation, norm", [("gap", 30, True), ("egap", None, False), ("ndcg", 30, True)])
def test_float32_pair_arithmetic_on_ohsumed(ohsumed, metric, truncation, norm):
    """The default float32 against float64 on real data and scores from a trained model's range."""
    X, y, group = ohsumed.train.to_flat()
    preds = np.random.default_rng(2).normal(scale=3.0, size=y.size) + 40.0  # a large offset, as late rounds have
    options = dict(g=g_for(metric, G), truncation_level=truncation, norm=norm)
    g64, h64 = lambdarank_objective(metric, **options, precision="float64").gradients(preds, y, group)
    g32, h32 = lambdarank_objective(metric, **options).gradients(preds, y, group)
    np.testing.assert_allclose(g32, g64, rtol=0, atol=1e-6 * np.abs(g64).max())
    np.testing.assert_allclose(h32, h64, rtol=0, atol=1e-6 * np.abs(h64).max())


def test_repeated_calls_reuse_state_without_going_stale():
    """The cached layout, factor plans and scratch buffers give the numbers of a fresh objective."""
    rng = np.random.default_rng(9)
    s1, y, sizes = _random_queries(rng, [40, 3, 25, 90, 7, 12, 12])
    s2 = rng.normal(size=s1.size)
    kept = lambdarank_objective("xgap", g=G, truncation_level=10, norm=True)
    for s in (s1, s2, s1, np.zeros_like(s1), s2):
        fresh = lambdarank_objective("xgap", g=G, truncation_level=10, norm=True).gradients(s, y, sizes)
        for a, b in zip(kept.gradients(s, y, sizes), fresh, strict=True):
            np.testing.assert_array_equal(a, b)


def test_gradients_sum_to_zero_and_push_relevant_up():
    rng = np.random.default_rng(8)
    s, y, sizes = _random_queries(rng, [40, 25])
    for metric, precision in itertools.product(METRICS, ("float32", "float64")):
        grad, hess = lambdarank_objective(metric, g=g_for(metric, G), precision=precision).gradients(s, y, sizes)
        tol = (1e-6 if precision == "float32" else 1e-14) * np.abs(grad).sum()
        assert abs(grad[:40].sum()) < tol and abs(grad[40:].sum()) < tol  # lambdas are antisymmetric
        assert (hess >= 0).all()
        assert grad[y == 2].mean() < 0 < grad[y == 0].mean()  # LightGBM descends: negative = move up


# ---------------------------------------------------------------- edge queries


def test_no_relevant_and_single_document_queries_get_zero():
    y = np.array([0, 0, 0, 1, 2, 0, 1, 1, 1], dtype=float)
    s = np.array([0.3, -1.0, 2.0, 5.0, 0.1, 0.2, 0.0, 0.0, 0.0])
    sizes = [3, 1, 2, 3]  # no relevant; single document; a real pair; all labels equal
    for metric in METRICS:
        grad, hess = lambdarank_objective(metric, g=g_for(metric, G), norm=True).gradients(s, y, sizes)
        assert np.isfinite(grad).all() and np.isfinite(hess).all()
        np.testing.assert_array_equal(grad[[0, 1, 2, 3, 6, 7, 8]], 0.0)
        np.testing.assert_array_equal(hess[[0, 1, 2, 3, 6, 7, 8]], 0.0)
        assert grad[4] < 0 < grad[5] and hess[4] > 0


def test_training_with_degenerate_queries_runs():
    rng = np.random.default_rng(2)
    sizes = [1, 1, 30, 4, 30, 2]
    X = rng.normal(size=(sum(sizes), 4))
    y = (X[:, 0] > 0.5).astype(float) + (X[:, 1] > 1.0)
    y[:6] = 0  # the single-document queries and the 4-document one have no relevant document
    booster = lgb.train({**BASE, "objective": lambdarank_objective("gap", g=G), "min_data_in_leaf": 3},
                        lgb.Dataset(X, y, group=sizes), num_boost_round=5)
    assert np.isfinite(booster.predict(X)).all()


LONG_QUERY_SCRIPT = textwrap.dedent("""
    import resource, numpy as np, torch
    from gaprank.lightgbm import lambdarank_objective
    torch.set_num_threads(2)
    rng = np.random.default_rng(0)
    n = 10_000
    y = rng.integers(0, 3, n).astype(float)
    s = rng.normal(size=n)
    obj = lambdarank_objective("gap", g=[0.5, 0.5])
    obj.gradients(s[:50], y[:50], [50])  # warm up the imports and allocator
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    grad, hess = obj.gradients(s, y, [n])
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    assert np.isfinite(grad).all() and np.isfinite(hess).all() and (hess > 0).all()
    assert abs(grad.sum()) < 1e-6 * np.abs(grad).sum()
    print((after - before) / 1024)
""")


def test_ten_thousand_document_query_memory():
    env = {"MALLOC_MMAP_THRESHOLD_": "131072", "PATH": "/usr/bin:/bin"}  # freed blocks go back to the OS
    out = subprocess.run([sys.executable, "-c", LONG_QUERY_SCRIPT], capture_output=True, text=True, env=env,
                         timeout=600)
    assert out.returncode == 0, out.stderr
    peak_mb = float(out.stdout.strip())
    assert peak_mb < 512, f"a 10,000-document query took {peak_mb:.0f} MB"


# ---------------------------------------------------------------- eval functions


def _expected_letor3(scores, labels, sizes, g):
    s, m = pad_by_group(scores, sizes)
    y, _ = pad_by_group(labels.astype(np.int64), sizes)
    common = dict(mask=m, ties="stable", empty_value=0.0, reduction="mean")
    return {
        "GAP": gaprank.gap(s, y, g=g, **common),
        "eGAP": gaprank.egap(s, y, g=g, **common),
        "xGAP": gaprank.xgap(s, y, g=g, **common),
        "nDCG@10": gaprank.ndcg(s, y, k=10, gain="exp2", discount="jk", short_list="zero", **common),
        "MAP": gaprank.average_precision(s, y, **common),
        "P@10": gaprank.precision(s, y, k=10, short_list="zero", **common),
        "nDCG(gain=linear)@5": gaprank.ndcg(s, y, k=5, gain="linear", discount="jk", short_list="zero", **common),
    }


def test_feval_values_equal_metrics_in_all_three_call_forms():
    rng = np.random.default_rng(4)
    sizes = [12, 3, 25, 8, 1, 40]
    X = rng.normal(size=(sum(sizes), 5))
    y = np.clip(np.round(X[:, 0] + rng.normal(size=len(X)) * 0.5), 0, 2)
    y[12:15] = 0  # a query with no relevant document
    feval = ranking_feval(["GAP", "eGAP", "xGAP", "nDCG@10", "MAP", "P@10", "nDCG(gain=linear)@5"], g=G,
                          conventions="letor3")
    assert feval.names == ["GAP", "eGAP", "xGAP", "nDCG@10[letor3]", "MAP", "P@10[letor3]", "nDCG(gain=linear)@5[letor3]"]
    scores = rng.normal(size=len(X)).round(1)  # rounded: ties, kept in row order
    expected = _expected_letor3(scores, y, sizes, G)
    # the feval averages per-query values it computes in length buckets: equal up to summation order
    assert feval.evaluate(scores, y, sizes) == pytest.approx(expected, abs=1e-15, rel=1e-14)
    data = lgb.Dataset(X, y, group=sizes, free_raw_data=False).construct()
    train_form = feval(scores, data)
    sklearn_form = feval(y, scores, None, np.asarray(sizes))
    assert train_form == sklearn_form
    assert [(name, pytest.approx(expected[measure], abs=1e-15, rel=1e-14), True)
            for name, measure in zip(feval.names, expected, strict=True)] == train_form
    # and inside lgb.train: the recorded value after the last round = the metrics on its predictions
    history = {}
    booster = lgb.train({**BASE, "objective": lambdarank_objective("gap", g=G), "min_data_in_leaf": 3},
                        lgb.Dataset(X, y, group=sizes), 4, valid_sets=[data], valid_names=["v"], feval=feval,
                        callbacks=[lgb.record_evaluation(history)])
    final = _expected_letor3(booster.predict(X), y, sizes, G)
    for name, value in zip(feval.names, final.values(), strict=True):
        assert history["v"][name][-1] == pytest.approx(value, rel=1e-12)


def test_feval_letor4_conventions_and_measure_options():
    y = np.array([1, 0, 2, 0, 1], dtype=float)
    s = np.array([0.9, 0.8, 0.7, 0.1, 0.0])
    letor4 = ranking_feval(["P@10"], conventions="letor4").evaluate(s, y, [5])
    letor3 = ranking_feval(["P@10"], conventions="letor3").evaluate(s, y, [5])
    assert letor4["P@10"] == pytest.approx(3 / 10) and letor3["P@10"] == 0.0  # a 5-document query at k = 10
    assert ranking_feval(["P(rel=2)@3"]).evaluate(s, y, [5])["P(rel=2)@3"] == pytest.approx(1 / 3)


# ---------------------------------------------------------------- LightGBM machinery


def test_early_stopping_feature_importance_and_training_improves(ohsumed):
    X, y, group = ohsumed.train.to_flat()
    Xv, yv, gv = ohsumed.vali.to_flat()
    train = lgb.Dataset(X, y, group=group)
    vali = lgb.Dataset(Xv, yv, group=gv, reference=train)
    history = {}
    booster = lgb.train(
        {**BASE, "objective": lambdarank_objective("gap", g=G), "learning_rate": 0.1, "num_leaves": 15},
        train, num_boost_round=300, valid_sets=[vali], valid_names=["vali"],
        feval=ranking_feval(["GAP"], g=G),
        callbacks=[lgb.early_stopping(10, verbose=False), lgb.record_evaluation(history)],
    )
    assert booster.best_iteration < 300 and len(history["vali"]["GAP"]) == booster.best_iteration + 10
    assert max(history["vali"]["GAP"]) == history["vali"]["GAP"][booster.best_iteration - 1]
    importance = booster.feature_importance("gain")
    assert importance.shape == (X.shape[1],) and importance.sum() > 0
    # GAP on the training queries rises above the unfitted (all-tied) model's
    fit = ranking_feval(["GAP"], g=G).evaluate(booster.predict(X), y, group)["GAP"]
    flat = ranking_feval(["GAP"], g=G).evaluate(np.zeros(len(y)), y, group)["GAP"]
    assert fit > flat + 0.05


@pytest.mark.filterwarnings("ignore:The argument 'eval_set' is deprecated")  # LightGBM 4.7; kept for 4.0-4.6
def test_lgbm_ranker_with_our_objective_and_eval_metric(ohsumed):
    X, y, group = ohsumed.train.to_flat()
    Xv, yv, gv = ohsumed.vali.to_flat()
    ranker = lgb.LGBMRanker(objective=sklearn_objective("egap", g=G), n_estimators=200, learning_rate=0.1,
                            num_leaves=15, verbosity=-1, n_jobs=1, random_state=1)
    ranker.fit(X, y, group=group, eval_set=[(Xv, yv)], eval_group=[gv], eval_metric=ranking_feval(["eGAP"], g=G),
               callbacks=[lgb.early_stopping(10, verbose=False)])
    scores = ranker.predict(Xv, num_iteration=ranker.best_iteration_)
    best = ranking_feval(["eGAP"], g=G).evaluate(scores, yv, gv)["eGAP"]
    assert best == pytest.approx(ranker.best_score_["valid_0"]["eGAP"], rel=1e-12)
    assert ranker.feature_importances_.sum() > 0
    # sklearn.clone deep-copies the objective; the clone trains to the same model
    from sklearn.base import clone

    again = clone(ranker).set_params(n_estimators=5).fit(X, y, group=group)
    first = clone(ranker).set_params(n_estimators=5).fit(X, y, group=group)
    np.testing.assert_array_equal(again.predict(Xv), first.predict(Xv))


def test_objective_pickles_and_its_cache_follows_the_data():
    rng = np.random.default_rng(1)
    s, y, sizes = _random_queries(rng, [10, 20])
    obj = lambdarank_objective("gap", g=G)
    g1, _ = obj.gradients(s, y, sizes)
    clone = pickle.loads(pickle.dumps(obj))
    np.testing.assert_array_equal(clone.gradients(s, y, sizes)[0], g1)
    np.testing.assert_array_equal(copy.deepcopy(obj).gradients(s, y, sizes)[0], g1)
    y2 = y.copy()
    y2[0] = 2 - y2[0]  # same shapes, different labels: the cached layout must not be reused
    fresh = lambdarank_objective("gap", g=G).gradients(s, y2, sizes)[0]
    np.testing.assert_array_equal(obj.gradients(s, y2, sizes)[0], fresh)


# ---------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    "make, match",
    [
        (lambda: lambdarank_objective("dcg2"), "measure: unknown measure"),
        (lambda: lambdarank_objective("ndcg", g=G), "g applies"),
        (lambda: lambdarank_objective("gap", label_gain=[0, 1, 3]), "label_gain applies"),
        (lambda: lambdarank_objective("ndcg", label_gain=[0, np.nan]), "label_gain"),
        (lambda: lambdarank_objective("gap", g=[0.5, 0.6]), "sum to 1"),
        (lambda: lambdarank_objective("gap", sigma=0), "sigma"),
        (lambda: lambdarank_objective("gap", truncation_level=0), "positive"),
        (lambda: lambdarank_objective("gap", norm="yes"), "norm"),
        (lambda: lambdarank_objective("gap", precision="float16"), "precision"),
        (lambda: sklearn_objective("gap", precision="half"), "precision"),
        (lambda: ranking_feval([]), "at least one"),
        (lambda: ranking_feval(["GAP", "GAP"]), "unique"),
        (lambda: ranking_feval(["nDCG@x"]), "cannot parse|unknown"),
        (lambda: ranking_feval(["GAP"], conventions="trec_eval"), "conventions"),
    ],
)
def test_bad_options_raise(make, match):
    with pytest.raises(GaprankInputError, match=match):
        make()


@pytest.mark.parametrize(
    "preds, labels, group, match",
    [
        ([0.0, np.nan, 1.0], [0, 1, 2], [3], "NaN"),
        ([0.0, np.inf, 1.0], [0, 1, 2], [3], "NaN or infinite"),
        ([0.0, 0.5, 1.0], [0, 1.5, 2], [3], "integer"),
        ([0.0, 0.5, 1.0], [0, -1, 2], [3], "non-negative"),
        ([0.0, 0.5, 1.0], [0, 3, 2], [3], "above the grade scale"),
        ([0.0, 0.5, 1.0], [0, 1, 2], [2], "sum to 2"),
        ([0.0, 0.5, 1.0], [0, 1, 2], [3, -1], "non-negative integers"),  # an empty group (0) is skipped
        ([0.0, 0.5, 1.0], [0, 1, 2], None, "query groups"),
        ([0.0, 0.5], [0, 1, 2], [3], "one score per row"),
    ],
)
def test_bad_data_raises(preds, labels, group, match):
    with pytest.raises(GaprankInputError, match=match):
        lambdarank_objective("gap", g=G).gradients(np.asarray(preds), np.asarray(labels, float), group)
    if match not in ("above the grade scale", "non-negative integers"):
        with pytest.raises(GaprankInputError, match=match):
            ranking_feval(["MAP"]).evaluate(np.asarray(preds), np.asarray(labels, float), group)
    if match == "non-negative integers":  # the eval function takes whole, non-empty queries only
        with pytest.raises(GaprankInputError, match="positive integers"):
            ranking_feval(["MAP"]).evaluate(np.asarray(preds), np.asarray(labels, float), [3, 0])


def test_label_without_gain_raises():
    with pytest.raises(GaprankInputError, match="has no gain"):
        lambdarank_objective("ndcg", label_gain=[0, 1]).gradients(np.zeros(3), np.array([0.0, 1, 2]), [3])


def test_lgb_train_without_groups_raises():
    X = np.random.default_rng(0).normal(size=(200, 2))
    with pytest.raises(GaprankInputError, match="query groups"):
        lgb.train({**BASE, "objective": lambdarank_objective("gap")}, lgb.Dataset(X, np.arange(200) % 2), 1)


# ---------------------------------------------------------------- hardening


def test_lgb_cv_row_folds_are_refused_and_query_folds_are_whole(ohsumed):
    from gaprank.lightgbm import query_folds

    X, y, group = ohsumed.train.to_flat()
    params = {**BASE, "objective": lambdarank_objective("gap", g=G), "metric": "None", "min_data_in_leaf": 5}
    feval = ranking_feval(["NDCG@10", "P@10"])
    # lgb.cv splits rows for a callable objective: every query would be cut in fragments
    with pytest.raises(GaprankInputError, match="cuts queries apart.*query_folds"):
        lgb.cv(params, lgb.Dataset(X, y, group=group, free_raw_data=False), num_boost_round=2, nfold=3, feval=feval)
    folds = query_folds(group, nfold=3, seed=1)
    starts = np.concatenate([[0], np.cumsum(group)])
    covered = np.sort(np.concatenate([test for _, test in folds]))
    assert covered.tolist() == list(range(len(y)))
    for train_rows, test_rows in folds:
        assert np.intersect1d(train_rows, test_rows).size == 0
        taken = np.bincount(np.searchsorted(starts, test_rows, side="right") - 1, minlength=group.size)
        assert set(np.unique(taken)) <= {0} | set(group.tolist()) and bool(((taken == 0) | (taken == group)).all())
    result = lgb.cv(params, lgb.Dataset(X, y, group=group, free_raw_data=False), num_boost_round=3, folds=folds,
                    feval=feval, return_cvbooster=True)
    # each fold's vali NDCG@10 is gaprank's NDCG@10 of that fold's booster on its whole test queries
    expected = []
    for booster, (_, test_rows) in zip(result["cvbooster"].boosters, folds, strict=True):
        sizes = np.bincount(np.searchsorted(starts, test_rows, side="right") - 1, minlength=group.size)
        value = feval.evaluate(booster.predict(X[test_rows]), y[test_rows], sizes[sizes > 0])["NDCG@10"]
        expected.append(value)
    assert result["valid NDCG@10-mean"][-1] == pytest.approx(np.mean(expected), abs=1e-12)
    assert min(expected) > 0.2  # row folds gave exactly 0.0 here


def test_lgb_cv_folds_do_not_evict_each_others_layouts(ohsumed):
    """lgb.cv hands its five folds' training sets to the objective in turn every round: each is laid out
    once, not once per round."""
    from gaprank.lightgbm import query_folds

    X, y, group = ohsumed.train.to_flat()
    objective = lambdarank_objective("gap", g=G)
    built = []
    prepare = objective._prepared._build
    objective._prepared._build = lambda labels, sizes: built.append(len(labels)) or prepare(labels, sizes)
    params = {**BASE, "objective": objective, "metric": "None", "min_data_in_leaf": 5}
    lgb.cv(params, lgb.Dataset(X, y, group=group, free_raw_data=False), num_boost_round=20,
           folds=query_folds(group, nfold=5, seed=1))
    assert len(built) == 5


@pytest.mark.parametrize("metric, label", [("ndcg", 1024), ("gap", 5000), ("ap", 31)])
def test_labels_above_the_scale_are_refused_by_objective_and_feval(metric, label):
    y = np.array([0.0, 1.0, float(label), 2.0, 0.0, 1.0])
    with pytest.raises(GaprankInputError, match=f"label {label} is above 30"):
        lambdarank_objective(metric).gradients(np.zeros(6), y, [3, 3])
    with pytest.raises(GaprankInputError, match=f"label {label} is above 30"):
        ranking_feval(["NDCG@10"]).evaluate(np.zeros(6), y, [3, 3])


def test_query_folds_bad_arguments():
    from gaprank.lightgbm import query_folds

    with pytest.raises(GaprankInputError, match="nfold must be between 2 and the number of queries"):
        query_folds([3, 2], nfold=3)
    with pytest.raises(GaprankInputError, match="positive integers"):
        query_folds([3, 0, 2], nfold=2)
    sizes = np.array([5, 1, 1, 1, 1, 1])
    loads = sorted(len(test) for _, test in query_folds(sizes, nfold=2, shuffle=False))
    assert loads == [5, 5]  # balanced by documents, not by query count


def test_an_empty_query_group_is_skipped_as_native_lambdarank_does():
    """np.bincount(qid) counts an id no row has as a group of 0 rows; native lambdarank trains with it."""
    rng = np.random.default_rng(2)
    y = rng.integers(0, 3, 30).astype(float)
    X = rng.normal(size=(30, 4))
    qid = np.repeat([0, 2, 3], 10)  # id 1 unused
    group = np.bincount(qid)
    assert group.tolist() == [10, 0, 10, 10]
    objective = lambdarank_objective("gap", g=G)
    scores = rng.normal(size=30)
    with_empty = objective.gradients(scores, y, group)
    without = objective.gradients(scores, y, group[group > 0])
    np.testing.assert_array_equal(with_empty[0], without[0])
    np.testing.assert_array_equal(with_empty[1], without[1])
    for objective_param in (lambdarank_objective("gap", g=G), "lambdarank"):
        booster = lgb.train({**BASE, "objective": objective_param, "min_data_in_leaf": 2},
                            lgb.Dataset(X, y, group=group), 3)
        assert booster.num_trees() == 3
    with pytest.raises(GaprankInputError, match="got negative weight -1"):
        objective.gradients(scores, y, group, weight=np.where(np.arange(30) == 4, -1.0, 1.0))


def test_one_ranking_eval_lightgbm_s_callable_form_is_lightgbm_eval():
    """gaprank.boosting.RankingEval is the one RankingEval; LightGBM's callable form is LightGBMEval (its old
    name is gone)."""

    import gaprank.lightgbm as glgb
    from gaprank.boosting import RankingEval

    assert isinstance(glgb.ranking_feval(["GAP"]), glgb.LightGBMEval)
    assert issubclass(glgb.LightGBMEval, RankingEval) and "RankingEval" not in glgb.__all__
    assert not hasattr(glgb, "RankingEval")


def test_the_sklearn_objective_class_takes_a_measure_string_as_lambdarank_objective_does():
    """One rule for every objective class: a measure string (with settings) or an objective; before, a string
    made an objective that printed fine and failed at its first call."""
    from gaprank.boosting import LambdaMARTObjective
    from gaprank.lightgbm import LambdaRankObjective, SklearnObjective

    rng = np.random.default_rng(0)
    labels, preds, group = rng.integers(0, 3, 40), rng.normal(size=40), np.array([10, 10, 20])
    by_string = SklearnObjective("gap", truncation_level=5)
    by_objective = SklearnObjective(LambdaRankObjective("gap", truncation_level=5))
    for got, want in zip(by_string(labels, preds, None, group), by_objective(labels, preds, None, group), strict=True):
        np.testing.assert_array_equal(got, want)
    with pytest.raises(GaprankInputError, match="not both"):
        SklearnObjective(LambdaMARTObjective("gap"), norm=True)
    with pytest.raises(GaprankInputError, match=r"must be a measure string .*; got \['gap'\]$"):
        SklearnObjective(["gap"])
