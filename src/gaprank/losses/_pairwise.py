r"""Pairwise logistic objectives: LambdaRank with |Delta M| weights, and RankNet.

For a pair with label_i > label_j, :math:`\rho_{ij} = 1 / (1 + e^{\sigma (s_i - s_j)})` and

.. math::

    C = \sum_{l_i > l_j} |\Delta M_{ij}| \log\big(1 + e^{-\sigma (s_i - s_j)}\big), \qquad
    \frac{\partial C}{\partial s_i} = -\sum_j \lambda_{ij} + \sum_j \lambda_{ji}, \quad
    \lambda_{ij} = \sigma |\Delta M_{ij}| \rho_{ij}

(Burges, Ragno and Le, NIPS 2006; Robertson et al. 2010, sec. 5; FORMULAS.md "LambdaRank"). RankNet is
the same with :math:`|\Delta M| = 1` (Burges et al., ICML 2005). :math:`\Delta M` is taken on the
ranking the current scores induce and held fixed, so the gradient is the lambda sums; it is computed
directly (no autograd graph over pairs) from the swap-delta factors, a block of upper ranks at a time.
Blocks of several batches share one flat buffer, so each elementwise step is one tensor operation
however many batches (LightGBM's length buckets) there are.

This module is the one implementation of the math that the PyTorch losses and the LightGBM objective
(:mod:`gaprank.lightgbm`) share.
"""

from __future__ import annotations

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
    stacked: torch.Tensor | None = None  # [2, B, N]: grad and hess in one tensor (when hess is given)


@dataclass
class RankedBatch:
    """One batch of ranked lists for :func:`pairwise_logistic_batches` (arguments as in
    :func:`pairwise_logistic`)."""

    scores: torch.Tensor  # [B, N], sorted descending, padding last
    grades: torch.Tensor  # [B, N] int64
    valid: torch.Tensor  # [B, N] bool
    factors: PairFactors | None


