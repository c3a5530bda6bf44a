r"""All-pairs swap deltas in O(c) per pair (FORMULAS.md, result 2).

For ranks a < b holding grades x = r_a and y = r_b, swapping the two documents changes a kernel
measure ``M = sum_n (1/n) (D[r_n] + sum_{m<n} K[r_m, r_n])`` only through three groups of pivots:

* pivots strictly between a and b: ``sum_t S_t(a,b) (K[y,t] - K[x,t])``, with S_t(a,b) the sum of 1/n
  over positions a < n < b holding grade t (prefix sums of 1/n per grade);
* the pivot at a: ``(1/a) [D[y] + sum_{m<a} K[r_m,y] - D[x] - sum_{m<a} K[r_m,x]]``;
* the pivot at b: ``(1/b) [D[x] - K[x,x] + K[y,x] + sum_{m<b} K[r_m,x] - D[y] - sum_{m<b} K[r_m,y]]``.

Per-grade prefix counts and prefix sums of 1/n cost O(cN); every pair then costs O(c), so all pairs
are one dense ``[B, N, N]`` computation with no recomputation of the metric per swap.
"""

from __future__ import annotations

import torch

from .._inputs import GaprankInputError, check_choice, check_positive_int
from ._functional import _discount, _gain_table, _ideal_dcg
from ._kernels import Kernel, _safe_div, ap_kernel, egap_kernel, gap_kernel, xgap_kernel
from ._ranking import RankedLists, default_g, rank_lists, resolve_g


def kernel_swap_deltas(ranked: RankedLists, kernel: Kernel, k: int | None = None) -> torch.Tensor:
    """Signed change of a kernel measure for every swap, in rank space: ``[B, N, N]``, symmetric,
    zero on the diagonal and for pairs involving padding. ``k``: the measure truncated at rank k
    (every term carries its pivot's 1/n, so truncation zeroes 1/n beyond k)."""
    grades, valid = ranked.grades, ranked.valid
    batch, size = grades.shape
    num_classes = kernel.matrix.shape[-1]
    matrix, diag = kernel.matrix, kernel.diag
    onehot = torch.nn.functional.one_hot(grades, num_classes).to(torch.float64) * valid[..., None]
    inv_pos = 1.0 / ranked.positions()
    if k is not None:
        inv_pos = torch.where(ranked.positions() <= k, inv_pos, torch.zeros_like(inv_pos))
    above = torch.cumsum(onehot, 1) - onehot  # counts of each grade strictly above rank n
    from_above = torch.bmm(above, matrix)  # [B, N, c+1]: A[n, u] = sum_{m<n} K[r_m, u]
    weighted = onehot * inv_pos[None, :, None]
    h_incl = torch.cumsum(weighted, 1)  # sum of 1/n' over n' <= n with grade t
    h_excl = h_incl - weighted  # ... over n' < n
    q_excl = torch.bmm(h_excl, matrix.transpose(1, 2))  # Q[n, u] = sum_t H[n, t] K[u, t]
    q_incl = torch.bmm(h_incl, matrix.transpose(1, 2))

    def at_own(table: torch.Tensor) -> torch.Tensor:  # table[b, n, r_n] -> [B, N]
        return table.gather(-1, grades[..., None]).squeeze(-1)

    def at_other(table: torch.Tensor) -> torch.Tensor:  # table[b, n, r_m] -> [B, N(n), N(m)]
        return table.gather(-1, grades[:, None, :].expand(batch, size, size))

    d_own = diag.gather(-1, grades)  # D[r_n]
    k_pair = matrix.gather(1, grades[:, :, None].expand(batch, size, num_classes))  # K[r_i, :]
    k_pair = k_pair.gather(2, grades[:, None, :].expand(batch, size, size))  # K[r_i, r_j]
    k_own = torch.diagonal(matrix, dim1=-2, dim2=-1).gather(-1, grades)  # K[r_n, r_n]

    # i = the upper rank (a), j = the lower rank (b); x = r_i, y = r_j. Index [b, i, j].
    # between[b,i,j] = Qe[j, y] - Qe[j, x] - Qi[i, y] + Qi[i, x]
    between = (at_own(q_excl)[:, None, :] - at_other(q_excl).transpose(1, 2)) - (
        at_other(q_incl) - at_own(q_incl)[:, :, None]
    )
    pivot_a = inv_pos[None, :, None] * (
        d_own[:, None, :] + at_other(from_above) - d_own[:, :, None] - at_own(from_above)[:, :, None]
    )
    pivot_b = inv_pos[None, None, :] * (
        (d_own - k_own)[:, :, None]
        + k_pair.transpose(1, 2)
        + at_other(from_above).transpose(1, 2)
        - d_own[:, None, :]
        - at_own(from_above)[:, None, :]
    )
    upper = torch.triu(between + pivot_a + pivot_b, diagonal=1)
    deltas = upper + upper.transpose(1, 2)
    # equal grades swap to the same ranking: exactly 0, not round-off
    pair_valid = valid[:, :, None] & valid[:, None, :] & (grades[:, :, None] != grades[:, None, :])
    return deltas * pair_valid


