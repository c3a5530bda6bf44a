r"""LambdaRank with |Delta M| weights and RankNet as PyTorch losses, on the pair engine
(:mod:`gaprank._engine.pairs`), which the LightGBM objective shares.

For a pair with label_i > label_j, :math:`\rho_{ij} = 1 / (1 + e^{\sigma (s_i - s_j)})` and

.. math::

    C = \sum_{l_i > l_j} |\Delta M_{ij}| \log\big(1 + e^{-\sigma (s_i - s_j)}\big), \qquad
    \frac{\partial C}{\partial s_i} = -\sum_j \lambda_{ij} + \sum_j \lambda_{ji}, \quad
    \lambda_{ij} = \sigma |\Delta M_{ij}| \rho_{ij}

(Burges, Ragno and Le, NIPS 2006; Robertson et al. 2010, sec. 5; docs: The maths, "LambdaRank and
LambdaMART"). RankNet is the same with :math:`|\Delta M| = 1` (Burges et al., ICML 2005).
"""

from __future__ import annotations

from typing import Literal

import numpy as np
import torch

from .._autograd import opaque_to_compile
from .._engine import compiled
from .._engine.backends import Backend, check_backend, compiled_plan, lambda_backend
from .._engine.batches import BatchPairs
from .._engine.factors import rank_for_measure
from .._engine.pairs import PairwiseTerms
from .._engine.slots import SlotLayout
from .._inputs import MAX_GRADE, check_positive_int, check_sigma
from .._typing import ArrayLike
from ..metrics import objective_measure, rank_lists
from ._common import (
    as_batch,
    check_loss_settings,
    check_scores_tensor,
    rankable,
    reduce_loss,
    refuse_function_transforms,
    with_gradient,
)


def _compiled_terms(s: torch.Tensor, m: torch.Tensor, ranked, measure, params, sigma: float, k: int | None
                    ) -> tuple[torch.Tensor, torch.Tensor]:
    """``(cost [B], grad [B, N])`` from the compiled backend. The kernel sorts each list itself, so ``ranked``
    need not be sorted: only its grade counts are read. A scale on which no pair changes the measure gives 0
    and 0."""
    batch, width = m.shape
    # a discount is per rank, the same in every list: one list of the batch's width gives them all
    one_list = SlotLayout.single(torch.tensor([width]), width)
    flat_mask = m.reshape(-1).numpy()
    plan = compiled_plan(measure, [ranked], params, one_list, sizes=m.sum(1).numpy(), rows=np.flatnonzero(flat_mask),
                         labels=ranked.document_grades().reshape(-1).numpy()[flat_mask], sigma=sigma, truncation=k,
                         norm=False, ideal_cutoff=k, warm_start=False)
    if plan is None:
        return s.new_zeros(batch), s.new_zeros(batch, width)
    scores = s.detach().to(torch.float64).reshape(-1).numpy()
    grad, cost = np.zeros(batch * width), np.zeros(batch)
    compiled.lambdamart_gradients(plan, scores, grad, None, cost)
    return torch.from_numpy(cost).to(s.dtype), torch.from_numpy(grad).reshape(batch, width).to(s.dtype)


def scatter_to_documents(rank_space: torch.Tensor, order: torch.Tensor) -> torch.Tensor:
    """``[B, N]`` rank-space values back to document order."""
    return torch.zeros_like(rank_space).scatter_(1, order, rank_space)


