"""The compiled LambdaMART kernel (gaprank._engine.compiled) against the torch pair engine it replaces for kernel and
discounted-gain measures: equal to 1e-10 for every such objective measure and setting, independent of the thread
count; measures with factors of their own keep the torch engine."""

from __future__ import annotations

import numpy as np
import pytest

from gaprank.boosting import LambdaMARTObjective
from gaprank.data import load_fold
from gaprank.metrics import GainDiscountForm, KernelForm, measures, objective_names

numba = pytest.importorskip("numba")

from gaprank._engine import compiled  # noqa: E402

SETTINGS = [{}, {"truncation_level": 5}, {"truncation_level": 30, "norm": True}, {"norm": True, "sigma": 2.0},
            {"sigma": 0.5, "truncation_level": 1}]


@pytest.fixture(scope="module")
def data():
    train = load_fold("OHSUMED", 1).train
    rng = np.random.default_rng(0)
    y = train.labels.copy()
    sizes = train.group_sizes.copy()
    scores = rng.normal(size=y.size).round(1)  # many ties: ranked in row order by both
    starts = np.concatenate([[0], np.cumsum(sizes)])
    scores[starts[3]:starts[4]] = 0.25  # a query whose scores are all equal (lambdarank_norm's special case)
    y[starts[5]:starts[6]] = 1  # a query with one label: no pair
    return scores, y, sizes


def _compiled_measures():
    strings = {"ap": "AP", "gap": "GAP", "xgap": "xGAP", "egap": "eGAP", "ndcg": "nDCG", "p": "P@5", "rbp": "RBP(p=0.7)",
               "sr": "SR", "vg": "vG", "erap": "eRAP(p=[0,0.4,1])", "errbp": "eRRBP(p=[0,0.5,1])", "r": "R@10",
               "dcg": "DCG@10"}
    kinds = {info.name.lower(): info.form for info in measures()}
    chosen = [name for name in objective_names() if isinstance(kinds[name], (KernelForm, GainDiscountForm))]
    assert set(chosen) == set(strings), "a new kernel or discounted-gain measure needs a string here"
    return [strings[name] for name in chosen] + ["GAP(g=[0.2,0.8])@10", "nDCG@10", "AP(rel=2)"]


def _both(metric, settings, scores, y, sizes, weight=None):
    fast = LambdaMARTObjective(metric, precision="float64", backend="compiled", **settings)  # refused where it cannot serve
    reference = LambdaMARTObjective(metric, precision="float64", backend="torch", **settings)
    got = fast.gradients(scores, y, sizes, weight)
    return got, reference.gradients(scores, y, sizes, weight)


@pytest.mark.parametrize("metric", _compiled_measures())
def test_equal_to_the_torch_engine_for_every_measure_and_setting(data, metric):
    scores, y, sizes = data
    for settings in SETTINGS:
        (grad, hess), (grad_ref, hess_ref) = _both(metric, settings, scores, y, sizes)
        scale = max(np.abs(grad_ref).max(), 1e-300)
        np.testing.assert_allclose(grad, grad_ref, rtol=0, atol=1e-10 * scale, err_msg=f"{metric} {settings}")
        np.testing.assert_allclose(hess, hess_ref, rtol=0, atol=1e-10 * max(np.abs(hess_ref).max(), 1e-300),
                                   err_msg=f"{metric} {settings}")
        assert np.abs(grad_ref).max() > 0


def test_label_gain_weights_and_ndcg_mirror(data):
    scores, y, sizes = data
    weight = np.random.default_rng(1).random(y.size)
    settings = {"truncation_level": 30, "norm": True, "label_gain": [0, 1, 3]}
    (grad, hess), (grad_ref, hess_ref) = _both("ndcg", settings, scores, y, sizes, weight)
    np.testing.assert_allclose(grad, grad_ref, rtol=0, atol=1e-12)
    np.testing.assert_allclose(hess, hess_ref, rtol=0, atol=1e-12)


def test_measures_with_their_own_factors_keep_the_torch_engine(data):
    scores, y, sizes = data
    for metric in ("ERR", "Q", "RR", "Rprec", "Success@5"):
        objective = LambdaMARTObjective(metric)
        objective.gradients(scores, y, sizes)
        assert objective._prepared.get(y, sizes).kernel_plan is None, metric


def test_a_data_set_holds_only_its_backends_part(data):
    """The compiled plan or the torch engine's rounds, never both, and no placeholder for the other; a data set on
    which no pair changes the measure holds neither and gets 0 and 0."""
    scores, y, sizes = data
    for metric, backend in (("gap", "compiled"), ("ERR", "torch"), ("gap", "torch")):
        prepared = LambdaMARTObjective(metric, backend=backend)._prepared.get(y, sizes)
        assert (prepared.kernel_plan is not None) == (backend == "compiled")
        assert (prepared.torch_rounds is not None) == (backend == "torch")
    one_label = np.ones(12, dtype=np.int64)
    for backend in ("compiled", "torch"):
        objective = LambdaMARTObjective("gap", backend=backend)
        grad, hess = objective.gradients(np.arange(12.0), one_label, np.array([5, 7]))
        prepared = objective._prepared.get(one_label, np.array([5, 7]))
        assert prepared.kernel_plan is None and prepared.torch_rounds is None
        assert not grad.any() and not hess.any() and grad.shape == hess.shape == (12,)


