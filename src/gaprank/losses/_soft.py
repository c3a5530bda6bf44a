r"""SoftRank-style smooth metrics (Taylor et al., WSDM 2008) and the losses built on them.

Scores are independent Gaussians :math:`s_j \sim N(\bar s_j, \sigma^2)` around the model's scores, so
:math:`\pi_{mn} = P(s_m > s_n) = \Phi((\bar s_m - \bar s_n)/(\sigma\sqrt 2))`.

* AP family, ``mode="paper"`` (Robertson et al. 2010, sec. 5, written with the kernel of the docs'
  page The maths, "One kernel for the AP family"): :math:`\mathrm{Soft}M = \sum_n PC_n`,
  :math:`PC_n = (D[l_n] + \sum_{m \ne n} \pi_{mn} K[l_m, l_n]) / (1 + \sum_{m \ne n} \pi_{mn})`.
  The sum over m is grouped by grade (``[B, c+1, N]``) and taken over blocks of rows m in both passes
  (pi recomputed in the backward pass), so memory is O(B N c) plus one block, never the ``[B, N, N]``
  matrix of pi. As sigma -> 0 with distinct scores it equals the metric.
* AP family, ``mode="exact"``: :math:`E[M]` under the same Gaussian model (:mod:`._exact`).
* nDCG (SoftNDCG): :math:`\sum_n \mathrm{gain}(l_n) \sum_r D(r) p_n(r) / \mathrm{IDCG}` with SoftRank's
  rank distributions :math:`p_n` (gain 2^l - 1, D(r) = 1/log2(r+1) at 1-based rank r).
"""

from __future__ import annotations

import math
from typing import Literal

import torch

from .._engine.factors import rank_for_measure
from .._inputs import check_choice, check_sigma
from .._typing import ArrayLike
from ..distributions import RankLawBuffers, expected_score_rank_values, pair_block
from ..metrics import GainDiscountForm, grade_indicators, objective_measure, pivot_sum
from ._common import as_batch, check_scores_tensor, rankable, reduce_loss
from ._exact import expected_kernel_metric

MODES = ("paper", "exact")


# Elements of one block of the pair matrix (batch x rows x list) in the paper-mode sums: the N x N matrix of
# pi is never held whole, in the forward pass or the backward pass.
PAIR_BLOCK_ELEMENTS = 1 << 20


