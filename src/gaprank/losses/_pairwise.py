r"""LambdaRank with |Delta M| weights and RankNet as PyTorch losses: check the inputs, compute the lambdas
(:func:`gaprank._engine.lambdas.lambdas`, the engine the LambdaMART objectives share), attach them as the scores'
gradient, reduce.

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

import torch

from .._engine.backends import Backend, check_backend, lambda_backend
from .._engine.batches import BatchPairs
from .._engine.graphs import CudaGraphs
from .._engine.lambdas import LambdaSettings, lambdas
from .._inputs import as_batch, check_positive_int, check_sigma, per_level
from .._typing import ArrayLike
from ..metrics import objective_measure
from ._common import check_loss_settings, check_scores_tensor, reduce_loss, refuse_function_transforms, with_gradient


def _lambdarank_settings(scores: torch.Tensor, measure: str, *, g, sigma: float, truncation_level: int | None,
                         max_grade: int | None, grade_counts, validate: bool) -> LambdaSettings:
    """LambdaRank's inputs checked (all but the batch's), as its settings."""
    check_scores_tensor(scores)
    refuse_function_transforms(scores, "lambdarank_loss")
    return LambdaSettings(objective_measure(measure).with_params(g=g), sigma=check_sigma(sigma),
                          truncation=check_positive_int(truncation_level, "truncation_level"), max_grade=max_grade,
                          grade_counts=grade_counts, validate=validate)


def _ranknet_settings(scores: torch.Tensor, *, sigma: float, validate: bool) -> LambdaSettings:
    check_scores_tensor(scores)
    refuse_function_transforms(scores, "ranknet_loss")
    return LambdaSettings(None, sigma=check_sigma(sigma), validate=validate)


def _attached(scores: torch.Tensor, mask: torch.Tensor | None, cost: torch.Tensor, gradient: torch.Tensor,
              reduction: str) -> torch.Tensor:
    """Each query's ``cost`` [B] with its ``gradient`` [B, N] (document order) attached to the scores, reduced."""
    s, _ = as_batch(scores, mask)
    return reduce_loss(with_gradient(s, cost, gradient), reduction, scores.ndim == 1)


