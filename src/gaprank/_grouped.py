"""Grouped lists: the queries of a data set, cut into buckets of similar length and padded; the one layer every
caller that works query by query goes through.

:class:`GroupedLists` takes the queries as flat rows grouped by query (documents per query), flat rows with a query
id each (:meth:`~GroupedLists.from_query_ids`; contiguous runs of ids: :meth:`~GroupedLists.from_query_runs`), a
group pointer (XGBoost's ``group_ptr``: :meth:`~GroupedLists.from_pointer`) or a padded ``[batch, list]`` array
with its mask (:meth:`~GroupedLists.from_padded`). Its callers:

* evaluation (LETOR and TREC evaluation, ``RankingEval``, the torchmetrics adapter): the queries cut by
  :func:`length_buckets` (lengths within a factor of two), each measure called once per bucket, the values back
  per query in the queries' order; the measures' conventions are the caller's (a :class:`MeasureCall`);
* training batches: runs of a fixed number of queries sorted by length (:meth:`GroupedLists.batches`), padded
  the same way (:meth:`GroupedLists.padded`);
* LambdaMART's pair engine: the queries cut where padding costs its pair blocks least
  (:meth:`GroupedLists.pair_buckets`, :func:`pair_cost_cut`);
* Dask's partitions, cut at query boundaries.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from ._inputs import GaprankInputError
from ._padding import padded_rows
from ._typing import ArrayLike

# Cells of one padded bucket: its queries x its longest query. Large enough that a bucket's fixed cost
# (a few dozen tensor operations) is spread thin, small enough that no bucket's tables take much memory.
BUCKET_CELLS = 1 << 20
# The cost model that cuts queries, sorted by length, into the pair engine's buckets, padded to their longest query.
# In units of one pair of the pair blocks: a bucket costs a fixed few dozen tensor operations (about as much as
# 70,000 pairs), each pair of its [B, rows, W] blocks one unit, and each padded slot about 10 units (the swap-delta
# factors, sorting); the estimates are in docs/benchmarks.md. Small data sets get a few buckets, large ones many
# tight ones.
BUCKET_COST = 70_000.0
SLOT_COST = 10.0


@dataclass(frozen=True)
class LengthBucket:
    """Queries of similar length, padded to the longest of them: ``queries`` [B] (indices into the
    groups), ``rows`` [B, W] (the flat row of each slot; 0 where padded) and ``mask`` [B, W]."""

    queries: np.ndarray
    rows: np.ndarray
    mask: np.ndarray

    @classmethod
    def without_documents(cls, queries: np.ndarray) -> LengthBucket:
        """Queries without documents: width one, every slot masked."""
        return cls(queries, np.zeros((queries.size, 1), dtype=np.int64), np.zeros((queries.size, 1), dtype=bool))

    def take(self, values: np.ndarray, fill: Any = 0) -> np.ndarray:
        """The bucket's ``[B, W]`` view of flat per-row ``values``, ``fill`` in the padding."""
        return np.where(self.mask, values[self.rows], np.asarray(fill, dtype=values.dtype))


def length_buckets(group_sizes: np.ndarray, max_cells: int = BUCKET_CELLS) -> list[LengthBucket]:
    """Queries cut into buckets of similar length, each padded only to its own longest query.

    Queries whose lengths lie within a factor of two share a bucket (so padding at most doubles a
    query), cut further so that no bucket holds more than ``max_cells`` slots (one long query alone
    may). Memory then follows the data, not the longest query times the number of queries. Queries
    without documents share buckets of width one, every slot masked.

    Parameters
    ----------
    group_sizes : numpy.ndarray
        Documents per query (non-negative integers), rows grouped by query in that order.
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
    empty = int(np.count_nonzero(sizes == 0))  # sorted first
    buckets = [LengthBucket.without_documents(queries)
               for queries in np.split(order[:empty], range(max_cells, empty, max_cells))] if empty else []
    order = order[empty:]
    classes = np.floor(np.log2(sizes[order])).astype(np.int64)  # lengths within a factor of two
    cuts = np.flatnonzero(np.diff(classes)) + 1
    for members in np.split(order, cuts):
        if members.size == 0:
            continue
        width_of_class = int(sizes[members[-1]])
        per_bucket = max(1, max_cells // width_of_class)
        for first in range(0, members.size, per_bucket):
            queries = members[first:first + per_bucket]
            buckets.append(LengthBucket(queries, *padded_rows(starts, sizes, queries, fill=0)))
    return buckets


def pair_cost_cut(sorted_sizes: np.ndarray, rows: int | None) -> list[tuple[int, int]]:
    """Cut queries sorted by length into buckets ``[first, last)`` of least modelled cost for the pair engine.

    A bucket of ``B`` queries whose longest has ``W`` documents costs ``BUCKET_COST + B (R W + SLOT_COST W)``,
    R = min(rows, W - 1) upper ranks (W - 1 when ``rows`` is None). Exact dynamic programming over the distinct
    lengths (equal lengths never need to be split).
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


