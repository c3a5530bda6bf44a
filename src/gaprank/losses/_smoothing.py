r"""Smooth ranks beyond SoftRank: approximate ranks, NeuralSort, SoftSort and the soft ranks of the
permutahedron, and the measures they give (docs: Choosing a smooth loss; The maths, "The threshold identity").

Each smoothing gives every real document n a soft rank :math:`\rho(n)` among a set of documents (sigma is the
one scale parameter; as it goes to 0 with distinct scores each soft rank is the exact rank):

* ``approx`` (Qin, Liu and Li 2010): :math:`\rho(n) = 1 + \sum_{m \ne n} \mathrm{sigmoid}((s_m - s_n)/\sigma)`;
  O(n^2). ``approx_interpolated``: the same ranks, with the discount interpolated (below).
* ``neuralsort`` (Grover et al. 2019): the relaxed permutation
  :math:`P[r, \cdot] = \mathrm{softmax}(((n + 1 - 2r) s - A 1)/\sigma)`, :math:`A_{mn} = |s_m - s_n|`;
  O(n^2).
* ``softsort`` (Prillo and Eisenschlos 2020): :math:`P[r, \cdot] = \mathrm{softmax}(-|s_{[r]} - s|/\sigma)`
  with :math:`s_{[r]}` the r-th highest score; O(n^2).
* ``fast_soft_rank`` (Blondel et al. 2020): the projection of :math:`-s/\sigma` onto the permutahedron
  (:mod:`gaprank._engine.soft_rank`); O(n log n) time, O(n) memory.

For the two relaxed permutations (rows: ranks, columns: documents; each row sums to 1) the soft rank is
the rank expected under the document's column, :math:`\rho(n) = \sum_r r P[r, n] / \sum_r P[r, n]`.

The AP family is taken through the threshold identity: for a kernel with :math:`K[t, u] = K[u, u]` for
every grade :math:`t \ge u` (the grades above a pivot's own all count as its own), with
:math:`a_j(u) = K[j, u] - K[j-1, u]` (:math:`a_0(u) = K[0, u]`) and :math:`e(u) = D[u] - K[u, u]`,

.. math::

    M = \sum_n \frac{1}{\rho_0(n)} \Big(e(l_n) + \sum_{j \le l_n} a_j(l_n)\, \rho_j(n)\Big),

:math:`\rho_j(n)` the rank of n among the documents of grade :math:`\ge j` (:math:`\rho_0` among all):
:math:`c + 1` soft rankings, no pair terms. The discounted-gain family takes the discount at soft positions:
:math:`D(\rho_0(n))` at the soft rank itself (approx: Qin et al.'s ApproxNDCG, as Rax, allRank and TF-Ranking
compute it), interpolated linearly between the integer ranks around :math:`\rho_0(n)` (approx_interpolated,
fast_soft_rank: gaprank's form, exact at integer ranks, and with a cutoff k a slope from rank k to k + 1 where
the discount at the rank itself drops to 0 at once), or :math:`\sum_r D(r) P[r, n]` (neuralsort, softsort).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

import torch

from .._engine import fast_soft_ranks
from .._inputs import GaprankInputError
from ..metrics import Kernel


def _subnormal_floor(dtype: torch.dtype) -> float:
    """The log of a term too small to keep: its exp is, or comes close to, a subnormal number of ``dtype``.
    Arithmetic on subnormals is many times slower on x86 CPUs, and such a term is far below the dtype's
    resolution beside a row's largest term, so the smoothings set it to exactly 0 instead."""
    return math.log(torch.finfo(dtype).tiny) + 16.0  # e^16 of headroom: a sum over up to 8.8e6 terms stays normal


def _softmax_without_subnormals(x: torch.Tensor) -> torch.Tensor:
    """``softmax(x, -1)`` of a tensor the caller owns (overwritten; no autograd), the terms below
    :func:`_subnormal_floor` of their row's largest set to exactly 0: the products with the result that follow
    then run on normal numbers only."""
    top = x.amax(-1, keepdim=True)
    return torch.softmax(x.masked_fill_(x < top + _subnormal_floor(x.dtype), -torch.inf), dim=-1)


