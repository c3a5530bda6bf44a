r"""SoftRank's rank laws (Taylor, Guiver, Robertson and Minka, WSDM 2008) behind the soft losses and
:mod:`gaprank.distributions`: the pair probabilities of the Gaussian score model, the recursion that builds each
document's rank law with its hand-written adjoint, and the expectation of a per-rank value under those laws.

Each document's score is an independent Gaussian ``s_j ~ N(sbar_j, sigma^2)``, so
:math:`\pi_{mn} = P(s_m > s_n) = \Phi((\bar s_m - \bar s_n) / (\sigma\sqrt 2))`. On the CPU the laws are
built and differentiated by the compiled kernels of :mod:`.soft_compiled` (float64); elsewhere by whole-tensor
operations in the input's dtype.
"""

from __future__ import annotations

import math
import threading
from typing import Any

import torch

from .._autograd import first_derivatives_only, opaque_to_compile
from .._compiled_setup import thread_count
from . import soft_compiled
from .backends import runs_compiled


def pair_block(s: torch.Tensor, m: torch.Tensor, sigma: float, first: int, last: int
               ) -> tuple[torch.Tensor, torch.Tensor]:
    """Rows ``first:last`` of z = (s_m - s_n) / (sigma sqrt 2), pi_mn = Phi(z), and of the pairs that
    count (both documents real, m != n)."""
    z = (s[:, first:last, None] - s[:, None, :]) / (sigma * math.sqrt(2.0))
    off_diagonal = torch.arange(first, last, device=s.device)[:, None] != torch.arange(s.shape[1], device=s.device)
    return z, m[:, first:last, None] & m[:, None, :] & off_diagonal


def pairwise_matrix(s: torch.Tensor, m: torch.Tensor, sigma: float) -> torch.Tensor:
    """``[B, N, N]``: pi_mn for the pairs that count, 0 on the diagonal and at padding."""
    z, keep = pair_block(s, m, sigma, 0, s.shape[1])
    return torch.special.ndtr(z) * keep


# Elements of one block of the torch path's correlation windows ([B, pivots, N, N] per block).
CORRELATION_BLOCK_ELEMENTS = 1 << 24
# Elements of the [B, N, N] float64 laws the compiled expectation keeps for its backward pass (256 MB);
# above it the backward pass makes them again.
SAVED_LAW_ELEMENTS = 1 << 25


# The largest working array (elements) a RankLawBuffers keeps between calls (64 MB in float64), and how many
# it keeps: above that, the kernels' own work dwarfs what a fresh array costs (its pages' first touch).
KEPT_ARRAY_ELEMENTS = 1 << 23
KEPT_ARRAYS = 4
# Pairs (B N^2) from which a compiled call shares its work among threads (thread_count()); a smaller call runs on
# the calling thread alone, since waking numba's threads would cost it more than they save
THREADED_PAIRS = 1 << 15


class RankLawBuffers:
    """The ``[B, N, N]`` float64 working arrays of the compiled SoftRank kernels (the pair probabilities and
    the kept laws, which the backward pass then overwrites with its gradient), kept between calls so that a
    new batch of the same shape touches no fresh memory.

    An array is handed back only when the backward pass has consumed it (or, without one, when the forward
    pass ends), so two graphs alive at once never share one. At most ``KEPT_ARRAYS`` arrays of at most
    ``KEPT_ARRAY_ELEMENTS`` elements are kept. What is kept is working memory, not state: a copy or a pickle
    starts empty. A holder made with ``kept=0`` keeps nothing."""

    def __init__(self, kept: int = KEPT_ARRAYS) -> None:
        self.kept = kept
        self._free: list[torch.Tensor] = []
        self._lock = threading.Lock()

    def __getstate__(self) -> dict[str, Any]:
        return {"kept": self.kept}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["kept"])  # type: ignore[misc]

    def take(self, shape: tuple[int, ...]) -> torch.Tensor:
        """A float64 CPU array of ``shape``, kept from an earlier call when one fits, else a new one."""
        with self._lock:
            for index, array in enumerate(self._free):
                if array.shape == shape:
                    return self._free.pop(index)
        return torch.empty(shape, dtype=torch.float64)

    def give(self, *arrays: torch.Tensor) -> None:
        """Hand back arrays that nothing reads any more; the newest are kept."""
        if self.kept == 0:
            return
        with self._lock:
            for array in arrays:
                if 0 < array.numel() <= KEPT_ARRAY_ELEMENTS:
                    self._free.append(array)
            del self._free[:max(0, len(self._free) - self.kept)]