def lambdarank_loss(
    scores: torch.Tensor,
    labels: ArrayLike,
    *,
    measure: str = "gap",
    g: ArrayLike | None = None,
    sigma: float = 1.0,
    truncation_level: int | None = None,
    mask: torch.Tensor | None = None,
    weights: ArrayLike | None = None,
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
    scores are ranked in input order for Delta M and give :math:`\rho = 1/2`. ``truncation_level`` k: only pairs
    whose higher-ranked document is in the current top k (LightGBM's truncation rule, as in the LambdaMART
    objectives); for a measure normalised by the ideal ranking without a cutoff of its own ("ndcg"), as in
    LightGBM, the ideal is then taken at depth k. Queries without two different labels give 0 loss
    and 0 gradient; padding gets exactly 0 gradient. Robertson et al. (2010), sec. 5; Burges et al. (2006).

    The grade scale 0..c is fixed by ``measure``'s settings (``g``, ``p``, ...), else by ``max_grade``, else it
    is the largest label of the batch (which then also sets a default uniform ``g``): pass ``max_grade`` so
    that every batch is scored on the data set's scale. ``validate=False`` is for trusted inputs on a GPU:
    nothing is read back from the device, so the call never waits for it (the checks of finite scores and of
    integer labels within the scale are skipped, and the scale must be fixed: ``max_grade`` or a setting). With
    ``grade_counts`` a measure normalised by its ideal ranking (nDCG, vG, Q, ...) still reads that ranking's
    length back, since the counts, unlike the lists, do not bound it. With ``weights``, :math:`\Delta M` is the
    weighted measure's (the metrics' ``weights=``: with w = 1/propensity, the inverse-propensity estimate of the
    measure from clicks): every pair whose swap changes the weighted measure counts, equal labels too, and its
    better document is the one whose place above the other gives the higher value.

    Parameters
    ----------
    scores : torch.Tensor
        Floating-point scores, ``[list]`` (one query) or ``[batch, list]``; the loss is
        differentiated with respect to them.
    labels : array_like or torch.Tensor
        The documents' relevance grades, integers 0..30, in the shape of ``scores``.
    measure : str, default "gap"
        A measure string of gaprank's registry ('gap', 'GAP(g=[0.2,0.8])', 'AP(rel=2)', 'nDCG@10',
        ...) whose form this loss can use; an unsuitable one is refused with the list of those that
        fit.
    g : array_like, optional
        GAP's user model g_1..g_c for gap, xgap and egap (non-negative, summing to 1), the same as
        ``g`` in the string (give one of the two); default uniform over grades 1..c.
    sigma : float, default 1.0
        The logistic's steepness: rho_ij = 1 / (1 + exp(sigma (s_i - s_j))).
    truncation_level : int, optional
        Only pairs whose upper document is in the current top k (LightGBM's truncation rule);
        default every pair.
    mask : torch.Tensor of bool, optional
        True marks a real document, False padding; padding gets exactly 0 gradient whatever its
        scores hold. Default: every position is real.
    weights : array_like or torch.Tensor, optional
        Per document, >= 0, in the shape of ``scores`` (or with a last axis of c: per document and
        level 1..c): the swap deltas are those of the weighted measure, a document counting w times
        at its grade (the metrics' ``weights=``; with w = 1/propensity, the inverse-propensity
        estimate from clicks; docs: Simulating clicks). Weights per level run on the torch backend.
        Not taken by ERR, Q, RR, Rprec, Success or vG. Default: every document weighs 1.
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
    backend : {"auto", "compiled", "torch"}, default "auto"
        Which engine computes the lambdas: "compiled" (the numba kernel, float64, on the CPU, for
        the AP family and the discounted-gain measures), "torch" (the tensor engine: any measure
        with swap deltas, any device), or "auto": the compiled kernel wherever it serves, else the
        tensor engine. "compiled" where it cannot serve is refused.

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
    settings = _lambdarank_settings(scores, measure, g=g, sigma=sigma, truncation_level=truncation_level,
                                    max_grade=max_grade,
                                    grade_counts=grade_counts, validate=validate)
    backend = lambda_backend(backend, settings.measure, scores.device, level_weights=per_level(weights, scores.ndim))
    cost, gradient = lambdas(scores, labels, mask, settings, backend, weights=weights)
    return _attached(scores, mask, cost, gradient, reduction)


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
    labels : array_like or torch.Tensor
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
        Check the inputs (finite scores, integer labels). False is for trusted inputs on a GPU:
        nothing is read back from the device (RankNet needs no grade scale).
    backend : {"auto", "compiled", "torch"}, default "auto"
        RankNet runs on the tensor engine ("auto" and "torch" alike); "compiled" is refused in one
        line (the compiled kernel weighs pairs by a measure's swap deltas).

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
    settings = _ranknet_settings(scores, sigma=sigma, validate=validate)
    cost, gradient = lambdas(scores, labels, mask, settings, lambda_backend(backend, None, scores.device))
    return _attached(scores, mask, cost, gradient, reduction)


class _PairLoss(torch.nn.Module):
    """What LambdaRankLoss and RankNetLoss share: the pair engine's buffers per batch shape, and on a GPU the CUDA
    graphs that replay a step reading nothing back from the device (working memory, not state: copies start
    empty)."""

    def __init__(self) -> None:
        super().__init__()
        self._pairs = BatchPairs()
        self._graphs = CudaGraphs()

    def _attached_lambdas(self, scores: torch.Tensor, labels, mask: torch.Tensor | None, settings: LambdaSettings,
                          backend: str, reduction: str, weights: ArrayLike | None = None) -> torch.Tensor:
        detached = scores.detach()
        replayable = settings.replayable and weights is None
        if backend == "torch" and self._graphs.serve(detached, labels, mask, replayable):
            def step(s, y, m, buffers):
                return lambdas(s, y, m, settings, "torch", buffers)

            cost, gradient = self._graphs(step, settings.key(), detached, labels, mask)
        else:
            cost, gradient = lambdas(detached, labels, mask, settings, backend, self._pairs, weights)
        return _attached(scores, mask, cost, gradient, reduction)


class LambdaRankLoss(_PairLoss):
    """LambdaRank with |Delta M| swap weights; see :func:`lambdarank_loss` (value to minimise).

    The module keeps its layouts, factor plans and engine buffers per batch shape between calls (working
    memory, not state: a copy starts empty); its numbers are :func:`lambdarank_loss`'s. On a GPU with
    ``validate=False`` it pads each batch (as masked documents) to a width on a coarse grid, captures the step in
    a CUDA graph on a padded shape's second call and replays it from the third on: the same numbers up to
    rounding, one launch (docs: Losses, "CUDA graphs").

    Parameters
    ----------
    measure, g, sigma, truncation_level, reduction, max_grade, validate, backend
        As in :func:`lambdarank_loss`, used on every call; ``forward(scores, labels, mask=None, weights=None)``
        takes the batch (``weights``: per document, as in :func:`lambdarank_loss`).

    Examples
    --------
    >>> import torch
    >>> from gaprank.losses import LambdaRankLoss
    >>> loss = LambdaRankLoss(measure="egap", g=[0.5, 0.5], truncation_level=10)
    >>> scores = torch.randn(4, 20, requires_grad=True)
    >>> loss(scores, torch.randint(0, 3, (4, 20))).backward()
    """

    def __init__(self, measure: str = "gap", g: ArrayLike | None = None, sigma: float = 1.0,
                 truncation_level: int | None = None,
                 reduction: Literal["mean", "sum", "none"] = "mean", max_grade: int | None = None,
                 validate: bool = True, backend: Backend = "auto") -> None:
        super().__init__()
        self.measure, self.g, self.sigma, self.reduction = measure, g, sigma, reduction
        self.truncation_level = truncation_level
        self.max_grade, self.validate, self.backend = max_grade, validate, check_backend(backend)
        check_loss_settings(objective_measure(measure), g=g, sigma=sigma, truncation_level=truncation_level,
                            reduction=reduction, max_grade=max_grade,
                            validate=validate, backend=backend)

    def forward(self, scores: torch.Tensor, labels: ArrayLike, mask: torch.Tensor | None = None,
                weights: ArrayLike | None = None) -> torch.Tensor:
        settings = _lambdarank_settings(scores, self.measure, g=self.g, sigma=self.sigma,
                                        truncation_level=self.truncation_level,
                                        max_grade=self.max_grade, grade_counts=None, validate=self.validate)
        backend = lambda_backend(self.backend, settings.measure, scores.device,
                                 level_weights=per_level(weights, scores.ndim))
        return self._attached_lambdas(scores, labels, mask, settings, backend, self.reduction, weights)

    def extra_repr(self) -> str:
        return (f"measure={self.measure!r}, g={self.g}, sigma={self.sigma}, truncation_level={self.truncation_level}, "
                f"reduction={self.reduction!r}, "
                f"max_grade={self.max_grade}, validate={self.validate}, backend={self.backend!r}")


class RankNetLoss(_PairLoss):
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

    def forward(self, scores: torch.Tensor, labels: ArrayLike, mask: torch.Tensor | None = None) -> torch.Tensor:
        settings = _ranknet_settings(scores, sigma=self.sigma, validate=self.validate)
        backend = lambda_backend(self.backend, None, scores.device)
        return self._attached_lambdas(scores, labels, mask, settings, backend, self.reduction)

    def extra_repr(self) -> str:
        return f"sigma={self.sigma}, reduction={self.reduction!r}, validate={self.validate}, backend={self.backend!r}"
