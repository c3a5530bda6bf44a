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

from dataclasses import dataclass, field

import torch

from .._inputs import GaprankInputError, check_choice, check_positive_int
from ._functional import _discount, _gain_table, _ideal_dcg
from ._kernels import Kernel, _safe_div, ap_kernel, egap_kernel, gap_kernel, xgap_kernel
from ._ranking import RankedLists, default_g, rank_lists, resolve_g

METRICS = ("gap", "xgap", "egap", "ap", "ndcg")


@dataclass
class PairFactors:
    """Rank-space factors of the swap deltas: ``delta(a, b) = sum_f left[f, a] right[f, b]`` for ranks
    a < b. Both are stored ``[B, F, N]`` (factor-major), so each factor is a contiguous row over ranks.

    Entries with a >= b, equal grades or padding are not meaningful; :meth:`block` masks them.
    """

    left: torch.Tensor  # [B, F, N] float64
    right: torch.Tensor  # [B, F, N] float64
    grades: torch.Tensor  # [B, N] int64, ranked
    valid: torch.Tensor  # [B, N] bool, ranked

    def block(self, start: int, stop: int, dtype: torch.dtype = torch.float64) -> torch.Tensor:
        """Deltas for upper ranks ``start..stop-1`` against every lower rank: ``[B, stop-start, N]``,
        exactly 0 where the upper rank is not above, grades are equal, or either side is padding."""
        left, right = self.left[:, :, start:stop].to(dtype), self.right.to(dtype)
        deltas = torch.bmm(left.transpose(1, 2), right)
        keep = pair_keep(self.grades, self.valid, start, stop)
        return torch.where(keep, deltas, torch.zeros((), dtype=dtype, device=deltas.device))


def pair_keep(grades: torch.Tensor, valid: torch.Tensor, start: int, stop: int) -> torch.Tensor:
    """``[B, stop-start, N]`` bool: rank a (in start..stop-1) is above rank b, both are real documents
    and their grades differ -- the pairs a swap can change."""
    rows = torch.arange(start, stop, device=grades.device)
    cols = torch.arange(grades.shape[1], device=grades.device)
    keep = (cols[None, :] > rows[:, None])[None] & valid[:, start:stop, None] & valid[:, None, :]
    return keep & (grades[:, start:stop, None] != grades[:, None, :])


def kernel_product_matrix(kernel: Kernel) -> torch.Tensor:
    """``[B, 3C+2, 3C+1]`` (C = c+1 grades): the one matrix that turns a list's grade tables into every
    kernel-weighted table :func:`kernel_pair_factors` needs (it depends only on the kernel, so a
    :class:`FactorPlan` builds it once). Columns act on ``[above; H; onehot; valid]``, rows give

    * ``A[u,n] - K[u,r_n]`` and ``A[u,n] + K[r_n,u] + D[u] - K[u,u]``, with ``A = K^T above``;
    * ``Qe = K H``; then ``D[r_n]`` and ``K[r_n,r_n]``.
    """
    matrix, diag = kernel.matrix, kernel.diag
    batch, c1 = matrix.shape[0], matrix.shape[-1]
    k_t = matrix.transpose(1, 2)
    k_diag = torch.diagonal(matrix, dim1=-2, dim2=-1)
    product = matrix.new_zeros(batch, 3 * c1 + 2, 3 * c1 + 1)
    above, weighted, own, valid = slice(0, c1), slice(c1, 2 * c1), slice(2 * c1, 3 * c1), 3 * c1
    product[:, 0:c1, above] = k_t
    product[:, 0:c1, own] = -matrix
    product[:, c1:2 * c1, above] = k_t
    product[:, c1:2 * c1, own] = k_t
    product[:, c1:2 * c1, valid] = diag - k_diag
    product[:, 2 * c1:3 * c1, weighted] = matrix
    product[:, 3 * c1, own] = diag
    product[:, 3 * c1 + 1, own] = k_diag
    return product


