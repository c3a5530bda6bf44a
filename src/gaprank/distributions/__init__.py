r"""Score distributions of SoftRank (Taylor, Guiver, Robertson and Minka, WSDM 2008).

Each document's score is an independent Gaussian ``s_j ~ N(sbar_j, sigma^2)``.

* :func:`pairwise_probs`: :math:`\pi_{mn} = P(s_m > s_n) = \Phi((\bar s_m - \bar s_n) / (\sigma\sqrt 2))`.
* :func:`rank_distribution`: the law of each document's 0-based rank, built by SoftRank's recursion
  :math:`p_n^{(i)}(r) = p_n^{(i-1)}(r-1)\,\pi_{in} + p_n^{(i-1)}(r)\,(1 - \pi_{in})`.

Both are differentiable in the scores and follow the library's shapes: ``[batch, list]`` or ``[list]``
input, boolean ``mask`` (True = a real document); padding never counts.
"""

from __future__ import annotations

import math

import torch

from .._autograd import first_derivatives_only
from .._inputs import GaprankInputError, batch_mask, check_sigma
from .._typing import ArrayLike
from . import _compiled


def _prepare(scores: ArrayLike, sigma: float, mask: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor, bool]:
    if not isinstance(scores, torch.Tensor):
        raise GaprankInputError("scores must be a torch tensor (these functions are differentiable)")
    if scores.ndim not in (1, 2) or scores.shape[-1] == 0:
        raise GaprankInputError(f"scores must be a non-empty [list] or [batch, list] tensor; got {tuple(scores.shape)}")
    check_sigma(sigma)
    squeeze = scores.ndim == 1
    s = scores[None] if squeeze else scores
    m = batch_mask(mask, tuple(scores.shape), s.device)
    if not bool(torch.isfinite(s[m]).all()):
        raise GaprankInputError("scores contain NaN or infinite values")
    return s.masked_fill(~m, 0.0), m, squeeze


def pair_block(s: torch.Tensor, m: torch.Tensor, sigma: float, first: int, last: int
               ) -> tuple[torch.Tensor, torch.Tensor]:
    """Rows ``first:last`` of z = (s_m - s_n) / (sigma sqrt 2), pi_mn = Phi(z), and of the pairs that
    count (both documents real, m != n)."""
    z = (s[:, first:last, None] - s[:, None, :]) / (sigma * math.sqrt(2.0))
    off_diagonal = torch.arange(first, last, device=s.device)[:, None] != torch.arange(s.shape[1], device=s.device)
    return z, m[:, first:last, None] & m[:, None, :] & off_diagonal


def pairwise_matrix(s: torch.Tensor, m: torch.Tensor, sigma: float) -> torch.Tensor:
    z, keep = pair_block(s, m, sigma, 0, s.shape[1])
    return torch.special.ndtr(z) * keep


def pairwise_probs(scores: torch.Tensor, sigma: float, *, mask: torch.Tensor | None = None) -> torch.Tensor:
    r"""``pi[b, m, n] = P(s_m > s_n)`` under independent Gaussian scores with standard deviation ``sigma``.

    The diagonal and every pair involving padding are 0.

    Parameters
    ----------
    scores : torch.Tensor
        The mean scores, ``[list]`` or ``[batch, list]``.
    sigma : float
        The standard deviation of each score.
    mask : torch.Tensor of bool, optional
        True marks a real document.

    Returns
    -------
    torch.Tensor
        ``[batch, list, list]`` (``[list, list]`` for one query).

    Examples
    --------
    >>> import torch
    >>> from gaprank.distributions import pairwise_probs
    >>> round(pairwise_probs(torch.tensor([1.0, 0.0]), sigma=1.0)[0, 1].item(), 4)   # Phi(1 / sqrt 2)
    0.7602
    """
    s, m, squeeze = _prepare(scores, sigma, mask)
    pi = pairwise_matrix(s, m, float(sigma))
    return pi[0] if squeeze else pi


def rank_distribution(scores: torch.Tensor, sigma: float, *, mask: torch.Tensor | None = None) -> torch.Tensor:
    r"""``p[b, n, r] = P(document n at 0-based rank r)``, by SoftRank's recursion over the other documents.

    Rows of real documents sum to 1 over ranks 0..(real documents - 1); padding rows and columns are 0.
    The expected rank is :math:`\sum_{m \ne n} \pi_{mn}`. As in SoftRank, the events "m above n" are
    combined as independent Bernoullis (a Poisson-binomial law); the exact rank law under the Gaussian
    model couples them through s_n and has the same mean. Cost O(B N^3) time, O(B N^2) memory.

    Parameters
    ----------
    scores, sigma, mask
        As in :func:`pairwise_probs`.

    Returns
    -------
    torch.Tensor
        ``[batch, list, list]``: entry [b, n, r] is the probability that document n is at 0-based rank r.

    Examples
    --------
    >>> import torch
    >>> from gaprank.distributions import rank_distribution
    >>> p = rank_distribution(torch.tensor([2.0, 0.0, -2.0]), sigma=0.5)
    >>> [round(v, 3) for v in p.sum(-1).tolist()]
    [1.0, 1.0, 1.0]
    """
    s, m, squeeze = _prepare(scores, sigma, mask)
    dist = rank_recursion(pairwise_matrix(s, m, float(sigma))) * m[:, :, None]
    return dist[0] if squeeze else dist


