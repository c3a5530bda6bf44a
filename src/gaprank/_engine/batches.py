"""The pair engine on ``[B, N]`` batches, its buffers kept per batch shape for a loss called every step.

A batch's slot layout, factor plan and pair-engine buffers depend only on its shape, dtype and device, the
measure's grade scale and the engine's settings. What changes from one batch to the next (the list sizes,
the measure's score-independent inputs such as kernels and 1/Z, the ranking and the scores) is written into
them. A loss that keeps a :class:`BatchPairs` then issues only the arithmetic each step: on a GPU far fewer
kernel launches, and nothing copied from the host. Where nothing is read back from the device either, a shape's
step is captured in a CUDA graph once it comes back, and replayed (:mod:`.graphs`).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from ..metrics import ListForm, Measure, RankedLists
from .factors import (
    FactorPlan,
    GainDiscountFactorPlan,
    KernelFactorPlan,
    KernelInputs,
    ListFactorPlan,
    plan_inputs,
)
from .graphs import (
    CAPTURE_AFTER,
    GRAPHED_SHAPES,
    GRAPHS_PER_SHAPE,
    GraphedCall,
    Outputs,
    capture,
    exact_key,
    graph_width,
    graphable,
    padded,
)
from .pairs import PairwiseEngine, PairwiseTerms
from .slots import SlotLayout


@dataclass
class _Shape:
    """What one batch shape keeps: its layout, and the plans and engines built on it."""

    layout: SlotLayout
    plans: dict[tuple, FactorPlan] = field(default_factory=dict)
    engines: dict[tuple, PairwiseEngine] = field(default_factory=dict)
    graphable: bool = False  # made for a step that may be graphed (see BatchPairs.replayed)
    calls: OrderedDict[tuple, int] = field(default_factory=OrderedDict)  # eager calls per graph key
    graphs: OrderedDict[tuple, GraphedCall | None] = field(default_factory=OrderedDict)  # None: capture refused


class BatchPairs:
    """The |Delta M|-weighted pairwise logistic cost of ``[B, N]`` batches (:class:`PairwiseEngine` on a
    one-block :class:`SlotLayout`), keeping the buffers of the last ``kept`` batch shapes.

    A shape is keyed by (thread, B, N, device, dtype): two threads never share buffers. ``kept=0`` keeps
    nothing (every call builds its own, as a one-off call should). What is kept is working memory, not
    state: a copy or a pickle of a holder starts empty.
    """

    def __init__(self, kept: int = 2) -> None:
        # capacity: GRAPHED_SHAPES once steps may be graphed (see replayed); other shapes stay at ``kept``
        self.kept = self.capacity = kept
        self._shapes: OrderedDict[tuple, _Shape] = OrderedDict()
        self._graphable_keys: set[tuple] = set()  # shapes about to be made for a step that may be graphed
        # threads share the table of shapes (not a shape): one thread must not evict a key between another's
        # look-up and its move to the end
        self._table = threading.Lock()

    def __getstate__(self) -> dict[str, Any]:
        return {"kept": self.kept}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["kept"])  # type: ignore[misc]

    @staticmethod
    def _key(batch: int, width: int, scores: torch.Tensor) -> tuple:
        return (threading.get_ident(), batch, width, scores.device, scores.dtype)

    def replayed(self, settings: tuple, fn: Callable[..., Outputs], scores: torch.Tensor, labels: Any,
                 mask: Any) -> Outputs:
        """``fn(scores, labels, mask)``: a step that computes a batch's lambdas on this holder's engines and returns
        ``(cost [B], grad [B, N])``; ``settings``: everything else that decides which kernels it issues or what
        they read (compared exactly: :func:`~.graphs.exact_key`).

        Eager, except on a CUDA device for a step that reads nothing back from it (:mod:`.graphs`): there the
        batch is padded to a width of the graphs' grid, and once that shape and ``settings`` have come
        :data:`~.graphs.CAPTURE_AFTER` times while the shape is kept, that call also captures ``fn`` in a CUDA
        graph, and later ones replay it. Such a holder keeps :data:`~.graphs.GRAPHED_SHAPES` shapes, and each shape
        its last :data:`~.graphs.GRAPHS_PER_SHAPE` graphs."""
        if self.kept == 0 or not graphable(scores, labels, mask):
            return fn(scores, labels, mask)
        self.capacity = max(self.kept, GRAPHED_SHAPES)
        batch, width = (1, scores.shape[0]) if scores.ndim == 1 else scores.shape
        shape_key = self._key(batch, graph_width(width), scores)
        key = (exact_key(settings), labels.dtype, torch.bool if mask is None else mask.dtype)  # padded: a mask
        with self._table:
            kept = self._shapes.get(shape_key)
            graphed = None if kept is None else kept.graphs.get(key)
            if graphed is not None:
                self._shapes.move_to_end(shape_key)
            elif kept is None:
                self._graphable_keys.add(shape_key)
        if graphed is not None:
            kept.graphs.move_to_end(key)  # type: ignore[union-attr]
            cost, grad = graphed(scores, labels, mask)
            return cost, grad[:, :width]
        inputs = padded(scores, labels, mask)
        cost, grad = fn(*inputs)
        kept = self._shapes.get(shape_key)  # fn made or took it
        if kept is not None and key not in kept.graphs:
            kept.calls[key] = kept.calls.pop(key, 0) + 1
            if kept.calls[key] >= CAPTURE_AFTER:
                # the settings too: a device tensor among them is keyed by identity, which it keeps while held
                kept.graphs[key] = capture(fn, inputs, (kept.layout, dict(kept.plans), dict(kept.engines), settings))
            for cap, kept_keys in ((GRAPHS_PER_SHAPE, kept.graphs), (4 * GRAPHS_PER_SHAPE, kept.calls)):
                while len(kept_keys) > cap:  # settings that keep changing: the oldest go
                    kept_keys.popitem(last=False)
        return cost, grad[:, :width]

    def _shape(self, ranked: RankedLists, scores: torch.Tensor) -> _Shape:
        batch, width = ranked.grades.shape
        if self.kept == 0:
            return _Shape(SlotLayout.single(ranked.n_docs, width))
        key = self._key(batch, width, scores)
        with self._table:
            kept = self._shapes.get(key)
            if kept is None:
                kept = self._shapes[key] = _Shape(SlotLayout.single(ranked.n_docs, width),
                                                  graphable=key in self._graphable_keys)
                self._graphable_keys.discard(key)
                self._evict()
                return kept
            self._shapes.move_to_end(key)
        kept.layout.resize(ranked.n_docs)  # the thread's own shape: evicted meanwhile, it still serves this call
        return kept

    def _evict(self) -> None:
        """Keep at most ``kept`` shapes whose steps no graph can take (on the CPU, say) and ``capacity`` in all,
        the oldest of those first (with the table's lock held)."""
        plain = [key for key, shape in self._shapes.items() if not shape.graphable]
        for key in plain[:-self.kept]:
            del self._shapes[key]
        while len(self._shapes) > self.capacity:
            oldest = next((key for key, shape in self._shapes.items() if not shape.graphable), None)
            del self._shapes[oldest if oldest is not None else next(iter(self._shapes))]

    def terms(self, measure: Measure | None, ranked: RankedLists, params: dict[str, Any],
              ranked_scores: torch.Tensor, *, sigma: float, truncation: int | None = None) -> PairwiseTerms:
        """Cost and gradient (rank space) for ``ranked_scores`` ``[B, N]``, sorted as ``ranked``. ``measure``:
        the |Delta M| weights (its ``params`` filled); None: unit weights (RankNet). ``truncation`` k: only
        pairs whose upper document is in the top k, and the ideal ranking of a normaliser without a cutoff of
        its own taken at depth k (LightGBM's rules). As :func:`~gaprank._engine.pairs.pairwise_logistic`."""
        kept = self._shape(ranked, ranked_scores)
        layout = kept.layout
        factors = None
        if measure is not None:
            inputs = plan_inputs(measure, [ranked], params, layout, ideal_cutoff=truncation)
            plan: FactorPlan | None = None
            if isinstance(inputs, ListForm):  # its factors are computed from each ranking: nothing to keep
                plan = ListFactorPlan(layout, inputs, [ranked], params, measure.k)
            elif inputs is not None:
                plan_key = (type(inputs), inputs.k, ranked.num_grades)
                plan = kept.plans.get(plan_key)
                if plan is not None:
                    plan.update(inputs)
                elif isinstance(inputs, KernelInputs):
                    plan = kept.plans[plan_key] = KernelFactorPlan(layout, inputs.kernel, inputs.k)
                else:
                    plan = kept.plans[plan_key] = GainDiscountFactorPlan(layout, inputs.gains, inputs.discounts,
                                                                         inputs.inverse_norm, inputs.k)
            if plan is not None:
                factors = plan.factors(ranked.grades.reshape(-1))
        engine = kept.engines.get((sigma, truncation))
        if engine is None:
            engine = kept.engines[(sigma, truncation)] = PairwiseEngine(
                layout, sigma=sigma, truncation=truncation, dtype=ranked_scores.dtype,
                scores_dtype=ranked_scores.dtype)
        batch, width = ranked.grades.shape
        cost, sums = engine.run(ranked_scores.detach().reshape(-1), ranked.grades.reshape(-1), factors)
        return PairwiseTerms(cost, sums.view(-1, batch, width)[0], None)