def approx_ranks(s: torch.Tensor, m: torch.Tensor, sigma: float) -> torch.Tensor:
    r"""``[R, N]``: :math:`1 + \sum_{m \ne n} \mathrm{sigmoid}((s_m - s_n)/\sigma)` over real m; 0 at padding."""
    scaled = s / sigma
    above = torch.sigmoid(scaled[:, :, None] - scaled[:, None, :])  # [R, m, n]: m above n
    # the sum over real m, n's own term sigmoid(0) = 1/2 included: 1/2 + sum_m instead of 1 + sum_{m != n}
    ranks = 0.5 + torch.bmm(m.to(s.dtype)[:, None, :], above)[:, 0]
    return torch.where(m, ranks, torch.zeros_like(ranks))


def _row_weights(values: torch.Tensor, m: torch.Tensor) -> torch.Tensor:
    """``[R, N]``: ``values`` ``[N]`` (a value per rank) at the ranks 1..n of each row's n real documents, 0 after."""
    ranks = torch.arange(m.shape[1], device=m.device)
    return values[None, :] * (ranks[None, :] < m.sum(-1, keepdim=True))


def _spread(s: torch.Tensor, m: torch.Tensor) -> torch.Tensor:
    r"""``[R, N]``: :math:`\sum_{m\ real} |s_m - s_n|`, from the sorted scores' prefix sums (O(N log N)), with the
    gradient that treats tied scores alike (:class:`_Spread`)."""
    return _Spread.apply(s, m)


class _Spread(torch.autograd.Function):
    r""":func:`_spread_values` with the symmetric subgradient :math:`\partial/\partial s_j = \sum_m (g_j + g_m)
    \operatorname{sign}(s_j - s_m)`, sign(0) = 0: two tied documents get the same gradient, whatever their order
    (autograd through the sort gives a tied pair +1 and -1 in sorting order). Taken in O(N log N) from the sorted
    scores: the counts and gradient sums of the scores below and above each one. Written with torch operations,
    so a second derivative (0 in the scores, almost everywhere) is available too."""

    @staticmethod
    def forward(s, m):  # type: ignore[override]  # noqa: D102 - autograd protocol
        return _spread_values(s, m)

    @staticmethod
    def setup_context(ctx, inputs, output):  # the separate form torch.func's transforms need
        ctx.save_for_backward(*inputs)

    @staticmethod
    def backward(ctx, grad):  # noqa: D102
        s, m = ctx.saved_tensors
        key = s.detach().masked_fill(~m, torch.inf)
        ordered, order = torch.sort(key, dim=-1, stable=True)
        g = torch.where(m, grad, torch.zeros_like(grad))
        sums = torch.nn.functional.pad(torch.cumsum(g.gather(1, order), -1), (1, 0))  # [R, N + 1]: before each
        below = torch.searchsorted(ordered, key, side="left")  # real scores below each score
        up_to = torch.searchsorted(ordered, key, side="right")  # ... below or tied
        n = m.sum(-1, keepdim=True)
        flow = (g * (below - (n - up_to)).to(g.dtype) + sums.gather(1, below)
                - (sums.gather(1, n) - sums.gather(1, up_to)))
        return torch.where(m, flow, torch.zeros_like(flow)), None


def _spread_values(s: torch.Tensor, m: torch.Tensor) -> torch.Tensor:
    order = torch.sort(s.detach().masked_fill(~m, torch.inf), dim=-1, stable=True).indices
    real = torch.gather(m, 1, order)
    ordered = torch.where(real, s.gather(1, order), torch.zeros_like(s))
    below = torch.cumsum(ordered, -1) - ordered  # the sum of the real scores before each sorted position
    total = ordered.sum(-1, keepdim=True)
    count = torch.arange(s.shape[1], device=s.device, dtype=s.dtype)[None, :]  # real scores before it
    n = m.sum(-1, keepdim=True).to(s.dtype)
    spread = ordered * count - below + (total - below - ordered) - ordered * (n - count - 1.0)
    return torch.zeros_like(spread).scatter(1, order, torch.where(real, spread, torch.zeros_like(spread)))


