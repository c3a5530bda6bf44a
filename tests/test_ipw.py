"""Per-document weights on the metrics: the inverse-propensity (IPW) estimate of a measure.

Checked against weighted oracles written with plain loops from the definition (docs: The maths, "Weights:
inverse-propensity estimates"), by exact enumeration of every examination pattern (the numerator and the
normaliser are unbiased), by Monte Carlo over sessions (the ratio is consistent), and against bad input."""

from __future__ import annotations

import itertools
import math
import zlib

import numpy as np
import pytest
import torch

import gaprank
from gaprank import GaprankInputError
from gaprank.metrics import GainDiscountForm, MeasureInfo, register, unregister


def _ranked(scores, labels, weights):
    order = sorted(range(len(scores)), key=lambda i: (-scores[i], i))
    return [labels[i] for i in order], [weights[i] for i in order]


def _cum_g(g, a):
    return sum(g[:a])


def gap_oracle(r, w, g, k=None):
    """sum_n (w_n/n) sum_{m<=n} G(min(r_m, r_n)) (w_m for m < n), over sum_i w_i G(r_i)."""
    norm = sum(wi * _cum_g(g, ri) for ri, wi in zip(r, w, strict=True))
    if norm <= 0:  # nothing relevant, or (negative weights) less than nothing: undefined
        return None
    total = 0.0
    for n in range(1, len(r) + 1):
        if k is not None and n > k:
            break
        inner = _cum_g(g, r[n - 1])
        for m in range(1, n):
            inner += w[m - 1] * _cum_g(g, min(r[m - 1], r[n - 1]))
        total += w[n - 1] * inner / n
    return total / norm


def ap_oracle(r, w, threshold=1, k=None):
    rb = sum(wi for ri, wi in zip(r, w, strict=True) if ri >= threshold)
    if rb <= 0:
        return None
    total, above = 0.0, 0.0
    for n, (ri, wi) in enumerate(zip(r, w, strict=True), 1):
        if ri >= threshold:
            if k is None or n <= k:
                total += wi * (1.0 + above) / n
            above += wi
    return total / rb


def egap_oracle(r, w, g, k=None):
    """E[AP(K)] over the threshold K ~ g, each AP weighted."""
    if ap_oracle(r, w, 1) is None:
        return None
    return sum(g[a - 1] * (ap_oracle(r, w, a, k) or 0.0) for a in range(1, len(g) + 1))


def ndcg_oracle(r, w, k=None):
    gains = [wi * (2 ** ri - 1) for ri, wi in zip(r, w, strict=True)]
    disc = [1 / math.log2(n + 1) for n in range(1, len(r) + 1)]
    cut = len(r) if k is None else min(k, len(r))
    ideal = sum(a * b for a, b in zip(sorted(gains, reverse=True)[:cut], disc[:cut], strict=True))
    return None if ideal <= 0 else sum(a * b for a, b in zip(gains[:cut], disc[:cut], strict=True)) / ideal


def erap_oracle(r, w, p):
    rb = sum(wi * p[ri] for ri, wi in zip(r, w, strict=True))
    if rb <= 0:
        return None
    total, above = 0.0, 0.0
    for n, (ri, wi) in enumerate(zip(r, w, strict=True), 1):
        total += wi * p[ri] * (1.0 + above) / n
        above += wi * p[ri]
    return total / rb


CASES = [(np.random.default_rng(seed), seed) for seed in range(12)]


@pytest.mark.parametrize("rng,seed", CASES)
def test_weighted_metrics_equal_their_loop_oracles(rng, seed):
    """Weights of either sign (the odd seeds draw negative ones too: affine estimates; a normaliser <= 0 leaves
    the measure undefined)."""
    size = int(rng.integers(2, 9))
    scores = rng.integers(0, 4, size).astype(float)  # ties, kept in input order
    labels = rng.integers(0, 4, size)
    weights = rng.choice([0.0, 0.5, 1.0, 2.5, 7.0] + ([-0.4, -1.5] if seed % 2 else []), size)
    g = [0.2, 0.3, 0.5]
    p = [0.0, 0.3, 0.6, 1.0]
    r, w = _ranked(list(scores), list(labels), list(weights))
    k = int(rng.integers(1, size + 1))
    checks = [
        (gaprank.gap(scores, labels, g=g, weights=weights), gap_oracle(r, w, g)),
        (gaprank.gap(scores, labels, g=g, weights=weights, k=k), gap_oracle(r, w, g, k)),
        (gaprank.average_precision(scores, labels, threshold=2, weights=weights), ap_oracle(r, w, 2)),
        (gaprank.egap(scores, labels, g=g, weights=weights, k=k), egap_oracle(r, w, g, k)),
        (gaprank.ndcg(scores, labels, weights=weights), ndcg_oracle(r, w)),
        (gaprank.ndcg(scores, labels, weights=weights, k=k), ndcg_oracle(r, w, k)),
        (gaprank.erap(scores, labels, p=p, weights=weights), erap_oracle(r, w, p)),
        (gaprank.precision(scores, labels, k=k, weights=weights),
         sum(wi * (ri >= 1) for ri, wi in zip(r[:k], w[:k], strict=True)) / k),
        (gaprank.dcg(scores, labels, weights=weights, k=k),
         sum(wi * (2 ** ri - 1) / math.log2(n + 1) for n, (ri, wi) in enumerate(zip(r[:k], w[:k], strict=True), 1))),
    ]
    for got, want in checks:
        if want is None:  # undefined: the empty value
            assert float(got) == 0.0
        else:
            assert float(got) == pytest.approx(want, rel=1e-12, abs=1e-12), seed


WEIGHTED = [info for info in gaprank.metrics.measures() if info.form.takes_weights]


