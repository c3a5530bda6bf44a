r"""The exact expectation of an AP-family measure under SoftRank's Gaussian score model.

With :math:`s_j \sim N(\bar s_j, \sigma^2)` independent and :math:`B_{mn} = 1[s_m > s_n]`,

.. math::

    E[M] = \sum_n E\Big[\frac{D_n + \sum_{m \ne n} B_{mn} K_{mn}}{1 + \sum_{m \ne n} B_{mn}}\Big].

Given the pivot's score :math:`s_n = t`, the :math:`B_{mn}` are independent Bernoulli
:math:`q_m(t) = \Phi((\bar s_m - t)/\sigma)` (docs: The maths, "SoftRank, SoftGAP and the exact expectation"). With
:math:`f_m(x) = 1 - q_m + q_m x` and :math:`P(x) = \prod_m f_m(x)` (the generating function of the
count above), :math:`1/(a + S) = \int_0^1 x^{a+S-1} dx` gives

.. math::

    E_n(t) = \int_0^1 \frac{P(x)}{f_n(x)} \Big[D_n + x \sum_{m \ne n} K_{mn} \frac{q_m}{f_m(x)}\Big] dx,
    \qquad E[M] = \sum_n \int E_n(t)\, \frac{1}{\sigma}\varphi\Big(\frac{t - \bar s_n}{\sigma}\Big) dt.

The x-integrand is a polynomial of degree N-1, so Gauss-Legendre with ceil(N/2)+1 nodes integrates it
exactly. The t-integral uses one lattice of step sigma/4 shared by all pivots of a query (the trapezoid
rule converges geometrically on these smooth Gaussian integrands), so the sum over m is grouped by
grade: per lattice node and x node the work is O(N c). Pivot n's integrand has its mass within 8 sigma
of its mean score, so only lattice nodes within 8 sigma of some document are needed: the whole range
min(s) - 8 sigma .. max(s) + 8 sigma when the scores lie close together (T = 4 (score range / sigma) + 64
nodes), else the union of the documents' windows (at most 67 nodes per document), so the work never
grows with the score range. Scores are taken relative to the query's lowest real score (E[M] depends
on differences only), which keeps the lattice exact for scores of any magnitude. The lattice is
processed in blocks, each recomputed in the backward pass (activation checkpointing), which keeps memory
at one block.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from .._autograd import first_derivatives_only
from .._inputs import GaprankInputError
from ..metrics import Kernel, grade_indicators

GRID_STEP = 0.25  # t-grid step, in units of sigma (0.5 leaves ~1e-9 error, 0.25 none in float64)
GRID_HALF_WIDTH = 8.0  # the grid reaches this many sigmas beyond the extreme scores
EXACT_BLOCK_ELEMENTS = 1 << 21  # elements of one [B, t-nodes, x-nodes, N] block
# Lattice coordinates are integers held in float64: exact below 2^52.
MAX_LATTICE_INDEX = float(2**52)


def legendre_unit(nodes: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """Gauss-Legendre nodes and weights on (0, 1)."""
    x, w = np.polynomial.legendre.leggauss(nodes)
    return (torch.tensor((x + 1.0) / 2.0, dtype=torch.float64, device=device),
            torch.tensor(w / 2.0, dtype=torch.float64, device=device))


def _grid_block(s, t, node_weight, x, w, mask, onehot, k_cols, d_own, k_own, sigma, step):
    """Contribution of the t-nodes ``t`` ``[B, T]`` (weights ``node_weight``: 1, or 0 for a filler node)
    to E[M] for every query: ``[B]``."""
    z = (s[:, None, :] - t[:, :, None]) / sigma  # [B, T, N]
    q = torch.special.ndtr(z) * mask[:, None, :]  # q_m(t)
    density = (torch.exp(-0.5 * z * z) * (step / (sigma * math.sqrt(2.0 * math.pi))) * mask[:, None, :]
               * node_weight[:, :, None])
    qx = q[:, :, None, :]  # [B, T, 1, N]
    f = 1.0 - qx + qx * x[None, None, :, None]  # [B, T, Q, N]
    log_f = torch.log(f)
    ratio = qx / f
    by_grade = torch.einsum("btqn,bng->btqg", ratio, onehot)  # sum_m q_m / f_m per grade of m
    from_others = torch.einsum("btqg,bgn->btqn", by_grade, k_cols) - k_own[:, None, None, :] * ratio
    inner = d_own[:, None, None, :] + x[None, None, :, None] * from_others
    leave_out = torch.exp(log_f.sum(-1, keepdim=True) - log_f)  # P(x) / f_n(x)
    e_n = torch.einsum("btqn,q->btn", leave_out * inner, w)  # E_n(t)
    return (density * e_n).sum((1, 2))


class _RecomputedBlock(torch.autograd.Function):
    """One grid block whose graph is rebuilt in the backward pass (activation checkpointing that also
    works under ``torch.autograd.grad``): memory stays at one block."""

    @staticmethod
    def forward(ctx, s, *rest):  # noqa: D102
        ctx.save_for_backward(s)
        ctx.rest = rest
        with torch.no_grad():
            return _grid_block(s, *rest)

    @staticmethod
    @first_derivatives_only('smoothing="expected" (the exact expectation, recomputed in blocks)')
    def backward(ctx, grad_out):  # noqa: D102
        (s,) = ctx.saved_tensors
        with torch.enable_grad():
            leaf = s.detach().requires_grad_(True)
            (grad,) = torch.autograd.grad(_grid_block(leaf, *ctx.rest), leaf, grad_out)
        return (grad, *([None] * len(ctx.rest)))


def _lattice(s: torch.Tensor, mask: torch.Tensor, sigma: float, step: float) -> tuple[torch.Tensor, torch.Tensor]:
    """The t-nodes ``[B, T]`` (relative to the centred scores ``s``, whose real minimum is 0) and their
    weights (0 marks filler nodes of queries that need fewer than T); see the module doc."""
    batch, size = s.shape
    device = s.device
    half = math.ceil(GRID_HALF_WIDTH * sigma / step)  # lattice steps in 8 sigma
    top = s.masked_fill(~mask, -math.inf).max(-1).values
    span = torch.where(torch.isfinite(top), top, torch.zeros_like(top))  # 0 for a query with no document
    contiguous = int(torch.ceil(span.max() / step).item()) + 2 * half + 1  # one host sync: the grid's size
    n_real = int(mask.sum(-1).max().item())
    window = torch.arange(-half - 1, half + 2, dtype=torch.float64, device=device)  # 2 half + 3 nodes
    if contiguous <= max(1, n_real) * window.numel():
        grid = (torch.arange(contiguous, dtype=torch.float64, device=device) - half) * step
        return grid.expand(batch, -1), torch.ones(batch, contiguous, dtype=torch.float64, device=device)
    centres = torch.round(s / step)
    if float(centres.masked_fill(~mask, 0.0).max()) + half + 1 >= MAX_LATTICE_INDEX:
        raise GaprankInputError(f"smoothing='expected': the scores of one query span {float(span.max()):.3g}, more than "
                                f"2^50 sigma (sigma = {sigma:g}); rescale the scores or raise sigma")
    nodes = (centres[:, :, None] + window).masked_fill(~mask[:, :, None], math.inf).reshape(batch, -1)
    nodes = torch.sort(nodes, dim=-1).values
    keep = torch.isfinite(nodes)
    keep[:, 1:] &= nodes[:, 1:] != nodes[:, :-1]  # windows overlap: each lattice node once
    return torch.where(keep, nodes, torch.zeros_like(nodes)) * step, keep.to(torch.float64)


def expected_kernel_metric(
    scores: torch.Tensor, mask: torch.Tensor, labels: torch.Tensor, kernel: Kernel, sigma: float
) -> torch.Tensor:
    """E[M] ``[B]`` (float64, differentiable in ``scores``) for a kernel measure; see the module doc."""
    s = scores.to(torch.float64)
    batch, size = s.shape
    device = s.device
    n_real = int(mask.sum(-1).max().item())
    x, w = legendre_unit(max(1, n_real // 2 + 1), device)
    step = GRID_STEP * sigma
    with torch.no_grad():
        lowest = s.masked_fill(~mask, math.inf).min(-1).values
        lowest = torch.where(torch.isfinite(lowest), lowest, torch.zeros_like(lowest))  # queries with no document
    s = s - lowest[:, None]  # E[M] depends on score differences only; the shift carries no gradient
    with torch.no_grad():
        grid, node_weight = _lattice(s.detach(), mask, sigma, step)
    nodes = grid.shape[1]
    num_classes = kernel.matrix.shape[-1]
    onehot = grade_indicators(labels, num_classes).to(torch.float64) * mask[..., None]
    k_cols = kernel.matrix.gather(2, labels[:, None, :].expand(-1, num_classes, -1))  # K[g, l_n]
    d_own = kernel.diag.gather(1, labels)
    k_own = torch.diagonal(kernel.matrix, dim1=-2, dim2=-1).gather(1, labels)
    maskf = mask.to(torch.float64)
    per_block = max(1, EXACT_BLOCK_ELEMENTS // max(1, batch * x.numel() * size))
    total = s.new_zeros(batch)
    for start in range(0, nodes, per_block):
        stop = start + per_block
        args = (s, grid[:, start:stop], node_weight[:, start:stop], x, w, maskf, onehot, k_cols, d_own, k_own,
                sigma, step)
        total = total + _RecomputedBlock.apply(*args)
    return total
