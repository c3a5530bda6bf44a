r"""All-pairs swap deltas in O(c) per pair (FORMULAS.md, result 2), as one low-rank product.

For ranks a < b holding grades x = r_a and y = r_b, swapping the two documents changes a kernel
measure ``M = sum_n (1/n) (D[r_n] + sum_{m<n} K[r_m, r_n])`` only through three groups of pivots:

* pivots strictly between a and b: ``sum_t S_t(a,b) (K[y,t] - K[x,t])``, with S_t(a,b) the sum of 1/n
  over positions a < n < b holding grade t (prefix sums of 1/n per grade);
* the pivot at a: ``(1/a) [D[y] + sum_{m<a} K[r_m,y] - D[x] - sum_{m<a} K[r_m,x]]``;
* the pivot at b: ``(1/b) [D[x] - K[x,x] + K[y,x] + sum_{m<b} K[r_m,x] - D[y] - sum_{m<b} K[r_m,y]]``.

Every term is a per-rank table (O(cN) to build) read at the other document's grade, i.e. a sum over
grades t of ``(something of a, t) * 1[r_b = t]`` or ``1[r_a = t] * (something of b, t)``. So the whole
``[N, N]`` matrix of deltas is ``L R^T`` for ``[N, 2c+5]`` factors: one batched matrix product, which
can be taken a block of rows at a time (LambdaRank truncation, long lists). nDCG's classic
``(gain(y) - gain(x)) (D(a) - D(b)) / IDCG`` is the same shape with rank 4.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .._inputs import GaprankInputError, check_choice, check_positive_int
from ._functional import _discount, _gain_table, _ideal_dcg
from ._kernels import Kernel, _safe_div, ap_kernel, egap_kernel, gap_kernel, xgap_kernel
from ._ranking import RankedLists, default_g, rank_lists, resolve_g

METRICS = ("gap", "xgap", "egap", "ap", "ndcg")


@dataclass
class PairFactors:
    """Rank-space factors of the swap deltas: ``delta(a, b) = left[a] . right[b]`` for ranks a < b.

    Entries with a >= b, equal grades or padding are not meaningful; :meth:`block` masks them.
    """

    left: torch.Tensor  # [B, N, F] float64
    right: torch.Tensor  # [B, N, F] float64
    grades: torch.Tensor  # [B, N] int64, ranked
    valid: torch.Tensor  # [B, N] bool, ranked

    def block(self, start: int, stop: int, dtype: torch.dtype = torch.float64) -> torch.Tensor:
        """Deltas for upper ranks ``start..stop-1`` against every lower rank: ``[B, stop-start, N]``,
        exactly 0 where the upper rank is not above, grades are equal, or either side is padding."""
        left, right = self.left[:, start:stop].to(dtype), self.right.to(dtype)
        deltas = torch.bmm(left, right.transpose(1, 2))
        keep = pair_keep(self.grades, self.valid, start, stop)
        return torch.where(keep, deltas, torch.zeros((), dtype=dtype, device=deltas.device))


def pair_keep(grades: torch.Tensor, valid: torch.Tensor, start: int, stop: int) -> torch.Tensor:
    """``[B, stop-start, N]`` bool: rank a (in start..stop-1) is above rank b, both are real documents
    and their grades differ -- the pairs a swap can change."""
    rows = torch.arange(start, stop, device=grades.device)
    cols = torch.arange(grades.shape[1], device=grades.device)
    keep = (cols[None, :] > rows[:, None])[None] & valid[:, start:stop, None] & valid[:, None, :]
    return keep & (grades[:, start:stop, None] != grades[:, None, :])


def kernel_pair_factors(ranked: RankedLists, kernel: Kernel, k: int | None = None) -> PairFactors:
    """Factors for a kernel measure (the measure at cutoff ``k`` when given: terms beyond rank k,
    each weighted by its pivot's 1/n, are dropped by zeroing 1/n there)."""
    grades, valid = ranked.grades, ranked.valid
    matrix, diag = kernel.matrix, kernel.diag  # [B, c+1, c+1], [B, c+1]
    onehot = torch.nn.functional.one_hot(grades, matrix.shape[-1]).to(torch.float64) * valid[..., None]
    positions = ranked.positions()
    inv_pos = 1.0 / positions
    if k is not None:
        inv_pos = torch.where(positions <= k, inv_pos, torch.zeros_like(inv_pos))
    inv = inv_pos[None, :, None]
    from_above = torch.bmm(torch.cumsum(onehot, 1) - onehot, matrix)  # A[n, u] = sum_{m<n} K[r_m, u]
    weighted = onehot * inv
    h_incl = torch.cumsum(weighted, 1)  # H[n, t] = sum of 1/n' over n' <= n holding grade t
    q_excl = torch.bmm(h_incl - weighted, matrix.transpose(1, 2))  # Qe[n, u] = sum_t H_excl[n, t] K[u, t]
    q_incl = torch.bmm(h_incl, matrix.transpose(1, 2))

    def own(table: torch.Tensor) -> torch.Tensor:  # table[b, n, r_n], kept as [B, N, 1]
        return table.gather(-1, grades[..., None])

    d_own = diag.gather(-1, grades)[..., None]  # D[r_n]
    k_row = matrix.gather(1, grades[..., None].expand(-1, -1, matrix.shape[-1]))  # K[r_n, :]
    k_diag = torch.diagonal(matrix, dim1=-2, dim2=-1)[:, None, :]  # K[t, t]
    ones = torch.ones_like(d_own)
    # upper rank a:  Qi[a,x] - (1/a)(D[x] + A[a,x])  +  (1/a) A[a,y] - Qi[a,y]  +  (1/a) D[y]
    #                - Qe[b,x] + (1/b)(D[x] - K[x,x] + K[y,x] + A[b,x])       (x = r_a, y = r_b)
    # lower rank b:  Qe[b,y] - (1/b)(D[y] + A[b,y])
    row = own(q_incl) - inv * (d_own + own(from_above))
    col = own(q_excl) - inv * (d_own + own(from_above))
    left = torch.cat([onehot, inv * from_above - q_incl, inv.expand_as(d_own), row, ones], -1)
    right = torch.cat([-q_excl + inv * (diag[:, None, :] - k_diag + k_row + from_above), onehot, d_own, ones, col], -1)
    return PairFactors(left, right, grades, valid)


def ndcg_pair_factors(
    ranked: RankedLists, *, gains: torch.Tensor, discount_cutoff: int | None = None, ideal_cutoff: int | None = None
) -> PairFactors:
    """nDCG (discount 1/log2(n+1)): ``(gain(y) - gain(x)) (D(a) - D(b)) / IDCG``.

    ``discount_cutoff`` zeroes discounts beyond that rank (the delta of nDCG@k); ``ideal_cutoff`` is the
    depth of the ideal DCG (LightGBM's LambdaRank uses the truncation level here and full discounts)."""
    positions = ranked.positions()
    disc = _discount(positions, "log2p1")
    if discount_cutoff is not None:
        disc = torch.where(positions <= discount_cutoff, disc, torch.zeros_like(disc))
    idcg = _ideal_dcg(ranked, gains, "log2p1", ideal_cutoff)
    inv_idcg = _safe_div(torch.ones_like(idcg), idcg)[:, None, None]
    gain = (gains[ranked.grades] * ranked.valid)[..., None]
    disc = disc[None, :, None].expand_as(gain)
    left = torch.cat([disc, gain, -gain * disc, torch.ones_like(gain)], -1)
    right = torch.cat([gain, disc, torch.ones_like(gain), -gain * disc], -1) * inv_idcg
    return PairFactors(left, right, ranked.grades, ranked.valid)


def metric_kernel(metric: str, ranked: RankedLists, g: torch.Tensor | None) -> Kernel | None:
    """The kernel of an AP-family ``metric`` for these lists (None when the scale has no grades)."""
    if not ranked.num_grades:
        return None
    if metric == "ap":
        return ap_kernel(ranked, 1)
    g_t = default_g(ranked.num_grades, ranked.grades.device) if g is None else g
    return {"gap": gap_kernel, "xgap": xgap_kernel, "egap": egap_kernel}[metric](ranked, g_t)


def rank_for_metric(scores, labels, *, metric: str, g=None, mask=None, grade_counts=None) -> tuple[RankedLists, torch.Tensor | None]:
    """Validate the inputs of a metric-driven objective and rank the lists (ties stable).

    Returns the ranked lists and the validated g (None unless metric is gap/xgap/egap and g given)."""
    check_choice(metric, "metric", METRICS)
    device = scores.device if isinstance(scores, torch.Tensor) else torch.device("cpu")
    g_t = resolve_g(g, device) if metric in ("gap", "xgap", "egap") else None
    if g is not None and g_t is None:
        raise GaprankInputError(f"g applies to gap, xgap and egap, not {metric!r}")
    ranked = rank_lists(scores, labels, mask=mask, grade_counts=grade_counts, ties="stable",
                        num_grades=None if g_t is None else g_t.numel(),
                        scale_source=f"g (c = {0 if g_t is None else g_t.numel()} grades)")
    return ranked, g_t


def pair_factors(metric: str, ranked: RankedLists, g: torch.Tensor | None, *, k: int | None = None,
                 ideal_cutoff: int | None = None, gains: torch.Tensor | None = None) -> PairFactors | None:
    """Swap-delta factors of ``metric`` (at cutoff ``k``); None when no pair can change it.

    ``gains``: nDCG's gain of each grade (float64, indexed by grade); default 2^l - 1."""
    if metric == "ndcg":
        if gains is None:
            gains = _gain_table(ranked.num_grades, "exp2", ranked.grades.device)
        return ndcg_pair_factors(ranked, gains=gains, discount_cutoff=k,
                                 ideal_cutoff=k if ideal_cutoff is None else ideal_cutoff)
    kernel = metric_kernel(metric, ranked, g)
    return None if kernel is None else kernel_pair_factors(ranked, kernel, k)


def kernel_swap_deltas(ranked: RankedLists, kernel: Kernel, k: int | None = None) -> torch.Tensor:
    """Signed change of a kernel measure for every swap, in rank space: ``[B, N, N]``, symmetric,
    zero on the diagonal and for pairs involving padding or equal grades."""
    return _symmetric(kernel_pair_factors(ranked, kernel, k))


def _symmetric(factors: PairFactors) -> torch.Tensor:
    upper = factors.block(0, factors.grades.shape[1])
    return upper + upper.transpose(1, 2)


def to_document_space(rank_space: torch.Tensor, order: torch.Tensor) -> torch.Tensor:
    """Re-index ``[B, N, N]`` from (rank i, rank j) to (document order[i], document order[j])."""
    rank_of = torch.argsort(order, dim=-1)
    batch, size = rank_of.shape
    rows = rank_space.gather(1, rank_of[:, :, None].expand(batch, size, size))
    return rows.gather(2, rank_of[:, None, :].expand(batch, size, size))


def swap_deltas(
    scores,
    labels,
    *,
    metric: str,
    g=None,
    mask=None,
    grade_counts=None,
    k: int | None = None,
) -> torch.Tensor:
    r"""Signed change of ``metric`` when documents i and j swap places, for every pair: ``[B, N, N]``.

    The ranking is the one the scores induce (higher first, ties in input order). The result is in
    document-index space (entry [b, i, j] is about documents i and j of query b), symmetric, and zero
    for equal labels and for padding. ``metric`` is one of "gap", "xgap", "egap", "ap" (threshold 1),
    "ndcg" (gain 2^l - 1, discount 1/log2(n+1)); ``k`` gives the delta of the measure at cutoff k.
    AP-family deltas use FORMULAS.md result 2 (O(c) per pair); nDCG uses
    :math:`\Delta = (\mathrm{gain}(y) - \mathrm{gain}(x)) (D(a) - D(b)) / \mathrm{IDCG}`.

    Examples
    --------
    >>> import torch
    >>> from gaprank.losses import swap_deltas
    >>> d = swap_deltas(torch.tensor([3.0, 2.0, 1.0]), torch.tensor([0, 1, 0]), metric="ap")
    >>> d[0, 1].item()   # moving the relevant document from rank 2 to rank 1: AP 0.5 -> 1
    0.5
    """
    k = check_positive_int(k)
    ranked, g_t = rank_for_metric(scores, labels, metric=metric, g=g, mask=mask, grade_counts=grade_counts)
    factors = pair_factors(metric, ranked, g_t, k=k)
    if factors is None:
        rank_space = ranked.counts.new_zeros(ranked.batch, ranked.list_size, ranked.list_size)
    else:
        rank_space = _symmetric(factors)
    out = to_document_space(rank_space, ranked.order).to(ranked.spec.dtype)
    return out[0] if ranked.spec.squeeze else out