@pytest.mark.parametrize("info", WEIGHTED, ids=lambda info: info.name)
def test_unit_weights_give_the_unweighted_measure_and_padding_weights_are_never_read(info):
    rng = np.random.default_rng(3)
    scores, labels = rng.normal(size=(5, 9)), rng.integers(0, 3, (5, 9))
    mask = np.ones((5, 9), dtype=bool)
    mask[1, 6:] = False
    weights = np.where(mask, 1.0, np.nan)  # padding's weights are never read
    options = {"k": 4} if info.needs_cutoff else {}
    options.update({"p": [0.0, 0.5, 1.0]} if "p" in info.parameters and info.name in ("eRAP", "eRRBP") else {})
    plain = info.function(scores, labels, mask=mask, reduction="none", **options)
    weighted = info.function(scores, labels, mask=mask, weights=weights, reduction="none", **options)
    np.testing.assert_allclose(weighted, plain, rtol=1e-14)  # an ideal sum may add in another order


def test_the_ipw_numerator_and_normaliser_are_unbiased_by_exact_enumeration():
    """Every examination pattern of a 5-document list shown at positions 1..5 (examined with probability
    theta_p, independently), its probability, the observed grades and the weights 1/theta: the expected weighted
    GAP numerator and normaliser, and the expected weighted DCG, equal the true-grade ones exactly; weighting each
    document once (its pairs by w_n alone) does not."""
    grades = np.array([2, 0, 1, 2, 1])
    theta = np.array([1.0, 0.6, 0.45, 0.3, 0.2])  # the logger showed document i at position i + 1
    scores = np.array([0.1, 0.9, 0.5, 0.7, 0.3])  # the ranking under evaluation, not the logger's
    g = [0.4, 0.6]

    def normaliser(observed, weights):
        return float(sum(wi * _cum_g(g, ri) for ri, wi in zip(observed, weights, strict=True)))

    expected_num = expected_norm = expected_dcg = expected_once = 0.0
    for pattern in itertools.product([0, 1], repeat=5):
        seen = np.array(pattern, dtype=bool)
        chance = float(np.prod(np.where(seen, theta, 1 - theta)))
        observed = np.where(seen, grades, 0)
        weights = 1.0 / theta
        norm = normaliser(observed, weights)
        value = float(gaprank.gap(scores, observed, g=g, weights=weights))
        expected_num += chance * value * norm
        expected_norm += chance * norm
        expected_dcg += chance * float(gaprank.dcg(scores, observed, weights=weights))
        r, w = _ranked(list(scores), list(observed), list(weights))
        once = gap_oracle(r, [1.0] * 5, g)  # pairs unweighted: each document's weight taken once, on its pivot
        if once is not None:
            expected_once += chance * sum(
                wi * (_cum_g(g, ri) + sum(_cum_g(g, min(rm, ri)) for rm in r[:n - 1])) / n
                for n, (ri, wi) in enumerate(zip(r, w, strict=True), 1))
    true_norm = normaliser(grades, np.ones(5))
    true_num = float(gaprank.gap(scores, grades, g=g)) * true_norm
    assert expected_norm == pytest.approx(true_norm, rel=1e-12)
    assert expected_num == pytest.approx(true_num, rel=1e-12)
    assert expected_dcg == pytest.approx(float(gaprank.dcg(scores, grades)), rel=1e-12)
    assert expected_once < 0.9 * true_num  # the per-document weighting is biased (low)


def test_the_ipw_ratio_is_consistent_over_sessions_by_monte_carlo():
    """S sessions of a batch of queries under the position-based model; each document's weight is the share of
    sessions that saw its grade over its propensity. The weighted GAP and nDCG@5 of a fixed ranking approach the
    true-grade values as S grows (a ratio estimator: a bias of order 1/S), while the unweighted ones on the same
    observed grades stay off."""
    rng = np.random.default_rng(7)
    queries, size = 40, 8
    grades = rng.integers(0, 3, (queries, size))
    grades[:, 0] = 2  # every query defined
    theta = (1.0 / np.arange(1, size + 1)) ** 1.0  # the logger shows documents in input order
    scores = rng.normal(size=(queries, size))
    true_gap = float(gaprank.gap(scores, grades))
    true_ndcg = float(gaprank.ndcg(scores, grades, k=5))
    sessions = 4000
    seen = rng.random((sessions, queries, size)) < theta  # examined in each session
    shares = seen.mean(0)  # the sessions in which each document showed its grade
    observed = np.where(shares > 0, grades, 0)
    weights = shares / theta
    estimate_gap = float(gaprank.gap(scores, observed, weights=weights))
    estimate_ndcg = float(gaprank.ndcg(scores, observed, k=5, weights=weights))
    # standard error of the batch mean ~ 0.004 here; the unweighted value is off by ~0.1
    assert estimate_gap == pytest.approx(true_gap, abs=0.02)
    assert estimate_ndcg == pytest.approx(true_ndcg, abs=0.02)
    assert abs(float(gaprank.gap(scores, observed, weights=shares)) - true_gap) > 0.05


def test_a_registered_measure_takes_weights_when_its_form_does():
    info = register(MeasureInfo("TopWeighted", GainDiscountForm(
        gain=lambda c, params: torch.arange(c + 1, dtype=torch.float64),
        discount=lambda positions, params: (positions == 1).to(torch.float64))))
    try:
        assert float(info.function(np.array([0.2, 0.9]), np.array([3, 1]), weights=[1.0, 4.0])) == 4.0
    finally:
        unregister("TopWeighted")


@pytest.mark.parametrize("call,message", [
    (lambda: gaprank.gap([1.0, 0.5], [1, 0], weights=[1.0, -np.inf]), r"weights must be finite; got -inf"),
    (lambda: gaprank.gap([1.0, 0.5], [1, 0], weights=[np.nan, 1.0]), "weights must be finite; got nan"),
    (lambda: gaprank.gap([1.0, 0.5], [1, 0], weights=[1.0]), r"weights shape \(1,\) does not match scores shape"),
    (lambda: gaprank.gap([1.0, 0.5], [1, 0], weights=[True, False]), "weights must be real numbers"),
    (lambda: gaprank.gap([1.0, 0.5], [1, 0], weights=[1.0, 1.0], grade_counts=[1, 1]),
     "weights and grade_counts cannot be combined"),
    (lambda: gaprank.metrics.find_measure("ERR").evaluate([1.0, 0.5], [1, 0], k=None, mask=None, grade_counts=None,
                                                           ties="stable", empty_value=0.0, reduction="mean",
                                                           weights=[1.0, 2.0], max_grade=None),
     "ERR does not take weights"),
])
def test_bad_weights_are_one_line_errors(call, message):
    with pytest.raises(GaprankInputError, match=message) as caught:
        call()
    assert "\n" not in str(caught.value)