def _row_blocks(batch: int, size: int) -> list[tuple[int, int]]:
    rows = max(1, PAIR_BLOCK_ELEMENTS // max(1, batch * size))
    return [(first, min(size, first + rows)) for first in range(0, size, rows)]


class _GradedPairSums(torch.autograd.Function):
    r"""``(above_by_grade [B, C, N], above [B, N])``: :math:`\sum_m 1[l_m = t] \pi_{mn}` and
    :math:`\sum_m \pi_{mn}` over real m != n, computed over blocks of rows m in both passes. The backward
    pass is written with differentiable operations, so second derivatives stay available (then the
    graph of the gradient holds its blocks)."""

    @staticmethod
    def forward(s, m, onehot, sigma):  # type: ignore[override]
        batch, size = s.shape
        above_by_grade = s.new_zeros(batch, onehot.shape[-1], size)
        above = s.new_zeros(batch, size)
        for first, last in _row_blocks(batch, size):
            z, keep = pair_block(s, m, sigma, first, last)
            pi = torch.special.ndtr(z) * keep
            above_by_grade = above_by_grade + torch.bmm(onehot[:, first:last].transpose(1, 2), pi)
            above = above + pi.sum(1)
        return above_by_grade, above

    @staticmethod
    def setup_context(ctx, inputs, output):  # the separate form torch.func's transforms need
        s, m, onehot, sigma = inputs
        ctx.save_for_backward(s, m, onehot)
        ctx.sigma = sigma

    @staticmethod
    def backward(ctx, grad_by_grade, grad_above):  # type: ignore[override]
        s, m, onehot = ctx.saved_tensors
        sigma, (batch, size) = ctx.sigma, s.shape
        grad = torch.zeros_like(s)
        # dpi_mn/ds_m = phi(z) / (sigma sqrt 2) = -dpi_mn/ds_n
        density = 1.0 / (math.sqrt(2.0 * math.pi) * sigma * math.sqrt(2.0))
        for first, last in _row_blocks(batch, size):
            z, keep = pair_block(s, m, sigma, first, last)
            # d(sum)/d(pi_mn) = G_by_grade[l_m, n] + G_above[n]
            weight = torch.bmm(onehot[:, first:last], grad_by_grade) + grad_above[:, None, :]
            flow = weight * torch.exp(-0.5 * z * z) * density * keep
            grad = grad + torch.nn.functional.pad(flow.sum(2), (first, size - last)) - flow.sum(1)
        return grad, None, None, None


def _paper_kernel_metric(s, m, labels, kernel, sigma):
    num_classes = kernel.matrix.shape[-1]
    onehot = grade_indicators(labels, num_classes).to(s.dtype) * m[..., None]
    # [B, c+1, N]: sum_m pi_mn 1[l_m = t], and [B, N]: sum_m pi_mn
    above_by_grade, above = _GradedPairSums.apply(s, m, onehot, sigma)
    matrix = kernel.matrix.to(s.dtype)
    k_cols = matrix.gather(2, labels[:, None, :].expand(-1, num_classes, -1))  # K[t, l_n]
    num = kernel.diag.to(s.dtype).gather(1, labels) + (above_by_grade * k_cols).sum(1)
    den = 1.0 + above
    return (num / den * m).sum(-1)


def expected_discounts(s: torch.Tensor, m: torch.Tensor, sigma: float, discounts: torch.Tensor,
                       buffers: RankLawBuffers | None = None) -> torch.Tensor:
    """``[B, N]``: :math:`\\sum_r p_n(r)\\, \\mathrm{disc}(r)` over ranks r (SoftRank's rank laws), ``discounts``
    ``[N]`` the discount at each rank; ``buffers`` as in ``expected_score_rank_values``."""
    return expected_score_rank_values(s, m, sigma, discounts, buffers) * m


def _soft_values(scores, labels, metric, g, sigma, mode, mask, grade_counts, max_grade, validate, buffers=None):
    """(soft values [B], best values [B] float64, defined [B] bool, ranked lists)."""
    check_scores_tensor(scores)
    sigma = check_sigma(sigma)
    check_choice(mode, "mode", MODES)
    measure = objective_measure(metric, mode="exact" if mode == "exact" else "soft")
    # an expectation over the score distributions reads no ranking: the grade counts only, lists left unsorted
    ranked, params = rank_for_measure(scores.detach(), labels, measure, g=g, mask=mask, grade_counts=grade_counts,
                                      max_grade=max_grade, by_score=False, validate=validate)
    s, m = as_batch(scores, mask)
    doc_labels = ranked.document_grades()
    ideal_order = torch.sort(doc_labels.masked_fill(~m, -1), dim=-1, descending=True, stable=True).values
    ideal_valid, ideal_grades = ideal_order >= 0, ideal_order.clamp_min(0)
    form = measure.info.form
    if isinstance(form, GainDiscountForm):  # SoftRank's expected discounts (SoftNDCG and its siblings)
        gains = form.gains(ranked.num_grades, params, doc_labels.device)
        inverse, defined = form.inverse_norm(ranked, gains, measure.k, params)
        discounts = form.discounts(ranked.positions(), params, measure.k)
        values = (gains[doc_labels].to(s.dtype) * expected_discounts(s, m, sigma, discounts, buffers)).sum(-1)
        values = values * inverse.to(s.dtype)
        best = (gains[ideal_grades] * discounts * ideal_valid).sum(-1) * inverse
        return values, best, torch.ones_like(inverse, dtype=torch.bool) if defined is None else defined, ranked
    kernel = form.build(ranked, params)
    if kernel is None:  # no grade above 0 on the scale: every query is undefined
        zeros = s.new_zeros(s.shape[0])
        return zeros + 0.0 * s.sum(-1), zeros.to(torch.float64), zeros.bool(), ranked
    if mode == "paper":
        values = _paper_kernel_metric(s, m, doc_labels, kernel, sigma)
    else:
        values = expected_kernel_metric(s, m, doc_labels, kernel, sigma)
    best = pivot_sum(ideal_grades, ideal_valid, kernel)
    return values, best, kernel.defined, ranked


def soft_metric(
    scores: torch.Tensor,
    labels: ArrayLike,
    *,
    metric: str,
    sigma: float,
    g: ArrayLike | None = None,
    mode: Literal["paper", "exact"] = "paper",
    mask: torch.Tensor | None = None,
    grade_counts: ArrayLike | None = None,
    max_grade: int | None = None,
    validate: bool = True,
) -> torch.Tensor:
    r"""The smooth value of ``metric`` under SoftRank's Gaussian score model, per query.

    ``metric``: a measure string of the AP family (through its kernel: "gap", "xgap", "egap", "ap",
    "AP(rel=2)", "vG", "eRAP(p=[0,0.5,1])", ...) or of the discounted-gain family (SoftRank's expected
    discounts: "ndcg" is SoftNDCG, "nDCG@10", "P@5", "RBP(p=0.8)", ...).
    ``sigma`` is the standard deviation of every document's score, so
    :math:`\pi_{mn} = \Phi((s_m - s_n)/(\sigma\sqrt 2))`. ``mode="paper"``: the GAP paper's SoftGAP,
    :math:`\sum_n (K_{nn} + \sum_m \pi_{mn} K_{mn}) / (1 + \sum_m \pi_{mn})` (Robertson et al. 2010,
    sec. 5; a ratio of expectations). ``mode="exact"``: :math:`E[M]` exactly under the model
    (Poisson-binomial count above each pivot, Gauss-Legendre in x, a shared trapezoid grid in the
    pivot's score; computed in float64; cost O(T N^2 c) per query, T ~ 4 range/sigma + 64), for the AP
    family.
    Returns ``[B]`` (a scalar for a 1-D query) in the scores' dtype; 0 where the metric is undefined
    (no relevant document). Equal scores give :math:`\pi = 1/2`. ``max_grade`` and ``validate`` as in
    :func:`~gaprank.losses.lambdarank_loss`: unvalidated, the paper's mode and the discounted-gain measures read
    nothing back from the device; the exact mode still reads the scores' span (its grid depends on it).

    Parameters
    ----------
    scores : torch.Tensor
        Floating-point scores, ``[list]`` (one query) or ``[batch, list]``; the loss is
        differentiated with respect to them.
    labels : array-like or torch.Tensor
        The documents' relevance grades, integers 0..30, in the shape of ``scores``.
    metric : str
        A measure string of gaprank's registry ('gap', 'GAP(g=[0.2,0.8])', 'AP(rel=2)', 'nDCG@10', ...)
        whose form this loss can use; an unsuitable one is refused with the list of those that fit.
    sigma : float
        The standard deviation of each score in SoftRank's Gaussian model (Taylor et al.'s sigma_s);
        as it goes to 0 with distinct scores the value goes to the measure.
    g : array-like, optional
        GAP's user model g_1..g_c for gap, xgap and egap (non-negative, summing to 1); default
        uniform over grades 1..c.
    mode : {"paper", "exact"}, default "paper"
        "paper": SoftRank's ratio of expectations (Robertson et al. 2010, sec. 5); "exact": the
        expectation of the measure under the Gaussian score model (the AP family; float64).
    mask : torch.Tensor of bool, optional
        True marks a real document, False padding; padding gets exactly 0 gradient whatever its
        scores hold. Default: every position is real.
    grade_counts : array-like, optional
        R(0)..R(c) per query when the list does not hold every judged document (the recall base and
        the ideal list); default counted from the labels.
    max_grade : int, optional
        The top grade c of the data set's grade scale 0..c. Default: the largest label of the batch,
        which then also sets a default uniform ``g``; pass it so that every batch is scored on the
        same scale.
    validate : bool, default True
        Check the inputs (finite scores, integer labels within the scale). False is for trusted
        inputs on a GPU: nothing is read back from the device, and the grade scale must be fixed
        (``max_grade`` or a setting of the measure).

    Returns
    -------
    value : torch.Tensor
        The smooth value per query, ``[batch]`` (a scalar for one 1-D query), in the scores' dtype;
        0 where the measure is undefined.

    Examples
    --------
    >>> import torch
    >>> from gaprank.losses import soft_metric
    >>> s, y = torch.tensor([3.0, 2.0, 1.0]), torch.tensor([2, 0, 1])
    >>> round(soft_metric(s, y, metric="gap", g=[0.5, 0.5], sigma=1e-4).item(), 6)   # -> GAP as sigma -> 0
    0.888889
    >>> round(soft_metric(s, y, metric="gap", g=[0.5, 0.5], sigma=1e-4, mode="exact").item(), 6)
    0.888889
    """
    values, _, defined, ranked = _soft_values(scores, labels, metric, g, sigma, mode, mask, grade_counts, max_grade,
                                              validate)
    values = torch.where(defined, values, torch.zeros_like(values)).to(scores.dtype)
    return values[0] if ranked.spec.squeeze else values


def soft_metric_loss(
    scores: torch.Tensor,
    labels: ArrayLike,
    *,
    metric: str,
    g: ArrayLike | None = None,
    sigma: float = 1.0,
    mode: Literal["paper", "exact"] = "paper",
    mask: torch.Tensor | None = None,
    grade_counts: ArrayLike | None = None,
    reduction: Literal["mean", "sum", "none"] = "mean",
    max_grade: int | None = None,
    validate: bool = True,
) -> torch.Tensor:
    r"""Loss to minimise: :math:`M(\text{ideal}) - \mathrm{Soft}M` per query, then ``reduction``.

    :math:`M(\text{ideal})` is the metric of this list sorted by label (1 for GAP, AP and nDCG without a
    larger recall base; the papers' :math:`\sum_{k \le \tau} g_k` for xGAP and eGAP), a constant, so the
    gradient is that of :math:`-\mathrm{Soft}M` and the loss is 0 at a perfect, confident ranking.
    Queries without two different labels, or without a relevant document, give 0 loss and 0 gradient.
    See :func:`soft_metric` for ``metric``, ``sigma``, ``mode``, ``max_grade`` and ``validate``.

    Parameters
    ----------
    scores : torch.Tensor
        Floating-point scores, ``[list]`` (one query) or ``[batch, list]``; the loss is
        differentiated with respect to them.
    labels : array-like or torch.Tensor
        The documents' relevance grades, integers 0..30, in the shape of ``scores``.
    metric : str
        A measure string of gaprank's registry ('gap', 'GAP(g=[0.2,0.8])', 'AP(rel=2)', 'nDCG@10', ...)
        whose form this loss can use; an unsuitable one is refused with the list of those that fit.
    g : array-like, optional
        GAP's user model g_1..g_c for gap, xgap and egap (non-negative, summing to 1); default
        uniform over grades 1..c.
    sigma : float, default 1.0
        The standard deviation of each score in SoftRank's Gaussian model (Taylor et al.'s sigma_s);
        as it goes to 0 with distinct scores the value goes to the measure.
    mode : {"paper", "exact"}, default "paper"
        "paper": SoftRank's ratio of expectations (Robertson et al. 2010, sec. 5); "exact": the
        expectation of the measure under the Gaussian score model (the AP family; float64).
    mask : torch.Tensor of bool, optional
        True marks a real document, False padding; padding gets exactly 0 gradient whatever its
        scores hold. Default: every position is real.
    grade_counts : array-like, optional
        R(0)..R(c) per query when the list does not hold every judged document (the recall base and
        the ideal list); default counted from the labels.
    reduction : {"mean", "sum", "none"}, default "mean"
        "mean" over all the batch's queries (those without two different labels count as 0), "sum",
        or "none": one value per query.
    max_grade : int, optional
        The top grade c of the data set's grade scale 0..c. Default: the largest label of the batch,
        which then also sets a default uniform ``g``; pass it so that every batch is scored on the
        same scale.
    validate : bool, default True
        Check the inputs (finite scores, integer labels within the scale). False is for trusted
        inputs on a GPU: nothing is read back from the device, and the grade scale must be fixed
        (``max_grade`` or a setting of the measure).

    Returns
    -------
    value : torch.Tensor
        The loss to minimise: a scalar for reduction "mean" or "sum", ``[batch]`` for "none" (a
        scalar for one 1-D query); 0 at a perfect, confident ranking.

    Examples
    --------
    >>> import torch
    >>> from gaprank.losses import soft_metric_loss
    >>> scores = torch.tensor([[0.5, 1.0, -1.0]], requires_grad=True)
    >>> loss = soft_metric_loss(scores, torch.tensor([[2, 1, 0]]), metric="gap", g=[0.5, 0.5])
    >>> loss.backward(); bool(scores.grad[0, 0] < 0)   # raising the grade-2 document lowers the loss
    True
    """
    return _soft_metric_loss(scores, labels, metric, g, sigma, mode, mask, grade_counts, reduction, max_grade, validate)


def _soft_metric_loss(scores, labels, metric, g, sigma, mode, mask, grade_counts, reduction, max_grade, validate,
                      buffers: RankLawBuffers | None = None):
    values, best, defined, ranked = _soft_values(scores, labels, metric, g, sigma, mode, mask, grade_counts, max_grade,
                                                 validate, buffers)
    keep = defined & rankable(ranked)
    regret = torch.where(keep, best.to(values.dtype) - values, torch.zeros_like(values)).to(scores.dtype)
    return reduce_loss(regret, reduction, ranked.spec.squeeze)


def soft_gap_loss(
    scores: torch.Tensor,
    labels: ArrayLike,
    *,
    g: ArrayLike | None = None,
    sigma: float = 1.0,
    mode: Literal["paper", "exact"] = "paper",
    mask: torch.Tensor | None = None,
    grade_counts: ArrayLike | None = None,
    reduction: Literal["mean", "sum", "none"] = "mean",
    max_grade: int | None = None,
    validate: bool = True,
) -> torch.Tensor:
    r"""GAP loss: ``gap(ideal) - SoftGAP`` per query; :func:`soft_metric_loss` with
    ``metric='gap'`` (Robertson et al. 2010, sec. 5).

    Parameters
    ----------
    scores : torch.Tensor
        Floating-point scores, ``[list]`` (one query) or ``[batch, list]``; the loss is
        differentiated with respect to them.
    labels : array-like or torch.Tensor
        The documents' relevance grades, integers 0..30, in the shape of ``scores``.
    g : array-like, optional
        GAP's user model g_1..g_c for gap, xgap and egap (non-negative, summing to 1); default
        uniform over grades 1..c.
    sigma : float, default 1.0
        The standard deviation of each score in SoftRank's Gaussian model (Taylor et al.'s sigma_s);
        as it goes to 0 with distinct scores the value goes to the measure.
    mode : {"paper", "exact"}, default "paper"
        "paper": SoftRank's ratio of expectations (Robertson et al. 2010, sec. 5); "exact": the
        expectation of the measure under the Gaussian score model (the AP family; float64).
    mask : torch.Tensor of bool, optional
        True marks a real document, False padding; padding gets exactly 0 gradient whatever its
        scores hold. Default: every position is real.
    grade_counts : array-like, optional
        R(0)..R(c) per query when the list does not hold every judged document (the recall base and
        the ideal list); default counted from the labels.
    reduction : {"mean", "sum", "none"}, default "mean"
        "mean" over all the batch's queries (those without two different labels count as 0), "sum",
        or "none": one value per query.
    max_grade : int, optional
        The top grade c of the data set's grade scale 0..c. Default: the largest label of the batch,
        which then also sets a default uniform ``g``; pass it so that every batch is scored on the
        same scale.
    validate : bool, default True
        Check the inputs (finite scores, integer labels within the scale). False is for trusted
        inputs on a GPU: nothing is read back from the device, and the grade scale must be fixed
        (``max_grade`` or a setting of the measure).

    Returns
    -------
    value : torch.Tensor
        The loss to minimise: a scalar for reduction "mean" or "sum", ``[batch]`` for "none" (a
        scalar for one 1-D query); 0 at a perfect, confident ranking.

    Examples
    --------
    >>> import torch
    >>> from gaprank.losses import soft_gap_loss
    >>> float(soft_gap_loss(torch.tensor([2.0, 1.0]), torch.tensor([1, 0]), sigma=1e-3))
    0.0
    """
    return soft_metric_loss(scores, labels, metric='gap', g=g, sigma=sigma, mode=mode, mask=mask,
                            grade_counts=grade_counts, reduction=reduction, max_grade=max_grade, validate=validate)


def soft_xgap_loss(
    scores: torch.Tensor,
    labels: ArrayLike,
    *,
    g: ArrayLike | None = None,
    sigma: float = 1.0,
    mode: Literal["paper", "exact"] = "paper",
    mask: torch.Tensor | None = None,
    grade_counts: ArrayLike | None = None,
    reduction: Literal["mean", "sum", "none"] = "mean",
    max_grade: int | None = None,
    validate: bool = True,
) -> torch.Tensor:
    r"""xGAP loss: ``xgap(ideal) - SoftxGAP`` per query; :func:`soft_metric_loss` with
    ``metric='xgap'`` (kernel of Ferrante et al., eq. 5).

    Parameters
    ----------
    scores : torch.Tensor
        Floating-point scores, ``[list]`` (one query) or ``[batch, list]``; the loss is
        differentiated with respect to them.
    labels : array-like or torch.Tensor
        The documents' relevance grades, integers 0..30, in the shape of ``scores``.
    g : array-like, optional
        GAP's user model g_1..g_c for gap, xgap and egap (non-negative, summing to 1); default
        uniform over grades 1..c.
    sigma : float, default 1.0
        The standard deviation of each score in SoftRank's Gaussian model (Taylor et al.'s sigma_s);
        as it goes to 0 with distinct scores the value goes to the measure.
    mode : {"paper", "exact"}, default "paper"
        "paper": SoftRank's ratio of expectations (Robertson et al. 2010, sec. 5); "exact": the
        expectation of the measure under the Gaussian score model (the AP family; float64).
    mask : torch.Tensor of bool, optional
        True marks a real document, False padding; padding gets exactly 0 gradient whatever its
        scores hold. Default: every position is real.
    grade_counts : array-like, optional
        R(0)..R(c) per query when the list does not hold every judged document (the recall base and
        the ideal list); default counted from the labels.
    reduction : {"mean", "sum", "none"}, default "mean"
        "mean" over all the batch's queries (those without two different labels count as 0), "sum",
        or "none": one value per query.
    max_grade : int, optional
        The top grade c of the data set's grade scale 0..c. Default: the largest label of the batch,
        which then also sets a default uniform ``g``; pass it so that every batch is scored on the
        same scale.
    validate : bool, default True
        Check the inputs (finite scores, integer labels within the scale). False is for trusted
        inputs on a GPU: nothing is read back from the device, and the grade scale must be fixed
        (``max_grade`` or a setting of the measure).

    Returns
    -------
    value : torch.Tensor
        The loss to minimise: a scalar for reduction "mean" or "sum", ``[batch]`` for "none" (a
        scalar for one 1-D query); 0 at a perfect, confident ranking.

    Examples
    --------
    >>> import torch
    >>> from gaprank.losses import soft_xgap_loss
    >>> float(soft_xgap_loss(torch.tensor([2.0, 1.0]), torch.tensor([1, 0]), sigma=1e-3))
    0.0
    """
    return soft_metric_loss(scores, labels, metric='xgap', g=g, sigma=sigma, mode=mode, mask=mask,
                            grade_counts=grade_counts, reduction=reduction, max_grade=max_grade, validate=validate)


def soft_egap_loss(
    scores: torch.Tensor,
    labels: ArrayLike,
    *,
    g: ArrayLike | None = None,
    sigma: float = 1.0,
    mode: Literal["paper", "exact"] = "paper",
    mask: torch.Tensor | None = None,
    grade_counts: ArrayLike | None = None,
    reduction: Literal["mean", "sum", "none"] = "mean",
    max_grade: int | None = None,
    validate: bool = True,
) -> torch.Tensor:
    r"""eGAP loss: ``egap(ideal) - SofteGAP`` per query; :func:`soft_metric_loss` with
    ``metric='egap'`` (kernel of Ferrante et al., eq. 6).

    Parameters
    ----------
    scores : torch.Tensor
        Floating-point scores, ``[list]`` (one query) or ``[batch, list]``; the loss is
        differentiated with respect to them.
    labels : array-like or torch.Tensor
        The documents' relevance grades, integers 0..30, in the shape of ``scores``.
    g : array-like, optional
        GAP's user model g_1..g_c for gap, xgap and egap (non-negative, summing to 1); default
        uniform over grades 1..c.
    sigma : float, default 1.0
        The standard deviation of each score in SoftRank's Gaussian model (Taylor et al.'s sigma_s);
        as it goes to 0 with distinct scores the value goes to the measure.
    mode : {"paper", "exact"}, default "paper"
        "paper": SoftRank's ratio of expectations (Robertson et al. 2010, sec. 5); "exact": the
        expectation of the measure under the Gaussian score model (the AP family; float64).
    mask : torch.Tensor of bool, optional
        True marks a real document, False padding; padding gets exactly 0 gradient whatever its
        scores hold. Default: every position is real.
    grade_counts : array-like, optional
        R(0)..R(c) per query when the list does not hold every judged document (the recall base and
        the ideal list); default counted from the labels.
    reduction : {"mean", "sum", "none"}, default "mean"
        "mean" over all the batch's queries (those without two different labels count as 0), "sum",
        or "none": one value per query.
    max_grade : int, optional
        The top grade c of the data set's grade scale 0..c. Default: the largest label of the batch,
        which then also sets a default uniform ``g``; pass it so that every batch is scored on the
        same scale.
    validate : bool, default True
        Check the inputs (finite scores, integer labels within the scale). False is for trusted
        inputs on a GPU: nothing is read back from the device, and the grade scale must be fixed
        (``max_grade`` or a setting of the measure).

    Returns
    -------
    value : torch.Tensor
        The loss to minimise: a scalar for reduction "mean" or "sum", ``[batch]`` for "none" (a
        scalar for one 1-D query); 0 at a perfect, confident ranking.

    Examples
    --------
    >>> import torch
    >>> from gaprank.losses import soft_egap_loss
    >>> float(soft_egap_loss(torch.tensor([2.0, 1.0]), torch.tensor([1, 0]), sigma=1e-3))
    0.0
    """
    return soft_metric_loss(scores, labels, metric='egap', g=g, sigma=sigma, mode=mode, mask=mask,
                            grade_counts=grade_counts, reduction=reduction, max_grade=max_grade, validate=validate)


def soft_ap_loss(
    scores: torch.Tensor,
    labels: ArrayLike,
    *,
    g: ArrayLike | None = None,
    sigma: float = 1.0,
    mode: Literal["paper", "exact"] = "paper",
    mask: torch.Tensor | None = None,
    grade_counts: ArrayLike | None = None,
    reduction: Literal["mean", "sum", "none"] = "mean",
    max_grade: int | None = None,
    validate: bool = True,
) -> torch.Tensor:
    r"""AP loss: ``ap(ideal) - SoftAP`` per query; :func:`soft_metric_loss` with
    ``metric='ap'`` (binary AP, labels >= 1 relevant).

    Parameters
    ----------
    scores : torch.Tensor
        Floating-point scores, ``[list]`` (one query) or ``[batch, list]``; the loss is
        differentiated with respect to them.
    labels : array-like or torch.Tensor
        The documents' relevance grades, integers 0..30, in the shape of ``scores``.
    g : array-like, optional
        GAP's user model g_1..g_c for gap, xgap and egap (non-negative, summing to 1); default
        uniform over grades 1..c.
    sigma : float, default 1.0
        The standard deviation of each score in SoftRank's Gaussian model (Taylor et al.'s sigma_s);
        as it goes to 0 with distinct scores the value goes to the measure.
    mode : {"paper", "exact"}, default "paper"
        "paper": SoftRank's ratio of expectations (Robertson et al. 2010, sec. 5); "exact": the
        expectation of the measure under the Gaussian score model (the AP family; float64).
    mask : torch.Tensor of bool, optional
        True marks a real document, False padding; padding gets exactly 0 gradient whatever its
        scores hold. Default: every position is real.
    grade_counts : array-like, optional
        R(0)..R(c) per query when the list does not hold every judged document (the recall base and
        the ideal list); default counted from the labels.
    reduction : {"mean", "sum", "none"}, default "mean"
        "mean" over all the batch's queries (those without two different labels count as 0), "sum",
        or "none": one value per query.
    max_grade : int, optional
        The top grade c of the data set's grade scale 0..c. Default: the largest label of the batch,
        which then also sets a default uniform ``g``; pass it so that every batch is scored on the
        same scale.
    validate : bool, default True
        Check the inputs (finite scores, integer labels within the scale). False is for trusted
        inputs on a GPU: nothing is read back from the device, and the grade scale must be fixed
        (``max_grade`` or a setting of the measure).

    Returns
    -------
    value : torch.Tensor
        The loss to minimise: a scalar for reduction "mean" or "sum", ``[batch]`` for "none" (a
        scalar for one 1-D query); 0 at a perfect, confident ranking.

    Examples
    --------
    >>> import torch
    >>> from gaprank.losses import soft_ap_loss
    >>> float(soft_ap_loss(torch.tensor([2.0, 1.0]), torch.tensor([1, 0]), sigma=1e-3))
    0.0
    """
    return soft_metric_loss(scores, labels, metric='ap', g=g, sigma=sigma, mode=mode, mask=mask,
                            grade_counts=grade_counts, reduction=reduction, max_grade=max_grade, validate=validate)


def soft_ndcg_loss(
    scores: torch.Tensor,
    labels: ArrayLike,
    *,
    sigma: float = 1.0,
    mask: torch.Tensor | None = None,
    grade_counts: ArrayLike | None = None,
    reduction: Literal["mean", "sum", "none"] = "mean",
    max_grade: int | None = None,
    validate: bool = True,
) -> torch.Tensor:
    r"""SoftNDCG loss: ``1 - SoftNDCG`` per query (Taylor et al. 2008); :func:`soft_metric_loss` with
    ``metric="ndcg"``.

    Parameters
    ----------
    scores : torch.Tensor
        Floating-point scores, ``[list]`` (one query) or ``[batch, list]``; the loss is
        differentiated with respect to them.
    labels : array-like or torch.Tensor
        The documents' relevance grades, integers 0..30, in the shape of ``scores``.
    sigma : float, default 1.0
        The standard deviation of each score in SoftRank's Gaussian model (Taylor et al.'s sigma_s);
        as it goes to 0 with distinct scores the value goes to the measure.
    mask : torch.Tensor of bool, optional
        True marks a real document, False padding; padding gets exactly 0 gradient whatever its
        scores hold. Default: every position is real.
    grade_counts : array-like, optional
        R(0)..R(c) per query when the list does not hold every judged document (the recall base and
        the ideal list); default counted from the labels.
    reduction : {"mean", "sum", "none"}, default "mean"
        "mean" over all the batch's queries (those without two different labels count as 0), "sum",
        or "none": one value per query.
    max_grade : int, optional
        The top grade c of the data set's grade scale 0..c. Default: the largest label of the batch,
        which then also sets a default uniform ``g``; pass it so that every batch is scored on the
        same scale.
    validate : bool, default True
        Check the inputs (finite scores, integer labels within the scale). False is for trusted
        inputs on a GPU: nothing is read back from the device, and the grade scale must be fixed
        (``max_grade`` or a setting of the measure).

    Returns
    -------
    value : torch.Tensor
        The loss to minimise: a scalar for reduction "mean" or "sum", ``[batch]`` for "none" (a
        scalar for one 1-D query); 0 at a perfect, confident ranking.

    Examples
    --------
    >>> import torch
    >>> from gaprank.losses import soft_ndcg_loss
    >>> float(soft_ndcg_loss(torch.tensor([2.0, 1.0]), torch.tensor([1, 0]), sigma=1e-3))
    0.0
    """
    return soft_metric_loss(scores, labels, metric="ndcg", sigma=sigma, mask=mask, grade_counts=grade_counts,
                            reduction=reduction, max_grade=max_grade, validate=validate)


class _SoftMetricLoss(torch.nn.Module):
    metric = ""

    def __init__(self, g: ArrayLike | None = None, sigma: float = 1.0, mode: Literal["paper", "exact"] = "paper",
                 reduction: Literal["mean", "sum", "none"] = "mean", max_grade: int | None = None,
                 validate: bool = True) -> None:
        super().__init__()
        self.g, self.sigma, self.mode, self.reduction = g, sigma, mode, reduction
        self.max_grade, self.validate = max_grade, validate
        self._arrays = RankLawBuffers()  # working arrays of the rank laws (not state: copies start empty)

    def forward(self, scores: torch.Tensor, labels, mask: torch.Tensor | None = None) -> torch.Tensor:
        return _soft_metric_loss(scores, labels, self.metric, self.g, self.sigma, self.mode, mask, None, self.reduction,
                                 self.max_grade, self.validate, self._arrays)

    def extra_repr(self) -> str:
        return (f"g={self.g}, sigma={self.sigma}, mode={self.mode!r}, reduction={self.reduction!r}, "
                f"max_grade={self.max_grade}, validate={self.validate}")


class SoftGAPLoss(_SoftMetricLoss):
    """``1 - SoftGAP`` (Robertson et al. 2010, sec. 5); ``mode="exact"`` for ``1 - E[GAP]``.
    See :func:`soft_metric_loss`.

    Examples
    --------
    >>> import torch
    >>> from gaprank.losses import SoftGAPLoss
    >>> loss = SoftGAPLoss(g=[0.5, 0.5], sigma=0.5)
    >>> scores = torch.randn(8, 30, requires_grad=True)
    >>> loss(scores, torch.randint(0, 3, (8, 30))).backward()
    """

    metric = "gap"


class SoftXGAPLoss(_SoftMetricLoss):
    """``xGAP(ideal) - SoftxGAP`` with xGAP's kernel; see :func:`soft_metric_loss`."""

    metric = "xgap"


class SoftEGAPLoss(_SoftMetricLoss):
    """``eGAP(ideal) - SofteGAP`` with eGAP's kernel; see :func:`soft_metric_loss`."""

    metric = "egap"


class SoftAPLoss(_SoftMetricLoss):
    """``1 - SoftAP`` (binary AP, labels >= 1 relevant); see :func:`soft_metric_loss`."""

    metric = "ap"

    def __init__(self, sigma: float = 1.0, mode: Literal["paper", "exact"] = "paper",
                 reduction: Literal["mean", "sum", "none"] = "mean", max_grade: int | None = None,
                 validate: bool = True) -> None:
        super().__init__(None, sigma, mode, reduction, max_grade, validate)


class SoftNDCGLoss(_SoftMetricLoss):
    """``1 - SoftNDCG`` from SoftRank's rank distributions (Taylor et al. 2008); see :func:`soft_metric_loss`."""

    metric = "ndcg"

    def __init__(self, sigma: float = 1.0, reduction: Literal["mean", "sum", "none"] = "mean", max_grade: int | None = None,
                 validate: bool = True) -> None:
        super().__init__(None, sigma, "paper", reduction, max_grade, validate)
