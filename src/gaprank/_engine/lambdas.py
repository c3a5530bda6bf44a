"""LambdaRank's and RankNet's lambdas for a ``[B, N]`` batch: one function, either backend.

:func:`lambdas` ranks the lists, weighs every pair by the measure's swap delta (or by 1, RankNet), and returns each
query's pairwise logistic cost and its gradient with respect to the scores, in document order. The losses attach that
gradient to the scores and reduce; the LambdaMART objectives run the compiled backend on their own query layout
(:mod:`.compiled`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from .._autograd import opaque_to_compile
from .._inputs import MAX_GRADE, as_batch
from ..metrics import Measure, RankedLists, rank_lists
from . import compiled
from .backends import compiled_plan
from .batches import BatchPairs
from .factors import rank_for_measure
from .slots import SlotLayout


@dataclass(frozen=True)
class LambdaSettings:
    """What a batch's lambdas are of, apart from the batch.

    ``measure``: the swap deltas' measure, its parameters filled from the call (None: RankNet's unit weights);
    ``sigma``: the logistic's steepness; ``truncation`` k: only pairs whose upper document is in the current top k
    (and the ideal of a normaliser without a cutoff of its own at depth k); ``max_grade``: the grade scale when the
    measure does not fix it; ``grade_counts``: R(0)..R(c) per query when the lists do not hold every judged
    document; ``validate``: check the inputs (else nothing is read back from the device)."""

    measure: Measure | None
    sigma: float = 1.0
    truncation: int | None = None
    max_grade: int | None = None
    grade_counts: Any = None
    validate: bool = True

    @property
    def replayable(self) -> bool:
        """Whether a call reads nothing back from the device, so that a CUDA graph can replay it."""
        return not self.validate and self.grade_counts is None

    def key(self) -> tuple:
        """What decides the kernels a call issues and what they read (``grade_counts`` aside: a replayable call
        has none)."""
        measure = None if self.measure is None else (self.measure.name, self.measure.kwargs)
        return (measure, self.sigma, self.truncation, self.max_grade)


# a holder keeping nothing is never written: every call and thread can share it
_FRESH_BUFFERS = BatchPairs(kept=0)


@opaque_to_compile  # under torch.compile one opaque call: the buffers are kept as in eager
def lambdas(scores: torch.Tensor, labels: Any, mask: torch.Tensor | None, settings: LambdaSettings, backend: str,
            buffers: BatchPairs | None = None, weights: Any = None) -> tuple[torch.Tensor, torch.Tensor]:
    r"""Each query's cost :math:`C = \sum_{l_i > l_j} w_{ij} \log(1 + e^{-\sigma (s_i - s_j)})` and its gradient
    with respect to the scores, ``(cost [B], gradient [B, N])`` in document order, with :math:`w_{ij}` the measure's
    :math:`|\Delta M_{ij}|` in the ranking the scores induce (ties in input order), or 1 for RankNet.

    ``scores`` ``[B, N]`` or ``[N]`` (read, not differentiated); ``backend``: "compiled" (the numba kernel, float64,
    CPU) or "torch" (the pair engine on ``buffers``, the holder of a module's kept shapes; None: built afresh). A
    query without two different grades gives 0 and 0; padding gets 0. ``weights`` (per document):
    :math:`|\Delta M|` is the weighted measure's (the metrics' ``weights=``)."""
    scores = scores.detach()
    s, m = as_batch(scores, mask)
    ranked, params = _ranked(scores, labels, mask, settings, by_score=backend == "torch", weights=weights)
    if backend == "compiled":
        cost, gradient = _compiled_lambdas(s, m, ranked, params, settings)
    else:
        terms = (buffers or _FRESH_BUFFERS).terms(settings.measure, ranked, params, s.gather(1, ranked.order),
                                                  sigma=settings.sigma, truncation=settings.truncation)
        cost, gradient = terms.cost, torch.zeros_like(terms.grad).scatter_(1, ranked.order, terms.grad)
    keep = ranked.rankable().to(cost.dtype)
    return cost * keep, gradient * keep[:, None]


def _ranked(scores: torch.Tensor, labels: Any, mask: torch.Tensor | None, settings: LambdaSettings, *,
            by_score: bool, weights: Any = None) -> tuple[RankedLists, dict[str, Any]]:
    """The lists ranked (sorted only ``by_score``: the compiled kernel sorts each list itself) on the measure's grade
    scale, and the measure's parameters filled."""
    if settings.measure is not None:
        return rank_for_measure(scores, labels, settings.measure, mask=mask, grade_counts=settings.grade_counts,
                                max_grade=settings.max_grade, by_score=by_score, validate=settings.validate,
                                weights=weights)
    assert weights is None, "RankNet takes no weights"
    # RankNet's value does not depend on the scale: unvalidated, the labels are counted on the widest one
    ranked = rank_lists(scores, labels, mask=mask, validate=settings.validate,
                        num_grades=None if settings.validate else MAX_GRADE, scale_source="RankNet")
    return ranked, {}


def _compiled_lambdas(s: torch.Tensor, m: torch.Tensor, ranked: RankedLists, params: dict[str, Any],
                      settings: LambdaSettings) -> tuple[torch.Tensor, torch.Tensor]:
    """The compiled kernel's ``(cost [B], gradient [B, N])``. Only the lists' grade counts are read from ``ranked``;
    a batch in which no pair changes the measure gives 0 and 0."""
    assert settings.measure is not None, "RankNet runs on the torch backend"
    batch, width = m.shape
    # a discount is per rank, the same in every list: one list of the batch's width gives them all
    one_list = SlotLayout.single(torch.tensor([width]), width)
    flat_mask = m.reshape(-1).numpy()
    weights = ranked.document_weights()
    plan = compiled_plan(settings.measure, [ranked], params, one_list, sizes=m.sum(1).numpy(),
                         rows=np.flatnonzero(flat_mask),
                         labels=ranked.document_grades().reshape(-1).numpy()[flat_mask], sigma=settings.sigma,
                         truncation=settings.truncation, norm=False, ideal_cutoff=settings.truncation,
                         warm_start=False, weights=None if weights is None else weights.reshape(-1).numpy()[flat_mask])
    if plan is None:
        return s.new_zeros(batch), s.new_zeros(batch, width)
    scores = s.detach().to(torch.float64).reshape(-1).numpy()
    gradient, cost = np.zeros(batch * width), np.zeros(batch)
    compiled.lambdamart_gradients(plan, scores, gradient, None, cost)
    return torch.from_numpy(cost).to(s.dtype), torch.from_numpy(gradient).reshape(batch, width).to(s.dtype)
