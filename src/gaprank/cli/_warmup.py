"""``gaprank warmup``: every compiled kernel compiled ahead, so that no first call of a process pauses.

numba compiles a kernel on its first call with each argument kind and keeps it in its disk cache, which later
processes load. This runs each compiled path of the public API once on a tiny input: LambdaRank's lambdas (the AP
family and the discounted-gain measures, whole lists and truncated, documents weighted or not), the LambdaMART
objective (float32 and float64 pairs, normalised or not, weights in the measure or not), SoftRank's rank laws and the
fast soft ranks, on as many threads as numba would use, so
that the threaded drivers compile too.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import torch


def compile_kernels() -> int:
    """Run every compiled path once; returns the number of calls made."""
    from ..boosting import LambdaMARTObjective, LambdaMARTSettings
    from ..losses import LambdaRankLoss, SoftMetricLoss

    generator = torch.Generator().manual_seed(0)
    calls = 0
    for dtype in (torch.float32, torch.float64):
        scores = torch.randn(4, 24, generator=generator, dtype=dtype, requires_grad=True)
        labels = torch.randint(0, 3, (4, 24), generator=generator)
        mask = torch.ones(4, 24, dtype=torch.bool)
        mask[1, 20:] = False
        weights = torch.rand(4, 24, generator=generator, dtype=torch.float64)
        for measure, truncation, weighted in itertools.product(("gap", "ndcg"), (None, 10), (False, True)):
            loss = LambdaRankLoss(measure, truncation_level=truncation, backend="compiled")
            loss(scores, labels, mask, weights if weighted else None).backward()
            calls += 1
        smoothings: list[tuple[str, Any]] = [("ndcg", "softrank"), ("gap", "fast_soft_rank"), ("ndcg", "fast_soft_rank")]
        for measure, smoothing in smoothings:
            SoftMetricLoss(measure, smoothing=smoothing, sigma=0.5)(scores, labels, mask).backward()
            calls += 1
    rng = np.random.default_rng(0)
    preds, flat = rng.normal(size=60), rng.integers(0, 3, 60).astype(np.float64)
    precisions: tuple[Any, ...] = ("float32", "float64")
    for measure, precision, norm, truncation in itertools.product(("gap", "ndcg"), precisions, (False, True), (None, 10)):
        objective = LambdaMARTObjective(LambdaMARTSettings(measure, precision=precision, norm=norm,
                                                           truncation_level=truncation, backend="compiled"))
        objective.gradients(preds, flat, [24, 20, 16])
        calls += 1
    for measure, norm in itertools.product(("gap", "ndcg"), (False, True)):
        objective = LambdaMARTObjective(LambdaMARTSettings(measure, norm=norm, truncation_level=10, backend="compiled",
                                                           row_weights="measure"))
        objective.gradients(preds, flat, [24, 20, 16], rng.random(60))
        calls += 1
    return calls
