"""PyTorch objectives: oracles (double loops over pairs, Monte Carlo, recomputation), gradcheck,
sigma -> 0 limits, robustness (padding, degenerate queries, huge score gaps, ties) and errors.

Private units on purpose: the pair engine and its factor plans (block sizes forced small, checked against one
pass), the expectation's lattice and SoftRank's blocked sums (block sizes), the device-settings cache, and the CUDA
graphs' bookkeeping (with a stand-in graph on the CPU); everything else goes through the public losses."""

from __future__ import annotations

import contextlib
import functools
import itertools
import math
import os
import subprocess
import sys
import types
import warnings

import numpy as np
import pytest
import torch
from shared import g_for

import gaprank
import gaprank._engine.pairs as pairwise_module
import gaprank._engine.rank_laws as rank_laws
import gaprank.losses as L
import gaprank.losses._expected as exact_module
from gaprank import GaprankInputError

G = [0.2, 0.3, 0.5]
AP_FAMILY = ("gap", "xgap", "egap", "ap")
METRICS = (*AP_FAMILY, "ndcg")


def exact_metric(metric, scores, labels, **kw):
    fn = {"gap": gaprank.gap, "xgap": gaprank.xgap, "egap": gaprank.egap}.get(metric)
    kw.setdefault("reduction", "none")
    if fn is not None:
        return fn(scores, labels, g=G, **kw)
    if metric == "ap":
        return gaprank.average_precision(scores, labels, **kw)
    return gaprank.ndcg(scores, labels, **kw)


def _random_batch(seed, b=3, n=9, grades=4, dtype=torch.float64):
    rng = np.random.default_rng(seed)
    scores = torch.tensor(rng.normal(size=(b, n)), dtype=dtype)
    labels = torch.tensor(rng.integers(0, grades, size=(b, n)))
    mask = torch.tensor(rng.random((b, n)) > 0.2)
    mask[:, :2] = True
    labels[:, 0], labels[:, 1] = 0, grades - 1  # every query has two different grades
    return scores, labels, mask


# ----------------------------------------------------------------------------- LambdaRank / RankNet


def _ideal_dcg_at(labels_row, k, weights_row=None):
    gains = np.sort((2.0 ** labels_row - 1.0) * (1.0 if weights_row is None else weights_row))[::-1]
    gains = gains if k is None else gains[:k]
    return float(np.sum(gains / np.log2(np.arange(2, gains.size + 2))))


def _double_loop(metric, scores, labels, mask, sigma, k, weights=None):
    """Loss and gradient from the definition: an explicit loop over pairs, Delta M by recomputation. Unweighted,
    the pairs of different labels, the higher label the better document; with ``weights``, every pair whose swap
    changes the weighted metric, the better document the one whose place above the other gives the higher value."""
    b, n = scores.shape
    loss = torch.zeros(b, dtype=torch.float64)
    grad = torch.zeros(b, n, dtype=torch.float64)
    for q in range(b):
        idx = [i for i in range(n) if mask[q, i]]
        s, y = scores[q, idx], labels[q, idx]
        w = None if weights is None else weights[q, idx]
        extra = {} if w is None else {"weights": w}
        order = torch.sort(s, descending=True, stable=True).indices.tolist()
        rank = {doc: r for r, doc in enumerate(order)}
        base = exact_metric(metric, s, y, empty_value=0.0, **extra).item()
        scale = 1.0
        w_row = None if w is None else w.numpy()
        if metric == "ndcg" and k is not None and _ideal_dcg_at(y.numpy(), k, w_row) > 0:
            scale = _ideal_dcg_at(y.numpy(), None, w_row) / _ideal_dcg_at(y.numpy(), k, w_row)  # LightGBM: IDCG at k
        for i, j in itertools.permutations(range(len(idx)), 2):
            if k is not None and min(rank[i], rank[j]) >= k:
                continue
            swapped = s.clone()
            swapped[[i, j]] = swapped[[j, i]]
            change = (exact_metric(metric, swapped, y, empty_value=0.0, **extra).item() - base) * scale
            if w is None:
                better = y[i] > y[j]
            else:  # i is the better one when it is above j and the swap lowers the value, or below and it raises it
                better = (change < 0) if rank[i] < rank[j] else (change > 0)
            if not better or change == 0.0:
                continue
            delta = abs(change)
            diff = (s[i] - s[j]).item()
            lam = sigma * delta / (1.0 + math.exp(sigma * diff))
            grad[q, idx[i]] -= lam
            grad[q, idx[j]] += lam
            loss[q] += delta * math.log1p(math.exp(-sigma * diff))
    return loss, grad