def test_the_result_does_not_depend_on_the_thread_count(data):
    scores, y, sizes = data
    results = []
    before = numba.get_num_threads()
    try:
        for threads in sorted({1, before}):
            numba.set_num_threads(threads)
            objective = LambdaMARTObjective("gap", truncation_level=30, norm=True)  # lanes dealt for this count
            results.append(objective.gradients(scores, y, sizes))
    finally:
        numba.set_num_threads(before)
    for grad, hess in results[1:]:
        assert np.array_equal(grad, results[0][0]) and np.array_equal(hess, results[0][1])
    assert compiled.COMPILE_SECONDS and compiled.COMPILE_SECONDS[0] >= 0  # the first call's compile, reported


@pytest.mark.parametrize("metric", ["gap", "GAP(g=[0.2,0.8])@10", "nDCG@10", "eRAP(p=[0,0.4,1])"])
def test_rows_of_the_most_common_grade_skip_its_pairs_whatever_grade_it_is(data, metric):
    """An upper rank of a query's most common grade takes only the other grades' ranks: the torch engine's
    numbers when that grade is 0, 1 or 2, when a query holds it alone, and when it is tied with another."""
    scores, y, sizes = data
    starts = np.concatenate([[0], np.cumsum(sizes)])
    for labels in (y, 2 - y, np.where(y == 0, 1, np.where(y == 1, 0, y))):
        labels = labels.copy()
        labels[starts[7]:starts[8]] = 2  # one grade alone: no pair
        labels[starts[8]:starts[9]] = np.arange(sizes[8]) % 2  # two grades, as common as each other
        labels[starts[9]:starts[10]] = 0
        labels[starts[9]] = 2  # one document of another grade
        for settings in ({"truncation_level": 30, "norm": True}, {}):
            (grad, hess), (grad_ref, hess_ref) = _both(metric, settings, scores, labels, sizes)
            np.testing.assert_allclose(grad, grad_ref, rtol=0, atol=1e-10 * np.abs(grad_ref).max())
            np.testing.assert_allclose(hess, hess_ref, rtol=0, atol=1e-10 * np.abs(hess_ref).max())


def test_a_small_plan_runs_on_the_calling_thread_and_a_large_one_on_every_thread(data):
    """Below ``THREADED_PAIRS`` pairs the plan has one lane (no thread to wake); above it, one per thread (at
    most one per query)."""
    scores, y, sizes = data
    small = LambdaMARTObjective("gap", truncation_level=1, backend="compiled")
    large = LambdaMARTObjective("gap", backend="compiled")
    for objective, lanes in ((small, 1), (large, min(numba.get_num_threads(), sizes.size))):
        objective.gradients(scores, y, sizes)
        assert objective._prepared.get(y, sizes).kernel_plan.lane_starts.size - 1 == lanes


def test_lanes_deal_every_query_once_in_equal_shares_of_the_pairs():
    """numba gives each thread an equal run of lanes: each lane holds about an equal share of the pairs."""
    pairs = np.random.default_rng(0).integers(1, 400, 471).astype(np.float64)
    queries, starts = compiled.balanced_lanes(pairs, 8)
    assert sorted(queries.tolist()) == list(range(471)) and starts[0] == 0 and starts[-1] == 471
    shares = np.array([pairs[queries[starts[i]:starts[i + 1]]].sum() for i in range(8)]) / pairs.sum()
    np.testing.assert_allclose(shares, np.full(8, 1 / 8), atol=0.01)
    few = np.array([100.0, 1, 1, 1, 50, 50, 2])  # a query larger than its lane's share: no lane takes it twice
    queries, starts = compiled.balanced_lanes(few, 4)
    assert sorted(queries.tolist()) == list(range(7)) and (np.diff(starts) >= 0).all() and starts[-1] == 7


def test_each_call_ranks_afresh_from_the_last_ranking(data):
    """The sort starts from the last call's ranking: scores that barely move, scores reversed (the fallback
    merge sort), ties, then the first scores again all give the torch engine's gradients."""
    scores, y, sizes = data
    fast = LambdaMARTObjective("gap", precision="float64", truncation_level=30, norm=True, backend="compiled")
    reference = LambdaMARTObjective("gap", precision="float64", truncation_level=30, norm=True, backend="torch")
    rng = np.random.default_rng(5)
    for current in (scores, scores + 0.01 * rng.normal(size=scores.size), -scores, np.zeros_like(scores),
                    np.round(rng.normal(size=scores.size)), scores):
        np.testing.assert_allclose(fast.gradients(current, y, sizes)[0], reference.gradients(current, y, sizes)[0],
                                   rtol=0, atol=1e-12)


def test_scores_far_below_the_top_take_the_sigmoid_itself(data):
    """Where exp(sigma (s_a - s_1)) underflows (a score ~1000 below its query's top) the kernel takes the sigmoid
    itself: the same gradients as the torch engine, and finite."""
    scores, y, sizes = data
    far = scores.copy()
    starts = np.concatenate([[0], np.cumsum(sizes)])
    far[starts[:-1]] += 1000.0  # each query's first row far above the others
    for metric in ("gap", "nDCG@10"):
        (grad, hess), (grad_ref, hess_ref) = _both(metric, {"norm": True}, far, y, sizes)
        assert np.isfinite(grad).all() and np.abs(grad_ref).max() > 0
        np.testing.assert_allclose(grad, grad_ref, rtol=0, atol=1e-10 * np.abs(grad_ref).max())
        np.testing.assert_allclose(hess, hess_ref, rtol=0, atol=1e-10 * max(np.abs(hess_ref).max(), 1e-300))