@dataclass(frozen=True)
class MeasureCall:
    """One measure to evaluate over grouped lists, as ``function(scores, labels, mask=..., reduction="none",
    **keywords, **per-query keywords)`` on each bucket's ``[B, W]`` block.

    Attributes
    ----------
    name : str
        The key of its values in the result.
    function : callable
        A metric function (or a parsed measure) over ``[batch, list]`` arrays.
    keywords : mapping
        Keywords passed as they are: the conventions, the whole set's grade scale, a cutoff.
    mask : numpy.ndarray, optional
        Which documents count, one bool per document in the input's layout; None: every document.
    per_query : mapping
        Keywords with one value per query (``[queries, ...]``, in the queries' order), e.g. TREC's recall
        bases: each bucket gets its own queries' rows.
    """

    name: str
    function: Callable[..., Any]
    keywords: Mapping[str, Any] = field(default_factory=dict)
    mask: np.ndarray | None = None
    per_query: Mapping[str, np.ndarray] = field(default_factory=dict)


class GroupedLists:
    """The queries of a data set as length buckets (:func:`length_buckets`), and measures evaluated over them.

    Built from documents per query (flat rows grouped by query, in that order), from a query id per row
    (:meth:`from_query_ids`) or from a padded mask (:meth:`from_padded`). Values given in the input's
    layout (flat rows, or ``[batch, list]``) are brought to flat rows grouped by query by :meth:`flat`; per
    query results come back in the queries' order.

    Parameters
    ----------
    group_sizes : array_like
        Documents per query (non-negative integers; a query without documents evaluates to each measure's
        value on an empty list).
    max_cells : int
        Most slots of a bucket holding more than one query.

    Examples
    --------
    >>> import numpy as np
    >>> from gaprank import precision
    >>> grouped = GroupedLists([3, 1])
    >>> out = grouped.evaluate([MeasureCall("P@1", precision, {"k": 1})], np.array([0.1, 0.9, 0.5, 0.3]),
    ...                        np.array([1, 0, 0, 1]))
    >>> out["P@1"].tolist()
    [0.0, 1.0]
    """

    def __init__(self, group_sizes: ArrayLike, *, max_cells: int = BUCKET_CELLS) -> None:
        sizes = np.asarray(group_sizes)
        if sizes.ndim != 1 or not (np.issubdtype(sizes.dtype, np.integer) or sizes.size == 0) or (sizes < 0).any():
            smallest = f", smallest {sizes.min()}" if sizes.ndim == 1 and sizes.size else ""
            raise GaprankInputError(f"group sizes must be a 1-D array of non-negative integers; got {sizes.dtype} of shape "
                                    f"{sizes.shape}{smallest}")
        self.group_sizes = sizes.astype(np.int64)
        self.num_rows = int(self.group_sizes.sum())
        self.max_cells = max_cells
        self._order: np.ndarray | None = None  # from_query_ids: the input row of each grouped row
        self._mask: np.ndarray | None = None  # from_padded: the input's real slots
        self.query_ids: np.ndarray | None = None

    @classmethod
    def from_query_ids(cls, query_ids: ArrayLike, *, max_cells: int = BUCKET_CELLS) -> GroupedLists:
        """Documents with one query id each, in any order: the queries in ascending id order (the ids in
        :attr:`query_ids`), each query's documents in their input order."""
        ids = np.asarray(query_ids)
        if ids.ndim != 1:
            raise GaprankInputError(f"query ids must be 1-D, one per document; got shape {ids.shape}")
        order = np.argsort(ids, kind="stable")  # stable: a query's documents keep their input order
        unique, sizes = np.unique(ids, return_counts=True)
        grouped = cls(sizes, max_cells=max_cells)
        grouped._order, grouped.query_ids = order, unique
        return grouped

    @classmethod
    def from_query_runs(cls, query_ids: ArrayLike, *, what: str = "query ids",
                        max_cells: int = BUCKET_CELLS) -> GroupedLists:
        """Documents whose query ids come in runs, one run per query (a LETOR file's order): the queries in the
        order of their runs (their ids in :attr:`query_ids`). A query whose rows are not contiguous is refused
        (``what`` names the ids in messages)."""
        ids = np.asarray(query_ids)
        if ids.ndim != 1 or ids.size == 0:
            raise GaprankInputError(f"{what} must be a non-empty 1-D array, one query id per row; got shape {ids.shape}")
        starts = np.concatenate([[0], np.flatnonzero(ids[1:] != ids[:-1]) + 1])
        run_ids = ids[starts]
        if np.unique(run_ids).size != run_ids.size:
            _, first = np.unique(run_ids, return_index=True)
            repeated = run_ids[np.setdiff1d(np.arange(run_ids.size), first)[0]].item()  # 5, not np.int64(5)
            raise GaprankInputError(f"the rows of query {repeated!r} are not contiguous; sort the rows by query "
                                    "(a stable sort keeps each query's document order)")
        grouped = cls(np.diff(np.concatenate([starts, [ids.size]])), max_cells=max_cells)
        grouped.query_ids = run_ids
        return grouped

    @classmethod
    def from_pointer(cls, pointer: ArrayLike, num_rows: int, *, max_cells: int = BUCKET_CELLS) -> GroupedLists:
        """A group pointer (XGBoost's ``group_ptr``): the first row of each query, then ``num_rows``; every query
        holds at least one row."""
        bounds = np.asarray(pointer).astype(np.int64)
        if bounds.ndim != 1 or bounds.size < 2:
            raise GaprankInputError(f"a group pointer holds each query's first row and then the number of rows; got "
                                    f"shape {bounds.shape}")
        sizes = np.diff(bounds)
        if bounds[0] != 0 or (sizes < 1).any() or bounds[-1] != num_rows:
            raise GaprankInputError(f"the query groups do not cover the {num_rows} rows (the group pointer ends at "
                                    f"{bounds[-1]})")
        return cls(sizes, max_cells=max_cells)

    @classmethod
    def from_padded(cls, mask: ArrayLike, *, max_cells: int = BUCKET_CELLS) -> GroupedLists:
        """A padded ``[batch, list]`` layout: query i is row i, its documents the True slots of ``mask`` in
        list order (a row without any is a query without documents)."""
        real = np.asarray(mask)
        if real.ndim != 2 or real.dtype != bool:
            raise GaprankInputError(f"mask must be a bool [batch, list] array; got {real.dtype} of shape {real.shape}")
        grouped = cls(real.sum(axis=1), max_cells=max_cells)
        grouped._mask = real
        return grouped

    @property
    def num_queries(self) -> int:
        return int(self.group_sizes.size)

    @cached_property
    def buckets(self) -> list[LengthBucket]:
        """The queries cut by :func:`length_buckets`; rows index the flat rows of :meth:`flat`."""
        return length_buckets(self.group_sizes, self.max_cells)

    @cached_property
    def starts(self) -> np.ndarray:
        """The first flat row of each query."""
        return np.concatenate([[0], np.cumsum(self.group_sizes)[:-1]]).astype(np.int64)

    def batches(self, size: int) -> list[np.ndarray]:
        """The queries sorted by length (stable), in runs of ``size`` (the last may be shorter): training
        batches, a fixed number of queries each, where a bucket holds the queries within a factor of two in
        length. Each run is padded by :meth:`padded` when it is used.

        Examples
        --------
        >>> [run.tolist() for run in GroupedLists([3, 1, 2]).batches(2)]
        [[1, 2], [0]]
        """
        if int(size) < 1:
            raise GaprankInputError(f"a batch holds at least one query; got {size}")
        order = np.argsort(self.group_sizes, kind="stable")
        return [order[first:first + size] for first in range(0, order.size, size)]

    def pair_buckets(self, queries: ArrayLike, rows: int | None, *, fill: int = 0) -> list[LengthBucket]:
        """The queries ``queries`` (indices) sorted by length (stable) and cut by :func:`pair_cost_cut` (``rows``:
        the upper ranks that take part in pairs, None: all), each bucket padded to its longest query, its padding
        slots pointing at row ``fill``: the pair engine's buckets."""
        chosen = np.asarray(queries, dtype=np.int64)
        chosen = chosen[np.argsort(self.group_sizes[chosen], kind="stable")]
        buckets = []
        for first, last in pair_cost_cut(self.group_sizes[chosen], rows):
            part = chosen[first:last]
            buckets.append(LengthBucket(part, *padded_rows(self.starts, self.group_sizes, part, fill=fill)))
        return buckets

    def padded(self, queries: ArrayLike) -> LengthBucket:
        """The queries ``queries`` (indices, in that order) padded to the longest of them, as one bucket."""
        chosen = np.asarray(queries)
        if chosen.ndim != 1 or not (np.issubdtype(chosen.dtype, np.integer) or chosen.size == 0) or (
                chosen.size and not (0 <= chosen.min() and chosen.max() < self.num_queries)):
            raise GaprankInputError(f"queries must be a 1-D array of query indices 0..{self.num_queries - 1}; got "
                                    f"{chosen.dtype} of shape {chosen.shape}")
        chosen = chosen.astype(np.int64)
        if chosen.size == 0 or int(self.group_sizes[chosen].max()) == 0:
            return LengthBucket.without_documents(chosen)
        return LengthBucket(chosen, *padded_rows(self.starts, self.group_sizes, chosen, fill=0))

    def flat(self, values: ArrayLike, what: str = "values") -> np.ndarray:
        """``values`` in the input's layout as flat rows grouped by query (the rows the buckets index)."""
        array = np.asarray(values)
        if self._mask is not None:
            if array.shape[:2] != self._mask.shape:
                raise GaprankInputError(f"{what} must have the mask's shape {self._mask.shape}; got {array.shape}")
            return array[self._mask]
        if array.ndim == 0 or array.shape[0] != self.num_rows:
            raise GaprankInputError(f"{what} must have one entry per document ({self.num_rows}); got shape {array.shape}")
        return array if self._order is None else array[self._order]

    def gather(self, evaluate: Callable[[LengthBucket], Mapping[str, Any]]) -> dict[str, np.ndarray]:
        """``evaluate(bucket) -> {name: value of each of its queries}`` over every bucket, gathered into
        ``{name: value of each query}`` (float64) in the queries' order."""
        out: dict[str, np.ndarray] = {}
        for bucket in self.buckets:
            for name, values in evaluate(bucket).items():
                out.setdefault(name, np.empty(self.num_queries, dtype=np.float64))[bucket.queries] = np.asarray(values)
        return out

    def evaluate(self, calls: Sequence[MeasureCall], scores: ArrayLike, labels: ArrayLike) -> dict[str, np.ndarray]:
        """Each measure's value per query, bucket by bucket.

        Parameters
        ----------
        calls : sequence of MeasureCall
            The measures, with their keywords; their names must be unique.
        scores, labels : array_like
            In the input's layout (flat rows, or ``[batch, list]`` for :meth:`from_padded`).

        Returns
        -------
        dict of str to numpy.ndarray
            ``{name: value of each query}`` (float64), in the order of ``calls`` and of the queries.
        """
        names = [call.name for call in calls]
        if len(set(names)) != len(names):
            raise GaprankInputError(f"measure names must be unique; got {names}")
        flat_scores, flat_labels = self.flat(scores, "scores"), self.flat(labels, "labels")
        masks = {id(call.mask): self.flat(call.mask, f"the mask of {call.name}")
                 for call in calls if call.mask is not None}

        def evaluate(bucket: LengthBucket) -> dict[str, Any]:
            s, y = bucket.take(flat_scores), bucket.take(flat_labels)
            taken = {key: bucket.take(mask, False) for key, mask in masks.items()}
            return {call.name: call.function(s, y, mask=bucket.mask if call.mask is None else taken[id(call.mask)],
                                             reduction="none", **call.keywords,
                                             **{key: value[bucket.queries] for key, value in call.per_query.items()})
                    for call in calls}

        out = {name: np.empty(self.num_queries, dtype=np.float64) for name in names}
        out.update(self.gather(evaluate))
        return out
