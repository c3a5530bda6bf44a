"""Flat (rows grouped by query) <-> padded [batch, list] conversions, vectorised; the length buckets that
evaluation pads into are :mod:`gaprank._grouped`'s."""

from __future__ import annotations

import numpy as np

from ._inputs import GaprankInputError
from ._typing import ArrayLike


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


def check_group_sizes(group: ArrayLike | None, num_rows: int | None, what: str = "group", *,
                      allow_empty: bool = False) -> np.ndarray:
    """Documents per query (LightGBM's ``group``): positive integers summing to the number of rows
    (``num_rows``; None when the sizes themselves define the rows); with ``allow_empty``, zeros too (a
    query id that ``np.bincount`` counts but no row has)."""
    if group is None:
        raise GaprankInputError(f"ranking needs query groups: no {what} given "
                                "(LightGBM: pass group=... to lightgbm.Dataset or LGBMRanker.fit)")
    sizes = np.asarray(group)
    if sizes.ndim != 1 or sizes.size == 0 or not np.issubdtype(sizes.dtype, np.number):
        raise GaprankInputError(f"{what} must be a non-empty 1-D array of query sizes; got shape {sizes.shape}")
    smallest = 0 if allow_empty else 1
    if (sizes != np.round(sizes)).any() or (sizes < smallest).any():
        bad = sizes[(sizes < smallest) | (sizes != np.round(sizes))][:5]
        kind = "non-negative" if allow_empty else "positive"
        raise GaprankInputError(f"{what} sizes must be {kind} integers; got {bad}")
    sizes = sizes.astype(np.int64)
    if num_rows is not None and int(sizes.sum()) != num_rows:
        raise GaprankInputError(f"{what} sizes sum to {int(sizes.sum())} but there are {num_rows} rows")
    return sizes


def padded_rows(starts: np.ndarray, sizes: np.ndarray, queries: np.ndarray, fill: int) -> tuple[np.ndarray, np.ndarray]:
    """The flat row of every slot of ``queries`` padded to the longest of them (``fill`` beyond a query's
    end), ``[B, W]``, and the mask of real slots."""
    position = np.arange(int(sizes[queries].max()))
    mask = position[None, :] < sizes[queries][:, None]
    return np.where(mask, starts[queries][:, None] + position[None, :], fill), mask