def to_document_space(rank_space: torch.Tensor, order: torch.Tensor) -> torch.Tensor:
    """Re-index ``[B, N, N]`` from (rank i, rank j) to (document order[i], document order[j])."""
    rank_of = torch.argsort(order, dim=-1)
    batch, size = rank_of.shape
    rows = rank_space.gather(1, rank_of[:, :, None].expand(batch, size, size))
    return rows.gather(2, rank_of[:, None, :].expand(batch, size, size))


METRICS = ("gap", "xgap", "egap", "ap", "ndcg")


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
    check_choice(metric, "metric", METRICS)
    k = check_positive_int(k)
    device = scores.device if isinstance(scores, torch.Tensor) else torch.device("cpu")
    g_t = resolve_g(g, device) if metric in ("gap", "xgap", "egap") else None
    if g is not None and g_t is None:
        raise GaprankInputError(f"g applies to gap, xgap and egap, not {metric!r}")
    ranked = rank_lists(scores, labels, mask=mask, grade_counts=grade_counts, ties="stable",
                        num_grades=None if g_t is None else g_t.numel(),
                        scale_source=f"g (c = {0 if g_t is None else g_t.numel()} grades)")
    if metric == "ndcg":
        gains = _gain_table(ranked.num_grades, "exp2", ranked.grades.device)
        disc = _discount(ranked.positions(), "log2p1")
        if k is not None:
            disc = torch.where(ranked.positions() <= k, disc, torch.zeros_like(disc))
        gain = gains[ranked.grades] * ranked.valid
        idcg = _ideal_dcg(ranked, gains, "log2p1", k)
        inv_idcg = _safe_div(torch.ones_like(idcg), idcg)
        rank_space = ((gain[:, None, :] - gain[:, :, None]) * (disc[None, :, None] - disc[None, None, :])
                      * inv_idcg[:, None, None])
        rank_space = rank_space * (ranked.valid[:, :, None] & ranked.valid[:, None, :])
    else:
        if g_t is None:
            g_t = default_g(ranked.num_grades, ranked.grades.device)
        build = {"gap": gap_kernel, "xgap": xgap_kernel, "egap": egap_kernel,
                 "ap": lambda r, _: ap_kernel(r, 1)}[metric]
        kernel = build(ranked, g_t) if ranked.num_grades else None
        if kernel is None:
            rank_space = ranked.counts.new_zeros(ranked.batch, ranked.list_size, ranked.list_size)
        else:
            rank_space = kernel_swap_deltas(ranked, kernel, k)
    out = to_document_space(rank_space, ranked.order)
    out = out.to(ranked.spec.dtype)
    return out[0] if ranked.spec.squeeze else out
