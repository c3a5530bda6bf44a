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
:math:`z_\pi - w` over it. The compiled pass returns the blocks; the values are then block means taken with
torch operations, and the backward pass applies the projection's Jacobian :math:`I - \Pi^\top B\, \Pi`
(B averages within a block) from the order and the blocks alone. Nothing of size :math:`n^2` is ever held:
O(n log n) time, O(n) memory per list. Tied scores fall in one block and share the mean of the ranks they
span. Padding (``mask`` False) takes no part: each list is projected onto the permutahedron of its own real
length, and padding's ranks are 0.

On a GPU the blocks are found on the CPU (the scores go there and the block ids come back: one transfer each
way); everything else stays on the device.
"""

from __future__ import annotations

import numpy as np
import torch

from .._autograd import opaque_to_compile
from .._compiled_setup import jit, numba


def _pav_blocks(z: np.ndarray, lengths: np.ndarray, blocks: np.ndarray, counts: np.ndarray,
                w_means: np.ndarray) -> None:  # pragma: no cover - compiled
    """For each row's first ``lengths[row] = n`` entries, the blocks of the non-increasing isotonic regression of
    ``z[k] - (n - k)`` (k from 0): ``blocks[row, k]`` the first position of k's block, ``counts`` its size and
    ``w_means`` the mean of ``n - k`` over it; past the length each position is a block of its own (mean 0).
    On the calling thread: O(N) per row, less than waking numba's threads costs at any common size."""
    rows, size = z.shape
    for row in range(rows):
        length = lengths[row]
        starts = np.empty(size + 1, dtype=np.int64)  # the stack of blocks: first position, sum, count
        sums = np.empty(size + 1, dtype=np.float64)
        sizes = np.empty(size + 1, dtype=np.int64)
        top = 0
        for k in range(length):
            starts[top], sums[top], sizes[top] = k, np.float64(z[row, k]) - (length - k), 1
            top += 1
            # v must not increase: pool the last two blocks while the later one's mean is at least the earlier's
            while top > 1 and sums[top - 2] * sizes[top - 1] <= sums[top - 1] * sizes[top - 2]:
                sums[top - 2] += sums[top - 1]
                sizes[top - 2] += sizes[top - 1]
                top -= 1
        for b in range(top):
            first, count = starts[b], sizes[b]
            mean = length - first - 0.5 * (count - 1)  # of n - k over k = first .. first + count - 1
            for k in range(first, first + count):
                blocks[row, k], counts[row, k], w_means[row, k] = first, count, mean
        for k in range(length, size):
            blocks[row, k], counts[row, k], w_means[row, k] = k, 1, 0


# contract: multiply-adds fused, never reordered; compiled once, kept in numba's disk cache where it has one
# (gaprank._compiled_setup); without numba the same pass runs in Python
pav_blocks = jit(_pav_blocks, fastmath={"contract"}, error_model="numpy") if numba is not None else _pav_blocks


def isotonic_blocks(z: torch.Tensor, lengths: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The blocks of the non-increasing isotonic regression of each row's ``z - w`` (``z`` ``[R, N]`` sorted
    descending over its first ``lengths`` entries, ``w`` = n, n-1, ..., 1): per position its block's first
    position (int64), its block's size and the mean of ``w`` over its block (``z``'s dtype), on ``z``'s
    device; no gradient."""
    values = np.ascontiguousarray(z.detach().cpu().numpy())
    sizes = np.ascontiguousarray(lengths.detach().to("cpu", torch.int64).numpy())
    blocks = np.empty(values.shape, dtype=np.int64)
    counts = np.empty(values.shape, dtype=values.dtype)
    w_means = np.empty(values.shape, dtype=values.dtype)
    if values.size:
        pav_blocks(values, sizes, blocks, counts, w_means)
    return tuple(torch.from_numpy(array).to(z.device) for array in (blocks, counts, w_means))  # type: ignore[return-value]


def fast_soft_ranks(scores: torch.Tensor, mask: torch.Tensor, epsilon: float) -> torch.Tensor:
    """Soft ranks ``[R, N]`` (1 near the highest score) of each row's real documents (``mask``), by projection
    onto the permutahedron with regularisation strength ``epsilon``; 0 at padding. Differentiable in
    ``scores`` (O(N) memory per row kept for the backward pass); see the module doc."""
    if scores.shape[1] == 0:
        return scores.clone()
    return _projected_ranks(scores, mask, float(epsilon))


class _FastSoftRanks(torch.autograd.Function):
    r"""The projection, keeping for the backward pass only the sorting order, the blocks and their sizes: the
    Jacobian is :math:`-(I - \Pi^\top B \Pi)/\varepsilon`, B the block average, the same linear map written
    with differentiable operations (so a second derivative, 0 almost everywhere, is available too)."""

    @staticmethod
    def forward(scores, mask, epsilon):  # type: ignore[override]  # noqa: D102 - autograd protocol
        lengths = mask.sum(-1)
        # ascending scores, padding last: z = -s/eps sorted descending
        order = torch.sort(scores.masked_fill(~mask, torch.inf), dim=-1, stable=True).indices
        z = scores.gather(1, order).mul_(-1.0 / epsilon)
        blocks, counts, w_means = isotonic_blocks(z, lengths)
        real = torch.gather(mask, 1, order)
        z_means = torch.zeros_like(z).scatter_add_(1, blocks, z).gather(1, blocks).div_(counts)
        # z - mean(z - w), written so that a block of one gives w exactly, whatever the size of z
        ranks_sorted = z.sub_(z_means).add_(w_means).masked_fill_(~real, 0.0)
        ranks = torch.zeros_like(ranks_sorted).scatter_(1, order, ranks_sorted)
        return ranks, order, blocks, counts

    @staticmethod
    def setup_context(ctx, inputs, output):  # the separate form torch.func's transforms need
        _, order, blocks, counts = output
        ctx.mark_non_differentiable(order, blocks, counts)
        ctx.save_for_backward(order, blocks, counts)
        ctx.epsilon = inputs[2]

    @staticmethod
    def backward(ctx, grad, *unused):  # noqa: D102
        order, blocks, counts = ctx.saved_tensors
        # padding's positions are blocks of their own, so their term below is 0 without a mask
        incoming = grad.gather(1, order)
        means = torch.zeros_like(incoming).scatter_add_(1, blocks, incoming).gather(1, blocks).div_(counts)
        through = incoming.sub_(means).mul_(-1.0 / ctx.epsilon)
        return torch.zeros_like(through).scatter_(1, order, through), None, None


@opaque_to_compile  # numba: under torch.compile an opaque call, not traced
def _projected_ranks(scores: torch.Tensor, mask: torch.Tensor, epsilon: float) -> torch.Tensor:
    return _FastSoftRanks.apply(scores, mask, epsilon)[0]
