"""The pair engine on ``[B, N]`` batches, its buffers kept per batch shape for a loss called every step.

A batch's slot layout, factor plan and pair-engine buffers depend only on its shape, dtype and device, the
measure's grade scale and the engine's settings. What changes from one batch to the next (the list sizes,
the measure's score-independent inputs such as kernels and 1/Z, the ranking and the scores) is written into
them. A loss that keeps a :class:`BatchPairs` then issues only the arithmetic each step: on a GPU far fewer
kernel launches, and nothing copied from the host (the CUDA graphs of :mod:`.graphs` replay steps on such buffers).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
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
    slot_mass,
)
from .pairs import PairwiseEngine, PairwiseTerms
from .slots import SlotLayout


@dataclass
class _Shape:
    """What one batch shape keeps: its layout, and the plans and engines built on it."""

    layout: SlotLayout
    plans: dict[tuple, FactorPlan] = field(default_factory=dict)
    engines: dict[tuple, PairwiseEngine] = field(default_factory=dict)


class BatchPairs:
    """The |Delta M|-weighted pairwise logistic cost of ``[B, N]`` batches (:class:`PairwiseEngine` on a
    one-block :class:`SlotLayout`), keeping the buffers of the last ``kept`` batch shapes.

    A shape is keyed by (thread, B, N, device, dtype): two threads never share buffers. ``kept=0`` keeps
    nothing (every call builds its own, as a one-off call should). What is kept is working memory, not
    state: a copy or a pickle of a holder starts empty.
    """

    def __init__(self, kept: int = 2) -> None:
        self.kept = kept
        self._shapes: OrderedDict[tuple, _Shape] = OrderedDict()
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

    def _shape(self, ranked: RankedLists, scores: torch.Tensor) -> _Shape:
        batch, width = ranked.grades.shape
        if self.kept == 0:
            return _Shape(SlotLayout.single(ranked.n_docs, width))
        key = self._key(batch, width, scores)
        with self._table:
            kept = self._shapes.get(key)
            if kept is None:
                kept = self._shapes[key] = _Shape(SlotLayout.single(ranked.n_docs, width))
                while len(self._shapes) > self.kept:  # the least recently used go
                    self._shapes.popitem(last=False)
                return kept
            self._shapes.move_to_end(key)
        kept.layout.resize(ranked.n_docs)  # the thread's own shape: evicted meanwhile, it still serves this call
        return kept

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
                factors = plan.factors(ranked.grades.reshape(-1), slot_mass(ranked))
        engine = kept.engines.get((sigma, truncation))
        if engine is None:
            engine = kept.engines[(sigma, truncation)] = PairwiseEngine(
                layout, sigma=sigma, truncation=truncation, dtype=ranked_scores.dtype,
                scores_dtype=ranked_scores.dtype)
        batch, width = ranked.grades.shape
        cost, sums = engine.run(ranked_scores.detach().reshape(-1), ranked.grades.reshape(-1), factors)
        return PairwiseTerms(cost, sums.view(-1, batch, width)[0], None)
