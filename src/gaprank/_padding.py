"""Flat (rows grouped by query) <-> padded [batch, list] conversions, vectorised."""

from __future__ import annotations

import numpy as np


def group_positions(group_sizes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each row of a flat array grouped by query: (query index, position within the query)."""
    sizes = np.asarray(group_sizes, dtype=np.int64)
    query_index = np.repeat(np.arange(sizes.size), sizes)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    position = np.arange(int(sizes.sum())) - np.repeat(starts, sizes)
    return query_index, position


def pad_by_group(values: np.ndarray, group_sizes: np.ndarray, fill: float = 0) -> tuple[np.ndarray, np.ndarray]:
    """Scatter rows ``values[rows, ...]`` into ``[queries, max_size, ...]``; returns (padded, mask)."""
    sizes = np.asarray(group_sizes, dtype=np.int64)
    query_index, position = group_positions(sizes)
    width = int(sizes.max()) if sizes.size else 0
    padded = np.full((sizes.size, width) + values.shape[1:], fill, dtype=values.dtype)
    padded[query_index, position] = values
    mask = np.zeros((sizes.size, width), dtype=bool)
    mask[query_index, position] = True
    return padded, mask
