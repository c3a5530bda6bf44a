r"""Soft ranks by projection onto the permutahedron (Blondel, Teboul, Berthet and Djolonga, "Fast
differentiable sorting and ranking", ICML 2020), with the pool-adjacent-violators pass compiled (numba).

With :math:`z = -s/\varepsilon` and :math:`w = (n, n-1, \dots, 1)`, the soft ranks are the Euclidean
projection of :math:`z` onto the permutahedron of :math:`w` (the convex hull of the permutations of the ranks
1..n): :math:`r = P(z)`. The highest score gets the rank nearest 1, and as :math:`\varepsilon \to 0` with
distinct scores :math:`r` is the exact rank. With :math:`\pi` the order that sorts :math:`z` descending
(the scores ascending), Blondel et al.'s Proposition 3 gives

.. math::

    r_\pi = z_\pi - v, \qquad v = \arg\min_{v_1 \ge \dots \ge v_n} \tfrac12 \lVert v - (z_\pi - w) \rVert^2,

an isotonic regression that the pool-adjacent-violators algorithm solves in one O(n) pass after the
O(n log n) sort: ``v`` is constant on blocks of consecutive sorted positions, each block's value the mean of
:math:`z_\pi - w` over it. The compiled pass returns only the blocks; the values are then taken as block
means with differentiable torch operations, so autograd's gradient is the projection's Jacobian
:math:`I - \Pi^\top B\, \Pi` (B averages within a block) and nothing of size :math:`n^2` is ever held:
O(n log n) time, O(n) memory per list. Tied scores fall in one block and share the mean of the ranks they
span. Padding (``mask`` False) takes no part: each list is projected onto the permutahedron of its own real
length, and padding's ranks are 0.

On a GPU the blocks are found on the CPU (the scores go there and the block ids come back: one transfer each
way); everything else stays on the device.
"""

from __future__ import annotations

import numpy as np
import torch

try:
    import numba
    from numba import prange
except ImportError:  # pragma: no cover - numba is a dependency; without it the same pass runs in Python
    numba = None  # type: ignore[assignment]
    prange = range


def _pav_blocks(targets: np.ndarray, lengths: np.ndarray, blocks: np.ndarray) -> None:  # pragma: no cover - compiled
    """For each row's first ``lengths[row]`` entries, the blocks of the non-increasing isotonic regression of
    ``targets``: ``blocks[row, k]`` = the first position of k's block (positions past the length: k itself)."""
    rows, size = targets.shape
    for row in prange(rows):
        length = lengths[row]
        starts = np.empty(size + 1, dtype=np.int64)  # the stack of blocks: first position, sum, count
        sums = np.empty(size + 1, dtype=np.float64)
        counts = np.empty(size + 1, dtype=np.int64)
        top = 0
        for k in range(length):
            starts[top], sums[top], counts[top] = k, targets[row, k], 1
            top += 1
            # v must not increase: pool the last two blocks while the later one's mean is at least the earlier's
            while top > 1 and sums[top - 2] * counts[top - 1] <= sums[top - 1] * counts[top - 2]:
                sums[top - 2] += sums[top - 1]
                counts[top - 2] += counts[top - 1]
                top -= 1
        for b in range(top):
            for k in range(starts[b], starts[b] + counts[b]):
                blocks[row, k] = starts[b]
        for k in range(length, size):
            blocks[row, k] = k


if numba is not None:
    # contract: multiply-adds fused, never reordered; each row is one thread's, so the result does not depend
    # on the number of threads; cache: compiled once, kept on disk
    _pav_blocks = numba.njit(parallel=True, cache=True, fastmath={"contract"}, error_model="numpy")(_pav_blocks)


def isotonic_blocks(targets: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """``[R, N]`` int64 on ``targets``' device: the block (its first position) of each sorted position in the
    non-increasing isotonic regression of each row's first ``lengths`` entries of ``targets`` ``[R, N]``."""
    values = np.ascontiguousarray(targets.detach().to("cpu", torch.float64).numpy())
    counts = np.ascontiguousarray(lengths.detach().to("cpu", torch.int64).numpy())
    blocks = np.empty(values.shape, dtype=np.int64)
    if values.size:
        _pav_blocks(values, counts, blocks)
    return torch.from_numpy(blocks).to(targets.device)


def fast_soft_ranks(scores: torch.Tensor, mask: torch.Tensor, epsilon: float) -> torch.Tensor:
    """Soft ranks ``[R, N]`` (1 near the highest score) of each row's real documents (``mask``), by projection
    onto the permutahedron with regularisation strength ``epsilon``; 0 at padding. Differentiable in
    ``scores`` (autograd, O(N) memory per row); see the module doc."""
    rows, size = scores.shape
    if size == 0:
        return scores.clone()
    lengths = mask.sum(-1)
    # ascending scores, padding last: z = -s/eps sorted descending
    order = torch.sort(scores.detach().masked_fill(~mask, torch.inf), dim=-1, stable=True).indices
    z = -scores.gather(1, order) / epsilon
    position = torch.arange(size, device=scores.device)
    real = position[None, :] < lengths[:, None]
    top = lengths[:, None].to(z.dtype)
    with torch.no_grad():
        blocks = isotonic_blocks(torch.where(real, z - (top - position), torch.zeros_like(z)), lengths)
        counts = torch.zeros_like(z).scatter_add_(1, blocks, torch.ones_like(z)).gather(1, blocks)
        # w = n - k over the block's positions k = first .. first + count - 1: its mean, without a pass
        w_means = top - blocks.to(z.dtype) - 0.5 * (counts - 1.0)
    z_means = torch.zeros_like(z).scatter_add(1, blocks, z).gather(1, blocks) / counts
    # z - mean(z - w), written so that a block of one gives w exactly, whatever the size of z
    ranks_sorted = torch.where(real, w_means + (z - z_means), torch.zeros_like(z))
    return torch.zeros_like(ranks_sorted).scatter(1, order, ranks_sorted)