class PairWorkspace:
    """Flat scratch buffers kept from one call to the next (LightGBM calls the objective every round
    with the same shapes): reusing them spares the allocator a few megabytes of fresh pages per call."""

    def __init__(self) -> None:
        self._buffers: dict[tuple[str, torch.dtype, torch.device], torch.Tensor] = {}

    def get(self, name: str, numel: int, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
        key = (name, dtype, device)
        buffer = self._buffers.get(key)
        if buffer is None or buffer.numel() < numel:
            buffer = self._buffers[key] = torch.empty(numel, dtype=dtype, device=device)
        return buffer[:numel]


@dataclass
class _Prepared:
    """A batch made ready for its pair blocks, and the sums its blocks add to."""

    scores: torch.Tensor  # [B, N] sigma * score, the top score at padding; the scores' dtype
    grades: torch.Tensor  # [B, N] in the pair dtype
    valid: torch.Tensor | None  # [B, N] in the pair dtype, for unit weights only
    left: torch.Tensor | None  # [B, N, F] float64 (a transposed view)
    right: torch.Tensor | None  # [B, F, N] float64, 0 at padding
    top: int  # upper ranks 0..top-1 take part (the last rank has no rank below it)
    cost: torch.Tensor  # [B]
    sums: torch.Tensor  # [1 or 2, B, N]: the gradient, and the hessian when asked for (over sigma, sigma^2)
    weight_sum: torch.Tensor  # [B]: sum over pairs of |dM| rho (the lambdas over sigma)
    flat: torch.Tensor  # [B] bool: the query's scores are all equal


def _prepare(batch: RankedBatch, sigma: float, truncation: int | None, with_hessian: bool,
             dtype: torch.dtype) -> _Prepared:
    scores, valid = batch.scores.detach(), batch.valid
    size = scores.shape[1]
    # Padding takes the query's top score (0 for an empty list), so whatever it held never reaches a
    # number and the query's score range stays the same. Scores stay in their own dtype: differences
    # are taken there and rounded once (lambdarank_norm divides by 0.01 + |s_i - s_j|, which needs
    # the difference of close scores to more digits than float32 keeps of large scores).
    top = torch.where(valid[:, :1], scores[:, :1], 0.0)
    s = torch.where(valid, scores, top)
    flat = s.amin(-1) == top[:, 0]  # every score equal to the top one (LightGBM's best == worst)
    s = s if sigma == 1.0 else s * sigma
    left = right = None
    if batch.factors is not None:
        # Zero the lower-rank factors at padding: every pair that touches padding has its lower rank
        # there (padding is ranked last), so it weighs 0. In place: the factors are this call's own
        # (fresh, or a FactorPlan's buffers, rewritten for every ranking).
        left = batch.factors.left.transpose(1, 2)
        right = batch.factors.right.mul_(valid[:, None, :])
    sums = torch.zeros((2 if with_hessian else 1, *s.shape), dtype=dtype, device=s.device)
    return _Prepared(s, batch.grades.to(dtype), valid.to(dtype) if left is None else None, left, right,
                     max(0, size - 1 if truncation is None else min(truncation, size - 1)),
                     sums.new_zeros(s.shape[0]), sums, sums.new_zeros(s.shape[0]), flat)


def _pair_blocks(prepared: list[_Prepared], block_elements: int):
    """Blocks ``(batch index, start, stop, pairs)`` of upper ranks ``start..stop-1``, packed into chunks
    of at most ``block_elements`` pairs (a single block may exceed it when one row of a batch does)."""
    chunk, filled = [], 0
    for index, p in enumerate(prepared):
        batch, size = p.scores.shape
        rows = max(1, block_elements // max(1, batch * size))
        for start in range(0, p.top, rows):
            stop = min(p.top, start + rows)
            elements = batch * (stop - start) * size
            if chunk and filled + elements > block_elements:
                yield chunk
                chunk, filled = [], 0
            chunk.append((index, start, stop, elements))
            filled += elements
    if chunk:
        yield chunk


def pairwise_logistic_batches(
    batches: list[RankedBatch],
    *,
    sigma: float,
    truncation: int | None = None,
    norm: bool = False,
    with_hessian: bool = False,
    with_cost: bool = True,
    block_elements: int | None = None,
    dtype: torch.dtype | None = None,
    workspace: PairWorkspace | None = None,
) -> list[PairwiseTerms]:
    """:func:`pairwise_logistic` for several batches of ranked lists at once (one result per batch).

    The pairs of all batches are cut into blocks of upper ranks and packed into chunks of about
    ``block_elements`` pairs; each chunk is one flat buffer on which every elementwise step runs
    once, so many small batches (LightGBM's length buckets) cost a few operations each, not dozens.
    ``dtype`` is the pair arithmetic's (default: the scores'). Swap deltas and score differences are
    formed in float64 (the scores' dtype) and rounded once, so float32 loses no more than its
    rounding of each pair's terms. The batches' lower-rank factors are zeroed
    at padding in place. A ``workspace`` given by the caller keeps the scratch buffers for its next
    call.
    """
    block_elements = PAIR_BLOCK_ELEMENTS if block_elements is None else block_elements
    dtype = batches[0].scores.dtype if dtype is None else dtype
    device = batches[0].scores.device
    workspace = PairWorkspace() if workspace is None else workspace
    prepared = [_prepare(b, sigma, truncation, with_hessian, dtype) for b in batches]
    parts = 2 if with_hessian else 1
    # Row sums enter the upper document's gradient with a minus and its hessian with a plus.
    row_sign = torch.tensor([-1.0, 1.0][:parts], dtype=dtype, device=device)[:, None, None]
    for chunk in _pair_blocks(prepared, block_elements):
        total = sum(elements for *_, elements in chunk)
        # weight and diff are the two halves of one buffer: at the end they hold the signed lambdas
        # and the hessian terms, and one strided view per block reduces both at once.
        pair = workspace.get("pair", 2 * total, dtype, device)
        weight, diff = pair[:total], pair[total:]
        sign = workspace.get("sign", total, dtype, device)
        blocks, offset = [], 0
        for index, start, stop, elements in chunk:
            p = prepared[index]
            shape = (p.scores.shape[0], stop - start, p.scores.shape[1])
            span = slice(offset, offset + elements)
            w, sg, d = (buf[span].view(shape) for buf in (weight, sign, diff))
            torch.sub(p.grades[:, start:stop, None], p.grades[:, None, :], out=sg)
            sg[:, :, :stop].triu_(start + 1)  # a pair needs its upper rank strictly above the lower
            if p.left is None:  # unit weights (RankNet) on pairs of real documents
                torch.mul(p.valid[:, start:stop, None], p.valid[:, None, :], out=w)
            elif dtype == torch.float64:
                torch.bmm(p.left[:, start:stop], p.right, out=w)
            else:  # dM in float64, rounded once
                deltas = workspace.get("deltas", elements, torch.float64, device).view(shape)
                w.copy_(torch.bmm(p.left[:, start:stop], p.right, out=deltas))
            torch.sub(p.scores[:, None, :], p.scores[:, start:stop, None], out=d)  # sigma (s_low - s_up)
            both = pair.as_strided((parts, *shape), (total, shape[1] * shape[2], shape[2], 1),
                                   pair.storage_offset() + offset)
            blocks.append((p, start, stop, span, shape, both))
            offset += elements

        # Every step below runs once over the whole chunk.
        sign.clamp_(-1.0, 1.0)  # +1 / -1: the upper / lower document has the higher label; 0: no pair
        weight.mul_(sign).abs_()  # |dM| on pairs, 0 elsewhere
        if norm:  # LightGBM's lambdarank_norm: |dM| / (0.01 + |s_i - s_j|), in sigma units (see _finish)
            denominator = torch.abs(diff, out=workspace.get("denominator", total, dtype, device))
            weight.div_(denominator.add_(NORM_OFFSET * sigma))
        z = diff.mul_(sign)  # -sigma (s_better - s_worse)
        if with_cost:
            cost_terms = torch.nn.functional.softplus(z).mul_(weight)
            for p, _, _, span, shape, _ in blocks:
                p.cost += cost_terms[span].view(shape).sum((1, 2))
        rho = z.sigmoid_()  # 1 / (1 + exp(sigma (s_better - s_worse)))
        lam = weight.mul_(rho)  # |dM| rho: the lambda over sigma
        if norm:
            for p, _, _, span, shape, _ in blocks:
                p.weight_sum += lam[span].view(shape).sum((1, 2))
        if with_hessian:
            torch.addcmul(lam, lam, rho, value=-1.0, out=rho)  # |dM| rho (1 - rho): the hessian / sigma^2
        lam.mul_(sign)  # signed: the upper document's gradient is minus its row sum
        for p, start, stop, _, _, both in blocks:
            p.sums[:, :, start:stop].addcmul_(both.sum(-1), row_sign)
            p.sums += both.sum(2)
    return _finish(prepared, sigma, norm, with_cost)


def _finish(prepared: list[_Prepared], sigma: float, norm: bool, with_cost: bool) -> list[PairwiseTerms]:
    """Apply sigma, and LightGBM's per-query rescaling when ``norm`` (for all batches at once)."""
    parts = prepared[0].sums.shape[0]
    # sigma for the gradient, sigma^2 for the hessian, per query: [parts, sum of B, 1]
    scale = torch.tensor([sigma, sigma ** 2][:parts], dtype=prepared[0].sums.dtype)[:, None, None]
    sizes = [p.sums.shape[1] for p in prepared]
    if norm:
        weight_sum = torch.cat([p.weight_sum for p in prepared])
        flat = torch.cat([p.flat for p in prepared])
        # The blocks divided |dM| by sigma (0.01 + |s_i - s_j|). LightGBM divides by 0.01 + |s_i - s_j|
        # only when a query's scores are not all equal; such a query was divided by sigma 0.01.
        unscale = torch.where(flat, NORM_OFFSET * sigma, sigma).to(weight_sum.dtype)
        lambda_sum = 2.0 * sigma * weight_sum * unscale
        factor = torch.where(lambda_sum > 0, torch.log2(1.0 + lambda_sum) / lambda_sum.clamp_min(1e-300),
                             torch.ones_like(lambda_sum)) * unscale
        cost_factors = torch.split(factor, sizes)
        scales = torch.split(scale * factor[:, None], sizes, dim=1)
    else:
        cost_factors, scales = [None] * len(prepared), [scale] * len(prepared)
    with_hessian = parts > 1
    results = []
    for p, cost_factor, query_scale in zip(prepared, cost_factors, scales):
        sums = p.sums.mul_(query_scale)
        cost = p.cost * cost_factor if with_cost and cost_factor is not None else p.cost
        results.append(PairwiseTerms(cost, sums[0], sums[1] if with_hessian else None,
                                     sums if with_hessian else None))
    return results


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
    block_elements: int | None = None,
    dtype: torch.dtype | None = None,
) -> PairwiseTerms:
    r"""Cost, gradient (and LightGBM's hessian) of the |Delta M|-weighted pairwise logistic cost.

    Everything is in rank space: ``ranked_scores`` ``[B, N]`` sorted descending (padding last).
    ``factors`` None means unit weights (RankNet). ``truncation`` k keeps the pairs whose upper
    document is in the top k (LightGBM's ``lambdarank_truncation_level`` rule). ``norm`` is LightGBM's
    ``lambdarank_norm``: |Delta M| is divided by ``0.01 + |s_i - s_j|`` (when the query's scores are
    not all equal) and the query's gradients and hessians are scaled by ``log2(1 + S) / S``,
    S = the sum of its lambdas counted on both documents. The hessian is
    :math:`\sigma^2 |\Delta M| \rho (1 - \rho)` on both documents of each pair. ``with_cost=False``
    skips the cost (returned as zeros) when only the derivatives are wanted. Pairs are taken in
    blocks of upper ranks of at most ``block_elements`` pairs (default ``PAIR_BLOCK_ELEMENTS``),
    which bounds the working memory of long lists.
    """
    batch = RankedBatch(ranked_scores, grades, valid, factors)
    return pairwise_logistic_batches([batch], sigma=sigma, truncation=truncation, norm=norm,
                                     with_hessian=with_hessian, with_cost=with_cost,
                                     block_elements=block_elements, dtype=dtype)[0]


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
