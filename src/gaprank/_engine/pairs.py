r"""The pair engine: the |Delta M|-weighted pairwise logistic cost, its gradient and hessian.

For a pair with label_i > label_j, :math:`\rho_{ij} = 1 / (1 + e^{\sigma (s_i - s_j)})` and

.. math::

    C = \sum_{l_i > l_j} |\Delta M_{ij}| \log\big(1 + e^{-\sigma (s_i - s_j)}\big), \qquad
    \frac{\partial C}{\partial s_i} = -\sum_j \lambda_{ij} + \sum_j \lambda_{ji}, \quad
    \lambda_{ij} = \sigma |\Delta M_{ij}| \rho_{ij}

(Burges, Ragno and Le, NIPS 2006; Robertson et al. 2010, sec. 5; docs: The maths, "LambdaRank and LambdaMART"). RankNet is
the same with :math:`|\Delta M| = 1` (Burges et al., ICML 2005). :math:`\Delta M` is taken on the
ranking the current scores induce and held fixed, so the gradient is the lambda sums; it is computed
directly (no autograd graph over pairs) from the swap-delta factors, a band of upper ranks at a time.
:class:`PairwiseEngine` works on a :class:`~gaprank._engine.slots.SlotLayout`: the runs of pairs of
all its blocks (LambdaMART's length buckets) share flat chunk buffers, so each elementwise step is one
tensor operation per chunk however many blocks there are, and every buffer and view is built once.

This is the tensor backend of :mod:`gaprank._engine.backends` (any measure with swap deltas, any device), used
by the PyTorch losses (:mod:`gaprank.losses`) and by LambdaMART (:mod:`gaprank.boosting`) where the compiled
backend (:mod:`gaprank._engine.compiled`, the same arithmetic on the same factor plan) does not serve.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .factors import PairFactors
from .norm import NORM_OFFSET
from .slots import SlotBlock, SlotLayout

# Elements of one [B, rows, N] block of pairs; bounds the working memory of long lists.
PAIR_BLOCK_ELEMENTS = 1 << 22


@dataclass
class PairwiseTerms:
    """Per-query cost and its first and second derivatives w.r.t. each score (rank space)."""

    cost: torch.Tensor  # [B]
    grad: torch.Tensor  # [B, N]
    hess: torch.Tensor | None  # [B, N]


@dataclass(kw_only=True)
class _PairRun:
    """Upper ranks ``start..stop-1`` of one block of lists against all their lower ranks: the views
    every step reads and writes, built once."""

    block: SlotBlock
    q0: int  # lists q0..q1-1 of the block
    q1: int
    start: int  # upper ranks start..stop-1, against lower ranks start+1..W-1
    stop: int
    sign: torch.Tensor  # [B, R, L] in the chunk's sign buffer (L = W - start - 1 lower ranks)
    weight: torch.Tensor  # [B, R, L] in the chunk's weight buffer
    deltas: torch.Tensor  # [B, R, L] float64: the bmm's output (the weight itself in float64 runs)
    diff: torch.Tensor  # [B, R, L]: sigma (s_low - s_up) in the scores' dtype (the diff buffer when alike)
    both: torch.Tensor  # [P, B, R, L]: the weight and diff buffers as one strided view (lambdas, hessians)
    grades_up: torch.Tensor  # [B, R, 1]
    grades_low: torch.Tensor  # [B, 1, L]
    scores_up: torch.Tensor  # [B, R, 1]
    scores_low: torch.Tensor  # [B, 1, L]
    valid_up: torch.Tensor  # [B, R, 1] (unit weights)
    valid_low: torch.Tensor  # [B, 1, L]
    sums_up: torch.Tensor  # [P, B, R]: the upper ranks' entries in the engine's sums
    sums_low: torch.Tensor  # [P, B, L]: the lower ranks'
    row_sums: torch.Tensor  # [P, B, R] scratch
    col_sums: torch.Tensor  # [P, B, L] scratch
    query_sum: torch.Tensor  # [B] scratch
    cost: torch.Tensor  # [B]: the lists' entries in the engine's cost
    weight_sum: torch.Tensor  # [B]
    cost_terms: torch.Tensor | None = None  # [B, R, W] (with cost)
    left: torch.Tensor | None = None  # [B, R, F] (bound to the factors of the last run)
    right: torch.Tensor | None = None  # [B, F, W]


@dataclass(kw_only=True)
class _PairChunk:
    """Runs whose pairs share one pass over flat buffers."""

    runs: list[_PairRun]
    weight: torch.Tensor  # flat views over the chunk's pairs
    diff: torch.Tensor
    sign: torch.Tensor
    deltas: torch.Tensor | None  # float64, when the pair dtype is not
    diff_scores: torch.Tensor | None  # the scores' dtype, when the pair dtype is not
    denominator: torch.Tensor | None
    cost_terms: torch.Tensor | None


# Upper ranks per run when a chunk cannot hold them all: bands this deep keep the batched products
# efficient, and each band skips the lower ranks above it (a band of d ranks wastes d^2/2 pairs).
MIN_RUN_ROWS = 32


def _chunk_bounds(layout: SlotLayout, tops: list[int], block_elements: int):
    """Runs ``(block, lists q0..q1-1, upper ranks start..stop-1, pairs)``, packed into chunks of at
    most ``block_elements`` pairs (one run may exceed it: it holds at least one list and
    ``MIN_RUN_ROWS`` upper ranks). A run pairs its upper ranks with the ranks below ``start``."""
    chunk: list[tuple[SlotBlock, int, int, int, int, int]] = []
    filled = 0
    for block, top in zip(layout.blocks, tops, strict=True):
        if top == 0:
            continue
        rows = min(top, max(MIN_RUN_ROWS, block_elements // (block.batch * block.width)))
        for start in range(0, top, rows):
            stop = min(top, start + rows)
            width = block.width - start - 1  # lower ranks start+1 .. W-1
            lists = max(1, block_elements // ((stop - start) * width))
            for q0 in range(0, block.batch, lists):
                q1 = min(block.batch, q0 + lists)
                elements = (q1 - q0) * (stop - start) * width
                if chunk and filled + elements > block_elements:
                    yield chunk
                    chunk, filled = [], 0
                chunk.append((block, q0, q1, start, stop, elements))
                filled += elements
    if chunk:
        yield chunk


class PairwiseEngine:
    """The |Delta M|-weighted pairwise logistic cost on the slots of a :class:`SlotLayout`: its
    cost, gradient and (LightGBM's) hessian, computed directly, a chunk of pairs at a time.

    Every buffer and every view the steps use is built here, once: LightGBM calls its objective
    every round on the same lists, and a round is then only the arithmetic (one tensor operation
    per step and chunk, a few per block of lists). Options as in :func:`pairwise_logistic`;
    ``scores_dtype`` is the dtype of the scores :meth:`run` takes. Not for two threads at once (the
    buffers are shared).
    """

    def __init__(
        self,
        layout: SlotLayout,
        *,
        sigma: float,
        truncation: int | None = None,
        norm: bool = False,
        with_hessian: bool = False,
        with_cost: bool = True,
        dtype: torch.dtype = torch.float64,
        scores_dtype: torch.dtype = torch.float64,
        block_elements: int | None = None,
    ) -> None:
        self.layout, self.sigma, self.norm = layout, sigma, norm
        self.with_hessian, self.with_cost, self.dtype = with_hessian, with_cost, dtype
        block_elements = PAIR_BLOCK_ELEMENTS if block_elements is None else block_elements
        device = layout.valid.device
        parts = 2 if with_hessian else 1
        slots, queries = layout.num_slots, layout.num_queries
        self.scores = torch.empty(slots, dtype=scores_dtype, device=device)
        self.grades = torch.empty(slots, dtype=dtype, device=device)
        self.valid = torch.empty(slots, dtype=dtype, device=device)  # layout.valid, taken in run()
        self.sums = torch.zeros(parts, slots, dtype=dtype, device=device)
        self.cost = torch.zeros(queries, dtype=dtype, device=device)
        self.weight_sum = torch.zeros(queries, dtype=dtype, device=device)
        self.top = torch.empty(queries, dtype=scores_dtype, device=device)
        self.slot_factor = torch.empty(slots, dtype=dtype, device=device)
        self.last = torch.empty(queries, dtype=scores_dtype, device=device)
        self.empty_lists = torch.empty(queries, dtype=torch.bool, device=device)  # set in run(), with self.valid
        self.layout_version: int | None = None
        self.slot_top = torch.empty(slots, dtype=scores_dtype, device=device)
        # Row sums enter the upper document's gradient with a minus and its hessian with a plus.
        # (filled on the device: a copy from a host list would wait for it)
        self.row_sign = torch.ones(parts, 1, 1, dtype=dtype, device=device)
        self.row_sign[0] = -1.0
        self.scale = torch.full((parts, 1), sigma ** 2, dtype=dtype, device=device)
        self.scale[0] = sigma
        # upper ranks 0..top-1 take part (the last rank has no rank below it)
        tops = [max(0, b.width - 1 if truncation is None else min(truncation, b.width - 1)) for b in layout.blocks]
        chunks = list(_chunk_bounds(layout, tops, block_elements))
        largest = max((sum(run[-1] for run in chunk) for chunk in chunks), default=0)
        convert_deltas, convert_diffs = dtype != torch.float64, dtype != scores_dtype
        pair = torch.empty(2 * largest, dtype=dtype, device=device)
        sign = torch.empty(largest, dtype=dtype, device=device)
        deltas = torch.empty(largest if convert_deltas else 0, dtype=torch.float64, device=device)
        diff_scores = torch.empty(largest if convert_diffs else 0, dtype=scores_dtype, device=device)
        denominator = torch.empty(largest if norm else 0, dtype=dtype, device=device)
        cost_terms = torch.empty(largest if with_cost else 0, dtype=dtype, device=device)
        self.chunks = []
        for chunk in chunks:
            total = sum(run[-1] for run in chunk)
            # weight and diff are the two halves of one buffer: at the end they hold the signed
            # lambdas and the hessian terms, and one strided view per run reduces both at once.
            weight, diff = pair[:total], pair[total:2 * total]
            runs, offset = [], 0
            for block, q0, q1, start, stop, elements in chunk:
                low = start + 1  # the first lower rank
                shape = (q1 - q0, stop - start, block.width - low)
                span = slice(offset, offset + elements)
                both = pair.as_strided((parts, *shape), (total, shape[1] * shape[2], shape[2], 1),
                                       pair.storage_offset() + offset)
                grades, scores, valid = (layout.view(x, block)[q0:q1] for x in (self.grades, self.scores, self.valid))
                sums = layout.view(self.sums, block)[:, q0:q1]
                runs.append(_PairRun(
                    block=block, q0=q0, q1=q1, start=start, stop=stop,
                    sign=sign[span].view(shape), weight=weight[span].view(shape),
                    deltas=deltas[span].view(shape) if convert_deltas else weight[span].view(shape),
                    diff=diff_scores[span].view(shape) if convert_diffs else diff[span].view(shape), both=both,
                    grades_up=grades[:, start:stop, None], grades_low=grades[:, None, low:],
                    scores_up=scores[:, start:stop, None], scores_low=scores[:, None, low:],
                    valid_up=valid[:, start:stop, None], valid_low=valid[:, None, low:],
                    sums_up=sums[:, :, start:stop], sums_low=sums[:, :, low:],
                    row_sums=sums.new_empty(parts, *shape[:2]), col_sums=sums.new_empty(parts, shape[0], shape[2]),
                    query_sum=self.cost.new_empty(shape[0]), cost=self.cost[block.queries][q0:q1],
                    weight_sum=self.weight_sum[block.queries][q0:q1],
                    cost_terms=cost_terms[span].view(shape) if with_cost else None))
                offset += elements
            self.chunks.append(_PairChunk(runs=runs, weight=weight, diff=diff, sign=sign[:total],
                                          deltas=deltas[:total] if convert_deltas else None,
                                          diff_scores=diff_scores[:total] if convert_diffs else None,
                                          denominator=denominator[:total] if norm else None,
                                          cost_terms=cost_terms[:total] if with_cost else None))
        self._bound: tuple | None = None

    def _bind(self, factors: PairFactors | None) -> None:
        """Views of the factors for every run (kept while the same factor tensors come back)."""
        key = None if factors is None else tuple((t.data_ptr(), t.shape, t.stride()) for t in (factors.left, factors.right))
        if key == self._bound:
            return
        for chunk in self.chunks:
            for run in chunk.runs:
                if factors is None:
                    run.left = run.right = None
                else:
                    left = self.layout.list_major(factors.left, run.block)[run.q0:run.q1]  # [B, F, W]
                    run.left = left[:, :, run.start:run.stop].transpose(1, 2)
                    run.right = self.layout.list_major(factors.right, run.block)[run.q0:run.q1, :, run.start + 1:]
        self._bound = key

    def run(self, scores: torch.Tensor, grades: torch.Tensor,
            factors: PairFactors | None) -> tuple[torch.Tensor, torch.Tensor]:
        """``(cost [Q], sums [P, S])`` for ranked ``scores`` and ``grades`` ``[S]`` (each list sorted
        descending, padding last) and the swap-delta ``factors`` (None: unit weights, RankNet).
        ``sums`` holds the gradient (and the hessian) at each slot. Both live in the engine's
        buffers, valid until its next run."""
        self._bind(factors)
        layout, sigma, s = self.layout, self.sigma, self.scores
        if self.layout_version != layout.version:  # the first run, or a kept layout took the next batch's sizes
            self.valid.copy_(layout.valid)
            torch.index_select(layout.valid, 0, layout.first_slot, out=self.empty_lists).logical_not_()
            self.layout_version = layout.version
        # Padding takes its list's top score (0 for an empty list), so whatever it held never reaches
        # a number and the list's score range stays the same. Scores stay in their own dtype:
        # differences are taken there and rounded once (lambdarank_norm divides by 0.01 + |s_i - s_j|,
        # which needs the difference of close scores to more digits than float32 keeps of large ones).
        if scores is not s:  # LightGBM's objective sorts straight into this buffer
            s.copy_(scores)
        # (a fill over every slot, not over the padding's slots: finding those would read back from the device)
        torch.index_select(s, 0, layout.first_slot, out=self.top).masked_fill_(self.empty_lists, 0.0)
        torch.where(layout.valid, s, torch.index_select(self.top, 0, layout.query, out=self.slot_top), out=s)
        flat = None
        if self.norm:  # every score equal to the top one (LightGBM's best == worst): sorted, so the last one
            flat = torch.index_select(s, 0, layout.last_slot, out=self.last) == self.top
        if sigma != 1.0:
            s.mul_(sigma)
        self.grades.copy_(grades)
        self.sums.zero_()
        if self.with_cost:
            self.cost.zero_()
        if self.norm:
            self.weight_sum.zero_()
        for chunk in self.chunks:
            self._run_chunk(chunk, factors is None, factors is not None and factors.weighted)
        return self._finish(flat)

    def _run_chunk(self, chunk: _PairChunk, unit: bool, weighted: bool = False) -> None:
        for run in chunk.runs:
            if unit:  # unit weights (RankNet) on pairs of real documents
                torch.mul(run.valid_up, run.valid_low, out=run.weight)
            else:
                assert run.left is not None and run.right is not None, "factor views are bound before a run"
                torch.bmm(run.left, run.right, out=run.deltas)
            if weighted:  # every pair counts; the upper document is the better one when the swap lowers the measure
                run.sign.copy_(torch.sign(run.deltas)).neg_()
            else:
                torch.sub(run.grades_up, run.grades_low, out=run.sign)
            # a pair needs its upper rank strictly above the lower: lower column j is rank start+1+j
            run.sign[:, :, :run.stop - run.start].triu_(0)
            torch.sub(run.scores_low, run.scores_up, out=run.diff)  # sigma (s_low - s_up)
        # Every step below runs once over the whole chunk. Swap deltas and score differences were
        # formed in float64; a float32 run rounds them once, here.
        weight, diff, sign = chunk.weight, chunk.diff, chunk.sign
        if chunk.deltas is not None and not unit:
            weight.copy_(chunk.deltas)
        if chunk.diff_scores is not None:
            diff.copy_(chunk.diff_scores)
        sign.clamp_(-1.0, 1.0)  # +1 / -1: the upper / lower document has the higher label; 0: no pair
        weight.mul_(sign).abs_()  # |dM| on pairs, 0 elsewhere
        if self.norm:  # LightGBM's lambdarank_norm: |dM| / (0.01 + |s_i - s_j|), in sigma units (see _finish)
            denominator = torch.abs(diff, out=chunk.denominator)
            weight.div_(denominator.add_(NORM_OFFSET * self.sigma))
        z = diff.mul_(sign)  # -sigma (s_better - s_worse)
        if self.with_cost:
            torch.mul(torch.nn.functional.softplus(z), weight, out=chunk.cost_terms)
            for run in chunk.runs:
                assert run.cost_terms is not None, "a run keeps cost terms when the cost is asked for"
                run.cost.add_(torch.sum(run.cost_terms, (1, 2), out=run.query_sum))
        rho = z.sigmoid_()  # 1 / (1 + exp(sigma (s_better - s_worse)))
        lam = weight.mul_(rho)  # |dM| rho: the lambda over sigma
        if self.norm:
            for run in chunk.runs:
                run.weight_sum.add_(torch.sum(run.weight, (1, 2), out=run.query_sum))
        if self.with_hessian:
            torch.addcmul(lam, lam, rho, value=-1.0, out=rho)  # |dM| rho (1 - rho): the hessian / sigma^2
        lam.mul_(sign)  # signed: the upper document's gradient is minus its row sum
        for run in chunk.runs:
            run.sums_up.addcmul_(torch.sum(run.both, -1, out=run.row_sums), self.row_sign)
            run.sums_low.add_(torch.sum(run.both, 2, out=run.col_sums))

    def _finish(self, flat: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
        """Apply sigma, and LightGBM's per-query rescaling when ``norm``."""
        sigma, sums = self.sigma, self.sums
        if flat is not None:
            # The runs divided |dM| by sigma (0.01 + |s_i - s_j|). LightGBM divides by 0.01 + |s_i - s_j|
            # only when a query's scores are not all equal; such a query was divided by sigma 0.01.
            unscale = torch.where(flat, NORM_OFFSET * sigma, sigma).to(self.dtype)
            lambda_sum = 2.0 * sigma * self.weight_sum * unscale
            factor = torch.where(lambda_sum > 0, torch.log2(1.0 + lambda_sum) / lambda_sum.clamp_min(1e-300),
                                 torch.ones_like(lambda_sum)) * unscale
            sums.mul_(torch.index_select(factor, 0, self.layout.query, out=self.slot_factor))
            if self.with_cost:
                self.cost.mul_(factor)
        if sigma != 1.0:
            sums.mul_(self.scale)  # sigma for the gradient, sigma^2 for the hessian
        return self.cost, sums


def pairwise_logistic(
    ranked_scores: torch.Tensor,
    grades: torch.Tensor,
    valid: torch.Tensor,
    factors: PairFactors | None,
    *,
    sigma: float,
    truncation: int | None = None,
    norm: bool = False,
    with_hessian: bool = False,
    with_cost: bool = True,
    block_elements: int | None = None,
    dtype: torch.dtype | None = None,
) -> PairwiseTerms:
    r"""Cost, gradient (and LightGBM's hessian) of the |Delta M|-weighted pairwise logistic cost.

    Everything is in rank space: ``ranked_scores`` ``[B, N]`` sorted descending, ``valid`` True at
    the real documents, which come first (padding last). ``factors`` (from
    :func:`gaprank._engine.factors.pair_factors` on the same ranking) None means unit weights
    (RankNet). ``truncation`` k keeps the pairs whose upper document is in the top k (LightGBM's
    ``lambdarank_truncation_level`` rule). ``norm`` is LightGBM's ``lambdarank_norm``: |Delta M| is
    divided by ``0.01 + |s_i - s_j|`` (when the query's scores are not all equal) and the query's
    gradients and hessians are scaled by ``log2(1 + S) / S``, S = the sum of its lambdas counted
    on both documents. The hessian is :math:`\sigma^2 |\Delta M| \rho (1 - \rho)` on both documents
    of each pair. ``with_cost=False`` skips the cost (returned as zeros) when only the derivatives
    are wanted. Pairs are taken in blocks of upper ranks of at most ``block_elements`` pairs
    (default ``PAIR_BLOCK_ELEMENTS``), which bounds the working memory of long lists. ``dtype`` is
    the pair arithmetic's (default: the scores'); swap deltas and score differences are formed in
    float64 (the scores' dtype) and rounded once. This is :class:`PairwiseEngine` on one block.
    """
    batch, size = ranked_scores.shape
    layout = SlotLayout.single(valid.sum(-1), size) if factors is None else factors.layout
    engine = PairwiseEngine(layout, sigma=sigma, truncation=truncation, norm=norm, with_hessian=with_hessian,
                            with_cost=with_cost, dtype=ranked_scores.dtype if dtype is None else dtype,
                            scores_dtype=ranked_scores.dtype, block_elements=block_elements)
    cost, sums = engine.run(ranked_scores.detach().reshape(-1), grades.reshape(-1), factors)
    sums = sums.view(-1, batch, size)
    return PairwiseTerms(cost, sums[0], sums[1] if with_hessian else None)