def relaxed_permutation(s: torch.Tensor, m: torch.Tensor, sigma: float, smoothing: str) -> torch.Tensor:
    """``[R, N ranks, N documents]``: NeuralSort's or SoftSort's relaxed sorting permutation (descending) of
    each row's real documents; columns of padding are 0. Rows past a list's length hold no meaning: the
    callers weigh them by 0 (:func:`_row_weights`). The losses take NeuralSort through :func:`permutation_mix`;
    its permutation here is the plain autograd reference. "neuralsort_sinkhorn": NeuralSort's made doubly
    stochastic (:func:`sinkhorn_scaling`)."""
    if smoothing == "neuralsort":
        return _neuralsort_permutation(s, *_neuralsort_terms(s, m, sigma))
    if smoothing == "neuralsort_sinkhorn":
        return sinkhorn_scaling(_neuralsort_permutation(s, *_neuralsort_terms(s, m, sigma)), m)
    hide = _hidden_columns(m)
    scaled = s / sigma
    top = _TieSymmetricSort.apply(scaled.masked_fill(~m, -torch.inf))[0]
    top = torch.where(torch.isfinite(top), top, torch.zeros_like(top))
    columns = scaled.masked_fill(hide, torch.inf)  # |top - inf| = inf: padding's logits are -inf
    return torch.softmax(_NegativeDistance.apply(top, columns), dim=-1)


class _TieSymmetricSort(torch.autograd.Function):
    """Each row sorted descending, with the gradient of a run of tied values shared equally by the tied entries
    (autograd through the sort hands each sorted position's gradient to one of them, in sorting order): the mean
    over the orders the tie could be broken in, so tied documents get the same gradient."""

    @staticmethod
    def forward(x):  # type: ignore[override]  # noqa: D102 - autograd protocol
        values, order = torch.sort(x, dim=-1, descending=True)
        return values, order

    @staticmethod
    def setup_context(ctx, inputs, output):  # the separate form torch.func's transforms need
        values, order = output
        ctx.mark_non_differentiable(order)
        ctx.save_for_backward(values, order)

    @staticmethod
    def backward(ctx, grad, _):  # noqa: D102
        values, order = ctx.saved_tensors
        new_run = torch.ones_like(values, dtype=torch.bool)
        new_run[:, 1:] = values[:, 1:] != values[:, :-1]
        run = torch.cumsum(new_run.to(torch.int64), -1) - 1  # [R, N]: the tie run of each sorted position
        totals = torch.zeros_like(grad).scatter_add(1, run, grad)
        sizes = torch.zeros_like(grad).scatter_add(1, run, torch.ones_like(grad))
        shared = (totals / sizes.clamp_min(1.0)).gather(1, run)
        return torch.zeros_like(shared).scatter(1, order, shared)


def _hidden_columns(m: torch.Tensor) -> torch.Tensor:
    """``[R, N]``: the padding columns a relaxed permutation gives weight 0; a row with no real document hides
    nothing (its rows are all weighed 0)."""
    return ~m & (m.sum(-1, keepdim=True) > 0)


def _neuralsort_terms(s: torch.Tensor, m: torch.Tensor, sigma: float) -> tuple[torch.Tensor, torch.Tensor]:
    r"""NeuralSort's logits ``c_r s_n + b_n`` as ``(c [R, N ranks], b [R, N documents])``:
    :math:`c_r = (n + 1 - 2r)/\sigma`, :math:`b_n = -(A 1)_n/\sigma`, -inf at padding."""
    ranks = torch.arange(1, s.shape[1] + 1, dtype=s.dtype, device=s.device)[None, :]
    coefficient = (m.sum(-1, keepdim=True).to(s.dtype) + 1.0 - 2.0 * ranks) / sigma
    bias = (-_spread(s, m) / sigma).masked_fill(_hidden_columns(m), -torch.inf)
    return coefficient, bias


