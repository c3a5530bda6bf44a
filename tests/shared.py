"""Helpers several test files share (the fixtures are in conftest.py)."""

from __future__ import annotations

import numpy as np

from gaprank.metrics import parse_measure


def g_for(measure: str, g):
    """``g`` for a measure that takes GAP's user model (GAP, xGAP, eGAP), None for any other."""
    return g if parse_measure(measure).info.uses_g else None


def pad_by_group(values, sizes, fill=0):
    """``(padded [queries, longest, ...], mask)``: the rows of ``values``, query after query of ``sizes`` rows,
    each query's rows first in its row of the result (a plain loop, apart from gaprank's own padding)."""
    values, sizes = np.asarray(values), [int(size) for size in sizes]
    longest = max(sizes, default=0)
    padded = np.full((len(sizes), longest) + values.shape[1:], fill, dtype=values.dtype)
    mask = np.zeros((len(sizes), longest), dtype=bool)
    start = 0
    for query, size in enumerate(sizes):
        padded[query, :size] = values[start:start + size]
        mask[query, :size] = True
        start += size
    return padded, mask