# Elements of one block of the torch path's correlation windows ([B, pivots, N, N] per block).
CORRELATION_BLOCK_ELEMENTS = 1 << 24
# Elements of the [B, N, N] float64 laws the compiled expectation keeps for its backward pass (256 MB);
# above it the backward pass makes them again.
SAVED_LAW_ELEMENTS = 1 << 25


def _compiled_path(tensor: torch.Tensor) -> bool:
    """Whether the compiled kernels take work on ``tensor``'s device (the CPU, with numba)."""
    return tensor.device.type == "cpu" and _compiled.available()


def _torch_rank_laws(pi: torch.Tensor) -> torch.Tensor:
    """The recursion as whole-tensor steps, one ``lerp`` per other document (any device)."""
    batch, others, pivots = pi.shape
    beats = pi.permute(1, 0, 2).unsqueeze(-1)
    buffers = pi.new_empty(2, batch, pivots, others + 1)  # count r at [..., r + 1] behind a zero column
    buffers[0].zero_()
    buffers[0, ..., 1] = 1.0
    for other in range(others):  # ping-pong between two buffers
        prev, nxt = buffers[other % 2], buffers[(other + 1) % 2]
        nxt[..., 0] = 0.0
        torch.lerp(prev[..., 1:], prev[..., :-1], beats[other], out=nxt[..., 1:])
    return buffers[others % 2, ..., 1:].clone()


