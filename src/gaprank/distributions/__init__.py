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


# Stored elements of one pivot block's recursion states (the backward pass recomputes them per block).
RECURSION_BLOCK_ELEMENTS = 1 << 25


def _run_recursion(beats: torch.Tensor, states: torch.Tensor) -> None:
    """Fill ``states`` ``[M+1, B, P, M+1]``: state i = the law of the count above each pivot after the
    first i other documents, stored at ``[..., 1:]`` behind a zero column so that the shift r -> r+1
    is the view ``[..., :-1]``. ``beats`` ``[M, B, P, 1]``. One ``lerp`` per other document."""
    states[0].zero_()
    states[0, ..., 1] = 1.0
    for other in range(beats.shape[0]):
        prev, nxt = states[other], states[other + 1]
        nxt[..., 0] = 0.0
        torch.lerp(prev[..., 1:], prev[..., :-1], beats[other], out=nxt[..., 1:])


class _RankRecursion(torch.autograd.Function):
    """SoftRank's recursion with a hand-written adjoint (no autograd graph over the M steps).

    Forward keeps only the final laws; backward recomputes the states one block of pivots at a time
    (at most ``RECURSION_BLOCK_ELEMENTS`` held) and runs the adjoint recursion
    ``adj_{i-1} = adj_i + pi_i (shift_down(adj_i) - adj_i)``,
    ``d/d pi_i = <adj_i, shift_up(p_{i-1}) - p_{i-1}>``."""

    @staticmethod
    def forward(ctx, pi):  # noqa: D102 - [B, M(other), N(pivot)] -> [B, N, M]
        ctx.save_for_backward(pi)
        batch, others, pivots = pi.shape
        beats = pi.permute(1, 0, 2).unsqueeze(-1)
        buffers = pi.new_empty(2, batch, pivots, others + 1)
        buffers[0].zero_()
        buffers[0, ..., 1] = 1.0
        for other in range(others):  # ping-pong between two buffers
            prev, nxt = buffers[other % 2], buffers[(other + 1) % 2]
            nxt[..., 0] = 0.0
            torch.lerp(prev[..., 1:], prev[..., :-1], beats[other], out=nxt[..., 1:])
        return buffers[others % 2, ..., 1:].clone()

    @staticmethod
    @first_derivatives_only("SoftNDCG (SoftRank's rank distributions)")
    def backward(ctx, grad_dist):  # noqa: D102
        (pi,) = ctx.saved_tensors
        batch, others, pivots = pi.shape
        beats_all = pi.permute(1, 0, 2).unsqueeze(-1)  # [M, B, N, 1]
        grad_pi = pi.new_empty(others, batch, pivots)  # contiguous per step; permuted at the end
        per_block = max(1, RECURSION_BLOCK_ELEMENTS // max(1, batch * (others + 1) ** 2))
        per_block = min(per_block, pivots)
        buffer = pi.new_empty(others + 1, batch, per_block, others + 1)  # reused: fresh pages are slow
        for start in range(0, pivots, per_block):
            stop = min(pivots, start + per_block)
            beats = beats_all[:, :, start:stop]
            states = buffer[:, :, : stop - start]
            _run_recursion(beats, states)
            adj = pi.new_zeros(batch, stop - start, others + 1)  # zero column at the end: adj(M) = 0
            adj[..., :-1] = grad_dist[:, start:stop]
            for other in reversed(range(others)):
                # <adj, shift_up(p) - p> = <shift_down(adj) - adj, p>; the same difference updates adj
                step = adj[..., 1:] - adj[..., :-1]
                grad_pi[other, :, start:stop] = torch.linalg.vecdot(step, states[other][..., 1:])
                adj[..., :-1].addcmul_(beats[other], step)
        return grad_pi.permute(1, 0, 2)


def rank_recursion(pi: torch.Tensor) -> torch.Tensor:
    """SoftRank's recursion for the pivots in the last axis of ``pi`` ``[B, M(other), N(pivot)]``:
    returns ``[B, N, M]``, the law of the number of others above each pivot (0..M-1).
    Cost O(B M^2 N) time, O(B M N) memory plus one block of recursion states in the backward pass."""
    return _RankRecursion.apply(pi)


__all__ = ["pairwise_probs", "rank_distribution"]
