r"""Score distributions of SoftRank (Taylor, Guiver, Robertson and Minka, WSDM 2008).

Each document's score is an independent Gaussian ``s_j ~ N(sbar_j, sigma^2)``.

* :func:`pairwise_probs`: :math:`\pi_{mn} = P(s_m > s_n) = \Phi((\bar s_m - \bar s_n) / (\sigma\sqrt 2))`.
* :func:`rank_distribution`: the law of each document's 0-based rank, built by SoftRank's recursion
  :math:`p_n^{(i)}(r) = p_n^{(i-1)}(r-1)\,\pi_{in} + p_n^{(i-1)}(r)\,(1 - \pi_{in})`.

Both are differentiable in the scores and follow the library's shapes: ``[batch, list]`` or ``[list]``
input, boolean ``mask`` (True = a real document); padding never counts. They are built on the engine's rank laws
(:mod:`gaprank._engine.rank_laws`, compiled on the CPU), which the soft losses use too.
"""

from __future__ import annotations

import torch

from .._engine import pairwise_matrix, rank_recursion
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


__all__ = ["pairwise_probs", "rank_distribution"]