def _torch_rank_laws_adjoint(pi: torch.Tensor, laws: torch.Tensor, grad_laws: torch.Tensor) -> torch.Tensor:
    """The compiled adjoint's arithmetic (see :mod:`._compiled`) as whole-tensor operations: the two
    correlations over blocks of pivots, then one Horner step per count for every pair at once."""
    batch, others, pivots = pi.shape
    count = (pi != 0).sum(1)  # [B, N]: the support of each pivot's law is 0..count
    within = torch.arange(others, device=pi.device) <= count[..., None]
    step = torch.cat([grad_laws[..., 1:], grad_laws.new_zeros(batch, pivots, 1)], -1) - grad_laws
    step = step * within  # h_r, r = 0..M-1, zero past the support
    padded_step = torch.nn.functional.pad(step, (0, others))
    padded_laws = torch.nn.functional.pad(laws, (0, others + 1))
    low, high = torch.empty_like(step), torch.empty_like(step)
    per_block = max(1, CORRELATION_BLOCK_ELEMENTS // max(1, batch * others * others))
    for first in range(0, pivots, per_block):
        last = min(pivots, first + per_block)
        # windows[..., d, j] = h_{j+d} and p_{j+1+d}
        step_windows = padded_step[:, first:last].unfold(-1, others, 1)[..., :others, :]
        law_windows = padded_laws[:, first:last, 1:].unfold(-1, others, 1)[..., :others, :]
        low[:, first:last] = (step_windows @ laws[:, first:last, :, None]).squeeze(-1)
        high[:, first:last] = (law_windows @ step[:, first:last, :, None]).squeeze(-1)
    lower = pi <= 0.5  # [B, M, N]
    ratio = torch.where(lower, -pi / (1.0 - pi), -(1.0 - pi) / pi.clamp_min(0.5))
    low, high = low.transpose(1, 2), high.transpose(1, 2)  # [B, d, N]
    acc = torch.zeros_like(pi)
    for d in reversed(range(others)):
        acc = acc * ratio + torch.where(lower, low[:, d, None, :], high[:, d, None, :])
    return acc / torch.where(lower, 1.0 - pi, pi)


class _RankRecursion(torch.autograd.Function):
    """SoftRank's recursion with a hand-written adjoint that keeps no history: the gradient divides each
    factor back out of the final law (:mod:`._compiled`'s module doc). On the CPU both passes run
    compiled, in float64 (the backward pass recomputes the laws); elsewhere as whole-tensor operations in
    the input's dtype."""

    @staticmethod
    def forward(ctx, pi):  # noqa: D102 - [B, M(other), N(pivot)] -> [B, N, M]
        if _compiled_path(pi):
            pi64 = pi.detach().to(torch.float64).contiguous()
            laws = pi64.new_empty(pi.shape[0], pi.shape[2], pi.shape[1])
            _compiled.rank_laws(pi64.numpy(), laws.numpy())
            ctx.save_for_backward(pi64)
            return laws.to(pi.dtype)
        laws = _torch_rank_laws(pi)
        ctx.save_for_backward(pi, laws)
        return laws

    @staticmethod
    @first_derivatives_only("SoftNDCG (SoftRank's rank distributions)")
    def backward(ctx, grad_laws):  # noqa: D102
        pi = ctx.saved_tensors[0]
        if _compiled_path(pi):
            grad_pi = torch.empty_like(pi)
            grad64 = grad_laws.to(torch.float64).contiguous()
            _compiled.rank_laws_adjoint(pi.numpy(), grad64.numpy(), grad_pi.numpy())
            return grad_pi.to(grad_laws.dtype)
        return _torch_rank_laws_adjoint(pi, ctx.saved_tensors[1], grad_laws)


class _ExpectedScoreRankValues(torch.autograd.Function):
    r""":math:`\sum_r p_n(r)\, v_r` from the scores, compiled end to end on the CPU, in float64: the kernel
    makes the pair probabilities (one erfc per pair) and the expectations, keeps the laws for the backward
    pass when they fit in ``SAVED_LAW_ELEMENTS`` (else it makes them again), and takes the gradient in ``pi``
    back to the scores itself (one exp per pair): no [B, N, N] tensor is recorded by autograd."""

    @staticmethod
    def forward(ctx, s, m, sigma, values):  # noqa: D102 - [B, N], [B, N], float, [N] -> [B, N]
        batch, size = s.shape
        s64 = s.detach().to(torch.float64).contiguous()
        m = m.contiguous()
        c = 1.0 / (2.0 * sigma)
        pi = s64.new_empty(batch, size, size).transpose(1, 2)  # pi[b, m, n], each pivot n's column contiguous
        _compiled.row_pairs(s64.numpy(), m.numpy(), c, pi.numpy(), False)
        values64 = values.detach().to(device=s.device, dtype=torch.float64).contiguous()
        keep = ctx.needs_input_grad[0] and batch * size * size <= SAVED_LAW_ELEMENTS
        laws = s64.new_empty((batch, size, size) if keep else (0, 0, 0))  # read only within ``bounds``
        bounds = torch.zeros((batch, size, 2) if keep else (0, 0, 0), dtype=torch.int64)
        out = s64.new_empty(s.shape)
        _compiled.expected_values(pi.numpy(), values64.numpy(), out.numpy(), laws.numpy(), bounds.numpy())
        ctx.save_for_backward(s64, m, pi, values64, laws, bounds)
        ctx.c = c
        return out.to(s.dtype)

    @staticmethod
    @first_derivatives_only("SoftNDCG (SoftRank's rank distributions)")
    def backward(ctx, grad_out):  # noqa: D102
        s64, m, pi, values, laws, bounds = ctx.saved_tensors
        grad_pi = torch.empty_like(pi.transpose(1, 2)).transpose(1, 2)  # pi's layout
        weights = grad_out.to(torch.float64).contiguous()
        _compiled.expected_values_adjoint(pi.numpy(), values.numpy(), weights.numpy(), laws.numpy(), bounds.numpy(),
                                          grad_pi.numpy())
        _compiled.row_pairs(s64.numpy(), m.numpy(), ctx.c, grad_pi.numpy(), True)  # the terms A over grad_pi
        grad_s = torch.empty_like(s64)
        _compiled.column_sums(grad_pi.numpy(), -ctx.c / math.sqrt(math.pi), grad_s.numpy())
        return grad_s.to(grad_out.dtype), None, None, None


def rank_recursion(pi: torch.Tensor) -> torch.Tensor:
    """SoftRank's recursion for the pivots in the last axis of ``pi`` ``[B, M(other), N(pivot)]``:
    returns ``[B, N, M]``, the law of the number of others above each pivot (0..M-1).
    Cost O(B M^2 N) time, O(B M N) memory in both passes (the backward pass keeps no recursion states)."""
    return _RankRecursion.apply(pi)


def expected_score_rank_values(s: torch.Tensor, m: torch.Tensor, sigma: float, values: torch.Tensor) -> torch.Tensor:
    r"""``[B, N]``: :math:`\sum_r p_n(r)\, v_r`, the expectation of ``values`` ``[N]`` (a constant per 0-based
    rank) under each document's rank law given the scores ``s`` (padding at 0) and ``mask`` ``m``,
    differentiable in ``s``. On the CPU compiled from the scores on (:class:`_ExpectedScoreRankValues`);
    elsewhere the laws times the values."""
    if _compiled_path(s):
        return _ExpectedScoreRankValues.apply(s, m, float(sigma), values)
    return rank_recursion(pairwise_matrix(s, m, sigma)) @ values.to(s.dtype)


__all__ = ["pairwise_probs", "rank_distribution"]