# The holder that keeps nothing, shared: a call with no buffers of its own, or one under torch.compile (which
# cannot trace making a lock), takes new arrays from it.
KEEPS_NOTHING = RankLawBuffers(kept=0)


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
    """The compiled adjoint's arithmetic (see :mod:`.soft_compiled`) as whole-tensor operations: the two
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
    factor back out of the final law (:mod:`.soft_compiled`'s module doc). On the CPU both passes run
    compiled, in float64 (the backward pass recomputes the laws); elsewhere as whole-tensor operations in
    the input's dtype."""

    @staticmethod
    def forward(ctx, pi):  # noqa: D102 - [B, M(other), N(pivot)] -> [B, N, M]
        if runs_compiled(pi.device):
            beats = pi.detach().to(torch.float64).transpose(1, 2).contiguous()  # pivot-major, as the kernels read
            laws = beats.new_empty(beats.shape)
            soft_compiled.rank_laws(beats.numpy(), laws.numpy(), _threads(beats))
            ctx.save_for_backward(beats)
            return laws.to(pi.dtype)
        laws = _torch_rank_laws(pi)
        ctx.save_for_backward(pi, laws)
        return laws

    @staticmethod
    @first_derivatives_only("SoftNDCG (SoftRank's rank distributions)")
    def backward(ctx, grad_laws):  # noqa: D102
        if runs_compiled(grad_laws.device):
            beats = ctx.saved_tensors[0]
            grad_beats = torch.empty_like(beats)
            grad64 = grad_laws.to(torch.float64).contiguous()
            soft_compiled.rank_laws_adjoint(beats.numpy(), grad64.numpy(), grad_beats.numpy(), _threads(beats))
            return grad_beats.transpose(1, 2).to(grad_laws.dtype)
        return _torch_rank_laws_adjoint(ctx.saved_tensors[0], ctx.saved_tensors[1], grad_laws)