def test_measures_that_cannot_weigh_documents_have_no_weights_keyword():
    for function in (gaprank.err, gaprank.q_measure, gaprank.generalized_ap, gaprank.reciprocal_rank):
        with pytest.raises(TypeError, match="weights"):
            function([1.0, 0.5], [1, 0], weights=[1.0, 1.0])


# ----------------------------------------------------------------------------- the losses' weights

WEIGHTED_OBJECTIVES = [("gap", gaprank.gap, {}), ("gap@2", gaprank.gap, {"k": 2}), ("AP(rel=2)", gaprank.average_precision,
                        {"threshold": 2}), ("egap", gaprank.egap, {}), ("xgap", gaprank.xgap, {}),
                       ("eRAP(p=[0,0.3,0.6,1])", gaprank.erap, {"p": [0, 0.3, 0.6, 1]}), ("ndcg", gaprank.ndcg, {}),
                       ("nDCG@3", gaprank.ndcg, {"k": 3}), ("P@2", gaprank.precision, {"k": 2}),
                       ("RBP(p=0.7)", gaprank.rbp, {"persistence": 0.7}), ("SR", gaprank.sliding_ratio, {})]


@pytest.mark.parametrize("measure,metric,options", WEIGHTED_OBJECTIVES, ids=[m for m, _, _ in WEIGHTED_OBJECTIVES])
def test_weighted_swap_deltas_are_the_weighted_metric_s_change_by_recomputation(measure, metric, options):
    """Every pair, equal labels too (their weights may differ): the delta is the weighted metric after swapping the
    two scores minus before (a document's pair with itself is quadratic in its weight: the engine's one extra factor
    pair)."""
    from gaprank.losses import swap_deltas

    rng = np.random.default_rng(zlib.crc32(measure.encode()))
    for _ in range(6):
        size = int(rng.integers(2, 8))
        scores = torch.tensor(rng.normal(size=size))
        labels = torch.tensor(rng.integers(0, 4, size))
        labels[0] = 3  # the scale 0..3 eRAP's p fixes
        weights = torch.tensor(rng.choice([0.0, 0.3, 1.0, 2.0, 5.0, -0.6], size))  # negative: an affine estimate
        deltas = swap_deltas(scores, labels, measure=measure, weights=weights)
        before = float(metric(scores, labels, weights=weights, **options))
        for i, j in itertools.permutations(range(size), 2):
            swapped = scores.clone()
            swapped[[i, j]] = scores[[j, i]]
            after = float(metric(swapped, labels, weights=weights, **options))
            assert float(deltas[i, j]) == pytest.approx(after - before, abs=1e-12), (measure, i, j)


