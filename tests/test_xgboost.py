"""gaprank.xgboost: native rank:ndcg reproduced, gradients as the LightGBM objective's (XGBoost's hessian
scale), the eval metric against gaprank.metrics, and every bad input a clear error.

One private unit on purpose: ``gaprank.xgboost._dmatrix``, how query sizes and weights are read from a DMatrix
(its group pointer), which XGBoost exposes differently by version."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

xgb = pytest.importorskip("xgboost")

import gaprank  # noqa: E402
import gaprank.xgboost as gx  # noqa: E402
from gaprank import GaprankInputError  # noqa: E402
from gaprank.data import load_fold  # noqa: E402
from gaprank.lightgbm import lambdarank_objective, ranking_feval  # noqa: E402

BASE = {"eta": 0.1, "max_depth": 4, "nthread": 1, "base_score": 0.5, "tree_method": "hist", "seed": 0}


@pytest.fixture(scope="module")
def ohsumed_train():
    fold = load_fold("OHSUMED", 1)
    X, y, group = fold.train.to_flat()
    return X, y, group


def _dmatrix(X, y, group, **kwargs):
    data = xgb.DMatrix(X, label=y, **kwargs)
    data.set_group(group)
    return data


@pytest.mark.parametrize("native, ours, weighted", [
    ({}, dict(truncation_level=32, norm=True), False),  # XGBoost's defaults: topk, 32 pairs per sample, normalised
    ({}, dict(truncation_level=32, norm=True), True),  # per-query weights, normalised to mean 1 as XGBoost does
    ({"lambdarank_num_pair_per_sample": 10, "lambdarank_normalization": False, "lambdarank_score_normalization": False},
     dict(truncation_level=10, norm=False), False),
])
def test_ndcg_objective_reproduces_native_rank_ndcg(ohsumed_train, native, ours, weighted):
    X, y, group = ohsumed_train
    weight = np.random.default_rng(0).uniform(0.2, 3.0, group.size) if weighted else None
    data = _dmatrix(X, y, group, weight=weight)
    native_booster = xgb.train({**BASE, "objective": "rank:ndcg", **native}, data, 20)
    our_booster = xgb.train(BASE, data, 20, obj=gx.objective("ndcg", **ours))
    a, b = native_booster.predict(data), our_booster.predict(data)
    # topk pairs are deterministic (no sampling), so the boosters agree up to float32 rounding
    assert np.abs(a - b).max() < 1e-5
    assert np.abs(a - a.mean()).max() > 0.1  # the boosters moved


@pytest.mark.parametrize("metric", ["gap", "egap", "xgap", "ap", "ndcg"])
def test_gradients_are_the_lightgbm_objectives_with_xgboosts_hessian_scale(metric):
    rng = np.random.default_rng(3)
    sizes = np.array([5, 1, 7, 4])
    y = np.concatenate([rng.integers(0, 3, n) for n in sizes]).astype(np.float32)
    scores = rng.normal(size=y.size)
    g = [0.5, 0.5] if metric in ("gap", "egap", "xgap") else None
    data = xgb.DMatrix(rng.normal(size=(y.size, 2)), label=y, qid=np.repeat(np.arange(sizes.size), sizes))
    grad, hess = gx.objective(metric, g=g, truncation_level=3)(scores, data)
    lgb_grad, lgb_hess = lambdarank_objective(metric, g=g, truncation_level=3).gradients(scores, y, sizes)
    np.testing.assert_array_equal(grad, lgb_grad)
    np.testing.assert_allclose(hess, 2.0 * lgb_hess)
    assert abs(grad.sum()) < 1e-5 and (hess >= 0).all()


def test_training_for_gap_improves_vali_gap_with_early_stopping(ohsumed_train):
    X, y, group = ohsumed_train
    cut = int(np.cumsum(group)[40])
    train = _dmatrix(X[:cut], y[:cut], group[:41])
    vali = _dmatrix(X[cut:], y[cut:], group[41:])
    history: dict = {}
    booster = xgb.train(BASE, train, 200, obj=gx.objective("gap", g=[0.5, 0.5]), evals=[(vali, "vali")],
                        custom_metric=gx.metric(["NDCG@10", "GAP"], g=[0.5, 0.5]), maximize=True,
                        early_stopping_rounds=10, evals_result=history, verbose_eval=False)
    curve = history["vali"]["GAP"]
    assert booster.best_iteration == int(np.argmax(curve)) and len(curve) == booster.best_iteration + 11
    assert max(curve) > curve[0]
    expected = ranking_feval(["NDCG@10", "GAP"], g=[0.5, 0.5]).evaluate(
        booster.predict(vali, iteration_range=(0, booster.best_iteration + 1)), y[cut:], group[41:])
    assert expected["GAP"] == pytest.approx(curve[booster.best_iteration], abs=1e-6)


def test_metric_values_are_gaprank_metrics():
    rng = np.random.default_rng(5)
    sizes = np.array([12, 3, 9])
    y = np.concatenate([rng.integers(0, 3, n) for n in sizes])
    s = rng.normal(size=y.size)
    data = xgb.DMatrix(np.zeros((y.size, 1)), label=y, qid=np.repeat([7, 8, 9], sizes))
    got = dict(gx.metric(["GAP", "MAP", "NDCG@10", "P@10"], g=[0.5, 0.5], conventions="letor4")(s, data))
    starts = np.concatenate([[0], np.cumsum(sizes)])
    per_query = [gaprank.gap(s[a:b][None], y[a:b][None], g=[0.5, 0.5]) for a, b in zip(starts[:-1], starts[1:], strict=True)]
    assert got["GAP"] == pytest.approx(float(np.mean(per_query)))
    assert list(got) == ["GAP", "MAP", "NDCG@10[letor4]", "P@10"]  # LETOR 4.0 pads P@10, as gaprank does


def test_an_objective_reused_on_another_data_set_gives_that_sets_gradients():
    rng = np.random.default_rng(8)
    objective = gx.objective("gap", g=[0.5, 0.5])
    for sizes in ([4, 6], [6, 4], [4, 6]):
        y = np.concatenate([rng.integers(0, 3, n) for n in sizes]).astype(np.float32)
        s = rng.normal(size=y.size)
        data = xgb.DMatrix(np.zeros((y.size, 1)), label=y, qid=np.repeat([0, 1], sizes))
        fresh = gx.objective("gap", g=[0.5, 0.5])(s, data)
        reused = objective(s, data)
        np.testing.assert_array_equal(reused[0], fresh[0])
        np.testing.assert_array_equal(reused[1], fresh[1])


@pytest.mark.parametrize("make, match", [
    (lambda: xgb.DMatrix(np.zeros((4, 1)), label=[1, 0, 2, 0]), "has no query groups"),
    (lambda: xgb.DMatrix(np.zeros((4, 1)), label=[1.5, 0, 2, 0], qid=[1, 1, 2, 2]), "integer"),
    (lambda: xgb.DMatrix(np.zeros((4, 1)), label=[31, 0, 2, 0], qid=[1, 1, 2, 2]), "30"),
    (lambda: xgb.DMatrix(np.zeros((4, 1)), label=[-1, 0, 2, 0], qid=[1, 1, 2, 2]), "negative|>= 0|non-negative"),
])
def test_bad_data_is_a_clear_error(make, match):
    data = make()
    with pytest.raises(GaprankInputError, match=match):
        gx.objective("gap")(np.zeros(4), data)
    with pytest.raises(GaprankInputError, match=match):
        gx.metric(["GAP"])(np.zeros(4), data)


def test_per_row_weights_and_diverged_scores_are_refused():
    data = xgb.DMatrix(np.zeros((4, 1)), label=[1, 0, 2, 0], qid=[1, 1, 2, 2])
    data.set_weight(np.ones(4))
    with pytest.raises(GaprankInputError, match="one weight per query"):
        gx.objective("ap")(np.zeros(4), data)
    plain = xgb.DMatrix(np.zeros((4, 1)), label=[1, 0, 2, 0], qid=[1, 1, 2, 2])
    with pytest.raises(GaprankInputError, match="NaN or infinite"):
        gx.objective("ap")(np.array([0.0, np.nan, 1.0, 2.0]), plain)
    with pytest.raises(GaprankInputError, match="g applies to"):
        gx.objective("ndcg", g=[0.5, 0.5])


def test_the_peers_standard_measures_in_evaluation_and_as_objectives():
    """RR, R@k, Rprec, Success@k and DCG@k in LightGBM's and XGBoost's evaluation equal the metric functions
    per query; each is an XGBoost objective that trains."""
    rng = np.random.default_rng(6)
    sizes = np.array([12, 3, 9, 20])
    y = np.concatenate([rng.integers(0, 3, n) for n in sizes])
    y[12:15] = 0  # a query without a relevant document: undefined for RR, R, Rprec, scored 0 as trec_eval does
    X = rng.normal(size=(y.size, 4)) + y[:, None] * 0.3
    s = rng.normal(size=y.size)
    names = ["MRR", "RR(rel=2)@5", "R@5", "Rprec", "Success@1", "DCG@10"]
    data = xgb.DMatrix(X, label=y, qid=np.repeat(np.arange(sizes.size), sizes))
    got = dict(gx.metric(names)(s, data))
    lgb_got = ranking_feval(names).evaluate(s, y, sizes)
    starts = np.concatenate([[0], np.cumsum(sizes)])
    for name, function, kwargs in [("MRR", gaprank.reciprocal_rank, {}), ("RR(rel=2)@5", gaprank.reciprocal_rank,
                                   {"threshold": 2, "k": 5}), ("R@5", gaprank.recall, {"k": 5}),
                                   ("Rprec", gaprank.r_precision, {}), ("Success@1", gaprank.success, {"k": 1}),
                                   ("DCG@10", gaprank.dcg, {"k": 10})]:
        per_query = [float(function(s[a:b], y[a:b], **kwargs)) for a, b in zip(starts[:-1], starts[1:], strict=True)]
        assert got[name] == pytest.approx(np.mean(per_query), rel=1e-12), name
        assert lgb_got[name] == pytest.approx(np.mean(per_query), rel=1e-12), name
    for name in ["MRR", "R@5", "Rprec", "DCG@10"]:  # Success@k: its deltas vanish once a relevant document is in
        booster = xgb.train(BASE, data, 5, obj=gx.objective(name))
        assert np.isfinite(booster.predict(data)).all() and np.ptp(booster.predict(data)) > 0, name


def _read_three(data):
    from gaprank.xgboost import _dmatrix
    return _dmatrix.labels(data), _dmatrix.weights(data), _dmatrix.group_pointer(data)


@pytest.mark.parametrize("build", [
    lambda: xgb.DMatrix(np.zeros((5, 1)), label=[2, 0, 1, 0, 1], qid=[3, 3, 3, 7, 7]),
    lambda: xgb.DMatrix(np.zeros((5, 1)), label=[2, 0, 1, 0, 1], qid=[3, 3, 3, 7, 7], weight=[0.5, 2.0]),
    lambda: xgb.DMatrix(np.zeros((5, 1)), label=[2, 0, 1, 0, 1]),  # no groups
    lambda: xgb.DMatrix(np.zeros((0, 1)), label=np.zeros(0)),
    lambda: xgb.QuantileDMatrix(np.arange(10.0).reshape(5, 2), label=[2, 0, 1, 0, 1], qid=[3, 3, 3, 7, 7]),
    lambda: xgb.DMatrix(np.zeros((3, 1)), label=np.array([[1, 0], [0, 1], [2, 2]])),  # two targets: get_label's 2-D
])
def test_the_objective_reads_a_dmatrix_as_its_public_accessors_do(build):
    """The C API reads behind the objective and the metric (each round) give what get_label, get_weight and
    get_uint_info("group_ptr") give, in shape, dtype and value, and follow a set_label/set_group made between
    rounds."""
    from gaprank.xgboost import _dmatrix
    data = build()
    if data.get_label().ndim == 1:  # read through the C API, not the accessors (the speed this is for)
        assert _dmatrix._read(data, b"label", np.float32) is not None
        assert _dmatrix._read(data, b"group_ptr", np.uint32) is not None
    for _ in range(2):
        public = (data.get_label(), data.get_weight(), data.get_uint_info("group_ptr"))
        for ours, theirs in zip(_read_three(data), public, strict=True):
            assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
            np.testing.assert_array_equal(ours, theirs)
        if data.num_row() == 5:
            data.set_label(np.array([0, 1, 2, 2, 0]))
            data.set_group([2, 3])


def test_the_objective_follows_a_dmatrix_whose_groups_change_between_rounds():
    """The objective keeps the last group pointer's query sizes; a set_group between calls, or another DMatrix,
    is read afresh: each call gives what a fresh objective gives."""
    rng = np.random.default_rng(5)
    y = rng.integers(0, 3, 30).astype(np.float32)
    first = xgb.DMatrix(np.zeros((30, 1)), label=y, qid=np.repeat(np.arange(3), 10))
    other = xgb.DMatrix(np.zeros((30, 1)), label=y, qid=np.repeat(np.arange(5), 6))
    s = rng.normal(size=30)
    kept = gx.objective("gap", g=[0.5, 0.5])
    for data in (first, other, first):
        for ours, fresh in zip(kept(s, data), gx.objective("gap", g=[0.5, 0.5])(s, data), strict=True):
            np.testing.assert_array_equal(ours, fresh)
    first.set_group([4, 26])
    for ours, fresh in zip(kept(s, first), gx.objective("gap", g=[0.5, 0.5])(s, first), strict=True):
        np.testing.assert_array_equal(ours, fresh)
    assert not np.array_equal(kept(s, first)[0], kept(s, other)[0])
    copied = pickle.loads(pickle.dumps(kept))  # a copy starts without the groups it last read
    assert "_groups" not in copied.__dict__ and "_groups" in kept.__dict__
    for ours, fresh in zip(copied(s, other), gx.objective("gap", g=[0.5, 0.5])(s, other), strict=True):
        np.testing.assert_array_equal(ours, fresh)


def test_the_objective_reads_through_the_accessors_where_the_c_api_is_missing(monkeypatch):
    from gaprank.xgboost import _dmatrix
    rng = np.random.default_rng(3)
    y = rng.integers(0, 3, 40).astype(np.float32)
    data = xgb.DMatrix(np.zeros((40, 1)), label=y, qid=np.repeat(np.arange(4), 10), weight=[1.0, 2.0, 0.5, 1.0])
    s = rng.normal(size=40)
    through_c = gx.objective("gap", g=[0.5, 0.5])(s, data)
    monkeypatch.setattr(_dmatrix, "_library", None)
    through_accessors = gx.objective("gap", g=[0.5, 0.5])(s, data)
    for ours, theirs in zip(through_c, through_accessors, strict=True):
        np.testing.assert_array_equal(ours, theirs)


@pytest.mark.parametrize("version, with_cuda, fast", [("3.2.0", True, True), ("3.3.0", False, True),
                                                      ("3.3.0", True, False), ("4.0.1", True, False)])
def test_the_c_api_serves_only_where_its_arrays_are_host_memory(monkeypatch, version, with_cuda, fast):
    """Up to XGBoost 3.2 (checked in its source) and in builds without CUDA; a later CUDA build might return
    device memory, which the accessors know how to read."""
    from gaprank.xgboost import _dmatrix
    monkeypatch.setattr(xgb, "__version__", version)
    monkeypatch.setattr(xgb, "build_info", lambda: {"USE_CUDA": with_cuda})
    assert (_dmatrix._c_api() is not None) is fast


def test_the_objective_class_takes_a_measure_string_as_its_lightgbm_sibling_does():
    """One rule for every objective class: a measure string (with settings) or an objective; before, a string
    made an objective that printed fine and failed at its first call."""
    from gaprank.boosting import LambdaMARTObjective

    rng = np.random.default_rng(0)
    labels, preds = rng.integers(0, 3, 40).astype(float), rng.normal(size=40)
    dtrain = xgb.DMatrix(np.zeros((40, 1)), label=labels, qid=np.repeat(np.arange(4), 10))
    by_string = gx.XGBoostObjective("gap", truncation_level=5)
    by_objective = gx.XGBoostObjective(LambdaMARTObjective("gap", truncation_level=5))
    for got, want in zip(by_string(preds, dtrain), by_objective(preds, dtrain), strict=True):
        np.testing.assert_array_equal(got, want)
    with pytest.raises(GaprankInputError, match="not both"):
        gx.XGBoostObjective(LambdaMARTObjective("gap"), truncation_level=5)
    with pytest.raises(GaprankInputError, match="must be a measure string .*; got 3$"):
        gx.XGBoostObjective(3)