class _ExpectedScoreRankValues(torch.autograd.Function):
    r""":math:`\sum_r p_n(r)\, v_r` from the scores, compiled end to end on the CPU, in float64: the kernel
    makes the pair probabilities (one erfc per pair) and the expectations, keeps the laws for the backward
    pass when they fit in ``SAVED_LAW_ELEMENTS`` (else it makes them again), and takes the gradient in ``pi``
    back to the scores itself (one exp per pair): no [B, N, N] tensor is recorded by autograd.

    The backward pass takes each pivot's row of the gradient in pi to the scores as it is made (no [B, N, N]
    array of it) and then hands the forward pass's arrays back to ``buffers``; a later backward pass through
    the same graph (``retain_graph``) makes them again from the scores."""

    @staticmethod
    def forward(ctx, s, m, sigma, values, buffers):  # noqa: D102 - [B, N], [B, N], float, [N], holder -> [B, N]
        batch, size = s.shape
        s64 = s.detach().to(torch.float64).contiguous()
        m = m.contiguous()
        c = 1.0 / (2.0 * sigma)
        beats = _pair_probabilities(s64, m, c, buffers)
        values64 = values.detach().to(device=s.device, dtype=torch.float64).contiguous()
        keep = ctx.needs_input_grad[0] and batch * size * size <= SAVED_LAW_ELEMENTS
        laws = buffers.take((batch, size, size)) if keep else s64.new_empty((0, 0, 0))  # read only within ``bounds``
        bounds = torch.zeros((batch, size, 2) if keep else (0, 0, 0), dtype=torch.int64)
        out = s64.new_empty(s.shape)
        soft_compiled.expected_values(beats.numpy(), values64.numpy(), out.numpy(), laws.numpy(), bounds.numpy(),
                                      _threads(beats))
        if ctx.needs_input_grad[0]:
            ctx.save_for_backward(s64, m, values64, bounds)
            ctx.arrays = (beats, laws)
        else:
            buffers.give(beats)
        ctx.c, ctx.buffers = c, buffers
        return out.to(s.dtype)

    @staticmethod
    @first_derivatives_only("SoftNDCG (SoftRank's rank distributions)")
    def backward(ctx, grad_out):  # noqa: D102
        s64, m, values, bounds = ctx.saved_tensors
        buffers = ctx.buffers
        if ctx.arrays is None:  # an earlier backward pass consumed them: the pair probabilities again, no laws
            beats, laws = _pair_probabilities(s64, m, ctx.c, buffers), s64.new_empty((0, 0, 0))
        else:
            beats, laws = ctx.arrays
            ctx.arrays = None
        weights = grad_out.to(torch.float64).contiguous()
        batch, size = s64.shape
        row_totals = s64.new_empty(batch, size)
        column_parts = s64.new_empty(batch, -(-size // soft_compiled.PIVOT_BLOCK), size)
        soft_compiled.expected_values_score_adjoint(beats.numpy(), s64.numpy(), m.numpy(), ctx.c, values.numpy(),
                                                weights.numpy(), laws.numpy(), bounds.numpy(), row_totals.numpy(),
                                                column_parts.numpy(), _threads(beats))
        grad_s = torch.empty_like(s64)
        soft_compiled.score_gradient(row_totals.numpy(), column_parts.numpy(), ctx.c / math.sqrt(math.pi), grad_s.numpy())
        buffers.give(beats, *([laws] if laws.numel() else []))
        return grad_s.to(grad_out.dtype), None, None, None, None


def _pair_probabilities(s64: torch.Tensor, m: torch.Tensor, c: float, buffers: RankLawBuffers) -> torch.Tensor:
    """``beats[b, n, m] = pi_mn`` ([B, N, N] float64, each pivot's row contiguous), compiled."""
    beats = buffers.take((s64.shape[0], s64.shape[1], s64.shape[1]))
    soft_compiled.pair_probabilities(s64.numpy(), m.numpy(), c, beats.numpy(), _threads(beats))
    return beats


def _threads(beats: torch.Tensor) -> int:
    """The threads a compiled call over the pair array ``beats`` ([B, N, M]) runs on."""
    return _threads_for(beats.numel())


def _threads_for(pairs: int) -> int:
    """The threads a compiled call over ``pairs`` pairs runs on."""
    return thread_count() if pairs >= THREADED_PAIRS else 1


def rank_recursion(pi: torch.Tensor) -> torch.Tensor:
    """SoftRank's recursion for the pivots in the last axis of ``pi`` ``[B, M(other), N(pivot)]``:
    returns ``[B, N, M]``, the law of the number of others above each pivot (0..M-1).
    Cost O(B M^2 N) time, O(B M N) memory in both passes (the backward pass keeps no recursion states)."""
    return _RankRecursion.apply(pi)


def expected_score_rank_values(s: torch.Tensor, m: torch.Tensor, sigma: float, values: torch.Tensor,
                               buffers: RankLawBuffers | None = None) -> torch.Tensor:
    r"""``[B, N]``: :math:`\sum_r p_n(r)\, v_r`, the expectation of ``values`` ``[N]`` (a constant per 0-based
    rank) under each document's rank law given the scores ``s`` (padding at 0) and ``mask`` ``m``,
    differentiable in ``s``. On the CPU compiled from the scores on (:class:`_ExpectedScoreRankValues`), its
    working arrays taken from and handed back to ``buffers`` (None: new ones, kept by no one); elsewhere
    the laws times the values."""
    if runs_compiled(s.device):
        holder = KEEPS_NOTHING if buffers is None or torch.compiler.is_compiling() else buffers
        return _compiled_score_rank_values(s, m, float(sigma), values, holder)
    return rank_recursion(pairwise_matrix(s, m, sigma)) @ values.to(s.dtype)


@opaque_to_compile  # numba: under torch.compile an opaque call, not traced
def _compiled_score_rank_values(s: torch.Tensor, m: torch.Tensor, sigma: float, values: torch.Tensor,
                                holder: RankLawBuffers) -> torch.Tensor:
    return _ExpectedScoreRankValues.apply(s, m, sigma, values, holder)