def _rankable_only(ranked, cost: torch.Tensor, grad: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The per-query ``cost`` [B] and its gradient ``grad`` [B, N], 0 and 0 for queries that cannot be ranked."""
    keep = rankable(ranked).to(cost.dtype)
    return cost * keep, grad * keep[:, None]


def _document_terms(ranked, terms: PairwiseTerms) -> tuple[torch.Tensor, torch.Tensor]:
    """``(cost [B], grad [B, N])`` in document order, 0 and 0 for queries that cannot be ranked."""
    return _rankable_only(ranked, terms.cost, scatter_to_documents(terms.grad, ranked.order))


def _attach(scores, mask, cost: torch.Tensor, grad: torch.Tensor, reduction: str):
    """The per-query ``cost`` [B] with its gradient ``grad`` [B, N] (document order) attached to the scores, and
    reduced."""
    s, _ = as_batch(scores, mask)
    return reduce_loss(with_gradient(s, cost, grad), reduction, scores.ndim == 1)


# the functions' holder: keeping nothing, it is never written, so every call and thread can share it
_BUILDS_ITS_OWN = BatchPairs(kept=0)


@opaque_to_compile  # under torch.compile one opaque call: the engines keep their buffers as in eager
def _lambda_terms(step, engines: BatchPairs, settings: tuple, detached: torch.Tensor, labels, mask,
                  replayable: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """``step(detached, labels, mask)``: a batch's ``(cost [B], grad [B, N])``, no autograd graph. A step that
    reads nothing back from the device (``replayable``) goes through ``engines``, which on a GPU replay its
    kernels as one CUDA graph once its shape and ``settings`` come back; any other runs here."""
    if replayable:
        cost, grad = engines.replayed(settings, step, detached, labels, mask)
        return cost, grad
    return step(detached, labels, mask)


def _attach_lambdas(scores, labels, mask, engines: BatchPairs, settings: tuple, lambdas, reduction: str, *,
                    replayable: bool):
    """``lambdas(scores, labels, mask)`` (detached scores, :func:`_lambda_terms`) attached to the scores and
    reduced. Under torch.compile no step is replayable: no CUDA graph of ours inside the caller's compiled code
    (read here, in traced code: inside the opaque call nothing is compiling)."""
    replayable = replayable and not torch.compiler.is_compiling()
    cost, grad = _lambda_terms(lambdas, engines, settings, scores.detach(), labels, mask, replayable)
    return _attach(scores, mask, cost, grad, reduction)


def lambdarank_loss(
    scores: torch.Tensor,
    labels: ArrayLike,
    *,
    measure: str = "gap",
    g: ArrayLike | None = None,
    sigma: float = 1.0,
    k: int | None = None,
    mask: torch.Tensor | None = None,
    grade_counts: ArrayLike | None = None,
    max_grade: int | None = None,
    reduction: Literal["mean", "sum", "none"] = "mean",
    validate: bool = True,
    backend: Backend = "auto",
) -> torch.Tensor:
    r"""LambdaRank loss whose gradient w.r.t. the scores is the lambda sums for ``measure``.

    .. math::

        L = \sum_{l_i > l_j} |\Delta M_{ij}|\, \log\big(1 + e^{-\sigma (s_i - s_j)}\big), \qquad
        -\frac{\partial L}{\partial s_i} = \sum_{j: l_i > l_j} \lambda_{ij} - \sum_{j: l_j > l_i} \lambda_{ji},
        \quad \lambda_{ij} = \frac{\sigma |\Delta M_{ij}|}{1 + e^{\sigma (s_i - s_j)}}

    summed per query (then reduced over queries by ``reduction``). :math:`\Delta M_{ij}` is the change
    of ``measure`` when documents i and j swap places in the ranking the scores induce (held fixed, as in
    LambdaRank). ``measure`` is any measure string with swap deltas: "gap", "eGAP(g=[0.2,0.8])", "AP(rel=2)",
    "nDCG@10", "P@5", "RBP(p=0.8)", "ERR", "Q", "vG", "eRAP(p=[0,0.5,1])", ... (an ``@k`` gives the
    deltas of the measure at cutoff k; docs: The maths, swap deltas in O(c) per pair). Ties in the
    scores are ranked in input order for Delta M and give :math:`\rho = 1/2`. ``k``: only pairs whose
    higher-ranked document is in the current top k (LightGBM's truncation rule); for a measure normalised
    by the ideal ranking without a cutoff of its own ("ndcg"), as in LightGBM, the ideal is then taken
    at depth k. Queries without two different labels give 0 loss
    and 0 gradient; padding gets exactly 0 gradient. Robertson et al. (2010), sec. 5; Burges et al. (2006).

    The grade scale 0..c is fixed by ``measure``'s settings (``g``, ``p``, ...), else by ``max_grade``, else it
    is the largest label of the batch (which then also sets a default uniform ``g``): pass ``max_grade`` so
    that every batch is scored on the data set's scale. ``validate=False`` is for trusted inputs on a GPU:
    nothing is read back from the device, so the call never waits for it (the checks of finite scores and of
    integer labels within the scale are skipped, and the scale must be fixed: ``max_grade`` or a setting). With
    ``grade_counts`` a measure normalised by its ideal ranking (nDCG, vG, Q, ...) still reads that ranking's
    length back, since the counts, unlike the lists, do not bound it.

    Parameters
    ----------
    scores : torch.Tensor
        Floating-point scores, ``[list]`` (one query) or ``[batch, list]``; the loss is
        differentiated with respect to them.
    labels : array-like or torch.Tensor
        The documents' relevance grades, integers 0..30, in the shape of ``scores``.
    measure : str, default "gap"
        A measure string of gaprank's registry ('gap', 'GAP(g=[0.2,0.8])', 'AP(rel=2)', 'nDCG@10', ...)
        whose form this loss can use; an unsuitable one is refused with the list of those that fit.
    g : array-like, optional
        GAP's user model g_1..g_c for gap, xgap and egap (non-negative, summing to 1), the same as
        ``g`` in the string (give one of the two); default uniform over grades 1..c.
    sigma : float, default 1.0
        The logistic's steepness: rho_ij = 1 / (1 + exp(sigma (s_i - s_j))).
    k : int, optional
        Only pairs whose upper document is in the current top k (LightGBM's truncation rule);
        default every pair.
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
    backend : {"auto", "compiled", "torch"}, default "auto"
        Which engine computes the lambdas: "compiled" (the numba kernel, float64, on the CPU, for the AP family
        and the discounted-gain measures), "torch" (the tensor engine: any measure with swap deltas, any
        device), or "auto": the compiled kernel wherever it serves, else the tensor engine. "compiled" where it
        cannot serve is refused.

    Returns
    -------
    value : torch.Tensor
        The loss to minimise: a scalar for reduction "mean" or "sum", ``[batch]`` for "none" (a
        scalar for one 1-D query); 0 at a perfect, confident ranking.

    Examples
    --------
    >>> import torch
    >>> from gaprank.losses import lambdarank_loss
    >>> scores = torch.tensor([0.0, 1.0, 2.0], requires_grad=True)
    >>> lambdarank_loss(scores, torch.tensor([2, 1, 0]), measure="gap", g=[0.5, 0.5]).backward()
    >>> bool(scores.grad[0] < 0 < scores.grad[2])   # push the grade-2 document up, the grade-0 down
    True
    """
    return _lambdarank(scores, labels, _BUILDS_ITS_OWN, measure=measure, g=g, sigma=sigma, k=k, mask=mask,
                       grade_counts=grade_counts, max_grade=max_grade, reduction=reduction, validate=validate,
                       backend=backend)


def _lambdarank(scores: torch.Tensor, labels, engines: BatchPairs, *, measure: str, g, sigma: float, k: int | None,
                mask: torch.Tensor | None, grade_counts, max_grade: int | None, reduction: str,
                validate: bool, backend: str) -> torch.Tensor:
    """:func:`lambdarank_loss` on the pair engines that ``engines`` keeps (for the torch backend)."""
    check_scores_tensor(scores)
    refuse_function_transforms(scores, "lambdarank_loss")
    sigma = check_sigma(sigma)
    k = check_positive_int(k)
    parsed = objective_measure(measure).with_params(g=g)
    on_kernel = lambda_backend(backend, parsed, scores.device) == "compiled"

    def lambdas(detached: torch.Tensor, labels, mask: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
        # the kernel sorts each list itself: its lists are left unsorted
        ranked, params = rank_for_measure(detached, labels, parsed, mask=mask, grade_counts=grade_counts,
                                          max_grade=max_grade, by_score=not on_kernel, validate=validate)
        s, m = as_batch(detached, mask)
        if on_kernel:
            return _rankable_only(ranked, *_compiled_terms(s, m, ranked, parsed, params, sigma, k))
        terms = engines.terms(parsed, ranked, params, s.gather(1, ranked.order), sigma=sigma, truncation=k)
        return _document_terms(ranked, terms)

    settings = ("lambdarank", parsed.name, parsed.kwargs, sigma, k, max_grade)
    # the kernel runs on the CPU only, where nothing is graphed
    return _attach_lambdas(scores, labels, mask, engines, settings, lambdas, reduction,
                           replayable=not on_kernel and not validate and grade_counts is None)


def ranknet_loss(
    scores: torch.Tensor,
    labels: ArrayLike,
    *,
    sigma: float = 1.0,
    mask: torch.Tensor | None = None,
    reduction: Literal["mean", "sum", "none"] = "mean",
    validate: bool = True,
    backend: Backend = "auto",
) -> torch.Tensor:
    r"""RankNet: :math:`L = \sum_{l_i > l_j} \log(1 + e^{-\sigma (s_i - s_j)})` per query
    (Burges et al., ICML 2005), computed pair-block by pair-block with a direct gradient.
    ``validate=False``: trusted input, nothing read back from the device (as in :func:`lambdarank_loss`; RankNet
    needs no grade scale, so none is asked for).

    Parameters
    ----------
    scores : torch.Tensor
        Floating-point scores, ``[list]`` (one query) or ``[batch, list]``; the loss is
        differentiated with respect to them.
    labels : array-like or torch.Tensor
        The documents' relevance grades, integers 0..30, in the shape of ``scores``.
    sigma : float, default 1.0
        The logistic's steepness: rho_ij = 1 / (1 + exp(sigma (s_i - s_j))).
    mask : torch.Tensor of bool, optional
        True marks a real document, False padding; padding gets exactly 0 gradient whatever its
        scores hold. Default: every position is real.
    reduction : {"mean", "sum", "none"}, default "mean"
        "mean" over all the batch's queries (those without two different labels count as 0), "sum",
        or "none": one value per query.
    validate : bool, default True
        Check the inputs (finite scores, integer labels). False is for trusted inputs on a GPU: nothing is
        read back from the device (RankNet needs no grade scale).
    backend : {"auto", "compiled", "torch"}, default "auto"
        RankNet runs on the tensor engine ("auto" and "torch" alike); "compiled" is refused in one line (the
        compiled kernel weighs pairs by a measure's swap deltas).

    Returns
    -------
    value : torch.Tensor
        The loss to minimise: a scalar for reduction "mean" or "sum", ``[batch]`` for "none" (a
        scalar for one 1-D query); 0 at a perfect, confident ranking.

    Examples
    --------
    >>> import torch
    >>> from gaprank.losses import ranknet_loss
    >>> round(ranknet_loss(torch.tensor([0.0, 0.0]), torch.tensor([1, 0])).item(), 4)   # log 2
    0.6931
    """
    return _ranknet(scores, labels, _BUILDS_ITS_OWN, sigma=sigma, mask=mask, reduction=reduction,
                    validate=validate, backend=backend)


def _ranknet(scores: torch.Tensor, labels, engines: BatchPairs, *, sigma: float, mask: torch.Tensor | None,
             reduction: str, validate: bool, backend: str) -> torch.Tensor:
    check_scores_tensor(scores)
    sigma = check_sigma(sigma)
    lambda_backend(backend, None, scores.device)  # RankNet runs on the torch backend ("compiled" is refused)

    def lambdas(detached: torch.Tensor, labels, mask: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
        # unvalidated, the labels are counted on the widest scale: RankNet's value does not depend on it
        ranked = rank_lists(detached, labels, mask=mask, validate=validate,
                            num_grades=None if validate else MAX_GRADE, scale_source="RankNet")
        s, _ = as_batch(detached, mask)
        return _document_terms(ranked, engines.terms(None, ranked, {}, s.gather(1, ranked.order), sigma=sigma))

    return _attach_lambdas(scores, labels, mask, engines, ("ranknet", sigma), lambdas, reduction,
                           replayable=not validate)


class LambdaRankLoss(torch.nn.Module):
    """LambdaRank with |Delta M| swap weights; see :func:`lambdarank_loss` (value to minimise).

    The module keeps its layouts, factor plans and engine buffers per batch shape between calls (working
    memory, not state: a copy starts empty); its numbers are :func:`lambdarank_loss`'s. On a GPU with
    ``validate=False`` it pads each batch (as masked documents) to a width on a coarse grid, captures the step in
    a CUDA graph on a padded shape's second call and replays it from the third on: the same numbers up to
    rounding, one launch (docs: Losses, "CUDA graphs").

    Parameters
    ----------
    measure, g, sigma, k, reduction, max_grade, validate, backend
        As in :func:`lambdarank_loss`, used on every call.

    Examples
    --------
    >>> import torch
    >>> from gaprank.losses import LambdaRankLoss
    >>> loss = LambdaRankLoss(measure="egap", g=[0.5, 0.5], k=10)
    >>> scores = torch.randn(4, 20, requires_grad=True)
    >>> loss(scores, torch.randint(0, 3, (4, 20))).backward()
    """

    def __init__(self, measure: str = "gap", g: ArrayLike | None = None, sigma: float = 1.0, k: int | None = None,
                 reduction: Literal["mean", "sum", "none"] = "mean", max_grade: int | None = None,
                 validate: bool = True, backend: Backend = "auto") -> None:
        super().__init__()
        self.measure, self.g, self.sigma, self.k, self.reduction = measure, g, sigma, k, reduction
        self.max_grade, self.validate, self.backend = max_grade, validate, check_backend(backend)
        check_loss_settings(objective_measure(measure), g=g, sigma=sigma, k=k, reduction=reduction, max_grade=max_grade,
                            validate=validate, backend=backend)
        self._engines = BatchPairs()  # working buffers for the last batch shapes (not state: copies start empty)

    def forward(self, scores: torch.Tensor, labels: ArrayLike, mask: torch.Tensor | None = None) -> torch.Tensor:
        return _lambdarank(scores, labels, self._engines, measure=self.measure, g=self.g, sigma=self.sigma, k=self.k,
                           mask=mask, grade_counts=None, max_grade=self.max_grade, reduction=self.reduction,
                           validate=self.validate, backend=self.backend)

    def extra_repr(self) -> str:
        return (f"measure={self.measure!r}, g={self.g}, sigma={self.sigma}, k={self.k}, reduction={self.reduction!r}, "
                f"max_grade={self.max_grade}, validate={self.validate}, backend={self.backend!r}")


class RankNetLoss(torch.nn.Module):
    """RankNet's pairwise logistic loss; see :func:`ranknet_loss`.

    Like :class:`LambdaRankLoss`, the module keeps its buffers per batch shape, and on a GPU with
    ``validate=False`` replays its step as one CUDA graph.

    Parameters
    ----------
    sigma, reduction, validate, backend
        As in :func:`ranknet_loss`, used on every call.
    """

    def __init__(self, sigma: float = 1.0, reduction: Literal["mean", "sum", "none"] = "mean", validate: bool = True,
                 backend: Backend = "auto") -> None:
        super().__init__()
        self.sigma, self.reduction, self.validate = sigma, reduction, validate
        self.backend = check_backend(backend)
        check_loss_settings(None, sigma=sigma, reduction=reduction, validate=validate, backend=backend)
        self._engines = BatchPairs()  # working buffers for the last batch shapes (not state: copies start empty)

    def forward(self, scores: torch.Tensor, labels: ArrayLike, mask: torch.Tensor | None = None) -> torch.Tensor:
        return _ranknet(scores, labels, self._engines, sigma=self.sigma, mask=mask, reduction=self.reduction,
                        validate=self.validate, backend=self.backend)

    def extra_repr(self) -> str:
        return f"sigma={self.sigma}, reduction={self.reduction!r}, validate={self.validate}, backend={self.backend!r}"
