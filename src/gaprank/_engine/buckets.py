"""Length buckets: queries sorted by length, cut where padding them to one width costs least."""

from __future__ import annotations

import numpy as np

# The cost model that cuts queries, sorted by length, into buckets padded to their longest query.
# In units of one pair of the pair blocks: a bucket costs a fixed few dozen tensor operations (about
# as much as 70,000 pairs), each pair of its [B, rows, W] blocks one unit, and each padded slot about
# 10 units (the swap-delta factors, sorting); the estimates are in docs/benchmarks.md. Small data sets
# get a few buckets, large ones many tight ones.
BUCKET_COST = 70_000.0
SLOT_COST = 10.0


def bucket_bounds(sorted_sizes: np.ndarray, rows: int | None) -> list[tuple[int, int]]:
    """Cut queries sorted by length into buckets ``[first, last)`` of least modelled cost.

    A bucket of ``B`` queries whose longest has ``W`` documents costs ``BUCKET_COST + B (R W +
    SLOT_COST W)``, R = min(rows, W - 1) upper ranks (W - 1 when ``rows`` is None). Exact dynamic
    programming over the distinct lengths (equal lengths never need to be split).
    """
    if sorted_sizes.size == 0:
        return []
    lengths, counts = np.unique(sorted_sizes, return_counts=True)
    before = np.concatenate([[0], np.cumsum(counts)])  # queries shorter than lengths[i]
    best = np.zeros(lengths.size + 1)
    start = np.zeros(lengths.size + 1, dtype=np.int64)
    for j in range(1, lengths.size + 1):  # a bucket holding lengths[i..j-1], padded to lengths[j-1]
        width = float(lengths[j - 1])
        upper = width - 1 if rows is None else min(float(rows), width - 1)  # the last rank is no upper one
        costs = best[:j] + BUCKET_COST + (before[j] - before[:j]) * (upper * width + SLOT_COST * width)
        start[j] = int(np.argmin(costs))
        best[j] = costs[start[j]]
    bounds, j = [], lengths.size
    while j > 0:
        bounds.append((int(before[start[j]]), int(before[j])))
        j = int(start[j])
    return bounds[::-1]
