r"""Pairwise logistic objectives: LambdaRank with |Delta M| weights, and RankNet.

For a pair with label_i > label_j, :math:`\rho_{ij} = 1 / (1 + e^{\sigma (s_i - s_j)})` and

.. math::

    C = \sum_{l_i > l_j} |\Delta M_{ij}| \log\big(1 + e^{-\sigma (s_i - s_j)}\big), \qquad
    \frac{\partial C}{\partial s_i} = -\sum_j \lambda_{ij} + \sum_j \lambda_{ji}, \quad
    \lambda_{ij} = \sigma |\Delta M_{ij}| \rho_{ij}

(Burges, Ragno and Le, NIPS 2006; Robertson et al. 2010, sec. 5; FORMULAS.md "LambdaRank"). RankNet is
the same with :math:`|\Delta M| = 1` (Burges et al., ICML 2005). :math:`\Delta M` is taken on the
ranking the current scores induce and held fixed, so the gradient is the lambda sums; it is computed
directly (no autograd graph over pairs) from the swap-delta factors, a block of ranks at a time.

This module is the one implementation of the math that the PyTorch losses and the LightGBM objective
(:mod:`gaprank.lightgbm`) share.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from .._inputs import check_positive_int, check_sigma
from ..metrics._ranking import rank_lists
from ..metrics._swap import PairFactors, pair_factors, rank_for_metric
from ._common import as_batch, check_scores_tensor, rankable, reduce_loss, with_gradient

# Elements of one [B, rows, N] block of pairs; bounds the working memory of long lists.
PAIR_BLOCK_ELEMENTS = 1 << 22
# lambdarank_norm's score-distance offset: LightGBM writes it as the float literal 0.01f.
NORM_OFFSET = float(np.float32(0.01))


@dataclass
class PairwiseTerms:
    """Per-query cost and its first and second derivatives w.r.t. each score (rank space)."""

    cost: torch.Tensor  # [B]
    grad: torch.Tensor  # [B, N]
    hess: torch.Tensor | None  # [B, N]


def pairwise_logistic(
    ranked_scores: torch.Tensor,
    grades: torch.Tensor,
    valid: torch.Tensor,
    factors: PairFactors | None,
    *,
    sigma: float,
    truncation: int | None = None,
    norm: bool = False,
    with_hessian: bool = False,
    with_cost: bool = True,
    block_elements: int = PAIR_BLOCK_ELEMENTS,
) -> PairwiseTerms:
    r"""Cost, gradient (and LightGBM's hessian) of the |Delta M|-weighted pairwise logistic cost.

    Everything is in rank space: ``ranked_scores`` ``[B, N]`` sorted descending (padding last).
    ``factors`` None means unit weights (RankNet). ``truncation`` k keeps the pairs whose upper
    document is in the top k (LightGBM's ``lambdarank_truncation_level`` rule). ``norm`` is LightGBM's
    ``lambdarank_norm``: |Delta M| is divided by ``0.01 + |s_i - s_j|`` (when the query's scores are
    not all equal) and the query's gradients and hessians are scaled by ``log2(1 + S) / S``,
    S = the sum of its lambdas counted on both documents. The hessian is
    :math:`\sigma^2 |\Delta M| \rho (1 - \rho)` on both documents of each pair. ``with_cost=False``
    skips the cost (returned as zeros) when only the derivatives are wanted.
    """
    batch, size = ranked_scores.shape
    dtype, device = ranked_scores.dtype, ranked_scores.device
    valid_f = valid.to(dtype)
    # Padding takes the query's lowest score, so that s_upper - s_lower >= 0 on every kept pair and
    # whatever the padding held never reaches a number.
    lowest = ranked_scores.detach().masked_fill(~valid, math.inf).min(-1, keepdim=True).values
    s = torch.where(valid, ranked_scores.detach(), torch.where(torch.isfinite(lowest), lowest, 0.0))
    grades_f = grades.to(dtype)
    cost = torch.zeros(batch, dtype=dtype, device=device)
    grad = torch.zeros(batch, size, dtype=dtype, device=device)
    hess = torch.zeros(batch, size, dtype=dtype, device=device) if with_hessian else None
    lambda_total = torch.zeros(batch, dtype=dtype, device=device)
    if factors is not None:  # zero factors at padding: every pair that touches padding weighs 0
        left = torch.where(valid[..., None], factors.left, 0.0).to(dtype)
        right_t = torch.where(valid[..., None], factors.right, 0.0).to(dtype).transpose(1, 2)
    if norm:  # LightGBM divides by 0.01 + |s_i - s_j| only when the query's scores are not all equal
        spread = s.max(-1).values != s.min(-1).values
        offset = torch.where(spread, NORM_OFFSET, 1.0).to(dtype)[:, None, None]
    top = size if truncation is None else min(truncation, size)
    rows = max(1, block_elements // max(1, batch * size))
    cols = torch.arange(size, device=device)
    # Each block is one dense [B, rows, N] step over upper ranks start..stop-1; in-place arithmetic
    # keeps it to a few temporaries (boolean masks and torch.where are slow on CPU, so masks are 0/1).
    for start in range(0, top, rows):
        stop = min(top, start + rows)
        upper = (cols[None, :] > torch.arange(start, stop, device=device)[:, None]).to(dtype)  # [rows, N]
        # +1 / -1: the upper / lower document has the higher label; 0: equal labels or not a pair
        sign = (grades_f[:, start:stop, None] - grades_f[:, None, :]).clamp_(-1.0, 1.0).mul_(upper)
        if factors is None:
            weight = sign.abs().mul_(valid_f[:, start:stop, None]).mul_(valid_f[:, None, :])
        else:
            weight = torch.bmm(left[:, start:stop], right_t).mul_(sign).abs_()  # |dM| on pairs, 0 elsewhere
        diff = s[:, start:stop, None] - s[:, None, :]  # >= 0 on kept pairs: ranks are sorted
        if norm:
            weight.div_(diff.abs().add_(offset))
        z = diff.mul_(sign).mul_(sigma)  # sigma (s_better - s_worse)
        if with_cost:
            cost += (weight * torch.nn.functional.softplus(-z)).sum((1, 2))
        rho = z.neg_().sigmoid_()  # 1 / (1 + exp(sigma (s_better - s_worse)))
        lam = weight.mul_(rho).mul_(sigma)
        lambda_total += 2.0 * lam.sum((1, 2))
        if hess is not None:
            h = rho.neg_().add_(1.0).mul_(lam).mul_(sigma)  # sigma^2 |dM| rho (1 - rho)
            hess[:, start:stop] += h.sum(-1)
            hess += h.sum(1)
        signed = lam.mul_(sign)
        grad[:, start:stop] -= signed.sum(-1)
        grad += signed.sum(1)
    if norm:
        factor = torch.where(lambda_total > 0, torch.log2(1.0 + lambda_total) / lambda_total.clamp_min(1e-300),
                             torch.ones_like(lambda_total))
        cost, grad = cost * factor, grad * factor[:, None]
        hess = None if hess is None else hess * factor[:, None]
    return PairwiseTerms(cost, grad, hess)


def scatter_to_documents(rank_space: torch.Tensor, order: torch.Tensor) -> torch.Tensor:
    """``[B, N]`` rank-space values back to document order."""
    return torch.zeros_like(rank_space).scatter_(1, order, rank_space)


def _attach(scores, mask, ranked, terms: PairwiseTerms, reduction: str):
    s, _ = as_batch(scores, mask)
    keep = rankable(ranked).to(terms.cost.dtype)
    grad = scatter_to_documents(terms.grad, ranked.order) * keep[:, None]
    values = with_gradient(s, terms.cost * keep, grad)
    return reduce_loss(values, reduction, ranked.spec.squeeze)


def lambdarank_loss(
    scores: torch.Tensor,
    labels,
    *,
    metric: str = "gap",
    g=None,
    sigma: float = 1.0,
    k: int | None = None,
    mask: torch.Tensor | None = None,
    grade_counts=None,
    reduction: str = "mean",
) -> torch.Tensor:
    r"""LambdaRank loss whose gradient w.r.t. the scores is the lambda sums for ``metric``.

    .. math::

        L = \sum_{l_i > l_j} |\Delta M_{ij}|\, \log\big(1 + e^{-\sigma (s_i - s_j)}\big), \qquad
        -\frac{\partial L}{\partial s_i} = \sum_{j: l_i > l_j} \lambda_{ij} - \sum_{j: l_j > l_i} \lambda_{ji},
        \quad \lambda_{ij} = \frac{\sigma |\Delta M_{ij}|}{1 + e^{\sigma (s_i - s_j)}}

    summed per query (then reduced over queries by ``reduction``). :math:`\Delta M_{ij}` is the change
    of ``metric`` ("gap", "xgap", "egap", "ap", "ndcg") when documents i and j swap places in the ranking
    the scores induce (FORMULAS.md result 2: O(c) per pair; held fixed, as in LambdaRank). Ties in the
    scores are ranked in input order for Delta M and give :math:`\rho = 1/2`. ``k``: only pairs whose
    higher-ranked document is in the current top k (LightGBM's truncation rule); for "ndcg", as in
    LightGBM, the ideal DCG is then taken at depth k. Queries without two different labels give 0 loss
    and 0 gradient; padding gets exactly 0 gradient. Robertson et al. (2010), sec. 5; Burges et al. (2006).

    Examples
    --------
    >>> import torch
    >>> from gaprank.losses import lambdarank_loss
    >>> scores = torch.tensor([0.0, 1.0, 2.0], requires_grad=True)
    >>> lambdarank_loss(scores, torch.tensor([2, 1, 0]), metric="gap", g=[0.5, 0.5]).backward()
    >>> bool(scores.grad[0] < 0 < scores.grad[2])   # push the grade-2 document up, the grade-0 down
    True
    """
    check_scores_tensor(scores)
    sigma = check_sigma(sigma)
    k = check_positive_int(k)
    ranked, g_t = rank_for_metric(scores.detach(), labels, metric=metric, g=g, mask=mask, grade_counts=grade_counts)
    factors = pair_factors(metric, ranked, g_t, ideal_cutoff=k)
    s, _ = as_batch(scores.detach(), mask)
    terms = pairwise_logistic(s.gather(1, ranked.order), ranked.grades, ranked.valid, factors,
                              sigma=sigma, truncation=k)
    return _attach(scores, mask, ranked, terms, reduction)


def ranknet_loss(
    scores: torch.Tensor,
    labels,
    *,
    sigma: float = 1.0,
    mask: torch.Tensor | None = None,
    reduction: str = "mean",
) -> torch.Tensor:
    r"""RankNet: :math:`L = \sum_{l_i > l_j} \log(1 + e^{-\sigma (s_i - s_j)})` per query
    (Burges et al., ICML 2005), computed pair-block by pair-block with a direct gradient.

    Examples
    --------
    >>> import torch
    >>> from gaprank.losses import ranknet_loss
    >>> round(ranknet_loss(torch.tensor([0.0, 0.0]), torch.tensor([1, 0])).item(), 4)   # log 2
    0.6931
    """
    check_scores_tensor(scores)
    sigma = check_sigma(sigma)
    ranked = rank_lists(scores.detach(), labels, mask=mask)
    s, _ = as_batch(scores.detach(), mask)
    terms = pairwise_logistic(s.gather(1, ranked.order), ranked.grades, ranked.valid, None, sigma=sigma)
    return _attach(scores, mask, ranked, terms, reduction)


class LambdaRankLoss(torch.nn.Module):
    """LambdaRank with |Delta metric| swap weights; see :func:`lambdarank_loss` (value to minimise).

    Examples
    --------
    >>> import torch
    >>> from gaprank.losses import LambdaRankLoss
    >>> loss = LambdaRankLoss(metric="egap", g=[0.5, 0.5], k=10)
    >>> scores = torch.randn(4, 20, requires_grad=True)
    >>> loss(scores, torch.randint(0, 3, (4, 20))).backward()
    """

    def __init__(self, metric: str = "gap", g=None, sigma: float = 1.0, k: int | None = None,
                 reduction: str = "mean") -> None:
        super().__init__()
        self.metric, self.g, self.sigma, self.k, self.reduction = metric, g, sigma, k, reduction

    def forward(self, scores: torch.Tensor, labels, mask: torch.Tensor | None = None) -> torch.Tensor:
        return lambdarank_loss(scores, labels, metric=self.metric, g=self.g, sigma=self.sigma, k=self.k,
                               mask=mask, reduction=self.reduction)

    def extra_repr(self) -> str:
        return f"metric={self.metric!r}, g={self.g}, sigma={self.sigma}, k={self.k}, reduction={self.reduction!r}"


class RankNetLoss(torch.nn.Module):
    """RankNet's pairwise logistic loss; see :func:`ranknet_loss`."""

    def __init__(self, sigma: float = 1.0, reduction: str = "mean") -> None:
        super().__init__()
        self.sigma, self.reduction = sigma, reduction

    def forward(self, scores: torch.Tensor, labels, mask: torch.Tensor | None = None) -> torch.Tensor:
        return ranknet_loss(scores, labels, sigma=self.sigma, mask=mask, reduction=self.reduction)

    def extra_repr(self) -> str:
        return f"sigma={self.sigma}, reduction={self.reduction!r}"