def kernel_pair_factors(ranked: RankedLists, kernel: Kernel, k: int | None = None,
                        product: torch.Tensor | None = None, scratch: dict | None = None) -> PairFactors:
    """Factors for a kernel measure (the measure at cutoff ``k`` when given: terms beyond rank k,
    each weighted by its pivot's 1/n, are dropped by zeroing 1/n there). ``product``: the kernel's
    :func:`kernel_product_matrix`, when already built; ``scratch``: a dict kept between calls on
    the same lists (same shape and padding), which then keeps its tables and factor buffers (the
    factors returned are then valid until the next call with that ``scratch``).

    Tables are grade-major, ``X[u, n]``: the value at rank n for grade u (x = r_a, y = r_b below).
    """
    grades, valid = ranked.grades, ranked.valid
    product = kernel_product_matrix(kernel) if product is None else product
    batch, size = grades.shape
    c1 = kernel.matrix.shape[-1]
    statics = None if scratch is None else scratch.get("kernel_tables")
    if statics is None:
        inv = 1.0 / ranked.positions()
        if k is not None:
            inv[k:] = 0.0
        # tables[:, :c1] = above[t, n] (grade-t documents above rank n), [c1:2c1] = H[t, n] (their sum of
        # 1/m), [2c1:3c1] = onehot[t, n] = 1[r_n = t], [3c1] = 1 at real documents.
        tables = grades.new_empty(batch, 3 * c1 + 1, size, dtype=torch.float64)
        tables[:, 3 * c1] = valid
        # factor rows: left = [onehot, upper_grade, 1/a, upper_own, 1], right = [lower_grade, onehot, D[y], 1, lower_own]
        left, right = tables.new_empty(batch, 2 * c1 + 3, size), tables.new_empty(batch, 2 * c1 + 3, size)
        left[:, 2 * c1] = inv
        left[:, 2 * c1 + 2] = 1.0
        right[:, 2 * c1 + 1] = 1.0
        statics = (inv, torch.arange(c1, device=grades.device)[:, None], tables, left, right)
        if scratch is not None:
            scratch["kernel_tables"] = statics
    inv, grade_ids, tables, left, right = statics
    onehot = tables[:, 2 * c1:3 * c1]
    onehot.copy_((grades[:, None, :] == grade_ids) & valid[:, None, :])
    tables[:, :c1] = onehot
    left[:, :c1] = onehot
    right[:, c1:2 * c1] = onehot
    torch.mul(onehot, inv, out=tables[:, c1:2 * c1])
    prefix = tables[:, :2 * c1]
    torch.sub(torch.cumsum(prefix, -1), prefix, out=prefix)  # sums over m < n
    kernel_tables = torch.bmm(product, tables)
    q_excl = kernel_tables[:, 2 * c1:3 * c1]  # Qe[u, n] = sum_{m<n} K[u, r_m] / m
    d_own, k_own = kernel_tables[:, 3 * c1:3 * c1 + 1], kernel_tables[:, 3 * c1 + 1:]  # D[r_n], K[r_n, r_n]
    # upper rank a:  Qi[x,a] - (1/a)(D[x] + A[x,a])  +  (1/a) A[y,a] - Qi[y,a]  +  (1/a) D[y]
    #                - Qe[x,b] + (1/b)(D[x] - K[x,x] + K[y,x] + A[x,b])       (x = r_a, y = r_b)
    # lower rank b:  Qe[y,b] - (1/b)(D[y] + A[y,b])
    # with Qi[u, n] = Qe[u, n] + (1/n) K[u, r_n], the sums over m <= n.
    upper_grade = torch.mul(kernel_tables[:, :c1], inv, out=left[:, c1:2 * c1]).sub_(q_excl)  # read at u = y
    torch.mul(kernel_tables[:, c1:2 * c1], inv, out=right[:, :c1]).sub_(q_excl)
    # Read at u = x, upper_grade gives (1/a)(A[x,a] - K[x,x]) - Qe[x,a] = -(Qi[x,a] - (D[x] + A[x,a])/a) - D[x]/a
    # (at padding this reads grade 0: padding's factors are never used, see PairFactors)
    upper_own = torch.gather(upper_grade, 1, grades[:, None, :], out=left[:, 2 * c1 + 1:2 * c1 + 2])
    upper_own.add_(d_own * inv).neg_()  # Qi[x,a] - (D[x] + A[x,a])/a
    torch.sub(upper_own, k_own * inv, out=right[:, 2 * c1 + 2:])  # Qe[y,b] - (D[y] + A[y,b])/b
    right[:, 2 * c1:2 * c1 + 1] = d_own
    return PairFactors(left, right, grades, valid)