@pytest.mark.parametrize("call,message", [
    (lambda: gaprank.losses.lambdarank_loss(torch.zeros(3), [1, 0, 2], measure="err", weights=[1.0, 1.0, 1.0]),
     "ERR does not take weights"),
    (lambda: gaprank.losses.lambdarank_loss(torch.zeros(3), [1, 0, 2], weights=[1.0, np.inf, 1.0]),
     "weights must be finite; got inf"),
    (lambda: gaprank.losses.LambdaRankLoss()(torch.zeros(3), [1, 0, 2], None, [1.0, 1.0]), "weights shape"),
    (lambda: gaprank.losses.swap_deltas(torch.zeros(3), [1, 0, 2], measure="vG", weights=[1.0, 1.0, 1.0]),
     "vG does not take weights"),
])
def test_bad_weights_of_a_loss_are_one_line_errors(call, message):
    with pytest.raises(GaprankInputError, match=message) as caught:
        call()
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize("measure", ["gap", "egap", "nDCG@5", "AP"])
@pytest.mark.parametrize("truncation", [None, 6])
def test_the_compiled_kernel_weighs_documents_as_the_torch_engine_does(measure, truncation):
    """Long lists mostly of one grade (the compiled kernel's gathered rows of the common grade) and lists of spread
    grades: loss and gradient of both backends agree with weights."""
    pytest.importorskip("numba")
    rng = np.random.default_rng(8)
    scores = torch.tensor(rng.normal(size=(6, 40)))
    labels = torch.tensor(np.where(rng.random((6, 40)) < 0.85, 0, rng.integers(1, 4, (6, 40))))
    labels[3:] = torch.tensor(rng.integers(0, 4, (3, 40)))
    labels[:, 0] = 3
    weights = torch.tensor(rng.choice([0.0, 0.5, 1.0, 3.0, 9.0, -0.3, -2.0], size=(6, 40)))  # negative: affine
    results = []
    for backend in ("compiled", "torch"):
        s = scores.clone().requires_grad_(True)
        loss = gaprank.losses.lambdarank_loss(s, labels, measure=measure, weights=weights, truncation_level=truncation,
                                              reduction="sum", backend=backend)
        loss.backward()
        results.append((loss.detach(), s.grad))
    torch.testing.assert_close(results[0][0], results[1][0], rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(results[0][1], results[1][1], rtol=1e-12, atol=1e-12)


# ----------------------------------------------------------------------------- LambdaMART's weights


def _grouped_batch(seed):
    rng = np.random.default_rng(seed)
    sizes = np.array([7, 1, 12, 5, 30])
    labels = rng.integers(0, 4, sizes.sum())
    labels[0] = 3
    weights = rng.choice([0.0, 0.5, 1.0, 3.0, 9.0, -0.4], sizes.sum())  # negative: an affine estimate
    preds = rng.normal(size=sizes.sum())
    return sizes, labels, weights, preds


@pytest.mark.parametrize("measure", ["gap", "egap", "nDCG@5", "ndcg"])
@pytest.mark.parametrize("backend", ["compiled", "torch"])
def test_lambdamart_with_weights_in_the_measure_gives_the_weighted_loss_s_gradient(measure, backend):
    """row_weights="measure": each query's gradient is the weighted LambdaRank loss's (the same swap deltas); the
    two backends' hessians agree; other weights give other gradients (the data set's plan is not reused)."""
    from gaprank.boosting import LambdaMARTObjective

    if backend == "compiled":
        pytest.importorskip("numba")
    sizes, labels, weights, preds = _grouped_batch(2)
    objective = LambdaMARTObjective(measure, truncation_level=8, row_weights="measure", backend=backend,
                                    precision="float64")
    grad, hess = objective.gradients(preds, labels.astype(float), sizes, weights)
    start = 0
    for size in sizes:
        rows = slice(start, start + size)
        scores = torch.tensor(preds[rows], requires_grad=True)
        loss = gaprank.losses.lambdarank_loss(scores, torch.tensor(labels[rows]), measure=measure, truncation_level=8,
                                              weights=torch.tensor(weights[rows]), reduction="sum", max_grade=3)
        loss.backward()
        np.testing.assert_allclose(grad[rows], scores.grad.numpy(), rtol=1e-10, atol=1e-12)
        start += size
    other = LambdaMARTObjective(measure, truncation_level=8, row_weights="measure",
                                backend="torch" if backend == "compiled" else "compiled", precision="float64")
    np.testing.assert_allclose(other.gradients(preds, labels.astype(float), sizes, weights)[1], hess, rtol=1e-10,
                               atol=1e-12)
    changed, _ = objective.gradients(preds, labels.astype(float), sizes, weights[::-1].copy())
    assert not np.allclose(changed, grad)
    with pytest.raises(GaprankInputError, match="negative weight -0.4"):  # "scale" multiplies grad and hess
        LambdaMARTObjective(measure, truncation_level=8, backend=backend).gradients(
            preds, labels.astype(float), sizes, weights)
    scaled, _ = LambdaMARTObjective(measure, truncation_level=8, backend=backend).gradients(
        preds, labels.astype(float), sizes, np.abs(weights))
    positive, _ = objective.gradients(preds, labels.astype(float), sizes, np.abs(weights))
    assert not np.allclose(scaled, positive)  # "scale" multiplies the unweighted gradients instead


def test_lightgbm_trains_with_documents_weighed_in_the_measure():
    lgb = pytest.importorskip("lightgbm")
    from gaprank.lightgbm import lambdarank_objective

    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(90, 3)), rng.integers(0, 3, 90)
    weights = rng.choice([0.5, 1.0, 4.0], 90)
    train = lgb.Dataset(X, y, group=[30, 30, 30], weight=weights)
    params = {"objective": lambdarank_objective("gap", row_weights="measure"), "verbosity": -1, "min_data_in_leaf": 5}
    booster = lgb.train(params, train, num_boost_round=3)
    assert np.isfinite(booster.predict(X)).all()


@pytest.mark.parametrize("call,message", [
    (lambda: gaprank.boosting.LambdaMARTObjective("gap", row_weights="measure").gradients(
        np.zeros(3), np.array([1.0, 0.0, 2.0]), [3]), "row_weights='measure' needs the data set's weights"),
    (lambda: gaprank.boosting.LambdaMARTObjective("gap", row_weights="measure").gradients(
        np.zeros(3), np.array([1.0, 0.0, 2.0]), [3], np.array([1.0, np.inf, 1.0])), "weight must hold one finite"),
    (lambda: gaprank.boosting.LambdaMARTSettings("err", row_weights="measure"), "ERR does not take weights"),
    (lambda: gaprank.boosting.LambdaMARTSettings("gap", row_weights="labels"), "row_weights must be one of"),
])
def test_bad_row_weights_are_one_line_errors(call, message):
    import gaprank.boosting  # noqa: F401

    with pytest.raises(GaprankInputError, match=message) as caught:
        call()
    assert "\n" not in str(caught.value)


def test_xgboost_takes_the_documents_weights_with_the_objective():
    """A DMatrix with query groups holds one weight per query: the weights in the measure come with the objective,
    which then gives the engine-neutral objective's gradients (XGBoost's hessian scale, twice LightGBM's), as
    LightGBM's objective does with the same weights; a DMatrix with weights of its own, other rows, or no weights
    at all are refused."""
    xgb = pytest.importorskip("xgboost")
    import gaprank.xgboost
    from gaprank.boosting import LambdaMARTObjective, LambdaMARTSettings

    rng = np.random.default_rng(2)
    X, y = rng.normal(size=(60, 3)), rng.integers(0, 4, 60).astype(float)
    levels = rng.choice([0.0, 0.5, 1.0, 3.0], (60, 3))
    qid = np.repeat([1, 2, 3], 20)
    preds = rng.normal(size=60)
    settings = LambdaMARTSettings("gap", row_weights="measure")
    want = LambdaMARTObjective(settings).gradients(preds, y, [20, 20, 20], levels)
    for objective in (gaprank.xgboost.XGBoostObjective("gap", row_weights="measure", level_weights=levels),
                      gaprank.xgboost.XGBoostObjective(settings, level_weights=levels)):
        grad, hess = objective(preds, xgb.DMatrix(X, label=y, qid=qid))
        np.testing.assert_array_equal(grad, want[0])
        np.testing.assert_array_equal(hess, 2.0 * want[1])
    booster = xgb.train({"nthread": 1, "max_depth": 3}, xgb.DMatrix(X, label=y, qid=qid), 3, obj=objective)
    assert np.isfinite(booster.predict(xgb.DMatrix(X))).all()
    with pytest.raises(GaprankInputError, match="the data set has weights too"):
        objective(preds, xgb.DMatrix(X, label=y, qid=qid, weight=[1.0, 2.0, 3.0]))
    with pytest.raises(GaprankInputError, match="level_weights has 60 rows; the data set has 40"):
        objective(preds[:40], xgb.DMatrix(X[:40], label=y[:40], qid=qid[:40]))
    with pytest.raises(GaprankInputError, match="give them to the objective"):
        gaprank.xgboost.objective("gap", row_weights="measure")(preds, xgb.DMatrix(X, label=y, qid=qid))
    with pytest.raises(GaprankInputError, match="need row_weights='measure'"):
        gaprank.xgboost.XGBoostObjective("gap", level_weights=levels)
    with pytest.raises(GaprankInputError, match="need row_weights='measure'"):
        gaprank.xgboost.XGBoostObjective("gap").level_weights = levels
    with pytest.raises(GaprankInputError, match=r"level_weights must be \[rows, levels\]; got shape \(60,\)"):
        objective.level_weights = levels[:, 0]
    with pytest.raises(GaprankInputError, match="level_weights go with settings"):
        gaprank.xgboost.XGBoostObjective(LambdaMARTObjective(settings), level_weights=levels)