def _neuralsort_logits(s: torch.Tensor, coefficient: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """``[R, N ranks, N documents]``: ``c_r s_n + b_n``, in one product."""
    return torch.baddbmm(bias[:, None, :], coefficient[:, :, None], s[:, None, :])


def _neuralsort_permutation(s: torch.Tensor, coefficient: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    return torch.softmax(_neuralsort_logits(s, coefficient, bias), dim=-1)


SINKHORN_ITERATIONS = 50  # allRank's neuralNDCG: at most 50 scalings, ...
SINKHORN_TOLERANCE = 1e-6  # ... stopping once every row and column sums to 1 within this


def sinkhorn_scaling(p: torch.Tensor, m: torch.Tensor, iterations: int = SINKHORN_ITERATIONS,
                     tolerance: float = SINKHORN_TOLERANCE) -> torch.Tensor:
    """``[R, N ranks, N documents]``: each list's relaxed permutation made doubly stochastic over its ``n`` real
    documents and its first ``n`` ranks by Sinkhorn scaling (Pobrotyn and Bialobrzeski 2021, as allRank's
    ``neuralNDCG``): columns then rows divided by their sums, until both sum to 1 within ``tolerance`` or
    ``iterations`` have run. A list stops when it has converged (allRank stops when the whole batch has), so a
    list's value does not depend on the others in its batch. Padding's rows and columns are 0."""
    ranks = torch.arange(p.shape[1], device=p.device)[None, :] < m.sum(-1, keepdim=True)  # [R, N]: real ranks
    real = ranks[:, :, None] & m[:, None, :]
    # padding ranks x padding documents hold 1, as allRank sets them, so that they can sum to 1 too
    p = torch.where(real, p, (~ranks[:, :, None] & ~m[:, None, :]).to(p.dtype))
    active = torch.ones(p.shape[0], dtype=torch.bool, device=p.device)
    for _ in range(iterations):
        scaled = p / p.sum(1, keepdim=True).clamp_min(1e-10)  # allRank's floor
        scaled = scaled / scaled.sum(2, keepdim=True).clamp_min(1e-10)
        p = torch.where(active[:, None, None], scaled, p)
        converged = (((scaled.sum(2) - 1.0).abs().amax(-1) < tolerance)
                     & ((scaled.sum(1) - 1.0).abs().amax(-1) < tolerance))
        active = active & ~converged
        if not bool(active.any()):  # one read back an iteration, as allRank's
            break
    return torch.where(real, p, torch.zeros_like(p))


def permutation_mix(s: torch.Tensor, m: torch.Tensor, sigma: float, smoothing: str, weights: torch.Tensor) -> torch.Tensor:
    """``[R, K, N documents]``: ``weights`` ``[R, K, N ranks]`` (values per rank) mixed by the relaxed permutation,
    ``weights @ P``."""
    if smoothing == "neuralsort":
        coefficient, bias = _neuralsort_terms(s, m, sigma)
        return _NeuralSortMix.apply(coefficient.detach(), s, bias, weights)[0]
    return torch.bmm(weights, relaxed_permutation(s, m, sigma, smoothing))


class _NeuralSortMix(torch.autograd.Function):
    r"""``W @ softmax(c s^T + 1 b^T)`` ``[R, K, N]`` without autograd's ``[R, N, N]`` intermediates in the backward
    pass. With G the output's gradient, O the output and :math:`d_r = \sum_k W_{kr} (P G^T)_{rk}`:
    :math:`\partial L/\partial b_n = \sum_k G_{kn} O_{kn} - (d^T P)_n` and
    :math:`\partial L/\partial s_n = \sum_k G_{kn} ((c \odot W_k)^T P)_n - ((c \odot d)^T P)_n`: two products
    with P. ``c`` and ``W`` take no gradient. Where the backward pass itself is differentiated (``create_graph``,
    ``gradgradcheck``) P is recomputed from the inputs, so the second derivatives see it depend on them."""

    @staticmethod
    def forward(coefficient, s, bias, weights):  # type: ignore[override]  # noqa: D102 - autograd protocol
        p = _softmax_without_subnormals(_neuralsort_logits(s, coefficient, bias))
        return torch.bmm(weights, p), p

    @staticmethod
    def setup_context(ctx, inputs, output):  # the separate form torch.func's transforms need
        coefficient, s, bias, weights = inputs
        ctx.save_for_backward(coefficient, s, bias, weights, output[1])
        ctx.mark_non_differentiable(output[1])
        ctx.set_materialize_grads(False)  # P's own gradient is never used: no [R, N, N] of zeros

    @staticmethod
    def backward(ctx, grad, _):  # noqa: D102
        if grad is None:  # the mix did not reach the loss
            return None, None, None, None
        coefficient, s, bias, weights, p = ctx.saved_tensors
        if torch.is_grad_enabled():  # a differentiable backward pass: P as a function of the inputs
            p = _neuralsort_permutation(s, coefficient, bias)
        d = (weights.transpose(1, 2) * torch.bmm(p, grad.transpose(1, 2))).sum(-1)  # [R, N ranks]
        rows = torch.cat([weights, d[:, None, :], coefficient[:, None, :] * weights,
                          (coefficient * d)[:, None, :]], dim=1)
        mixed = torch.bmm(rows, p)  # [R, 2K + 2, N]
        k = weights.shape[1]
        grad_bias = (grad * mixed[:, :k]).sum(1) - mixed[:, k]
        grad_s = (grad * mixed[:, k + 1:2 * k + 1]).sum(1) - mixed[:, 2 * k + 1]
        return None, grad_s, grad_bias, None


class _NegativeDistance(torch.autograd.Function):
    """``-|a_r - b_n|`` ``[R, N, N]`` from ``a``, ``b`` ``[R, N]``; the backward pass recomputes the signs, so no
    ``[R, N, N]`` array is kept for it (written with torch operations: torch.func and second derivatives work)."""

    @staticmethod
    def forward(a, b):  # type: ignore[override]  # noqa: D102 - autograd protocol
        return torch.abs(a[:, :, None] - b[:, None, :]).neg_()

    @staticmethod
    def setup_context(ctx, inputs, output):  # the separate form torch.func's transforms need
        ctx.save_for_backward(*inputs)

    @staticmethod
    def backward(ctx, grad):  # noqa: D102
        a, b = ctx.saved_tensors
        flow = grad * torch.sign(b[:, None, :] - a[:, :, None])  # d(-|a - b|)/da
        return flow.sum(2), -flow.sum(1)


def _permutation_ranks(s: torch.Tensor, m: torch.Tensor, sigma: float, smoothing: str) -> torch.Tensor:
    ranks = torch.arange(1, s.shape[1] + 1, dtype=s.dtype, device=s.device)
    weights = torch.stack([_row_weights(ranks, m), _row_weights(torch.ones_like(ranks), m)], 1)  # [R, 2, N]
    expected, mass = permutation_mix(s, m, sigma, smoothing, weights).unbind(1)
    return torch.where(m, expected / torch.where(m, mass, torch.ones_like(mass)), torch.zeros_like(mass))


def soft_ranks(s: torch.Tensor, m: torch.Tensor, sigma: float, smoothing: str) -> torch.Tensor:
    """``[R, N]``: each real document's soft rank among its row's real documents (``m``); 0 at padding."""
    return SOFT_RANKS[smoothing](s, m, sigma)


Discount = Callable[[torch.Tensor], torch.Tensor]  # the discount at given 1-based ranks (float64)


def soft_positions(s: torch.Tensor, m: torch.Tensor, sigma: float, smoothing: str, discount: Discount) -> torch.Tensor:
    """``[B, N]``: the discount each real document gets under ``smoothing`` (:data:`SOFT_POSITIONS`), 0 at
    padding; ``discount`` the discount at given 1-based ranks (float64)."""
    return SOFT_POSITIONS[smoothing](s, m, sigma, discount)


def _discount_at_soft_rank(s: torch.Tensor, m: torch.Tensor, sigma: float, discount: Discount, *,
                           smoothing: str) -> torch.Tensor:
    """:math:`D(\\rho(n))`: the discount at the soft rank itself, as Qin et al.'s ApproxNDCG takes it (and Rax,
    allRank and TF-Ranking)."""
    ranks = soft_ranks(s, m, sigma, smoothing)
    at = torch.where(m, ranks, torch.ones_like(ranks))  # padding at rank 1: a finite discount, masked below
    return torch.where(m, discount(at.to(torch.float64)).to(s.dtype), torch.zeros_like(s))


def _interpolated_discount(s: torch.Tensor, m: torch.Tensor, sigma: float, discount: Discount, *,
                           smoothing: str) -> torch.Tensor:
    """D interpolated linearly between the integer ranks around :math:`\\rho(n)` (gaprank's own form)."""
    size = s.shape[1]
    table = discount(torch.arange(1, size + 2, dtype=torch.float64, device=s.device)).to(s.dtype)
    ranks = soft_ranks(s, m, sigma, smoothing).clamp(1.0, float(max(size, 1)))
    low = torch.floor(ranks).detach()
    frac = ranks - low
    index = (low.long() - 1).clamp(0, size - 1)
    below, above = table[index], table[index + 1]
    return torch.where(m, below + frac * (above - below), torch.zeros_like(ranks))


def _mixed_discount(s: torch.Tensor, m: torch.Tensor, sigma: float, discount: Discount, *,
                    smoothing: str) -> torch.Tensor:
    """:math:`\\sum_r D(r) P[r, n]` over the relaxed permutation's column of n."""
    size = s.shape[1]
    table = discount(torch.arange(1, size + 1, dtype=torch.float64, device=s.device)).to(s.dtype)
    mixed = permutation_mix(s, m, sigma, smoothing, _row_weights(table, m)[:, None, :])
    return torch.where(m, mixed[:, 0], torch.zeros_like(s))


def threshold_coefficients(kernel: Kernel) -> tuple[torch.Tensor, torch.Tensor]:
    """``(a [B, c+1 thresholds j, c+1 pivot grades u], e [B, c+1])`` of the threshold identity (module doc):
    ``a[:, j, u] = K[j, u] - K[j-1, u]`` for j <= u (0 above), ``e[:, u] = D[u] - K[u, u]``."""
    matrix = kernel.matrix
    steps = torch.cat([matrix[:, :1], matrix[:, 1:] - matrix[:, :-1]], dim=1)
    size = matrix.shape[-1]
    upper = torch.arange(size, device=matrix.device)
    below_pivot = upper[:, None] <= upper[None, :]  # j <= u
    coefficients = steps * below_pivot[None]
    own = kernel.diag - torch.diagonal(matrix, dim1=-2, dim2=-1)
    return coefficients, own


def kernel_decomposes(kernel: Kernel) -> torch.Tensor:
    """``[B]`` bool: ``K[t, u] = K[u, u]`` for every grade t >= u (where the measure is defined)."""
    matrix = kernel.matrix
    own = torch.diagonal(matrix, dim1=-2, dim2=-1)  # K[u, u]
    size = matrix.shape[-1]
    grade = torch.arange(size, device=matrix.device)
    above = (grade[:, None] >= grade[None, :])[None]  # t >= u
    scale = matrix.abs().amax((1, 2)).clamp_min(1e-300)
    off = ((matrix - own[:, None, :]).abs() * above).amax((1, 2)) / scale
    return (off <= 1e-12) | ~kernel.defined


def threshold_kernel_metric(ranks: torch.Tensor, m: torch.Tensor, labels: torch.Tensor, kernel: Kernel) -> torch.Tensor:
    """``[B]``: an AP-family measure from ranks ``[B, c+1, N]`` (``ranks[:, j, n]`` n's rank among the real
    documents of grade >= j; read where ``labels[n] >= j``) by the threshold identity (module doc)."""
    coefficients, own = threshold_coefficients(kernel)
    dtype = ranks.dtype
    size = coefficients.shape[1]
    per_doc = coefficients.to(dtype).gather(2, labels[:, None, :].expand(-1, size, -1))  # a_j(l_n): [B, c+1, N]
    num = own.to(dtype).gather(1, labels) + (per_doc * ranks).sum(1)
    overall = ranks[:, 0]
    return (torch.where(m, num / torch.where(m, overall, torch.ones_like(overall)), torch.zeros_like(num))).sum(-1)


def threshold_ranks(s: torch.Tensor, m: torch.Tensor, labels: torch.Tensor, num_classes: int, sigma: float,
                    smoothing: str) -> torch.Tensor:
    """``[B, c+1, N]``: soft ranks among the real documents of grade >= j, for every threshold j = 0..c, all
    in one batch of ``B (c+1)`` rankings."""
    batch, size = s.shape
    thresholds = torch.arange(num_classes, device=s.device)
    subsets = m[:, None, :] & (labels[:, None, :] >= thresholds[None, :, None])  # [B, c+1, N]
    flat = soft_ranks(s[:, None, :].expand(-1, num_classes, -1).reshape(-1, size), subsets.reshape(-1, size), sigma,
                      smoothing)
    return flat.reshape(batch, num_classes, size)


def refuse_kernel(measure: str, name: str, smoothing: str) -> GaprankInputError:
    """The refusal of an AP-family measure (the string ``measure``, of the registry entry ``name``) whose kernel
    does not decompose over grade thresholds."""
    return GaprankInputError(
        f"measure {measure!r}: smoothing={smoothing!r} takes the AP family through the threshold identity, which "
        f"needs K[t, u] = K[u, u] for every grade t above the pivot's u; {name}'s kernel changes with the grade "
        "above the pivot (AP, GAP, xGAP and eGAP decompose; vG and eRAP do not)")


# each rank smoothing's soft ranks, (s [R, N], m [R, N], sigma) -> [R, N]
SOFT_RANKS: dict[str, Callable[[torch.Tensor, torch.Tensor, float], torch.Tensor]] = {
    "approx": approx_ranks,
    "approx_interpolated": approx_ranks,
    "neuralsort": functools.partial(_permutation_ranks, smoothing="neuralsort"),
    "neuralsort_sinkhorn": functools.partial(_permutation_ranks, smoothing="neuralsort_sinkhorn"),
    "softsort": functools.partial(_permutation_ranks, smoothing="softsort"),
    "fast_soft_rank": fast_soft_ranks,
}
# ... and the discount each document gets, (s, m, sigma, discount) -> [R, N]
SOFT_POSITIONS: dict[str, Callable[[torch.Tensor, torch.Tensor, float, Discount], torch.Tensor]] = {
    "approx": functools.partial(_discount_at_soft_rank, smoothing="approx"),
    "approx_interpolated": functools.partial(_interpolated_discount, smoothing="approx"),
    "neuralsort": functools.partial(_mixed_discount, smoothing="neuralsort"),
    "neuralsort_sinkhorn": functools.partial(_mixed_discount, smoothing="neuralsort_sinkhorn"),
    "softsort": functools.partial(_mixed_discount, smoothing="softsort"),
    "fast_soft_rank": functools.partial(_interpolated_discount, smoothing="fast_soft_rank"),
}
RANK_SMOOTHINGS = tuple(SOFT_POSITIONS)