@pytest.mark.parametrize("metric", METRICS)
@pytest.mark.parametrize("k", [None, 3])
@pytest.mark.parametrize("backend", ["compiled", "torch"])
def test_weighted_lambdarank_gradient_equals_double_loop(metric, k, backend):
    """Per-document weights: |Delta M| is the weighted metric's, every pair whose swap changes it counts, directed to
    the order of the higher value; the module (its kept buffers, two calls) gives the function's numbers; unit
    weights give the unweighted loss."""
    if backend == "compiled":
        pytest.importorskip("numba")
    scores, labels, mask = _random_batch(4, n=14)
    weights = torch.tensor(np.random.default_rng(5).choice([0.0, 0.4, 1.0, 2.5, 6.0], size=scores.shape))
    scores.requires_grad_(True)
    loss = L.lambdarank_loss(scores, labels, measure=metric, g=g_for(metric, G), sigma=1.7, truncation_level=k, mask=mask,
                             weights=weights, reduction="none", backend=backend)
    loss.sum().backward()
    expected_loss, expected_grad = _double_loop(metric, scores.detach(), labels, mask, 1.7, k, weights)
    torch.testing.assert_close(loss.detach(), expected_loss, rtol=0, atol=1e-10)
    torch.testing.assert_close(scores.grad, expected_grad, rtol=0, atol=1e-10)
    module = L.LambdaRankLoss(measure=metric, g=g_for(metric, G), sigma=1.7, truncation_level=k, reduction="none",
                              backend=backend)
    for _ in range(2):
        torch.testing.assert_close(module(scores.detach(), labels, mask, weights), loss.detach(), rtol=0, atol=1e-12)
    unit = L.lambdarank_loss(scores.detach(), labels, measure=metric, g=g_for(metric, G), truncation_level=k, mask=mask,
                             weights=torch.ones_like(weights), reduction="none", backend=backend)
    plain = L.lambdarank_loss(scores.detach(), labels, measure=metric, g=g_for(metric, G), truncation_level=k, mask=mask,
                              reduction="none", backend=backend)
    if metric != "xgap":  # xGAP can lose when a higher grade moves up: weighted pairs follow the value, not the label
        torch.testing.assert_close(unit, plain, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("metric", METRICS)
@pytest.mark.parametrize("k", [None, 3])
def test_lambdarank_gradient_equals_double_loop(metric, k):
    scores, labels, mask = _random_batch(1)
    scores.requires_grad_(True)
    loss = L.lambdarank_loss(scores, labels, measure=metric, g=g_for(metric, G), sigma=1.7, truncation_level=k, mask=mask,
                             reduction="none")
    loss.sum().backward()
    expected_loss, expected_grad = _double_loop(metric, scores.detach(), labels, mask, 1.7, k)
    torch.testing.assert_close(loss.detach(), expected_loss, rtol=0, atol=1e-10)
    torch.testing.assert_close(scores.grad, expected_grad, rtol=0, atol=1e-10)


def test_lambdarank_blocks_give_the_same_numbers(monkeypatch):
    backend = "torch"  # the tensor engine (the pair engine's blocks)
    lambdarank_loss = functools.partial(L.lambdarank_loss, backend=backend)
    scores, labels, mask = _random_batch(2, b=4, n=40)
    full = lambdarank_loss(scores, labels, measure="egap", g=G, mask=mask, reduction="none")
    s = scores.clone().requires_grad_(True)
    lambdarank_loss(s, labels, measure="egap", g=G, mask=mask).backward()
    monkeypatch.setattr(pairwise_module, "PAIR_BLOCK_ELEMENTS", 7)  # one list per run, bands of MIN_RUN_ROWS ranks
    s2 = scores.clone().requires_grad_(True)
    blocked = lambdarank_loss(s2, labels, measure="egap", g=G, mask=mask, reduction="none")
    lambdarank_loss(s2, labels, measure="egap", g=G, mask=mask).backward()
    torch.testing.assert_close(blocked, full, rtol=0, atol=1e-12)
    torch.testing.assert_close(s2.grad, s.grad, rtol=0, atol=1e-12)


@pytest.mark.parametrize("norm, truncation, metric", [(False, None, "egap"), (True, 3, "egap"), (True, 3, "ndcg"),
                                                      (True, None, None)])
def test_pair_engine_on_packed_blocks_equals_one_batch_at_a_time(norm, truncation, metric):
    """Batches packed as blocks of one slot layout (LightGBM's buckets) give each batch's own numbers,
    whatever the chunking, and again on a second run over the same buffers."""
    from gaprank._engine.factors import pair_factors, plan_pair_factors, rank_for_measure
    from gaprank._engine.slots import SlotLayout
    from gaprank.metrics import objective_measure

    measure = objective_measure(metric or "egap").with_params(g=G if metric == "egap" else None)

    parts = []
    for seed, (b, n) in enumerate([(3, 9), (1, 2), (4, 17), (2, 5)]):
        scores, labels, mask = _random_batch(seed, b=b, n=n)
        if seed == 2:
            scores[1] = 0.5  # one query whose scores are all equal (LightGBM's norm rule skips the offset)
        ranked, params = rank_for_measure(scores, labels, measure, mask=mask)
        parts.append((scores.gather(1, ranked.order), ranked))
    options = dict(sigma=1.3, truncation=truncation, norm=norm, with_hessian=True)
    alone = [pairwise_module.pairwise_logistic(s, r.grades, r.valid, pair_factors(measure, r, params, k=truncation) if metric
                                               else None, **options) for s, r in parts]
    layout = SlotLayout([tuple(r.grades.shape) for _, r in parts], torch.cat([r.n_docs for _, r in parts]))
    plan = (plan_pair_factors(measure, [r for _, r in parts], params, layout=layout, k=truncation) if metric
            else None)
    scores = torch.cat([s.reshape(-1) for s, _ in parts])
    grades = torch.cat([r.grades.reshape(-1) for _, r in parts])
    for block_elements in (5, 40, 1 << 22):  # a block per row, a few blocks per chunk, one chunk
        engine = pairwise_module.PairwiseEngine(layout, **options, block_elements=block_elements)
        for _ in range(2):
            cost, sums = engine.run(scores, grades, None if plan is None else plan.factors(grades))
            for block, terms in zip(layout.blocks, alone, strict=True):
                torch.testing.assert_close(cost[block.queries], terms.cost, rtol=1e-12, atol=1e-14)
                torch.testing.assert_close(layout.view(sums[0], block), terms.grad, rtol=1e-12, atol=1e-14)
                torch.testing.assert_close(layout.view(sums[1], block), terms.hess, rtol=1e-12, atol=1e-14)
    assert any(bool(t.grad.abs().max() > 1e-3) for t in alone)


@pytest.mark.parametrize("metric, k, sigma", [("gap", None, 1.0), ("xgap", 3, 0.7), ("egap", 10, 2.0), ("ap", None, 1.0),
                                             ("ndcg", None, 1.0), ("ndcg", 4, 0.5), ("nDCG@5", None, 1.0),
                                             ("vG", None, 1.0), ("P@3", None, 1.0), ("RBP(p=0.8)", 6, 1.0),
                                             ("eRAP(p=[0,0.5,1])", None, 1.0), ("R@5", None, 1.0)])
def test_lambdarank_compiled_kernel_equals_the_pair_engine(monkeypatch, metric, k, sigma):
    """On the CPU LambdaRankLoss takes the compiled LambdaMART kernel (cost and gradient) for kernel and
    discounted-gain measures: the same value and gradient as the torch pair engine, with padding, tied
    scores, one-document and single-label queries, and scores far apart (the kernel's exp fallback)."""
    scores, labels, mask = _random_batch(13, b=6, n=15, grades=3)
    scores[0, 2] = scores[0, 5]
    scores[1, :] = 0.25  # every score tied
    scores[2, 4] = 900.0  # e^{sigma (s - s_top)} underflows for the rest of the list
    labels[3] = 1
    mask[4] = False
    mask[4, 0] = True
    kw = {"g": g_for(metric, G)} if g_for(metric, G) is not None else {}
    results = []
    for use_kernel in (True, False):
        backend = "auto" if use_kernel else "torch"  # the compiled kernel where it serves, or the tensor engine
        lambdarank_loss = functools.partial(L.lambdarank_loss, backend=backend)
        s = scores.clone().requires_grad_(True)
        value = lambdarank_loss(s, labels, measure=metric, truncation_level=k, sigma=sigma, mask=mask, reduction="none", **kw)
        value.sum().backward()
        results.append((value.detach(), s.grad))
    (v1, g1), (v2, g2) = results
    torch.testing.assert_close(v1, v2, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(g1, g2, rtol=0, atol=1e-12)
    assert v1[3] == 0 and v1[4] == 0 and torch.all(g1[3] == 0) and torch.all(g1[4] == 0)


def test_lambdarank_compiled_kernel_reads_unsorted_lists(monkeypatch):
    """The compiled path ranks nothing in torch (``by_score=False``: input order, padding last, the same
    grade counts as the sorted lists); on a scale where no pair changes the measure it gives 0 and 0, as
    the pair engine does."""
    from gaprank.metrics import rank_lists

    scores, labels, mask = _random_batch(15, b=4, n=11, grades=3)
    unsorted = rank_lists(scores, labels, mask=mask, by_score=False)
    ranked = rank_lists(scores, labels, mask=mask)
    torch.testing.assert_close(unsorted.counts, ranked.counts, rtol=0, atol=0)
    assert torch.equal(unsorted.valid, ranked.valid) and torch.equal(unsorted.document_grades(), ranked.document_grades())
    for q in range(4):
        real = torch.nonzero(mask[q]).flatten()
        assert unsorted.order[q, :len(real)].tolist() == real.tolist()  # input order, padding after
        assert sorted(unsorted.order[q].tolist()) == list(range(11))  # a permutation
    with pytest.raises(GaprankInputError, match="by_score must be True or False; got 'no'"):
        rank_lists(scores, labels, mask=mask, by_score="no")
    for use_kernel in (True, False):
        backend = "auto" if use_kernel else "torch"  # the compiled kernel where it serves, or the tensor engine
        lambdarank_loss = functools.partial(L.lambdarank_loss, backend=backend)
        s = scores.clone().requires_grad_(True)
        value = lambdarank_loss(s, torch.zeros_like(labels), measure="ap(rel=1)", mask=mask, reduction="none")
        value.sum().backward()
        assert torch.all(value == 0) and torch.all(s.grad == 0)


# Measures of every form (kernels, discounted gains with and without an ideal normaliser, list forms), on
# the grade scale 0..3 that max_grade (or the measure's own settings) fixes.
UNVALIDATED = [("gap", None, 1.0), ("egap", 4, 0.7), ("ap", None, 1.0), ("ndcg", None, 1.0), ("ndcg", 4, 2.0),
               ("nDCG@5", None, 1.0), ("P@3", None, 1.0), ("RBP(p=0.8)", 6, 1.0), ("ERR", None, 1.0),
               ("Q", None, 1.0), ("vG", None, 1.0), ("eRAP(p=[0,0.3,0.6,1])", None, 1.0), ("SR", None, 0.5)]


@contextlib.contextmanager
def _host_traffic(device: str):
    """Records every copy from the host onto ``device`` (a tensor made from host data there: each one waits for
    a GPU), by the operator or constructor that made it. Reads back to the host need no recording on the meta
    device: they raise."""
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_flatten

    copies: list[str] = []

    class Watch(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            ins = [x for x in tree_flatten((args, kwargs))[0] if isinstance(x, torch.Tensor)]
            outs = [x for x in tree_flatten(out)[0] if isinstance(x, torch.Tensor)]
            if any(x.device.type == "cpu" and x.dim() > 0 for x in ins) and any(x.device.type == device for x in outs):
                copies.append(str(func))
            return out

    def watched(make):  # torch.tensor(list, device=...) reaches no dispatch mode
        def make_on(data, *args, **kwargs):
            target = kwargs.get("device")
            if target is not None and torch.device(target).type == device and not isinstance(data, torch.Tensor):
                copies.append(make.__name__)
            return make(data, *args, **kwargs)
        return make_on

    made = torch.tensor, torch.as_tensor
    torch.tensor, torch.as_tensor = watched(torch.tensor), watched(torch.as_tensor)
    try:
        with Watch():
            yield copies
    finally:
        torch.tensor, torch.as_tensor = made


def _scale(metric):
    return {"g": [0.2, 0.3, 0.5]} if metric in ("gap", "egap") else {} if metric.startswith("eRAP") else {"max_grade": 3}


def _meta_batch():
    scores = torch.randn(5, 12, device="meta", requires_grad=True)
    return scores, torch.randint(0, 4, (5, 12), device="meta"), torch.rand(5, 12, device="meta") > 0.2


def _assert_reads_and_copies_nothing(loss) -> torch.Tensor:
    """Forward and backward of ``loss`` on a meta batch, where a read back raises; after a first call (which
    copies the measure's settings to the device once), nothing is copied from the host either."""
    scores, labels, mask = _meta_batch()
    loss(scores, labels, mask).backward()
    with _host_traffic("meta") as copies:
        value = loss(scores, labels, mask)
        value.backward()
    assert copies == [] and scores.grad.shape == (5, 12)
    return value


def _validated_and_not(call, scores):
    """``[(values, gradient)]`` of ``call(scores, validate)`` for validate True, then False."""
    results = []
    for validate in (True, False):
        s = scores.clone().requires_grad_(True)
        value = call(s, validate)
        value.sum().backward()
        results.append((value.detach(), s.grad))
    return results


@pytest.mark.parametrize("metric, k, sigma", UNVALIDATED)
def test_unvalidated_lambdarank_reads_nothing_back_and_copies_nothing(metric, k, sigma):
    """``validate=False`` on the meta device, where every read back to the host (``.item()``, ``bool()``,
    ``nonzero``, a size that depends on the values) raises: forward and backward run through, and after the
    first call (which copies the measure's settings to the device once) nothing is copied from the host either.
    This is the tensor engine's path on a GPU, where each of those would make the call wait."""
    value = _assert_reads_and_copies_nothing(L.LambdaRankLoss(metric, truncation_level=k, sigma=sigma, validate=False,
                                                              **_scale(metric)))
    assert value.shape == ()
    with pytest.raises(RuntimeError, match="meta"):  # the probe itself: the validated path reads back
        L.LambdaRankLoss(metric, truncation_level=k, sigma=sigma, **_scale(metric))(*_meta_batch())


@pytest.mark.parametrize("use_kernel", [True, False], ids=["compiled", "pair-engine"])
@pytest.mark.parametrize("metric, k, sigma", UNVALIDATED)
def test_unvalidated_lambdarank_equals_validated(monkeypatch, use_kernel, metric, k, sigma):
    """On valid input ``validate=False`` changes no number (the ideal ranking is then taken over the list's
    width, whose extra places hold grade 0): values and gradients equal the validated call's, padding, ties,
    a lone document and a single-grade query included."""
    backend = "auto" if use_kernel else "torch"  # the compiled kernel where it serves, or the tensor engine
    lambdarank_loss = functools.partial(L.lambdarank_loss, backend=backend)
    scores, labels, mask = _random_batch(21, b=6, n=13, grades=4)
    scores[0, 3] = scores[0, 6]
    labels[1, 2:] = 0  # its ideal ranking is much shorter than the list
    labels[2] = 2
    mask[3] = False
    mask[3, 0] = True
    (v1, g1), (v2, g2) = _validated_and_not(
        lambda s, validate: lambdarank_loss(s, labels, measure=metric, truncation_level=k, sigma=sigma, mask=mask,
                                            reduction="none", validate=validate, **_scale(metric)), scores)
    assert torch.all(v1[[2, 3]] == 0) and torch.all(g1[[2, 3]] == 0) and v1.abs().sum() > 0
    torch.testing.assert_close(v2, v1, rtol=1e-13, atol=1e-15)
    torch.testing.assert_close(g2, g1, rtol=1e-13, atol=1e-15)


def test_unvalidated_ranknet_reads_nothing_back_and_equals_validated():
    """RankNet with ``validate=False``: on the meta device no read back and no copy from the host (after the first
    call); on the CPU the numbers of the validated call, bit for bit (its labels are counted on the widest scale,
    which RankNet's value does not depend on)."""
    _assert_reads_and_copies_nothing(L.RankNetLoss(sigma=0.7, validate=False))
    scores, labels, mask = _random_batch(24, b=6, n=13, grades=4)
    results = _validated_and_not(
        lambda s, validate: L.ranknet_loss(s, labels, sigma=0.7, mask=mask, reduction="none", validate=validate), scores)
    torch.testing.assert_close(results[1][0], results[0][0], rtol=0, atol=0)
    torch.testing.assert_close(results[1][1], results[0][1], rtol=0, atol=0)


SOFT_UNVALIDATED = [(L.SoftGAPLoss, {"g": [0.2, 0.3, 0.5]}), (L.SoftEGAPLoss, {"g": [0.2, 0.3, 0.5]}),
                    (L.SoftAPLoss, {"max_grade": 3}), (L.SoftNDCGLoss, {"max_grade": 3}),
                    # the pair smoothings read nothing back either (fast_soft_rank finds its blocks on the CPU)
                    *[(L.SoftGAPLoss, {"g": [0.2, 0.3, 0.5], "smoothing": s}) for s in ("approx", "neuralsort", "softsort")],
                    *[(L.SoftNDCGLoss, {"max_grade": 3, "smoothing": s}) for s in ("approx", "neuralsort", "softsort")]]


@pytest.mark.parametrize("make, kw", SOFT_UNVALIDATED, ids=lambda x: getattr(x, "__name__", ""))
def test_unvalidated_soft_losses_read_nothing_back_and_equal_validated(monkeypatch, make, kw):
    """The SoftRank losses (the paper's mode, SoftNDCG) with ``validate=False``: on the meta device no read back
    and, after the first call, no copy from the host; on the CPU the validated call's numbers, on both of
    SoftNDCG's paths."""
    _assert_reads_and_copies_nothing(make(sigma=0.7, validate=False, **kw))
    scores, labels, mask = _random_batch(25, b=6, n=13, grades=4)
    for compiled in (True, False):
        monkeypatch.setattr(rank_laws, "runs_compiled", lambda s, c=compiled: c)
        results = _validated_and_not(
            lambda s, validate: make(sigma=0.7, validate=validate, reduction="none", **kw)(s, labels, mask), scores)
        assert results[0][0].abs().sum() > 0
        torch.testing.assert_close(results[1][0], results[0][0], rtol=1e-13, atol=1e-15)
        torch.testing.assert_close(results[1][1], results[0][1], rtol=1e-13, atol=1e-15)


def test_grade_indicators_compare_and_refuse_garbage():
    """``grade_indicators``: the one-hot grades by comparison (as ``one_hot`` gives them, without its read back),
    and a one-line error for non-integer grades or a bad number of classes."""
    from gaprank.metrics import grade_indicators

    grades = torch.tensor([[0, 2, 1], [1, 1, 0]])
    assert torch.equal(grade_indicators(grades, 3), torch.nn.functional.one_hot(grades, 3).bool())
    assert grade_indicators(grades, 4).shape == (2, 3, 4)
    for bad, message in ((grades.double(), "grades must be an integer tensor; got dtype torch.float64"),
                         (grades.bool(), "grades must be an integer tensor")):
        with pytest.raises(GaprankInputError, match=message):
            grade_indicators(bad, 3)
    for classes in (0, 2.0, True):
        with pytest.raises(GaprankInputError, match="classes must be a positive integer"):
            grade_indicators(grades, classes)


def test_settings_are_copied_to_a_device_once_per_value():
    """``on_device``: a settings tensor's copy to another device is made once per value and device and then
    reused, a different value gets its own, the oldest are dropped past ``ON_DEVICE_KEPT``; on the tensor's own
    device, and from another device than the host, nothing is kept."""
    from gaprank import _inputs

    meta = torch.device("meta")
    _inputs._ON_DEVICE.clear()
    g = torch.tensor([0.2, 0.8], dtype=torch.float64)
    first = _inputs.on_device(g, meta)
    assert first.device == meta and _inputs.on_device(g.clone(), meta) is first  # the same value: the same copy
    assert _inputs.on_device(torch.tensor([0.3, 0.7], dtype=torch.float64), meta) is not first
    assert _inputs.on_device(g.float(), meta) is not first  # another dtype is another value
    assert _inputs.on_device(g, torch.device("cpu")) is g and _inputs.on_device(first, meta) is first
    for i in range(_inputs.ON_DEVICE_KEPT):
        _inputs.on_device(torch.tensor([float(i)]), meta)
    assert len(_inputs._ON_DEVICE) == _inputs.ON_DEVICE_KEPT and _inputs.on_device(g, meta) is not first


@pytest.mark.parametrize("metric", ["gap", "ndcg"])
@pytest.mark.parametrize("label", [3, -1, 10**9])
def test_unvalidated_labels_off_the_scale_stop_before_the_compiled_kernel(label, metric):
    """``validate=False`` trusts the labels, but the compiled kernel (the CPU's) reads its tables by grade without
    bounds checks: a label off the scale is refused there, on the CPU where reading it costs nothing, rather than
    read past the tables (a label of 10**9 crashed the process)."""
    scores, labels, mask = _random_batch(23, b=3, n=9, grades=3)
    labels[1, 4], mask[1, 4] = label, True
    loss = L.LambdaRankLoss(metric, validate=False, **({"g": [0.5, 0.5]} if metric == "gap" else {"max_grade": 2}))
    with pytest.raises(GaprankInputError, match=rf"label {label} is outside the grade scale 0\.\.2"):
        loss(scores, labels, mask=mask)


def test_max_grade_fixes_the_scale_of_every_batch():
    """``max_grade`` sets the grade scale whatever a batch's largest label: ERR's g_max, which defaults to the
    scale's top, is then 4 as if passed. It must agree with a setting that fixes the scale; ``validate=False``
    needs one."""
    scores, labels, mask = _random_batch(22, b=4, n=10, grades=3)  # labels 0..2
    by_scale = L.lambdarank_loss(scores, labels, measure="ERR", mask=mask, max_grade=4)
    by_setting = L.lambdarank_loss(scores, labels, measure="ERR(max_grade=4)", mask=mask)
    by_batch = L.lambdarank_loss(scores, labels, measure="ERR", mask=mask)  # g_max = 2, this batch's top label
    assert by_scale.item() == by_setting.item() and abs(by_scale.item() - by_batch.item()) > 1e-3
    with pytest.raises(GaprankInputError, match=r"max_grade=3 disagrees with the grade scale 0\.\.4 set by g"):
        L.lambdarank_loss(scores, labels, measure="gap", g=[0.25] * 4, max_grade=3)
    with pytest.raises(GaprankInputError, match="validate=False reads no label back.*grade scale must be given"):
        L.LambdaRankLoss("ndcg", validate=False)(scores, labels)
    with pytest.raises(GaprankInputError, match="validate must be True or False"):
        L.lambdarank_loss(scores, labels, measure="ndcg", validate="no")
    with pytest.raises(GaprankInputError, match="max_grade must be a positive integer"):
        L.lambdarank_loss(scores, labels, measure="ndcg", max_grade=0)
    with pytest.raises(GaprankInputError, match="label 2 is above the grade scale 0..1 set by max_grade=1"):
        L.lambdarank_loss(scores, labels, measure="ndcg", max_grade=1)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no GPU on this machine")
@pytest.mark.parametrize("metric, k, sigma", [*UNVALIDATED, ("RankNet", None, 1.0), ("SoftGAP", None, 0.7),
                                             ("SoftNDCG", None, 0.7)])
def test_unvalidated_lambdarank_never_synchronises_on_cuda(metric, k, sigma):
    """On a GPU, ``validate=False`` forward and backward run with CUDA's synchronisation check set to fail (after
    the first calls of a module, which copy the settings to the device and capture its CUDA graph)."""
    loss = (L.RankNetLoss(validate=False) if metric == "RankNet"
            else L.SoftGAPLoss(g=[0.2, 0.3, 0.5], sigma=sigma, validate=False) if metric == "SoftGAP"
            else L.SoftNDCGLoss(sigma=sigma, max_grade=3, validate=False) if metric == "SoftNDCG"
            else L.LambdaRankLoss(metric, truncation_level=k, sigma=sigma, validate=False, **_scale(metric)))
    scores, labels, mask = (x.cuda() for x in _random_batch(23, b=6, n=13, grades=4))
    s = scores.requires_grad_(True)
    loss(s, labels, mask).backward()  # copies the settings to the device once
    loss(s, labels, mask).backward()  # LambdaRank's and RankNet's modules capture their CUDA graph (it synchronises)
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        loss(s, labels, mask).backward()  # for those two, a replay
        if metric == "RankNet":  # the functions run eagerly, on buffers of their own
            L.ranknet_loss(s, labels, mask=mask, validate=False).backward()
        elif metric not in ("SoftGAP", "SoftNDCG"):
            L.lambdarank_loss(s, labels, measure=metric, truncation_level=k, sigma=sigma, mask=mask, validate=False,
                              **_scale(metric)).backward()
    finally:
        torch.cuda.set_sync_debug_mode("default")


def _values_and_gradients(losses, scores, labels, mask):
    """``(value, gradient)`` of each loss at a fresh copy of ``scores``."""
    results = []
    for loss in losses:
        s = scores.clone().requires_grad_(True)
        value = loss(s, labels, mask)
        value.backward()
        results.append((value.detach(), s.grad))
    return results


def _unvalidated_pair_losses(metric, k, sigma):
    """The module and the one-off function of an unvalidated LambdaRank (RankNet for "RankNet")."""
    if metric == "RankNet":
        return (L.RankNetLoss(sigma=sigma, validate=False),
                lambda s, y, m: L.ranknet_loss(s, y, sigma=sigma, mask=m, validate=False))
    return (L.LambdaRankLoss(metric, truncation_level=k, sigma=sigma, validate=False, **_scale(metric)),
            lambda s, y, m: L.lambdarank_loss(s, y, measure=metric, truncation_level=k, sigma=sigma, mask=m, validate=False,
                                              **_scale(metric)))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no GPU on this machine")
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("metric, k, sigma", [*UNVALIDATED, ("RankNet", None, 0.8)])
def test_cuda_graph_replays_give_the_eager_numbers(metric, k, sigma, dtype):
    """An unvalidated module on a GPU replays a kept shape's kernels as one CUDA graph from its second call on:
    over batches whose data, list sizes and grades change (an empty list, a query of one grade, a second shape
    between), every value and gradient is the eager one-off function's."""
    module, one_off = _unvalidated_pair_losses(metric, k, sigma)
    shapes = [(6, 13)] * 4 + [(3, 20)] * 3 + [(6, 13)] * 2
    tolerance = {"rtol": 1e-5, "atol": 1e-6} if dtype == torch.float32 else {"rtol": 1e-12, "atol": 1e-12}
    for step, (batch, size) in enumerate(shapes):
        scores, labels, mask = (x.cuda() for x in _random_batch(60 + step, b=batch, n=size, grades=4, dtype=dtype))
        if step == 3:
            mask[2] = False  # a list with no document
            labels[0] = 1  # a query of one grade
        (v1, g1), (v2, g2) = _values_and_gradients((module, one_off), scores, labels, mask)
        torch.testing.assert_close(v1, v2, **tolerance)
        torch.testing.assert_close(g1, g2, **tolerance)
    s = scores.clone().requires_grad_(True)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU,
                                            torch.profiler.ProfilerActivity.CUDA]) as profile:
        module(s, labels, mask).backward()
        torch.cuda.synchronize()
    assert any("GraphLaunch" in event.name for event in profile.events()), "the last call was not a replay"
    with pytest.raises(GaprankInputError, match="empty"):  # an empty batch of a graphed padded shape is refused
        module(s[:, :0], labels[:, :0], mask[:, :0])


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no GPU on this machine")
def test_cuda_graphs_follow_changed_settings_and_outlive_the_settings_cache():
    """A graphed module whose g changes by less than a printed tensor shows, given 1-D lists, int32 labels and no
    mask, replays the new g's numbers; after the settings cache has dropped every copy it held (and the memory
    was handed out again), a graph still reads the g it was captured with."""
    import gaprank._inputs as inputs

    module = L.LambdaRankLoss("gap", g=torch.tensor([0.25, 0.25, 0.5], dtype=torch.float64), validate=False)
    for step, g in enumerate([[0.25, 0.25, 0.5]] * 3 + [[0.25004, 0.24996, 0.5]] * 3 + [[0.25, 0.25, 0.5]] * 2):
        module.g = torch.tensor(g, dtype=torch.float64)
        if step == 6:  # evict every cached device copy and hand their memory out again
            for value in range(inputs.ON_DEVICE_KEPT + 8):
                inputs.on_device(torch.tensor([float(value)]), torch.device("cuda"))
            noise = [torch.full((3,), 7.0, dtype=torch.float64, device="cuda") for _ in range(4096)]  # noqa: F841
        scores, labels, _ = _random_batch(90 + step, b=1, n=40, grades=3, dtype=torch.float32)
        scores, labels = scores[0].cuda(), labels[0].to(torch.int32).cuda()
        s, t = scores.clone().requires_grad_(True), scores.clone().requires_grad_(True)
        value = module(s, labels, None)
        value.backward()
        expected = L.lambdarank_loss(t, labels, measure="gap", g=g, validate=False)
        expected.backward()
        torch.testing.assert_close(value, expected, rtol=1e-5, atol=1e-6, msg=f"step {step}")
        torch.testing.assert_close(s.grad, t.grad, rtol=1e-5, atol=1e-6, msg=f"step {step}")


def test_a_refused_capture_warns_at_the_callers_line_and_stays_eager(monkeypatch):
    """When CUDA refuses to capture a step (simulated on the CPU), one RuntimeWarning points at the line that
    called the loss, and the calls go on eagerly with the same numbers."""
    from gaprank._engine import graphs

    def refused(fn, inputs, buffers=None):
        raise RuntimeError("operation not permitted when stream is capturing\nmore detail")

    monkeypatch.setattr(graphs, "graphable", lambda scores, labels, mask: True)
    monkeypatch.setattr(graphs, "GraphedCall", refused)
    module, one_off = _unvalidated_pair_losses("ndcg", None, 1.0)
    module.backend = "torch"
    scores, labels, mask = _random_batch(70, b=3, n=9, grades=4)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        values = [module(scores, labels, mask) for _ in range(4)]
    (warning,) = [w for w in caught if issubclass(w.category, RuntimeWarning)]
    assert "could not capture" in str(warning.message) and "more detail" not in str(warning.message)
    assert warning.filename == __file__
    expected = one_off(scores, labels, mask)
    for value in values:
        torch.testing.assert_close(value, expected, rtol=1e-13, atol=1e-13)


def test_kept_shapes_capture_after_two_calls_and_replay_new_inputs(monkeypatch):
    """The bookkeeping of CUDA graphs, on the CPU with a stand-in graph that replays by running the step again on
    its static inputs: a shape and its settings are captured by their second call, later calls copy their inputs
    in and get their own numbers, other settings or shapes are not served by that graph, and an evicted shape
    takes its graph with it."""
    from gaprank._engine import graphs

    captured = []

    class StandInGraph(graphs.GraphedCall):
        def __init__(self, fn, inputs, buffers=None):
            self.static = tuple(x.detach().clone() for x in inputs)
            self.graph = types.SimpleNamespace(replay=lambda: setattr(self, "outputs", fn(*self.static)))
            self.replays = 0
            captured.append(self)

        def __call__(self, scores, labels, mask):
            self.replays += 1
            return super().__call__(scores, labels, mask)

    monkeypatch.setattr(graphs, "graphable", lambda scores, labels, mask: True)
    monkeypatch.setattr(graphs, "capture", StandInGraph)
    monkeypatch.setattr(graphs, "GRAPHED_SHAPES", 3)
    module, _ = _unvalidated_pair_losses("gap", 5, 1.0)
    module.backend = "torch"
    calls = [((4, 9), 1.0)] * 2 + [((4, 30), 1.0), ((4, 7), 1.0)] + [((4, 9), 2.0)] * 3 + [
        ((2, 7), 1.0), ((3, 5), 1.0), ((1, 6), 1.0), ((4, 9), 1.0)]
    for step, ((batch, size), sigma) in enumerate(calls):
        module.sigma = sigma
        scores, labels, mask = _random_batch(80 + step, b=batch, n=size, grades=4)
        if step == 3:
            mask = None
        s = scores.clone().requires_grad_(True)
        value = module(s, labels, mask)
        value.backward()
        t = scores.clone().requires_grad_(True)
        expected = L.lambdarank_loss(t, labels, measure="gap", truncation_level=5, sigma=sigma, mask=mask, g=[0.2, 0.3, 0.5],
                                     validate=False, backend="torch")
        expected.backward()
        torch.testing.assert_close(value, expected, rtol=1e-13, atol=1e-13, msg=f"step {step}")  # sums may round apart
        torch.testing.assert_close(s.grad, t.grad, rtol=1e-13, atol=1e-13)
        assert len(captured) == [0, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2][step]
    # g differing by less than a printed tensor shows is another graph, never the first g's; a shape keeps its
    # last GRAPHS_PER_SHAPE graphs
    monkeypatch.setattr(graphs, "GRAPHS_PER_SHAPE", 1)
    for step, g in enumerate([[0.2, 0.3, 0.5]] * 3 + [[0.20004, 0.29996, 0.5]] * 3):
        module.g = torch.tensor(g, dtype=torch.float64)
        scores, labels, mask = _random_batch(95 + step, b=1, n=6, grades=4)
        value = module(scores, labels, mask)
        expected = L.lambdarank_loss(scores, labels, measure="gap", truncation_level=5, mask=mask, g=g, validate=False,
                                     backend="torch")
        torch.testing.assert_close(value, expected, rtol=1e-13, atol=1e-13, msg=f"g step {step}")
    assert len(captured) == 4
    (shape,) = [shape for key, shape in module._graphs._shapes.items() if key[1:3] == (1, 32)]
    assert len(shape.graphs) == 1 and len(shape.calls) <= 4
    module.g = [0.2, 0.3, 0.5]
    # widths 9, 30 and 7 share the padded width 32: one graph; sigma 1's went with its evicted shape
    assert [graph.replays for graph in captured] == [2, 1, 1, 1]
    graphed = module._graphs._shapes
    assert [key[1:3] for key in graphed] == [(3, 32), (4, 32), (1, 32)]
    assert not module._pairs._shapes  # every step went through the graphs
    # steps no graph can take (on the CPU, say) keep the module's last two shapes, apart from the graphed ones
    monkeypatch.setattr(graphs, "graphable", lambda scores, labels, mask: False)
    for size in (11, 12, 13):
        module(*_random_batch(99, b=2, n=size, grades=4))
    assert [key[1:3] for key in module._pairs._shapes] == [(2, 12), (2, 13)]
    assert [key[1:3] for key in graphed] == [(3, 32), (4, 32), (1, 32)]


@pytest.mark.parametrize("metric", ["gap", "ndcg@5", "ERR", "Q", None], ids=["kernel", "gain-discount", "ERR", "Q",
                                                                           "RankNet"])
def test_kept_pair_engines_give_the_numbers_of_fresh_ones(monkeypatch, metric):
    """LambdaRankLoss and RankNetLoss keep their layouts, factor plans and engine buffers per batch shape: over
    batches whose list sizes, grade counts and shapes change (an evicted shape built again, an empty list, a
    batch whose scale has no pair), every value and gradient equals the one-off function's, bit for bit."""
    backend = "torch"  # the tensor engine (the pair engine's blocks)
    lambdarank_loss = functools.partial(L.lambdarank_loss, backend=backend)
    LambdaRankLoss = functools.partial(L.LambdaRankLoss, backend=backend)
    kw = {} if metric is None else {"max_grade": 3} if metric != "gap" else {"g": [0.2, 0.3, 0.5]}
    module = L.RankNetLoss(sigma=0.8) if metric is None else LambdaRankLoss(metric, sigma=0.8, truncation_level=6, **kw)

    def one_off(s, y, mask):
        if metric is None:
            return L.ranknet_loss(s, y, sigma=0.8, mask=mask, reduction="mean")
        return lambdarank_loss(s, y, measure=metric, sigma=0.8, truncation_level=6, mask=mask, **kw)

    shapes = [(5, 12), (5, 12), (3, 20), (4, 7), (5, 12), (5, 12)]  # (5, 12) is evicted by the third shape
    first = None
    for step, (batch, size) in enumerate(shapes):
        scores, labels, mask = _random_batch(40 + step, b=batch, n=size, grades=4)
        if step == 1:
            mask[2] = False  # a list with no document
            labels[0] = 0
        if step == 5:
            labels[:] = 0  # no pair in the batch
        (v1, g1), (v2, g2) = _values_and_gradients((module, one_off), scores, labels, mask)
        torch.testing.assert_close(v1, v2, rtol=0, atol=0)
        torch.testing.assert_close(g1, g2, rtol=0, atol=0)
        assert (v1 == 0) == (step == 5)
        if step < 2:  # the second batch of a shape runs on the first one's layout, plans and engines
            (entry,) = module._pairs._shapes.values()
            first = first or entry
            assert entry is first and entry.layout.version == step
    kept = module._pairs._shapes
    assert len(kept) == 2 and [key[1:3] for key in kept] == [(4, 7), (5, 12)]  # the last two shapes


def test_kept_pair_engines_are_per_thread_and_not_copied():
    """Two threads never share kept buffers; a copy or a pickle of a loss starts with none and computes the same."""
    import copy
    import pickle
    import threading

    scores, labels, mask = _random_batch(50, b=4, n=10, grades=3)
    module = L.LambdaRankLoss("err", max_grade=2)
    expected = module(scores, labels, mask)
    found = []
    thread = threading.Thread(target=lambda: found.append(module(scores, labels, mask)))
    thread.start()
    thread.join()
    assert found[0].item() == expected.item() and len(module._pairs._shapes) == 2
    for twin in (copy.deepcopy(module), pickle.loads(pickle.dumps(module))):
        assert len(twin._pairs._shapes) == 0 and twin(scores, labels, mask).item() == expected.item()


def test_lambdarank_compiled_kernel_keeps_the_scores_dtype():
    scores, labels, mask = _random_batch(14, b=3, n=9, grades=3)
    s = scores.float().requires_grad_(True)
    value = L.lambdarank_loss(s, labels, measure="gap", g=[0.5, 0.5], mask=mask)
    value.backward()
    assert value.dtype == torch.float32 and s.grad.dtype == torch.float32


def test_ranknet_equals_double_loop_and_gradcheck():
    scores, labels, mask = _random_batch(3)
    loss = L.ranknet_loss(scores, labels, sigma=0.7, mask=mask, reduction="none")
    expected = torch.zeros(3, dtype=torch.float64)
    for q in range(3):
        for i, j in itertools.permutations(range(9), 2):
            if mask[q, i] and mask[q, j] and labels[q, i] > labels[q, j]:
                expected[q] += math.log1p(math.exp(-0.7 * (scores[q, i] - scores[q, j]).item()))
    torch.testing.assert_close(loss, expected, rtol=0, atol=1e-12)
    s = scores.clone().requires_grad_(True)
    assert torch.autograd.gradcheck(lambda x: L.ranknet_loss(x, labels, sigma=0.7, mask=mask, reduction="none"), (s,))


@pytest.mark.parametrize("metric", METRICS)
def test_lambdarank_gradcheck_away_from_rank_changes(metric):
    # Delta M is fixed while the ranking does not change, so the cost's gradient is the lambda sums.
    scores, labels, mask = _random_batch(4)
    s = scores.clone().requires_grad_(True)
    fn = lambda x: L.lambdarank_loss(x, labels, measure=metric, g=g_for(metric, G), mask=mask, reduction="none")  # noqa: E731
    assert torch.autograd.gradcheck(fn, (s,), eps=1e-7, atol=1e-6)


# ----------------------------------------------------------------------------- ListNet


def test_listnet_equals_definition_and_gradcheck():
    scores, labels, mask = _random_batch(5)
    loss = L.listnet_loss(scores, labels, mask=mask, reduction="none")
    for q in range(3):
        s, y = scores[q][mask[q]], labels[q][mask[q]].double()
        t, p = torch.softmax(y, 0), torch.softmax(s, 0)
        assert loss[q].item() == pytest.approx(float((t * (t.log() - p.log())).sum()), abs=1e-12)
        cross_entropy = float(-(t * p.log()).sum())
        entropy = float(-(t * t.log()).sum())
        assert loss[q].item() == pytest.approx(cross_entropy - entropy, abs=1e-12)
    s = scores.clone().requires_grad_(True)
    assert torch.autograd.gradcheck(lambda x: L.listnet_loss(x, labels, mask=mask, reduction="none"), (s,))


# ----------------------------------------------------------------------------- soft metrics


def test_paper_softgap_is_the_papers_formula():
    # Robertson et al. 2010, sec. 5, written out with g and pi directly (no kernel).
    scores, labels, _ = _random_batch(6, b=1, n=7)
    s, y, sigma = scores[0], labels[0], 0.6
    big_g = np.concatenate([[0.0], np.cumsum(G)])
    pi = gaprank.distributions.pairwise_probs(s, sigma=sigma).numpy()
    counts = np.bincount(y.numpy(), minlength=4)
    norm = sum(counts[k] * big_g[k] for k in range(1, 4))
    total = 0.0
    for n in range(7):
        num = big_g[y[n]] + sum(pi[m, n] * big_g[min(y[m], y[n])] for m in range(7) if m != n)
        total += num / (1.0 + sum(pi[m, n] for m in range(7) if m != n))
    ours = L.soft_metric(s, y, measure="gap", g=G, sigma=sigma)
    assert ours.item() == pytest.approx(total / norm, abs=1e-12)


def test_softndcg_from_rank_distributions():
    scores, labels, mask = _random_batch(7)
    p = gaprank.distributions.rank_distribution(scores, sigma=0.9, mask=mask)
    disc = 1.0 / torch.log2(torch.arange(9, dtype=torch.float64) + 2.0)
    gains = (2.0 ** labels.double() - 1.0) * mask
    idcg = torch.stack([torch.tensor(_ideal_dcg_at(labels[q][mask[q]].numpy(), None)) for q in range(3)])
    expected = (gains * (p @ disc)).sum(-1) / idcg
    torch.testing.assert_close(L.soft_metric(scores, labels, measure="ndcg", sigma=0.9, mask=mask), expected)


@pytest.mark.parametrize("block", [None, 1])
def test_softndcg_compiled_and_torch_paths_same_value_and_gradient(monkeypatch, block):
    """The compiled rank laws (CPU) and the whole-tensor path (every other device; with one pivot per
    correlation block or all at once) give the same SoftNDCG and gradient."""
    scores, labels, mask = _random_batch(8, b=2, n=12)
    s1 = scores.clone().requires_grad_(True)
    v1 = L.soft_metric(s1, labels, measure="ndcg", sigma=0.5, mask=mask)
    v1.sum().backward()
    monkeypatch.setattr(rank_laws, "runs_compiled", lambda pi: False)
    if block is not None:
        monkeypatch.setattr(rank_laws, "CORRELATION_BLOCK_ELEMENTS", block)
    s2 = scores.clone().requires_grad_(True)
    v2 = L.soft_metric(s2, labels, measure="ndcg", sigma=0.5, mask=mask)
    v2.sum().backward()
    torch.testing.assert_close(v2, v1, rtol=0, atol=1e-13)
    torch.testing.assert_close(s2.grad, s1.grad, rtol=0, atol=1e-13)


@pytest.mark.parametrize("metric", METRICS)
def test_paper_mode_sigma_to_zero_is_the_metric(metric):
    scores, labels, mask = _random_batch(9, b=4, n=12)
    values = L.soft_metric(scores, labels, measure=metric, g=g_for(metric, G), sigma=1e-6, mask=mask)
    expected = exact_metric(metric, scores, labels, mask=mask)
    torch.testing.assert_close(values, expected, rtol=0, atol=1e-9)


@pytest.mark.parametrize("metric", AP_FAMILY)
def test_exact_mode_sigma_to_zero_is_the_metric(metric):
    scores, labels, mask = _random_batch(10, b=2, n=8)
    values = L.soft_metric(scores, labels, measure=metric, g=g_for(metric, G), sigma=1e-3, smoothing="expected", mask=mask)
    torch.testing.assert_close(values, exact_metric(metric, scores, labels, mask=mask), rtol=0, atol=1e-9)


@pytest.mark.parametrize("metric", METRICS)
def test_soft_metric_gradcheck_paper(metric):
    scores, labels, mask = _random_batch(11)
    s = scores.clone().requires_grad_(True)
    fn = lambda x: L.soft_metric_loss(x, labels, measure=metric, g=g_for(metric, G), sigma=0.8, mask=mask,  # noqa: E731
                                      reduction="none")
    assert torch.autograd.gradcheck(fn, (s,))


@pytest.mark.parametrize("metric", AP_FAMILY)
def test_soft_metric_gradcheck_exact(metric, monkeypatch):
    monkeypatch.setattr(exact_module, "EXACT_BLOCK_ELEMENTS", 500)  # several checkpointed grid blocks
    scores, labels, mask = _random_batch(12, b=2, n=6)
    s = scores.clone().requires_grad_(True)
    fn = lambda x: L.soft_metric(x, labels, measure=metric, g=g_for(metric, G), sigma=0.8, smoothing="expected", mask=mask)  # noqa: E731
    assert torch.autograd.gradcheck(fn, (s,))


def _monte_carlo(metric, scores, labels, sigma, samples, seed):
    gen = torch.Generator().manual_seed(seed)
    values = []
    for _ in range(samples // 10_000):
        noisy = scores + sigma * torch.randn(10_000, scores.numel(), dtype=torch.float64, generator=gen)
        values.append(exact_metric(metric, noisy, labels.expand(10_000, -1)))
    v = torch.cat(values)
    return v.mean().item(), v.std().item() / math.sqrt(v.numel())


@pytest.mark.parametrize("metric, n, sigma", [("gap", 200, 1.0), ("egap", 200, 0.5), ("xgap", 120, 2.0),
                                              ("ap", 200, 1.0), ("gap", 15, 0.3)])
def test_exact_mode_agrees_with_monte_carlo(metric, n, sigma):
    rng = np.random.default_rng(n)
    scores = torch.tensor(rng.normal(scale=1.5, size=n))
    labels = torch.tensor(rng.integers(0, 4, size=n))
    value = L.soft_metric(scores, labels, measure=metric, g=g_for(metric, G), sigma=sigma, smoothing="expected").item()
    mean, se = _monte_carlo(metric, scores, labels, sigma, 40_000, seed=n)  # se about 1e-4: 3 se is a 3e-4 check
    assert abs(value - mean) < 3 * se, (value, mean, se)
    paper = L.soft_metric(scores, labels, measure=metric, g=g_for(metric, G), sigma=sigma).item()
    assert paper != pytest.approx(value, abs=1e-6)  # a ratio of expectations, not the expectation
    assert abs(paper - mean) > 10 * se, (paper, mean, se)  # ... which these samples tell apart (21 to 144 se)


def test_exact_mode_blocks_and_padding_do_not_change_values(monkeypatch):
    scores, labels, mask = _random_batch(13, b=3, n=10)
    full = L.soft_metric(scores, labels, measure="gap", g=G, sigma=0.7, smoothing="expected", mask=mask)
    each = torch.stack([L.soft_metric(scores[q][mask[q]], labels[q][mask[q]], measure="gap", g=G, sigma=0.7,
                                      smoothing="expected") for q in range(3)])
    torch.testing.assert_close(full, each, rtol=0, atol=1e-12)
    monkeypatch.setattr(exact_module, "EXACT_BLOCK_ELEMENTS", 1)
    blocked = L.soft_metric(scores, labels, measure="gap", g=G, sigma=0.7, smoothing="expected", mask=mask)
    torch.testing.assert_close(blocked, full, rtol=0, atol=1e-12)


def test_grade_counts_enter_the_soft_normaliser():
    scores, labels, _ = _random_batch(14, b=1, n=8)
    counts = torch.bincount(labels[0], minlength=4) + torch.tensor([0, 2, 0, 1])
    for smoothing in L.SMOOTHINGS:
        v = L.soft_metric(scores, labels, measure="gap", g=G, sigma=1e-3, smoothing=smoothing, grade_counts=counts)
        assert v.item() == pytest.approx(gaprank.gap(scores, labels, g=G, grade_counts=counts).item(), abs=1e-9)


# ----------------------------------------------------------------------------- every loss: robustness

LOSSES = {
    **{f"soft_{m}": (lambda m: lambda s, y, mask=None: L.soft_metric_loss(s, y, measure=m, g=g_for(m, G), sigma=0.5,
                                                                           mask=mask, reduction="none"))(m)
       for m in METRICS},
    **{f"exact_{m}": (lambda m: lambda s, y, mask=None: L.soft_metric_loss(s, y, measure=m, g=g_for(m, G), sigma=0.5,
                                                                            smoothing="expected", mask=mask,
                                                                            reduction="none"))(m)
       for m in AP_FAMILY},
    **{f"lambda_{m}": (lambda m: lambda s, y, mask=None: L.lambdarank_loss(s, y, measure=m, g=g_for(m, G), truncation_level=5,
                                                                            mask=mask, reduction="none"))(m)
       for m in METRICS},
    **{f"{smoothing}_{m}": (lambda m, smoothing: lambda s, y, mask=None: L.soft_metric_loss(
        s, y, measure=m, g=g_for(m, G), sigma=0.5, smoothing=smoothing, mask=mask, reduction="none"))(m, smoothing)
       for m in ("gap", "ndcg") for smoothing in ("approx", "neuralsort", "softsort", "fast_soft_rank")},
    "ranknet": lambda s, y, mask=None: L.ranknet_loss(s, y, mask=mask, reduction="none"),
    "listnet": lambda s, y, mask=None: L.listnet_loss(s, y, mask=mask, reduction="none"),
}


@pytest.mark.parametrize("name", list(LOSSES))
def test_padding_gets_exactly_zero_gradient_and_never_matters(name):
    scores, labels, mask = _random_batch(15, b=2, n=8)
    garbage = scores.clone()
    garbage[~mask] = float("nan")  # padding may hold anything
    s = garbage.clone().requires_grad_(True)
    loss = LOSSES[name](s, labels, mask=mask)
    loss.sum().backward()
    assert torch.isfinite(loss).all() and torch.isfinite(s.grad).all()
    assert torch.all(s.grad[~mask] == 0)
    for q in range(2):  # the same as the query without padding
        alone = LOSSES[name](scores[q][mask[q]], labels[q][mask[q]])
        assert loss[q].item() == pytest.approx(alone.item(), abs=1e-10)


@pytest.mark.parametrize("name", list(LOSSES))
def test_degenerate_queries_give_zero_loss_and_zero_gradient(name):
    scores = torch.tensor([[0.3, 1.2, -0.4], [0.5, 0.1, 2.0], [1.0, 0.0, 0.0], [0.2, 0.2, 0.2]],
                          dtype=torch.float64, requires_grad=True)
    labels = torch.tensor([[0, 0, 0], [2, 2, 2], [3, 0, 0], [1, 1, 1]])  # none relevant; all equal; ...
    mask = torch.tensor([[True] * 3, [True] * 3, [True, False, False], [True] * 3])  # ... one document
    loss = LOSSES[name](scores, labels, mask=mask)
    loss.sum().backward()
    assert torch.all(loss == 0), loss
    assert torch.all(scores.grad == 0), scores.grad


@pytest.mark.parametrize("name", list(LOSSES))
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_huge_score_differences_stay_finite(name, dtype):
    scores = torch.tensor([[1e4, -1e4, 0.0, 5e3]], dtype=dtype, requires_grad=True)
    labels = torch.tensor([[0, 2, 1, 1]])
    loss = LOSSES[name](scores, labels)
    loss.sum().backward()
    assert torch.isfinite(loss).all() and torch.isfinite(scores.grad).all()
    assert loss.dtype == dtype and scores.grad.dtype == dtype


def test_ties_in_scores():
    # LambdaRank: tied documents are ranked in input order for Delta M, and rho = 1/2.
    s = torch.zeros(1, 2, dtype=torch.float64, requires_grad=True)
    loss = L.lambdarank_loss(s, torch.tensor([[0, 1]]), measure="ap", reduction="sum")
    loss.backward()
    assert loss.item() == pytest.approx(0.5 * math.log(2.0))  # |Delta AP| = 1 - 1/2
    assert s.grad.tolist() == [[0.25, -0.25]]
    # Soft metrics: pi = 1/2 for equal scores.
    v = L.soft_metric(torch.zeros(2, dtype=torch.float64), torch.tensor([0, 1]), measure="ap", sigma=1.0)
    assert v.item() == pytest.approx(1.0 / 1.5)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no GPU on this machine")
@pytest.mark.parametrize("name", list(LOSSES))
def test_cuda_matches_cpu(name):
    scores, labels, mask = _random_batch(16, b=2, n=8)
    cpu = LOSSES[name](scores, labels, mask=mask)
    s = scores.cuda().requires_grad_(True)
    gpu = LOSSES[name](s, labels.cuda(), mask=mask.cuda())
    gpu.sum().backward()
    assert gpu.device.type == "cuda" and s.grad.device.type == "cuda"
    torch.testing.assert_close(gpu.cpu(), cpu, rtol=1e-9, atol=1e-9)


# ----------------------------------------------------------------------------- modules and errors


def test_modules_call_the_functional_core():
    scores, labels, mask = _random_batch(17)
    pairs = [
        (L.SoftGAPLoss(g=G, sigma=0.4), L.soft_gap_loss(scores, labels, g=G, sigma=0.4, mask=mask)),
        (L.SoftXGAPLoss(g=G, sigma=0.4), L.soft_xgap_loss(scores, labels, g=G, sigma=0.4, mask=mask)),
        (L.SoftEGAPLoss(g=G, sigma=0.4, reduction="sum"),
         L.soft_egap_loss(scores, labels, g=G, sigma=0.4, mask=mask, reduction="sum")),
        (L.SoftAPLoss(sigma=0.4, smoothing="expected"),
         L.soft_ap_loss(scores, labels, sigma=0.4, smoothing="expected", mask=mask)),
        (L.SoftNDCGLoss(sigma=0.4), L.soft_ndcg_loss(scores, labels, sigma=0.4, mask=mask)),
        (L.LambdaRankLoss("xgap", g=G, truncation_level=4),
         L.lambdarank_loss(scores, labels, measure="xgap", g=G, truncation_level=4, mask=mask)),
        (L.RankNetLoss(sigma=2.0), L.ranknet_loss(scores, labels, sigma=2.0, mask=mask)),
        (L.ListNetLoss(reduction="none"), L.listnet_loss(scores, labels, mask=mask, reduction="none")),
    ]
    for module, expected in pairs:
        torch.testing.assert_close(module(scores, labels, mask), expected, rtol=0, atol=0)
        assert not list(module.parameters()) and repr(module)
    per_query = L.soft_gap_loss(scores, labels, g=G, mask=mask, reduction="none")
    assert L.soft_gap_loss(scores, labels, g=G, mask=mask).item() == pytest.approx(per_query.mean().item())
    assert L.soft_gap_loss(scores[0], labels[0], g=G, reduction="none").ndim == 0


def test_loss_is_regret_against_the_ideal_list():
    scores, labels, mask = _random_batch(18)
    for metric in METRICS:
        values = L.soft_metric(scores, labels, measure=metric, g=g_for(metric, G), sigma=1e-6, mask=mask)
        ideal = exact_metric(metric, labels.double(), labels, mask=mask)
        loss = L.soft_metric_loss(scores, labels, measure=metric, g=g_for(metric, G), sigma=1e-6, mask=mask,
                                  reduction="none")
        torch.testing.assert_close(loss, ideal - values, rtol=0, atol=1e-9)
        assert torch.all(loss >= -1e-12)


@pytest.mark.parametrize("call, message", [
    (lambda: L.soft_gap_loss(np.zeros(3), [0, 1, 0]), "floating-point torch tensor"),
    (lambda: L.soft_gap_loss(torch.zeros(3, dtype=torch.int64), [0, 1, 0]), "floating-point torch tensor"),
    (lambda: L.soft_gap_loss(torch.zeros(3), [0, 1, 0], sigma=0.0), "sigma"),
    (lambda: L.soft_gap_loss(torch.zeros(3), [0, 1, 0], sigma=float("nan")), "sigma"),
    (lambda: L.soft_gap_loss(torch.zeros(3), [0, 1, 0], smoothing="sinkhorn"), "smoothing must be one of"),
    (lambda: L.soft_metric(torch.zeros(3), [0, 1, 0], measure="err", sigma=1.0, smoothing="approx"), "not such a sum"),
    (lambda: L.soft_ndcg_loss(torch.zeros(3), [0, 1, 0], reduction="avg"), "reduction"),
    (lambda: L.soft_metric(torch.zeros(3), [0, 1, 0], measure="ndcg", sigma=1.0, smoothing="expected"), "AP family"),
    (lambda: L.soft_metric(torch.zeros(3), [0, 1, 0], measure="err", sigma=1.0), "measure .err.: ERR has no"),
    (lambda: L.soft_ap_loss(torch.zeros(3), [0, 1, 0], g=[1.0]), "g applies"),
    (lambda: L.soft_gap_loss(torch.zeros(3), [0, 1, 3], g=[0.5, 0.5]), "above the grade scale"),
    (lambda: L.soft_gap_loss(torch.zeros(3), [0, 1, 1], g=[0.5, 0.6]), "sum to 1"),
    (lambda: L.lambdarank_loss(torch.tensor([0.0, float("nan")]), [0, 1]), "NaN"),
    (lambda: L.lambdarank_loss(torch.zeros(3), [0, -1, 1]), "non-negative"),
    (lambda: L.lambdarank_loss(torch.zeros(3), [0, 1]), "does not match"),
    (lambda: L.lambdarank_loss(torch.zeros(3), [0, 1, 0], truncation_level=0), "positive integer"),
    (lambda: L.ranknet_loss(torch.zeros(0), []), "empty"),
    (lambda: L.listnet_loss(torch.zeros(2, 3), torch.zeros(2, 3), mask=torch.ones(2, 3)), "boolean"),
    # 2^l - 1 overflows for l >= 1024: a large label is refused instead of giving NaN loss and gradients
    (lambda: L.LambdaRankLoss("ndcg")(torch.zeros(3), torch.tensor([1024, 0, 1])), "label 1024 is above 30"),
    (lambda: L.SoftNDCGLoss()(torch.zeros(3), torch.tensor([1024, 0, 1])), "label 1024 is above 30"),
    (lambda: L.listnet_loss(torch.zeros(3), [5000, 0, 1]), "label 5000 is above 30"),
])
def test_bad_input_is_a_clear_error(call, message):
    with pytest.raises(GaprankInputError, match=message):
        call()


@pytest.mark.parametrize("name, loss", [
    ("softndcg", lambda s, y: L.soft_ndcg_loss(s, y, sigma=0.7)),
    ("lambdarank", lambda s, y: L.lambdarank_loss(s, y, measure="gap")),
    ("exact", lambda s, y: L.soft_gap_loss(s, y, smoothing="expected")),
])
def test_hand_written_backwards_refuse_double_backward(name, loss):
    from gaprank._autograd import FirstDerivativesOnly

    s = torch.tensor([[0.3, -0.2, 0.9, 0.1, 0.5]], dtype=torch.float64, requires_grad=True)
    y = torch.tensor([[2, 0, 1, 0, 1]])
    assert torch.autograd.gradcheck(lambda t: loss(t, y), (s,))
    # once_differentiable would let this through with a constant incoming gradient and return zeros
    with pytest.raises(FirstDerivativesOnly, match="first derivatives only"):
        torch.autograd.grad(loss(s, y), s, create_graph=True)


def test_paper_softgap_has_correct_second_derivatives():
    s = torch.tensor([[0.3, -0.2, 0.9, 0.1, 0.5]], dtype=torch.float64, requires_grad=True)
    y = torch.tensor([[2, 0, 1, 0, 1]])
    assert torch.autograd.gradgradcheck(lambda t: L.soft_gap_loss(t, y, sigma=0.8), (s,))


def test_exact_mode_work_does_not_grow_with_the_score_span():
    import time

    from gaprank.losses import _expected

    y = torch.tensor([[2, 0, 1, 0, 1]])
    near = torch.tensor([[0.0, 1.0, 2.0, 3.0, 1.5]], dtype=torch.float64)
    for far in (1e4, 1e6, 1e12):
        s = near.clone()
        s[0, 4] = far  # one document alone, far from the others: its window is its own
        nodes, weights = _expected._lattice(s, torch.ones(1, 5, dtype=torch.bool), 1.0, _expected.GRID_STEP)
        assert weights.sum() <= 5 * 67
        start = time.perf_counter()
        value = L.soft_gap_loss(s.requires_grad_(True), y, smoothing="expected")
        value.backward()
        assert time.perf_counter() - start < 2.0
        # the far document is surely first: the same value as with it 20 sigma above the others, where
        # the contiguous lattice is used
        assert value.item() == pytest.approx(L.soft_gap_loss(near.clone().index_fill_(1, torch.tensor([4]), 23.0), y,
                                                              smoothing="expected").item(), abs=1e-12)
    # the union of windows equals the contiguous lattice: alone, this query's scores take the union
    # (4 documents spread over 60 sigma); beside a 20-document query the batch takes the contiguous one
    s = torch.tensor([[0.0, 30.0, 60.0, 1.0]], dtype=torch.float64)
    yy = torch.tensor([[1, 0, 2, 1]])
    alone = L.soft_gap_loss(s, yy, smoothing="expected", reduction="none")
    wide = torch.zeros(2, 20, dtype=torch.float64)
    wide[0, :4], wide[1] = s[0], torch.linspace(0.0, 2.0, 20, dtype=torch.float64)
    labels = torch.zeros(2, 20, dtype=torch.int64)
    labels[0, :4], labels[1] = yy[0], torch.arange(20) % 3
    mask = torch.ones(2, 20, dtype=torch.bool)
    mask[0, 4:] = False
    nodes, weights = _expected._lattice(wide, mask, 1.0, _expected.GRID_STEP)
    assert bool((weights == 1).all())  # contiguous
    batched = L.soft_gap_loss(wide, labels, mask=mask, smoothing="expected", reduction="none")
    assert batched[0].item() == pytest.approx(alone.item(), abs=1e-13)


def test_exact_mode_scores_of_any_magnitude():
    y = torch.tensor([[2, 0, 1, 0, 1]])
    base = torch.tensor([[0.25, -0.25, 0.75, 0.125, 0.5]], dtype=torch.float64)  # + 2^40 is exact for these
    shifted = L.soft_gap_loss(base + 2.0**40, y, smoothing="expected").item()
    assert shifted == pytest.approx(L.soft_gap_loss(base, y, smoothing="expected").item(), abs=1e-12)
    ties = L.soft_gap_loss(torch.full((1, 5), 1e20, dtype=torch.float64), y, smoothing="expected").item()
    level = L.soft_gap_loss(torch.zeros(1, 5, dtype=torch.float64), y, smoothing="expected").item()
    assert ties == pytest.approx(level, abs=1e-12)
    with pytest.raises(GaprankInputError, match="span .* more than 2\\^50 sigma"):
        L.soft_gap_loss(torch.tensor([[0.0, 1e20, 2.0]], dtype=torch.float64), [[1, 0, 2]], smoothing="expected")


def test_paper_softgap_in_row_blocks_equals_the_whole_pair_matrix(monkeypatch):
    """The paper-mode sums are taken over blocks of rows (forward and backward): equal to the one-matrix
    computation, with first and second derivatives, whatever the block size."""
    from gaprank._engine import pairwise_matrix
    from gaprank.losses import _softrank as _soft

    torch.manual_seed(3)
    s = torch.randn(3, 11, dtype=torch.float64, requires_grad=True)
    y = torch.randint(0, 3, (3, 11))
    mask = torch.ones(3, 11, dtype=torch.bool)
    mask[1, 7:] = False
    onehot = torch.nn.functional.one_hot(y, 3).to(s.dtype) * mask[..., None]

    def whole(t):
        pi = pairwise_matrix(t, mask, 0.7)
        return torch.bmm(onehot.transpose(1, 2), pi), pi.sum(1)

    for elements in (1, 40, 1 << 22):  # one row a block, several rows, everything in one block
        monkeypatch.setattr(_soft, "PAIR_BLOCK_ELEMENTS", elements)
        blocked = _soft._GradedPairSums.apply(s, mask, onehot, 0.7)
        for a, b in zip(blocked, whole(s), strict=True):
            torch.testing.assert_close(a, b, rtol=1e-13, atol=1e-14)
        assert torch.autograd.gradcheck(lambda t: _soft._GradedPairSums.apply(t, mask, onehot, 0.7), (s,))
        assert torch.autograd.gradgradcheck(lambda t: _soft._GradedPairSums.apply(t, mask, onehot, 0.7), (s,))
        loss = L.soft_gap_loss(s, y, mask=mask, sigma=0.7)
        assert torch.autograd.gradcheck(lambda t: L.soft_gap_loss(t, y, mask=mask, sigma=0.7), (s,))
        torch.testing.assert_close(loss, L.soft_gap_loss(s.detach(), y, mask=mask, sigma=0.7), rtol=0, atol=0)


def _fresh_process(script: str) -> str:
    """What ``script`` prints, run by a new Python process with one torch thread (its error's end if it fails)."""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip()


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="reads Linux's VmHWM")
def test_paper_softgap_memory_grows_with_blocks_not_with_the_pair_matrix():
    """N = 8,000 in float32: the pair matrix alone would be 256 MB, and the one-matrix computation held
    about seven of them (1.7 GB) through forward and backward."""

    # VmHWM, the peak resident memory of this process since its exec (ru_maxrss would keep pytest's size)
    script = ("import torch, gaprank\ntorch.manual_seed(0)\n"
              "def peak():\n    return next(int(l.split()[1]) for l in open('/proc/self/status') if l.startswith('VmHWM'))\n"
              "loss = gaprank.SoftMetricLoss(\"gap\", g=[0.5, 0.5], sigma=0.1)\n"
              "loss(torch.randn(1, 50, requires_grad=True), torch.randint(0, 3, (1, 50))).backward()  # first calls\n"
              "s = torch.randn(1, 8000, requires_grad=True); y = torch.randint(0, 3, (1, 8000))\n"
              "base = peak()\nloss(s, y).backward()\nprint((peak() - base) / 1024)\n")
    peak_mb = _fresh_process(script)
    assert float(peak_mb) < 256, peak_mb


# GAP: the compiled kernel; ERR: the tensor engine (unvalidated, the step its CUDA graphs take); RankNet; a function
@pytest.mark.parametrize("make", [lambda: L.LambdaRankLoss("gap", g=[0.5, 0.5]),
                                  lambda: L.LambdaRankLoss("ERR", max_grade=2, validate=False),
                                  lambda: L.RankNetLoss(),
                                  lambda: functools.partial(L.lambdarank_loss, measure="nDCG@5")],
                         ids=["gap", "ERR-unvalidated", "RankNet", "lambdarank_loss"])
def test_pairwise_losses_compile_across_batch_shapes_as_one_opaque_call(make):
    """torch.compile with AOTAutograd (the aot_eager backend, as inductor traces) at three batch shapes: the
    lambdas are one opaque call, so dynamo makes one graph before it and one after it per shape and no more, and
    values and gradients equal eager. Traced into, the engine's checks and sizes made 21 to 34 graphs here."""
    from torch._dynamo.testing import CompileCounterWithBackend

    torch._dynamo.reset()
    loss = make()
    counter = CompileCounterWithBackend("aot_eager")
    compiled = torch.compile(loss, backend=counter)
    eager = make()  # buffers of its own
    for batch, size in ((4, 10), (6, 17), (3, 25)):
        torch.manual_seed(batch)
        s = torch.randn(batch, size, dtype=torch.float64, requires_grad=True)
        y = torch.randint(0, 3, (batch, size))
        value = compiled(s, y)
        (grad,) = torch.autograd.grad(value, s)
        expected = eager(s, y)
        torch.testing.assert_close(value, expected, rtol=1e-12, atol=1e-12)
        torch.testing.assert_close(grad, torch.autograd.grad(expected, s)[0], rtol=1e-12, atol=1e-12)
    # the second shape recompiles with symbolic sizes, which the third reuses: two shapes of two graphs at most
    assert counter.frame_count <= 4, counter.frame_count


@pytest.mark.parametrize("loss", [L.SoftGAPLoss(g=[0.5, 0.5], sigma=0.7), L.SoftNDCGLoss(sigma=0.7)],
                         ids=["SoftGAPLoss", "SoftNDCGLoss"])
def test_soft_losses_compile_across_batch_shapes(loss, recwarn):
    """torch.compile (dynamo, eager backend) of the SoftRank losses at three batch shapes, padding
    included: values and gradients equal eager (SoftNDCG's compiled rank laws run as an opaque call), and
    dynamo meets nothing it cannot trace (it warned of a lock the rank laws' buffers made)."""
    torch._dynamo.reset()
    compiled = torch.compile(loss, backend="eager")
    for batch, size in ((4, 10), (6, 17), (3, 25)):
        torch.manual_seed(batch)
        s = torch.randn(batch, size, dtype=torch.float64, requires_grad=True)
        y = torch.randint(0, 3, (batch, size))
        mask = torch.rand(batch, size) > 0.2
        value = compiled(s, y, mask)
        (grad,) = torch.autograd.grad(value, s)
        expected = loss(s, y, mask)
        torch.testing.assert_close(value, expected, rtol=1e-12, atol=1e-12)
        torch.testing.assert_close(grad, torch.autograd.grad(expected, s)[0], rtol=1e-12, atol=1e-12)
    assert not [w for w in recwarn if "does not know how to trace" in str(w.message)]


def test_torch_func_grad_works_for_softgap_and_is_refused_clearly_by_lambdarank():
    s = torch.tensor([[0.3, -0.2, 0.9, 0.1, 0.5]], dtype=torch.float64)
    y = torch.tensor([[2, 0, 1, 0, 1]])
    through_func = torch.func.grad(lambda t: L.soft_gap_loss(t, y, sigma=0.8))(s)
    t = s.clone().requires_grad_(True)
    L.soft_gap_loss(t, y, sigma=0.8).backward()
    torch.testing.assert_close(through_func, t.grad, rtol=1e-12, atol=1e-14)
    with pytest.raises(RuntimeError, match="lambdarank_loss does not support torch.func transforms.*torch.autograd"):
        torch.func.grad(lambda t: L.lambdarank_loss(t, y, measure="gap"))(s)


def test_losses_on_numba_kernels_compile_in_a_fresh_process():
    """torch.compile's first call of a loss whose kernel numba has not yet run in the process (a user's first
    compiled step): dynamo used to trace into the numba dispatcher and stop with an AssertionError (SoftNDCG's
    rank laws, the fast_soft_rank projection; LambdaRank's kernel was opaque already). Every compiled call comes
    before any eager one."""
    script = (
        "import torch, gaprank.losses as L\n"
        "losses = [L.SoftNDCGLoss(sigma=0.7), L.SoftGAPLoss(g=[0.5, 0.5], smoothing='fast_soft_rank', sigma=0.3)]\n"
        "torch.manual_seed(0)\n"
        "s = torch.randn(4, 12, dtype=torch.float64, requires_grad=True); y = torch.randint(0, 3, (4, 12))\n"
        "compiled = []\n"
        "for loss in losses:\n"
        "    value = torch.compile(loss, backend='eager')(s, y)\n"
        "    compiled.append((value, torch.autograd.grad(value, s)[0]))\n"
        "for loss, (value, grad) in zip(losses, compiled):\n"
        "    expected = loss(s, y)\n"
        "    torch.testing.assert_close(value, expected, rtol=1e-12, atol=1e-12)\n"
        "    torch.testing.assert_close(grad, torch.autograd.grad(expected, s)[0], rtol=1e-12, atol=1e-12)\n"
        "print('same')\n")
    assert _fresh_process(script) == "same"


def test_eager_numba_kernels_do_not_import_dynamo():
    """The kernels' opaque-call wrapper costs an eager process nothing: torch._dynamo is imported only by a
    torch.compile, not by a loss's first eager call (SoftNDCG's rank laws, fast_soft_rank, LambdaRank's kernel)."""
    script = ("import sys, torch, gaprank.losses as L\n"
              "s = torch.randn(2, 6, dtype=torch.float64, requires_grad=True); y = torch.randint(0, 3, (2, 6))\n"
              "for loss in (L.SoftNDCGLoss(), L.SoftGAPLoss(smoothing='fast_soft_rank'), L.LambdaRankLoss('gap')):\n"
              "    loss(s, y).backward()\n"
              "print('torch._dynamo' in sys.modules)\n")
    assert _fresh_process(script) == "False"