def test_one_weight_per_document_is_one_level_with_binary_labels():
    """``level_weights=w[:, None]`` on 0/1 labels: the gradients of one weight per document."""
    from gaprank.boosting import LambdaMARTObjective

    rng = np.random.default_rng(3)
    y = rng.integers(0, 2, 30).astype(float)
    w = rng.uniform(0.5, 3.0, 30)
    preds = rng.normal(size=30)
    per_document = LambdaMARTObjective("gap", row_weights="measure").gradients(preds, y, [10, 10, 10], w)
    one_level = LambdaMARTObjective("gap", row_weights="measure", level_weights=w[:, None]).gradients(
        preds, y, [10, 10, 10])
    np.testing.assert_allclose(one_level[0], per_document[0], rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(one_level[1], per_document[1], rtol=1e-6, atol=1e-9)


# ----------------------------------------------------------------------------- weights per level (graded events)


def _level_gap_oracle(r, W, g):
    """GAP of documents weighted per level, by thresholds: X_i(a) = 1[r_i >= a] W_i(a);
    sum_a g_a sum_n (1/n) X_n(a) (1 + sum_{m<n} X_m(a)) over sum_a g_a sum_i X_i(a)."""
    numerator = normaliser = 0.0
    for a in range(1, len(g) + 1):
        x = [wi[a - 1] if ri >= a else 0.0 for ri, wi in zip(r, W, strict=True)]
        normaliser += g[a - 1] * sum(x)
        for n in range(1, len(r) + 1):
            numerator += g[a - 1] * x[n - 1] * (1.0 + sum(x[:n - 1])) / n
    return None if normaliser <= 0 else numerator / normaliser


def _level_ndcg_oracle(r, W, k):
    gain = [0.0, 1.0, 3.0, 7.0]
    values = [sum((gain[a] - gain[a - 1]) * wi[a - 1] for a in range(1, ri + 1)) for ri, wi in zip(r, W, strict=True)]
    disc = [1 / math.log2(n + 1) for n in range(1, len(r) + 1)][:k]
    ideal = sum(v * d for v, d in zip(sorted(values, reverse=True)[:k], disc, strict=False))
    return None if ideal == 0 else sum(v * d for v, d in zip(values[:k], disc, strict=False)) / ideal


@pytest.mark.parametrize("seed", range(8))
def test_weights_per_level_equal_their_threshold_oracles_and_per_document_weights_when_levels_agree(seed):
    rng = np.random.default_rng(100 + seed)
    size = int(rng.integers(2, 9))
    scores, labels = rng.normal(size=size), rng.integers(0, 4, size)
    labels[0] = 3
    levels = rng.choice([0.0, 0.5, 1.0, 2.0, 6.0] + ([-0.5] if seed % 2 else []), (size, 3))
    order = np.argsort(-scores, kind="stable")
    r, W = list(labels[order]), [list(levels[i]) for i in order]
    g = [0.2, 0.3, 0.5]
    assert float(gaprank.gap(scores, labels, g=g, weights=levels)) == pytest.approx(_level_gap_oracle(r, W, g), rel=1e-12)
    want = _level_ndcg_oracle(r, W, 5)
    got = float(gaprank.ndcg(scores, labels, k=5, weights=levels))
    assert got == (0.0 if want is None else pytest.approx(want, rel=1e-12))
    same = np.repeat(levels[:, :1], 3, axis=1)  # every level weighs alike: per-document weights
    for metric in (gaprank.gap, gaprank.egap, gaprank.xgap, gaprank.ndcg):
        assert float(metric(scores, labels, weights=same)) == pytest.approx(
            float(metric(scores, labels, weights=same[:, 0])), rel=1e-13, abs=1e-15)


def test_weights_per_level_give_the_expected_numerator_of_graded_events_by_exact_enumeration():
    """Three documents, two sessions; each session examines document i with probability theta_i and an examined
    document gets an event 0..2 from its own distribution. The per-level weights of the sessions' average,
    x_i(a) = mean over sessions of 1[e >= a] / theta_i, make the weighted GAP numerator and normaliser unbiased for
    the fully observed events' (documents independent), though one document gets different events in different
    sessions, which per-document weights cannot say."""
    theta = np.array([1.0, 0.5, 0.25])
    events = np.array([[0.3, 0.5, 0.2], [0.6, 0.3, 0.1], [0.1, 0.2, 0.7]])  # P(event | examined), per document
    scores = np.array([0.2, 0.9, 0.5])
    g = [0.4, 0.6]

    def numerator_and_normaliser(labels, weights):
        norm = float(sum(w[a - 1] * g[a - 1] for lab, w in zip(labels, weights, strict=True) for a in range(1, lab + 1)))
        value = float(gaprank.gap(scores, labels, g=g, weights=weights)) if norm > 0 else 0.0
        return value * norm, norm

    per_doc = []  # each document's outcomes over the two sessions: (probability, label, level weights)
    for i in range(3):
        single = [(1 - theta[i], -1)] + [(theta[i] * events[i, e], e) for e in range(3)]  # -1: not examined
        combos = []
        for (p1, e1), (p2, e2) in itertools.product(single, repeat=2):
            x = [np.mean([1.0 / theta[i] if e >= a else 0.0 for e in (e1, e2)]) for a in (1, 2)]
            label = 2 if x[1] > 0 else 1 if x[0] > 0 else 0
            combos.append((p1 * p2, label, x))
        per_doc.append(combos)
    expected_num = expected_norm = 0.0
    for combo in itertools.product(*per_doc):
        chance = float(np.prod([c[0] for c in combo]))
        num, norm = numerator_and_normaliser(np.array([c[1] for c in combo]), np.array([c[2] for c in combo]))
        expected_num += chance * num
        expected_norm += chance * norm
    full_num = full_norm = 0.0  # every event observed: its expectation over the events' distributions
    for drawn in itertools.product(range(3), repeat=3):
        chance = float(np.prod([events[i, e] for i, e in enumerate(drawn)]))
        num, norm = numerator_and_normaliser(np.array(drawn), np.ones((3, 2)))
        full_num += chance * num
        full_norm += chance * norm
    assert expected_norm == pytest.approx(full_norm, rel=1e-12)
    assert expected_num == pytest.approx(full_num, rel=1e-12)


@pytest.mark.parametrize("metric", ["gap", "egap", "ndcg"])
def test_lambdarank_and_lambdamart_take_weights_per_level_on_the_torch_backend(metric):
    from gaprank.boosting import LambdaMARTObjective

    rng = np.random.default_rng(12)
    scores = torch.tensor(rng.normal(size=(3, 9)))
    labels = torch.tensor(rng.integers(0, 4, (3, 9)))
    labels[:, 0] = 3
    levels = torch.tensor(rng.choice([0.0, 0.5, 1.0, 3.0], (3, 9, 3)))
    deltas = gaprank.losses.swap_deltas(scores, labels, measure=metric, weights=levels)
    for q in range(3):
        before = float(getattr(gaprank, metric)(scores[q], labels[q], weights=levels[q]))
        for i, j in itertools.permutations(range(9), 2):
            swapped = scores[q].clone()
            swapped[[i, j]] = scores[q, [j, i]]
            after = float(getattr(gaprank, metric)(swapped, labels[q], weights=levels[q]))
            assert float(deltas[q, i, j]) == pytest.approx(after - before, abs=1e-12)
    s = scores.clone().requires_grad_(True)
    gaprank.losses.lambdarank_loss(s, labels, measure=metric, weights=levels, reduction="sum").backward()
    with pytest.raises(GaprankInputError, match="weights per level"):
        gaprank.losses.lambdarank_loss(scores, labels, measure=metric, weights=levels, backend="compiled")
    grad, _ = LambdaMARTObjective(metric, row_weights="measure", precision="float64").gradients(
        scores.reshape(-1).numpy(), labels.reshape(-1).numpy().astype(float), [9, 9, 9], levels.reshape(-1, 3).numpy())
    np.testing.assert_allclose(grad, s.grad.reshape(-1).numpy(), rtol=1e-10, atol=1e-12)
    with pytest.raises(GaprankInputError, match="weights give 2 levels per document, but the grade scale is 0..3"):
        gaprank.gap(scores, labels, weights=levels[..., :2])


def test_lightgbm_takes_weights_per_level_with_the_objective():
    """A LightGBM data set holds one weight per row: weights per row and level come with the objective, which gives
    the engine-neutral objective's gradients, and refuse a data set that has weights of its own or other rows."""
    lgb = pytest.importorskip("lightgbm")
    from gaprank.boosting import LambdaMARTObjective, LambdaMARTSettings
    from gaprank.lightgbm import LambdaRankObjective

    rng = np.random.default_rng(1)
    X, y = rng.normal(size=(60, 3)), rng.integers(0, 4, 60).astype(float)
    y[0] = 3
    levels = rng.choice([0.0, 0.5, 1.0, 3.0], (60, 3))
    settings = LambdaMARTSettings("gap", row_weights="measure")
    objective = LambdaRankObjective(settings, level_weights=levels)
    train = lgb.Dataset(X, y, group=[20, 20, 20], free_raw_data=False).construct()
    preds = rng.normal(size=60)
    grad, hess = objective(preds, train)
    want = LambdaMARTObjective(settings).gradients(preds, y, [20, 20, 20], levels)
    np.testing.assert_array_equal(grad, want[0])
    np.testing.assert_array_equal(hess, want[1])
    booster = lgb.train({"objective": objective, "verbosity": -1, "min_data_in_leaf": 5}, train, num_boost_round=3)
    assert np.isfinite(booster.predict(X)).all()
    with pytest.raises(GaprankInputError, match="the data set has weights too"):
        objective(preds, lgb.Dataset(X, y, group=[20, 20, 20], weight=np.arange(1.0, 61.0)).construct())
    with pytest.raises(GaprankInputError, match="level_weights has 60 rows; the data set has 40"):
        objective(preds[:40], lgb.Dataset(X[:40], y[:40], group=[20, 20]).construct())
    with pytest.raises(GaprankInputError, match="need row_weights='measure'"):
        LambdaRankObjective("gap", level_weights=levels)
    np.testing.assert_array_equal(LambdaRankObjective("gap", row_weights="measure", level_weights=levels)(
        preds, train)[0], want[0])
    with pytest.raises(GaprankInputError, match=r"level_weights must be \[rows, levels\]; got shape \(60,\)"):
        LambdaRankObjective(settings, level_weights=levels[:, 0])


# ----------------------------------------------------------------------------- the learned position term


def test_the_position_term_adjusts_the_scores_and_takes_its_newton_step():
    """Each call's gradients are those of preds + g[position] (the plain objective's), and g then moves by
    lr * D1 / (|D2| + 0.001) with D1, D2 the gradient and hessian sums at each position, regularised."""
    from gaprank.boosting import LambdaMARTObjective

    sizes, labels, _, preds = _grouped_batch(5)
    labels = labels.astype(float)
    positions = np.concatenate([np.arange(s) % 6 for s in sizes])
    objective = LambdaMARTObjective("gap", position_term=True, position_regularization=0.5,
                                    position_learning_rate=0.3)
    plain = LambdaMARTObjective("gap")
    term = np.zeros(6)
    for _ in range(3):
        grad, hess = objective.gradients(preds, labels, sizes, None, positions)
        want_grad, want_hess = plain.gradients(preds + term[positions], labels, sizes)
        np.testing.assert_allclose(grad, want_grad, rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(hess, want_hess, rtol=1e-12, atol=1e-15)
        for p in range(6):
            at = positions == p
            first = -grad[at].sum() - 0.5 * at.sum() * term[p]
            second = -hess[at].sum() - 0.5 * at.sum()
            term[p] += 0.3 * first / (abs(second) + 0.001)
        np.testing.assert_allclose(objective.position_term(labels, sizes, positions), term, rtol=1e-12, atol=1e-15)
    assert np.abs(term).max() > 0


def test_the_position_term_learns_the_examination_bias_of_clicks_and_lightgbm_trains_with_it():
    """Labels that are clicks of a position-based user (examination 1/position) and scores that know nothing of
    the position: round after round the learned term grows highest at the top position and lowest at the bottom.
    LightGBM trains with it from the data set's positions (each training on a copy of the objective, whose term
    starts at zero) and refuses a data set without them."""
    lgb = pytest.importorskip("lightgbm")
    from gaprank.boosting import LambdaMARTObjective
    from gaprank.lightgbm import lambdarank_objective

    rng = np.random.default_rng(3)
    queries, size = 200, 10
    X = rng.normal(size=(queries * size, 4))
    relevance = 1.0 / (1.0 + np.exp(-2 * X[:, 0]))
    positions = np.tile(np.arange(size), queries)
    clicks = (rng.random(queries * size) < relevance / (positions + 1)).astype(float)
    objective = LambdaMARTObjective("ndcg", position_term=True, position_learning_rate=0.5)
    for _ in range(30):
        objective.gradients(2 * X[:, 0], clicks, [size] * queries, None, positions)
    term = objective.position_term(clicks, [size] * queries, positions)
    assert term[0] > term[size // 2] > term[-1]
    data = lgb.Dataset(X, clicks, group=[size] * queries, position=positions)
    booster = lgb.train({"objective": lambdarank_objective("ndcg", position_term=True), "verbosity": -1}, data,
                        num_boost_round=5)
    assert np.isfinite(booster.predict(X)).all()
    with pytest.raises(GaprankInputError, match="position_term needs each row's position"):
        lgb.train({"objective": lambdarank_objective("ndcg", position_term=True), "verbosity": -1},
                  lgb.Dataset(X, clicks, group=[size] * queries), num_boost_round=1)


@pytest.mark.parametrize("call, message", [
    (lambda: gaprank.boosting.LambdaMARTObjective("gap", position_term=True).gradients(
        np.zeros(3), np.array([1.0, 0.0, 2.0]), [3]), "position_term needs each row's position"),
    (lambda: gaprank.boosting.LambdaMARTObjective("gap", position_term=True).gradients(
        np.zeros(3), np.array([1.0, 0.0, 2.0]), [3], None, np.array([0, -1, 2])), "position must hold one integer >= 0"),
    (lambda: gaprank.boosting.LambdaMARTSettings("gap", position_regularization=-1.0),
     "position_regularization must be a finite number >= 0"),
    (lambda: gaprank.boosting.LambdaMARTSettings("gap", position_term=1), "position_term must be True or False"),
])
def test_bad_position_settings_are_one_line_errors(call, message):
    import gaprank.boosting  # noqa: F401

    with pytest.raises(GaprankInputError, match=message) as caught:
        call()
    assert "\n" not in str(caught.value)


def test_xgboost_takes_each_querys_row_order_as_the_positions():
    xgb = pytest.importorskip("xgboost")
    import gaprank.xgboost

    rng = np.random.default_rng(2)
    X, y = rng.normal(size=(60, 3)), rng.integers(0, 3, 60)
    dtrain = xgb.DMatrix(X, label=y, qid=np.repeat([1, 2, 3], 20))
    objective = gaprank.xgboost.objective("gap", position_term=True)
    xgb.train({"nthread": 1}, dtrain, num_boost_round=3, obj=objective)
    term = objective.objective.position_term(y.astype(float), [20, 20, 20], np.tile(np.arange(20), 3))
    assert term.shape == (20,) and np.abs(term).max() > 0


# ----------------------------------------------------------------------------- trust bias: the affine correction


def _gap_numerator_and_normaliser(r, x, g):
    """The weighted GAP's numerator and normaliser by loops, whatever their signs (documents in rank order)."""
    norm = sum(xi * _cum_g(g, ri) for ri, xi in zip(r, x, strict=True))
    total = 0.0
    for n in range(1, len(r) + 1):
        inner = _cum_g(g, r[n - 1]) + sum(x[m - 1] * _cum_g(g, min(r[m - 1], r[n - 1])) for m in range(1, n))
        total += x[n - 1] * inner / n
    return total, norm


def test_the_affine_estimates_make_the_numerator_and_normaliser_unbiased_under_trust_bias_by_exact_enumeration():
    """Every click pattern of one session: 4 documents of relevance r shown at positions 1..4, clicked with
    probability alpha_p r + beta_p (trust bias: the noise clicks beta fall with the rank). click_training_set's
    affine estimates X = (c - beta)/alpha, negative for a document without a click, make the expected weighted
    GAP numerator and normaliser the true-relevance ones; the IPW estimates (c/theta) do not; and gaprank's GAP of
    the estimates is their ratio (0 where the normaliser is <= 0)."""
    from gaprank.clicks import ClickCounts, click_training_set
    from gaprank.data import RankingSplit

    relevance = np.array([1.0, 0.0, 1.0, 0.0])  # binary, the level a click reaches
    theta = np.array([1.0, 0.7, 0.5, 0.35])
    plus, minus = np.array([0.95, 0.9, 0.85, 0.8]), np.array([0.4, 0.25, 0.15, 0.1])
    alpha, beta = theta * (plus - minus), theta * minus
    split = RankingSplit(features=np.zeros((4, 1)), labels=np.zeros(4, dtype=np.int64), qids=np.array(["q"] * 4),
                         docids=np.array(["a", "b", "c", "d"]))
    scores = np.array([0.2, 0.9, 0.4, 0.7])  # the ranking evaluated, not the logger's
    order = np.argsort(-scores, kind="stable")
    g = [1.0]
    expected = {"affine": np.zeros(2), "IPW": np.zeros(2)}
    for pattern in itertools.product([0, 1], repeat=4):
        clicked = np.array(pattern)
        p_click = alpha * relevance + beta
        chance = float(np.prod(np.where(clicked == 1, p_click, 1 - p_click)))
        counts = np.zeros((4, 4, 2), dtype=np.int64)
        counts[np.arange(4), np.arange(4), clicked] = 1  # document i shown at position i + 1
        for kind, data in (("affine", click_training_set(split, ClickCounts(counts, 1), alpha, offsets=beta)),
                           ("IPW", click_training_set(split, ClickCounts(counts, 1), theta))):
            x = np.zeros(4)
            x[data.rows] = data.weights[:, 0] * (data.split.labels >= 1)
            labels = np.ones(4, dtype=np.int64)
            num, norm = _gap_numerator_and_normaliser(list(labels[order]), list(x[order]), g)
            expected[kind] += chance * np.array([num, norm])
            if kind == "affine":
                assert (data.weights[:, 0] < 0).sum() == 4 - clicked.sum()  # no click: evidence against
                got = float(gaprank.gap(scores, labels, g=g, weights=x))
                assert got == (pytest.approx(num / norm, rel=1e-12) if norm > 0 else 0.0)
    true_num, true_norm = _gap_numerator_and_normaliser([1] * 4, list(relevance[order]), g)
    np.testing.assert_allclose(expected["affine"], [true_num, true_norm], rtol=1e-12)
    assert abs(expected["IPW"][1] - true_norm) > 0.1 and abs(expected["IPW"][0] - true_num) > 0.1  # noise as relevance


def test_the_affine_correction_recovers_the_relevance_of_simulated_trust_bias_clicks_by_monte_carlo():
    """Position-based model at eta 1 with trust bias (noise clicks 0.5/rank): each document's affine estimate
    averaged over its sessions is within 5 standard errors of its click relevance (2^g - 1)/(2^c - 1); the IPW
    estimate is off by the noise clicks."""
    from gaprank.clicks import ClickModel, click_training_set, simulate_clicks
    from gaprank.data import RankingSplit

    rng = np.random.default_rng(2)
    labels = np.concatenate([rng.permutation([0, 0, 1, 2, 2, 0]) for _ in range(20)])
    split = RankingSplit(features=np.zeros((120, 1)), labels=labels, qids=np.repeat(np.arange(20).astype(str), 6),
                         docids=np.arange(120).astype(str))
    ranks = np.arange(1, 7)
    model = ClickModel(eta=1.0, epsilon_plus=list(1.0 - (ranks - 1) / 50), epsilon_minus=list(0.5 / ranks))
    log = simulate_clicks(split, rng.normal(size=120), 200_000, model, shown=6, seed=5)
    counts = log.count(120, positions=6)
    slope, offset = model.affine(6)
    affine = click_training_set(split, counts, slope, offsets=offset)
    ipw = click_training_set(split, counts, model.examined(6))
    truth = (2.0 ** labels[affine.rows] - 1) / 3.0
    position = counts.shown[affine.rows].argmax(1)  # each document's one position (a fixed logger)
    p_click = slope[position] * truth + offset[position]
    error = 5 * np.sqrt(p_click * (1 - p_click) / affine.sessions) / slope[position]
    assert (np.abs(affine.weights[:, 0] - truth) <= error).all()
    assert (affine.split.labels == 3).all()  # every shown document carries its estimates, negative ones too
    assert np.mean(ipw.weights[:, 0] - truth) > 0.1


@pytest.mark.parametrize("call,message", [
    (lambda c: _training_set(c, [1.0, 0.5], offsets=[0.1]), "offsets must have the shape of propensities"),
    (lambda c: _training_set(c, [0.9, 0.5], offsets=[0.1, 0.6]),
     r"propensities \+ offsets must be <= 1 .*got 0.5 \+ 0.6 at position 2, level 1"),
    (lambda c: _training_set(c, [1.0, 0.5], offsets=[0.0, -0.1]),
     r"offsets must be probabilities in \[0, 1\); got -0.1 at position 2, level 1"),
    (lambda c: _training_set(c, [1.0, 0.5], offsets=[np.nan, 0.0]),
     r"offsets must be probabilities in \[0, 1\); got nan at position 1"),
    (lambda c: __import__("gaprank.clicks").clicks.ClickModel(examination="cascade").affine(3),
     "the affine correction is for the position-based model"),
    (lambda c: __import__("gaprank.clicks").clicks.ClickModel(epsilon_plus=0.1, epsilon_minus=0.1).affine(3),
     "needs epsilon_plus > epsilon_minus"),
])
def test_bad_affine_parameters_are_one_line_errors(call, message):
    from gaprank.clicks import ClickCounts

    counts = np.zeros((2, 2, 2), dtype=np.int64)
    counts[0, 0, 1] = counts[1, 1, 0] = 1
    with pytest.raises(GaprankInputError, match=message) as caught:
        call(ClickCounts(counts, 1))
    assert "\n" not in str(caught.value)


def _training_set(counts, propensities, **options):
    from gaprank.clicks import click_training_set
    from gaprank.data import RankingSplit

    split = RankingSplit(features=np.zeros((2, 1)), labels=np.zeros(2, dtype=np.int64), qids=np.array(["q", "q"]),
                         docids=np.array(["a", "b"]))
    return click_training_set(split, counts, propensities, **options)
