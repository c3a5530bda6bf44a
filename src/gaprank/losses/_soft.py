r"""Smooth metrics and the losses built on them, one smoothing chosen by ``smoothing=`` from :data:`SMOOTHINGS`,
a table of how each computes the two families of measures it serves:

* ``"softrank"``: SoftRank (Taylor et al., WSDM 2008) under independent Gaussian scores (:mod:`._softrank`): the AP
  family as the GAP paper's SoftGAP (Robertson et al. 2010, sec. 5), the discounted-gain family (SoftNDCG, gain
  2^l - 1, D(r) = 1/log2(r+1)) with the discount expected under each document's rank distribution;
* ``"expected"``: :math:`E[M]` under the same Gaussian model (:mod:`._expected`, the AP family);
* ``"approx"``, ``"neuralsort"``, ``"softsort"``, ``"fast_soft_rank"``: soft ranks (:mod:`._smoothing`), the AP
  family through the threshold identity, the discounted-gain family at soft positions.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, cast

import torch

from .._engine import RankLawBuffers
from .._engine.factors import rank_for_measure
from .._inputs import GaprankInputError, as_batch, check_choice, check_sigma
from .._typing import ArrayLike
from ..metrics import (
    GainDiscountForm,
    Kernel,
    KernelForm,
    objective_measure,
    objective_names,
    parse_measure,
    pivot_sum,
)
from ._common import (
    check_loss_settings,
    check_scores_tensor,
    reduce_loss,
    refuse_function_transforms,
)
from ._expected import expected_kernel_metric
from ._smoothing import (
    RANK_SMOOTHINGS,
    kernel_decomposes,
    refuse_kernel,
    soft_positions,
    threshold_kernel_metric,
    threshold_ranks,
)
from ._softrank import expected_discounts, softrank_kernel_metric

Smoothing = Literal["softrank", "expected", "approx", "approx_interpolated", "neuralsort", "neuralsort_sinkhorn", "softsort",
                    "fast_soft_rank"]
# why the rank-law paths refuse torch.func's transforms
_RANK_LAWS_WHY = "its gradient is computed outside autograd's graph (SoftRank's rank laws, or the expectation's blocks)"
# half-precision scores: computed in float32, the result in the scores' dtype
HALF_PRECISION = (torch.float16, torch.bfloat16)
# AP-family measures whose kernel is K[t, u] = K[u, u] for t >= u: the threshold identity holds for every query
THRESHOLD_MEASURES = ("AP", "GAP", "xGAP", "eGAP")
# ... and those whose kernel grows with the grade above the pivot: refused by the rank smoothings
NOT_THRESHOLD_MEASURES = ("vG", "eRAP")


Discount = Callable[[torch.Tensor], torch.Tensor]  # the discount at given 1-based ranks (float64)


@dataclass(frozen=True)
class _SmoothingRule:
    """How one smoothing computes the measures it serves.

    ``kind``: the registry's objective kind whose measures it serves ("soft": a smooth form; "expected": an exact
    expectation); ``discounts(s, m, sigma, discount, buffers)``: ``[B, N]`` the discount each document gets (the
    discounted-gain family); ``kernel_metric(s, m, labels, kernel, sigma)``: ``[B]`` an AP-family measure of its
    kernel; ``by_thresholds``: the AP family is taken through the threshold identity, so a kernel must decompose
    over grade thresholds; ``outside_autograd``: the forms whose gradient it computes outside autograd's graph
    (torch.func's transforms are refused there)."""

    kind: str
    discounts: Callable[..., torch.Tensor]
    kernel_metric: Callable[[torch.Tensor, torch.Tensor, torch.Tensor, Kernel, float], torch.Tensor]
    by_thresholds: bool = False
    outside_autograd: tuple[type, ...] = ()
    discount_at_rank: bool = False  # the discount is taken at the soft rank itself: a flat one gives no gradient


def _threshold_kernel_metric(s: torch.Tensor, m: torch.Tensor, labels: torch.Tensor, kernel: Kernel, sigma: float, *,
                             smoothing: str) -> torch.Tensor:
    ranks = threshold_ranks(s, m, labels, kernel.matrix.shape[-1], sigma, smoothing)
    return threshold_kernel_metric(ranks, m, labels, kernel)


def _soft_position_discounts(s: torch.Tensor, m: torch.Tensor, sigma: float, discount: Discount,
                             buffers: RankLawBuffers | None, *, smoothing: str) -> torch.Tensor:
    return soft_positions(s, m, sigma, smoothing, discount)


_RULES: dict[str, _SmoothingRule] = {
    "softrank": _SmoothingRule("soft", expected_discounts, softrank_kernel_metric,
                               outside_autograd=(GainDiscountForm,)),
    # the expected discount is SoftRank's: an expectation already
    "expected": _SmoothingRule("expected", expected_discounts, expected_kernel_metric,
                               outside_autograd=(GainDiscountForm, KernelForm)),
    **{name: _SmoothingRule("soft", functools.partial(_soft_position_discounts, smoothing=name),
                            functools.partial(_threshold_kernel_metric, smoothing=name), by_thresholds=True,
                            discount_at_rank=name == "approx")
       for name in RANK_SMOOTHINGS},
}
SMOOTHINGS = tuple(_RULES)


def check_smoothing(smoothing: Any) -> Smoothing:
    """``smoothing`` checked: one of :data:`SMOOTHINGS`."""
    return cast(Smoothing, str(check_choice(smoothing, "smoothing", SMOOTHINGS)))


def smoothing_measure(text, smoothing: str):
    """The measure string ``text`` parsed and checked for ``smoothing``; a clear error for one the smoothing
    cannot serve."""
    rule = _RULES[smoothing]
    if not rule.by_thresholds:
        return objective_measure(text, objective_kind=rule.kind)
    try:
        measure = objective_measure(text, objective_kind=rule.kind)
    except GaprankInputError:
        try:
            parsed = parse_measure(text) if isinstance(text, str) else None
        except GaprankInputError:
            parsed = None
        if parsed is None or parsed.info.form.has_smooth:
            raise
        refused = {name.lower() for name in NOT_THRESHOLD_MEASURES}
        served = [name for name in objective_names(objective_kind="soft") if name.lower() not in refused]
        raise GaprankInputError(
            f"measure {parsed.name!r}: smoothing={smoothing!r} serves measures that sum a function of each document's "
            f"rank (the AP family, the discounted-gain family); {parsed.info.name}'s value is not such a sum; "
            f"measures it serves: {', '.join(served)}") from None
    if isinstance(measure.info.form, KernelForm) and measure.info.name in NOT_THRESHOLD_MEASURES:
        raise refuse_kernel(measure.name, measure.info.name, smoothing)
    return measure


def _look_up(table: torch.Tensor, grades: torch.Tensor) -> torch.Tensor:
    """``table[grades]``, by ``index_select``."""
    return table.index_select(0, grades.reshape(-1)).view(grades.shape)


def _soft_values(scores, labels, text, g, sigma, smoothing, mask, grade_counts, max_grade, validate, buffers=None):
    """(soft values [B], best values [B] float64, defined [B] bool, ranked lists)."""
    check_scores_tensor(scores)
    if scores.dtype in HALF_PRECISION:
        # every smoothing computes in float32 (float16 holds no exp beyond 11, and its subnormal floor sits
        # above NeuralSort's terms); the callers cast the result back, and the gradient reaches the scores
        scores = scores.float()
    sigma = check_sigma(sigma)
    rule = _RULES[check_smoothing(smoothing)]
    measure = smoothing_measure(text, smoothing).with_params(g=g)
    form = measure.info.form
    if isinstance(form, rule.outside_autograd):
        refuse_function_transforms(scores, f"{measure.name} with smoothing={smoothing!r}", _RANK_LAWS_WHY)
    # an expectation over the score distributions reads no ranking: the grade counts only, lists left unsorted
    ranked, params = rank_for_measure(scores.detach(), labels, measure, mask=mask, grade_counts=grade_counts,
                                      max_grade=max_grade, by_score=False, validate=validate)
    s, m = as_batch(scores, mask)
    doc_labels = ranked.document_grades()
    ideal_order = torch.sort(doc_labels.masked_fill(~m, -1), dim=-1, descending=True, stable=True).values
    ideal_valid, ideal_grades = ideal_order >= 0, ideal_order.clamp_min(0)
    if isinstance(form, GainDiscountForm):  # sum_n gain(l_n) D_n / Z, D_n the discount the smoothing gives n
        gains = form.gains(ranked.num_grades, params, doc_labels.device)
        inverse, defined = form.inverse_norm(ranked, gains, measure.k, params)

        def discount(positions: torch.Tensor) -> torch.Tensor:
            return form.discounts(positions, params, measure.k)

        if rule.discount_at_rank:
            deepest = float(max(measure.k or 10, 2))  # two ranks within the cutoff, far apart
            between = form.discounts(torch.tensor([1.1, deepest - 0.1], dtype=torch.float64), params, None)
            if bool(between[0] == between[1]):
                raise GaprankInputError(
                    f"measure {measure.name!r}: smoothing={smoothing!r} takes the discount at the approximate rank, and "
                    f"{measure.info.name}'s is flat within its cutoff, so its loss would have no gradient; use "
                    "smoothing='approx_interpolated' (a slope from rank k to k + 1) or another smoothing")

        soft = rule.discounts(s, m, sigma, discount, buffers)
        # index_select, not gains[labels]: on the CPU the latter opens an OpenMP region, whose threads then spin
        # for milliseconds against the compiled kernels' threads
        values = (_look_up(gains, doc_labels).to(s.dtype) * soft).sum(-1)
        values = values * inverse.to(s.dtype)
        best = (_look_up(gains, ideal_grades) * discount(ranked.positions()) * ideal_valid).sum(-1) * inverse
        return values, best, torch.ones_like(inverse, dtype=torch.bool) if defined is None else defined, ranked
    kernel = form.build(ranked, params)
    if kernel is None:  # no grade above 0 on the scale: every query is undefined
        zeros = s.new_zeros(s.shape[0])
        return zeros + 0.0 * s.sum(-1), zeros.to(torch.float64), zeros.bool(), ranked
    # a registered measure of neither list: its kernel is checked (one read back of a [B, c+1, c+1] test)
    if (rule.by_thresholds and measure.info.name not in THRESHOLD_MEASURES
            and not bool(kernel_decomposes(kernel).all())):
        raise refuse_kernel(measure.name, measure.info.name, smoothing)
    values = rule.kernel_metric(s, m, doc_labels, kernel, sigma)
    best = pivot_sum(ideal_grades, ideal_valid, kernel)
    return values, best, kernel.defined, ranked


def soft_metric(
    scores: torch.Tensor,
    labels: ArrayLike,
    *,
    measure: str,
    sigma: float,
    g: ArrayLike | None = None,
    smoothing: Smoothing = "softrank",
    mask: torch.Tensor | None = None,
    grade_counts: ArrayLike | None = None,
    max_grade: int | None = None,
    validate: bool = True,
) -> torch.Tensor:
    r"""The smooth value of ``measure``, per query: SoftRank's by default, or another smoothing of the ranks.

    ``measure``: a measure string of the AP family (through its kernel: "gap", "xgap", "egap", "ap",
    "AP(rel=2)", "vG", "eRAP(p=[0,0.5,1])", ...) or of the discounted-gain family (SoftRank's expected
    discounts: "ndcg" is SoftNDCG, "nDCG@10", "P@5", "RBP(p=0.8)", ...).
    ``sigma`` is the smoothing's one scale: with "softrank" and "expected" the standard deviation of every
    document's score, so :math:`\pi_{mn} = \Phi((s_m - s_n)/(\sigma\sqrt 2))`; a temperature or a regularisation
    strength with the others (see ``sigma``). ``smoothing="softrank"``: the GAP paper's SoftGAP,
    :math:`\sum_n (K_{nn} + \sum_m \pi_{mn} K_{mn}) / (1 + \sum_m \pi_{mn})` (Robertson et al. 2010,
    sec. 5; a ratio of expectations). ``smoothing="expected"``: :math:`E[M]` exactly under the model
    (Poisson-binomial count above each pivot, Gauss-Legendre in x, a shared trapezoid grid in the
    pivot's score; computed in float64; cost O(T N^2 c) per query, T ~ 4 range/sigma + 64), for the AP
    family. The other smoothings replace the Gaussian model by soft ranks (see ``smoothing``; docs:
    Choosing a smooth loss); tied scores share the mean of the ranks they span. The discounted-gain family's
    gain is 2^l - 1 (the measure string's ``gain=linear`` for l). At tied scores every smoothing's gradient is
    symmetric: a permutation of the documents permutes the gradient, and two documents with one score and one
    grade get one gradient.
    Returns ``[B]`` (a scalar for a 1-D query) in the scores' dtype; 0 where the metric is undefined
    (no relevant document). Equal scores give :math:`\pi = 1/2`. ``max_grade`` and ``validate`` as in
    :func:`~gaprank.losses.lambdarank_loss`: unvalidated, "softrank", "approx", "approx_interpolated",
    "neuralsort" and "softsort" read nothing back from the device; "expected" still reads the scores' span (its
    grid depends on it), "neuralsort_sinkhorn" reads once a scaling (whether it has converged, as allRank does),
    and "fast_soft_rank" finds its blocks on the CPU.

    Parameters
    ----------
    scores : torch.Tensor
        Floating-point scores, ``[list]`` (one query) or ``[batch, list]``; the loss is
        differentiated with respect to them.
    labels : array_like or torch.Tensor
        The documents' relevance grades, integers 0..30, in the shape of ``scores``.
    measure : str
        A measure string of gaprank's registry ('gap', 'GAP(g=[0.2,0.8])', 'AP(rel=2)', 'nDCG@10',
        ...) whose form this loss can use; an unsuitable one is refused with the list of those that
        fit.
    sigma : float
        The smoothing's scale, in units of the scores; as it goes to 0 with distinct scores the
        value goes to the measure. "softrank" and "expected": the standard deviation of each score
        in SoftRank's Gaussian model (Taylor et al.'s sigma_s); "approx" and "approx_interpolated":
        the sigmoid's temperature (Rax's temperature, 1/alpha of allRank's approxNDCGLoss);
        "neuralsort", "neuralsort_sinkhorn" and "softsort": the softmax temperature of the relaxed
        permutation (allRank's temperature tau); "fast_soft_rank": the regularisation strength
        epsilon of the projection onto the permutahedron (torchsort's regularization_strength).
    g : array_like, optional
        GAP's user model g_1..g_c for gap, xgap and egap (non-negative, summing to 1), the same as
        ``g`` in the string (give one of the two); default uniform over grades 1..c.
    smoothing : str, default "softrank"
        How the ranks are smoothed, one of ``gaprank.losses.SMOOTHINGS`` (docs: Choosing a smooth
        loss). "softrank": SoftRank's ratio of expectations, the GAP paper's SoftGAP (Robertson et
        al. 2010, sec. 5); "expected": the expectation of the measure under the same Gaussian model
        (the AP family; float64); "approx": approximate ranks 1 + sum_m sigmoid((s_m - s_n)/sigma)
        with the discount at the soft rank, Qin, Liu and Li's ApproxNDCG (2010), as Rax, allRank and
        TF-Ranking compute it; "approx_interpolated": the same ranks with the discount interpolated
        between the integer ranks around them (gaprank's form: with a cutoff k, a slope from rank k
        to k + 1); "neuralsort" and "softsort": the relaxed sorting permutations of Grover et al.
        (2019) and Prillo and Eisenschlos (2020); "neuralsort_sinkhorn": NeuralSort's made doubly
        stochastic by Sinkhorn scaling, NeuralNDCG (Pobrotyn and Bialobrzeski 2021) as allRank
        computes it (at most 50 scalings, tolerance 1e-6; O(n^2) memory a scaling);
        "fast_soft_rank": the soft ranks of Blondel et al. (2020), by projection onto the
        permutahedron, O(n log n) time and O(n) memory. All but the first two take the AP family
        through the threshold identity (AP, GAP, xGAP, eGAP; vG and eRAP are refused) and the
        discounted-gain family at soft positions; none takes ERR, Q, RR, Rprec or Success (their
        value is not a sum over documents of a function of the document's rank).
    mask : torch.Tensor of bool, optional
        True marks a real document, False padding; padding gets exactly 0 gradient whatever its
        scores hold. Default: every position is real.
    grade_counts : array_like, optional
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
    >>> round(soft_metric(s, y, measure="gap", g=[0.5, 0.5], sigma=1e-4).item(), 6)   # -> GAP as sigma -> 0
    0.888889
    >>> round(soft_metric(s, y, measure="gap", g=[0.5, 0.5], sigma=1e-4, smoothing="expected").item(), 6)
    0.888889
    >>> round(soft_metric(s, y, measure="gap", g=[0.5, 0.5], sigma=1e-4, smoothing="fast_soft_rank").item(), 6)
    0.888889
    """
    smoothing = check_smoothing(smoothing)
    values, _, defined, ranked = _soft_values(scores, labels, measure, g, sigma, smoothing, mask, grade_counts,
                                              max_grade, validate)
    values = torch.where(defined, values, torch.zeros_like(values)).to(scores.dtype)
    return values[0] if ranked.spec.squeeze else values


def soft_metric_loss(
    scores: torch.Tensor,
    labels: ArrayLike,
    *,
    measure: str,
    g: ArrayLike | None = None,
    sigma: float = 1.0,
    smoothing: Smoothing = "softrank",
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
    See :func:`soft_metric` for ``measure``, ``sigma``, ``smoothing``, ``max_grade`` and ``validate``.

    Parameters
    ----------
    scores : torch.Tensor
        Floating-point scores, ``[list]`` (one query) or ``[batch, list]``; the loss is
        differentiated with respect to them.
    labels : array_like or torch.Tensor
        The documents' relevance grades, integers 0..30, in the shape of ``scores``.
    measure : str
        A measure string of gaprank's registry ('gap', 'GAP(g=[0.2,0.8])', 'AP(rel=2)', 'nDCG@10',
        ...) whose form this loss can use; an unsuitable one is refused with the list of those that
        fit.
    g : array_like, optional
        GAP's user model g_1..g_c for gap, xgap and egap (non-negative, summing to 1), the same as
        ``g`` in the string (give one of the two); default uniform over grades 1..c.
    sigma : float, default 1.0
        The smoothing's scale, in units of the scores; as it goes to 0 with distinct scores the
        value goes to the measure. "softrank" and "expected": the standard deviation of each score
        in SoftRank's Gaussian model (Taylor et al.'s sigma_s); "approx" and "approx_interpolated":
        the sigmoid's temperature (Rax's temperature, 1/alpha of allRank's approxNDCGLoss);
        "neuralsort", "neuralsort_sinkhorn" and "softsort": the softmax temperature of the relaxed
        permutation (allRank's temperature tau); "fast_soft_rank": the regularisation strength
        epsilon of the projection onto the permutahedron (torchsort's regularization_strength).
    smoothing : str, default "softrank"
        How the ranks are smoothed, one of ``gaprank.losses.SMOOTHINGS`` (docs: Choosing a smooth
        loss). "softrank": SoftRank's ratio of expectations, the GAP paper's SoftGAP (Robertson et
        al. 2010, sec. 5); "expected": the expectation of the measure under the same Gaussian model
        (the AP family; float64); "approx": approximate ranks 1 + sum_m sigmoid((s_m - s_n)/sigma)
        with the discount at the soft rank, Qin, Liu and Li's ApproxNDCG (2010), as Rax, allRank and
        TF-Ranking compute it; "approx_interpolated": the same ranks with the discount interpolated
        between the integer ranks around them (gaprank's form: with a cutoff k, a slope from rank k
        to k + 1); "neuralsort" and "softsort": the relaxed sorting permutations of Grover et al.
        (2019) and Prillo and Eisenschlos (2020); "neuralsort_sinkhorn": NeuralSort's made doubly
        stochastic by Sinkhorn scaling, NeuralNDCG (Pobrotyn and Bialobrzeski 2021) as allRank
        computes it (at most 50 scalings, tolerance 1e-6; O(n^2) memory a scaling);
        "fast_soft_rank": the soft ranks of Blondel et al. (2020), by projection onto the
        permutahedron, O(n log n) time and O(n) memory. All but the first two take the AP family
        through the threshold identity (AP, GAP, xGAP, eGAP; vG and eRAP are refused) and the
        discounted-gain family at soft positions; none takes ERR, Q, RR, Rprec or Success (their
        value is not a sum over documents of a function of the document's rank).
    mask : torch.Tensor of bool, optional
        True marks a real document, False padding; padding gets exactly 0 gradient whatever its
        scores hold. Default: every position is real.
    grade_counts : array_like, optional
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
    >>> loss = soft_metric_loss(scores, torch.tensor([[2, 1, 0]]), measure="gap", g=[0.5, 0.5])
    >>> loss.backward(); bool(scores.grad[0, 0] < 0)   # raising the grade-2 document lowers the loss
    True
    """
    smoothing = check_smoothing(smoothing)
    return _soft_metric_loss(scores, labels, measure, g, sigma, smoothing, mask, grade_counts, reduction, max_grade,
                             validate)


def _soft_metric_loss(scores, labels, measure, g, sigma, smoothing, mask, grade_counts, reduction, max_grade, validate,
                      buffers: RankLawBuffers | None = None):
    values, best, defined, ranked = _soft_values(scores, labels, measure, g, sigma, smoothing, mask, grade_counts,
                                                 max_grade, validate, buffers)
    keep = defined & ranked.rankable()
    # half precision: reduced in float32 too, only the loss itself in the scores' dtype
    dtype = torch.float32 if scores.dtype in HALF_PRECISION else scores.dtype
    regret = torch.where(keep, best.to(values.dtype) - values, torch.zeros_like(values)).to(dtype)
    return reduce_loss(regret, reduction, ranked.spec.squeeze).to(scores.dtype)


class _SoftMetricLoss(torch.nn.Module):
    measure = ""

    def __init__(self, g: ArrayLike | None = None, sigma: float = 1.0, smoothing: Smoothing = "softrank",
                 reduction: Literal["mean", "sum", "none"] = "mean", max_grade: int | None = None,
                 validate: bool = True) -> None:
        super().__init__()
        self.g, self.sigma, self.smoothing, self.reduction = g, sigma, check_smoothing(smoothing), reduction
        self.max_grade, self.validate = max_grade, validate
        # every subclass names its measure (SoftMetricLoss: the given one, "" or None included, refused here)
        check_loss_settings(smoothing_measure(self.measure, self.smoothing), g=g, sigma=sigma, reduction=reduction,
                            max_grade=max_grade, validate=validate)
        self._arrays = RankLawBuffers()  # working arrays of the rank laws (not state: copies start empty)

    def forward(self, scores: torch.Tensor, labels, mask: torch.Tensor | None = None) -> torch.Tensor:
        return _soft_metric_loss(scores, labels, self.measure, self.g, self.sigma, self.smoothing, mask, None, self.reduction,
                                 self.max_grade, self.validate, self._arrays)

    def extra_repr(self) -> str:
        return (f"g={self.g}, sigma={self.sigma}, smoothing={self.smoothing!r}, reduction={self.reduction!r}, "
                f"max_grade={self.max_grade}, validate={self.validate}")


class SoftMetricLoss(_SoftMetricLoss):
    """The module twin of :func:`soft_metric_loss`: ``M(ideal) - SoftM`` for any measure string with a smooth
    form, under any ``smoothing``; what :func:`gaprank.losses.build` returns for kind "soft".

    Parameters
    ----------
    measure : str
        A measure string with a smooth form ("gap", "nDCG@10", "AP(rel=2)", ...), as in :func:`soft_metric_loss`.
    g, sigma, smoothing, reduction, max_grade, validate
        As in :func:`soft_metric_loss`, used on every call.

    Examples
    --------
    >>> import torch
    >>> from gaprank.losses import SoftMetricLoss
    >>> loss = SoftMetricLoss("nDCG@10", sigma=0.5, smoothing="approx")
    >>> scores = torch.randn(4, 20, requires_grad=True)
    >>> loss(scores, torch.randint(0, 3, (4, 20))).backward()
    """

    def __init__(self, measure: str, g: ArrayLike | None = None, sigma: float = 1.0,
                 smoothing: Smoothing = "softrank", reduction: Literal["mean", "sum", "none"] = "mean",
                 max_grade: int | None = None, validate: bool = True) -> None:
        self.measure = measure  # before the settings are checked against it
        super().__init__(g, sigma, smoothing, reduction, max_grade, validate)

    def extra_repr(self) -> str:
        return f"measure={self.measure!r}, {super().extra_repr()}"