def ndcg_pair_factors(
    ranked: RankedLists, *, gains: torch.Tensor, inv_idcg: torch.Tensor, discount_cutoff: int | None = None
) -> PairFactors:
    """nDCG (discount 1/log2(n+1)): ``(gain(y) - gain(x)) (D(a) - D(b)) / IDCG``.

    ``inv_idcg`` ``[B]`` is 1 / IDCG (0 where IDCG is 0), from :func:`ndcg_inverse_ideal`;
    ``discount_cutoff`` zeroes discounts beyond that rank (the delta of nDCG@k)."""
    positions = ranked.positions()
    disc = _discount(positions, "log2p1")
    if discount_cutoff is not None:
        disc[discount_cutoff:] = 0.0
    gain = gains[ranked.grades] * ranked.valid  # [B, N]
    gain_disc = gain * disc
    left = torch.stack([disc.expand_as(gain), gain, -gain_disc, torch.ones_like(gain)], 1)
    right = torch.stack([gain, disc.expand_as(gain), torch.ones_like(gain), -gain_disc], 1) * inv_idcg[:, None, None]
    return PairFactors(left, right, ranked.grades, ranked.valid)


def ndcg_inverse_ideal(ranked: RankedLists, gains: torch.Tensor, ideal_cutoff: int | None) -> torch.Tensor:
    """1 / IDCG@``ideal_cutoff`` per list, 0 where no document has a gain (LightGBM's LambdaRank
    takes the ideal DCG at its truncation level, with full discounts)."""
    idcg = _ideal_dcg(ranked, gains, "log2p1", ideal_cutoff)
    return _safe_div(torch.ones_like(idcg), idcg)


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


@dataclass
class FactorPlan:
    """What the swap-delta factors of a batch of lists need besides the ranking: the kernel of an
    AP-family measure, or nDCG's gains and 1/IDCG. Both depend only on each list's grade counts,
    so a plan built once serves every later ranking of the same lists (LambdaMART's rounds)."""

    metric: str
    k: int | None
    kernel: Kernel | None = None
    product: torch.Tensor | None = None  # the kernel's kernel_product_matrix
    scratch: dict = field(default_factory=dict, repr=False)  # tables kept between rankings of the same lists
    gains: torch.Tensor | None = None
    inv_idcg: torch.Tensor | None = None

    def factors(self, ranked: RankedLists) -> PairFactors:
        """Factors for ``ranked``: the same lists (same grade counts and padding) in any order. For
        AP-family measures they live in the plan's buffers, valid until the next call."""
        if self.metric == "ndcg":
            return ndcg_pair_factors(ranked, gains=self.gains, inv_idcg=self.inv_idcg, discount_cutoff=self.k)
        return kernel_pair_factors(ranked, self.kernel, self.k, self.product, self.scratch)


def plan_pair_factors(metric: str, ranked: RankedLists, g: torch.Tensor | None, *, k: int | None = None,
                      ideal_cutoff: int | None = None, gains: torch.Tensor | None = None) -> FactorPlan | None:
    """The :class:`FactorPlan` of ``metric`` (at cutoff ``k``) for these lists; None when no pair can
    change the metric (no grades above 0).

    ``gains``: nDCG's gain of each grade (float64, indexed by grade); default 2^l - 1. nDCG's ideal
    DCG is taken at ``ideal_cutoff``, default ``k``."""
    if metric == "ndcg":
        if gains is None:
            gains = _gain_table(ranked.num_grades, "exp2", ranked.grades.device)
        inv_idcg = ndcg_inverse_ideal(ranked, gains, k if ideal_cutoff is None else ideal_cutoff)
        return FactorPlan(metric, k, gains=gains, inv_idcg=inv_idcg)
    kernel = metric_kernel(metric, ranked, g)
    if kernel is None:
        return None
    return FactorPlan(metric, k, kernel=kernel, product=kernel_product_matrix(kernel))


def pair_factors(metric: str, ranked: RankedLists, g: torch.Tensor | None, *, k: int | None = None,
                 ideal_cutoff: int | None = None, gains: torch.Tensor | None = None) -> PairFactors | None:
    """Swap-delta factors of ``metric`` (at cutoff ``k``); None when no pair can change it.
    Options as in :func:`plan_pair_factors`."""
    plan = plan_pair_factors(metric, ranked, g, k=k, ideal_cutoff=ideal_cutoff, gains=gains)
    return None if plan is None else plan.factors(ranked)


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
