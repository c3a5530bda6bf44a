"""Flat (rows grouped by query) <-> padded [batch, list] conversions, vectorised."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

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


# Cells of one padded bucket: its queries x its longest query. Large enough that a bucket's fixed cost
# (a few dozen tensor operations) is spread thin, small enough that no bucket's tables take much memory.
BUCKET_CELLS = 1 << 20


@dataclass(frozen=True)
class LengthBucket:
    """Queries of similar length, padded to the longest of them: ``queries`` [B] (indices into the
    groups), ``rows`` [B, W] (the flat row of each slot; 0 where padded) and ``mask`` [B, W]."""

    queries: np.ndarray
    rows: np.ndarray
    mask: np.ndarray

    def take(self, values: np.ndarray, fill: Any = 0) -> np.ndarray:
        """The bucket's ``[B, W]`` view of flat per-row ``values``, ``fill`` in the padding."""
        return np.where(self.mask, values[self.rows], np.asarray(fill, dtype=values.dtype))


def length_buckets(group_sizes: np.ndarray, max_cells: int = BUCKET_CELLS) -> list[LengthBucket]:
    """Queries cut into buckets of similar length, each padded only to its own longest query.

    Queries whose lengths lie within a factor of two share a bucket (so padding at most doubles a
    query), cut further so that no bucket holds more than ``max_cells`` slots (one long query alone
    may). Memory then follows the data, not the longest query times the number of queries.

    Parameters
    ----------
    group_sizes : numpy.ndarray
        Documents per query (positive integers), rows grouped by query in that order.
    max_cells : int
        Most slots (queries x width) of a bucket holding more than one query.

    Returns
    -------
    list of LengthBucket
        Every query in exactly one bucket.
    """
    sizes = np.asarray(group_sizes, dtype=np.int64)
    if sizes.size == 0:
        return []
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    order = np.argsort(sizes, kind="stable")
    classes = np.floor(np.log2(sizes[order])).astype(np.int64)  # lengths within a factor of two
    cuts = np.flatnonzero(np.diff(classes)) + 1
    buckets = []
    for members in np.split(order, cuts):
        width_of_class = int(sizes[members[-1]])
        per_bucket = max(1, max_cells // width_of_class)
        for first in range(0, members.size, per_bucket):
            queries = members[first:first + per_bucket]
            buckets.append(LengthBucket(queries, *padded_rows(starts, sizes, queries, fill=0)))
    return buckets


def padded_rows(starts: np.ndarray, sizes: np.ndarray, queries: np.ndarray, fill: int) -> tuple[np.ndarray, np.ndarray]:
    """The flat row of every slot of ``queries`` padded to the longest of them (``fill`` beyond a query's
    end), ``[B, W]``, and the mask of real slots."""
    position = np.arange(int(sizes[queries].max()))
    mask = position[None, :] < sizes[queries][:, None]
    return np.where(mask, starts[queries][:, None] + position[None, :], fill), mask


def per_query_by_bucket(buckets: list[LengthBucket], num_queries: int,
                        evaluate: Callable[[LengthBucket], dict[str, Any]]) -> dict[str, np.ndarray]:
    """``evaluate(bucket) -> {name: value of each of its queries}`` over every bucket, gathered into
    ``{name: value of each query}`` in the groups' order."""
    out: dict[str, np.ndarray] = {}
    for bucket in buckets:
        for name, values in evaluate(bucket).items():
            out.setdefault(name, np.empty(num_queries, dtype=np.float64))[bucket.queries] = np.asarray(values)
    return out
