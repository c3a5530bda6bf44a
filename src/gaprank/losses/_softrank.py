r"""SoftRank's maths (Taylor et al., WSDM 2008): the smooth measures under independent Gaussian scores
:math:`s_j \sim N(\bar s_j, \sigma^2)`, so that :math:`\pi_{mn} = P(s_m > s_n) = \Phi((\bar s_m - \bar s_n)/(\sigma\sqrt 2))`.

* The AP family (Robertson et al. 2010, sec. 5, with the kernel of the docs' page The maths, "One kernel for the AP
  family"): :math:`\mathrm{Soft}M = \sum_n PC_n`,
  :math:`PC_n = (D[l_n] + \sum_{m \ne n} \pi_{mn} K[l_m, l_n]) / (1 + \sum_{m \ne n} \pi_{mn})`.
  The sum over m is grouped by grade (``[B, c+1, N]``) and taken over blocks of rows m in both passes (pi
  recomputed in the backward pass), so memory is O(B N c) plus one block, never the ``[B, N, N]`` matrix of pi.
  As sigma -> 0 with distinct scores it equals the measure.
* The discounted-gain family (SoftNDCG): the discount expected under each document's rank distribution,
  :math:`\sum_r D(r) p_n(r)`, from the engine's rank laws.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

from .._engine import RankLawBuffers, expected_score_rank_values, pair_block
from ..metrics import Kernel, grade_indicators

# Elements of one block of the pair matrix (batch x rows x list) in the paper-mode sums: the N x N matrix of
# pi is never held whole, in the forward pass or the backward pass.
PAIR_BLOCK_ELEMENTS = 1 << 20


def _row_blocks(batch: int, size: int) -> list[tuple[int, int]]:
    rows = max(1, PAIR_BLOCK_ELEMENTS // max(1, batch * size))
    return [(first, min(size, first + rows)) for first in range(0, size, rows)]


class _GradedPairSums(torch.autograd.Function):
    r"""``(above_by_grade [B, C, N], above [B, N])``: :math:`\sum_m 1[l_m = t] \pi_{mn}` and
    :math:`\sum_m \pi_{mn}` over real m != n, computed over blocks of rows m in both passes. The backward
    pass is written with differentiable operations, so second derivatives stay available (then the
    graph of the gradient holds its blocks)."""

    @staticmethod
    def forward(s, m, onehot, sigma):  # type: ignore[override]
        batch, size = s.shape
        above_by_grade = s.new_zeros(batch, onehot.shape[-1], size)
        above = s.new_zeros(batch, size)
        for first, last in _row_blocks(batch, size):
            z, keep = pair_block(s, m, sigma, first, last)
            pi = torch.special.ndtr(z) * keep
            above_by_grade = above_by_grade + torch.bmm(onehot[:, first:last].transpose(1, 2), pi)
            above = above + pi.sum(1)
        return above_by_grade, above

    @staticmethod
    def setup_context(ctx, inputs, output):  # the separate form torch.func's transforms need
        s, m, onehot, sigma = inputs
        ctx.save_for_backward(s, m, onehot)
        ctx.sigma = sigma

    @staticmethod
    def backward(ctx, grad_by_grade, grad_above):  # type: ignore[override]
        s, m, onehot = ctx.saved_tensors
        sigma, (batch, size) = ctx.sigma, s.shape
        grad = torch.zeros_like(s)
        # dpi_mn/ds_m = phi(z) / (sigma sqrt 2) = -dpi_mn/ds_n
        density = 1.0 / (math.sqrt(2.0 * math.pi) * sigma * math.sqrt(2.0))
        for first, last in _row_blocks(batch, size):
            z, keep = pair_block(s, m, sigma, first, last)
            # d(sum)/d(pi_mn) = G_by_grade[l_m, n] + G_above[n]
            weight = torch.bmm(onehot[:, first:last], grad_by_grade) + grad_above[:, None, :]
            flow = weight * torch.exp(-0.5 * z * z) * density * keep
            grad = grad + torch.nn.functional.pad(flow.sum(2), (first, size - last)) - flow.sum(1)
        return grad, None, None, None


def softrank_kernel_metric(s: torch.Tensor, m: torch.Tensor, labels: torch.Tensor, kernel: Kernel,
                           sigma: float) -> torch.Tensor:
    """``[B]``: SoftRank's value of an AP-family measure of ``kernel``, ``labels`` in document order."""
    num_classes = kernel.matrix.shape[-1]
    onehot = grade_indicators(labels, num_classes).to(s.dtype) * m[..., None]
    # [B, c+1, N]: sum_m pi_mn 1[l_m = t], and [B, N]: sum_m pi_mn
    above_by_grade, above = _GradedPairSums.apply(s, m, onehot, sigma)
    matrix = kernel.matrix.to(s.dtype)
    k_cols = matrix.gather(2, labels[:, None, :].expand(-1, num_classes, -1))  # K[t, l_n]
    num = kernel.diag.to(s.dtype).gather(1, labels) + (above_by_grade * k_cols).sum(1)
    den = 1.0 + above
    return (num / den * m).sum(-1)


def expected_discounts(s: torch.Tensor, m: torch.Tensor, sigma: float, discount: Callable[[torch.Tensor], torch.Tensor],
                       buffers: RankLawBuffers | None = None) -> torch.Tensor:
    """``[B, N]``: :math:`\\sum_r p_n(r)\\, D(r)` over ranks r = 1..N (SoftRank's rank laws), ``discount`` the discount
    at given ranks; ``buffers`` as in ``expected_score_rank_values``."""
    return expected_score_rank_values(s, m, sigma, discount(_ranks(s.shape[1], s.device)), buffers) * m


def _ranks(length: int, device: torch.device) -> torch.Tensor:
    """The 1-based ranks 1..length, float64."""
    return torch.arange(1, length + 1, dtype=torch.float64, device=device)
