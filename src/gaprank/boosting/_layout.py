"""A LightGBM data set's queries as padded torch batches, built once per data set and reused."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

import numpy as np
import torch

from .._engine.slots import SlotLayout
from .._grouped import GroupedLists
from .._inputs import GaprankInputError, check_labels
from .._padding import check_group_sizes
from .._typing import ArrayLike


def check_flat_labels(labels: ArrayLike) -> np.ndarray:
    """Labels of a LightGBM data set: finite non-negative integer grades (LightGBM stores float32)."""
    if labels is None:
        raise GaprankInputError("the data set has no labels")
    y = np.asarray(labels, dtype=np.float64)
    if y.ndim != 1:
        raise GaprankInputError(f"labels must be 1-D; got shape {y.shape}")
    grades = torch.from_numpy(y)[None]
    return check_labels(grades, torch.ones(grades.shape, dtype=torch.bool))[0].numpy()


def check_flat_scores(preds: ArrayLike, num_rows: int) -> np.ndarray:
    s = np.asarray(preds, dtype=np.float64)
    if s.ndim != 1 or s.size != num_rows:
        raise GaprankInputError(f"predictions must be 1-D with one score per row ({num_rows}); got shape {s.shape}; "
                                "multi-class/multi-output boosting is not a ranking task")
    if not np.isfinite(s).all():
        row = int(np.flatnonzero(~np.isfinite(s))[0])
        raise GaprankInputError(f"scores contain NaN or infinite values (first at row {row}: {s[row]}); "
                                "the boosting diverged or the data holds invalid values")
    return s


@dataclass
class Bucket:
    """Queries of similar length, padded: slot (q, n) holds flat row ``rows[q, n]`` when ``mask``."""

    rows: torch.Tensor  # [B, W] int64; padding points one past the last row (a sentinel slot)
    mask: torch.Tensor  # [B, W] bool
    labels: torch.Tensor  # [B, W] int64 (0 at padding)
    weights: torch.Tensor | None = None  # [B, W] or [B, W, c] float64 (0 at padding), the rows' weights in the measure


@dataclass
class QueryLayout:
    """Flat rows grouped by query (:class:`~gaprank._grouped.GroupedLists`), as the pair engine's buckets of padded
    queries (:meth:`~gaprank._grouped.GroupedLists.pair_buckets`), and the same buckets as one
    :class:`~gaprank._engine.slots.SlotLayout` (bucket after bucket, query-major).

    ``only_rankable`` keeps only the queries with at least two different labels (the only ones a
    pairwise objective can move; with weights, at least two documents); the others are left out of every bucket.
    """

    num_rows: int
    labels: np.ndarray  # [rows] int64
    group_sizes: np.ndarray  # [queries] int64
    buckets: list[Bucket]
    slots: SlotLayout
    slot_rows: torch.Tensor  # [S] int64: the row at each slot, num_rows (a sentinel) at padding
    slot_labels: torch.Tensor  # [S] int64: its label, 0 at padding
    slot_weights: torch.Tensor | None = None  # [S] or [S, c] float64: its weight in the measure, 0 at padding

    @property
    def max_label(self) -> int:
        return int(self.labels.max()) if self.labels.size else 0

    @classmethod
    def build(cls, labels: ArrayLike, group: ArrayLike | None, *, only_rankable: bool, rows: int | None = None,
              weights: np.ndarray | None = None) -> QueryLayout:
        """``rows``: how many upper ranks of each query take part in pairs (None: all), for the cost model.
        ``weights``: the rows' weights in the measure (checked), laid out as the labels."""
        y = check_flat_labels(labels)
        # an empty group (a query id np.bincount counts but no row has) is skipped, as native lambdarank does
        grouped = GroupedLists(check_group_sizes(group, y.size, allow_empty=True))
        sizes, starts = grouped.group_sizes, grouped.starts
        queries = np.flatnonzero(sizes > 0)
        if only_rankable and queries.size and weights is not None:  # two weighted documents of one grade may differ
            queries = queries[sizes[queries] >= 2]
        elif only_rankable and queries.size:
            differ = np.maximum.reduceat(y, starts[queries]) > np.minimum.reduceat(y, starts[queries])
            queries = queries[differ]
        buckets, chosen_sizes = [], []
        labels_with_sentinel = torch.from_numpy(np.append(y, 0))
        weights_with_sentinel = None
        if weights is not None:
            weights_with_sentinel = torch.from_numpy(np.concatenate([weights, np.zeros((1, *weights.shape[1:]))]))
        for bucket in grouped.pair_buckets(queries, rows, fill=y.size):  # padding reads the sentinel label
            rows_t = torch.from_numpy(bucket.rows)
            buckets.append(Bucket(rows_t, torch.from_numpy(bucket.mask), labels_with_sentinel[rows_t],
                                  None if weights_with_sentinel is None else weights_with_sentinel[rows_t]))
            chosen_sizes.append(sizes[bucket.queries])
        slots = SlotLayout([(int(b.rows.shape[0]), int(b.rows.shape[1])) for b in buckets],
                           torch.from_numpy(np.concatenate(chosen_sizes) if chosen_sizes else np.zeros(0, np.int64)))
        slot_weights = None
        if weights_with_sentinel is not None:
            slot_weights = (torch.cat([b.weights.reshape(-1, *b.weights.shape[2:]) for b in buckets
                                       if b.weights is not None])
                            if buckets else torch.zeros(0, *weights_with_sentinel.shape[1:], dtype=torch.float64))
        return cls(y.size, y, sizes, buckets, slots, _concat_flat([b.rows for b in buckets]),
                   _concat_flat([b.labels for b in buckets]), slot_weights)


def _concat_flat(parts: list[torch.Tensor]) -> torch.Tensor:
    return torch.cat([p.reshape(-1) for p in parts]) if parts else torch.zeros(0, dtype=torch.int64)


T = TypeVar("T")


class LayoutCache(Generic[T]):
    """Remembers what was built for the last few (labels, group) pairs.

    LightGBM hands the same training set to the objective every round and each validation set to
    the eval function every round; building the padded layout once saves an O(rows) pass per call.
    A hit needs equal contents, so a changed data set is never served stale. ``lgb.cv`` hands its
    folds' training sets in turn every round (five by default, ten often): the default ``size`` holds
    16, so the folds never evict one another; least recently used goes first beyond that.
    """

    def __init__(self, build: Callable[..., T], size: int = 16) -> None:
        self._build = build
        self._size = size
        self._entries: list[tuple[np.ndarray, np.ndarray, np.ndarray | None, T]] = []

    def get(self, labels: ArrayLike, group: ArrayLike | None, weights: ArrayLike | None = None) -> T:
        """What was built for these labels and group (and ``weights``, when what is built reads them: they are
        then part of what must be equal), else built now (``build(labels, group)``, or with ``weights``)."""
        y = np.asarray(labels)
        sizes = np.asarray(group) if group is not None else None
        w = None if weights is None else np.asarray(weights)
        for i, (cached_y, cached_sizes, cached_w, value) in enumerate(self._entries):
            if sizes is None or cached_sizes.shape != sizes.shape or cached_y.shape != y.shape:
                continue
            same_weights = (cached_w is None and w is None) or (
                cached_w is not None and w is not None and cached_w.shape == w.shape and np.array_equal(cached_w, w))
            if same_weights and np.array_equal(cached_sizes, sizes) and np.array_equal(cached_y, y):
                self._entries.insert(0, self._entries.pop(i))
                return value
        value = self._build(y, sizes) if w is None else self._build(y, sizes, w)
        self._entries.insert(0, (y.copy(), np.array(sizes), None if w is None else w.copy(), value))
        del self._entries[self._size:]
        return value

    def __getstate__(self) -> dict:
        # Pickled or deep-copied objectives (sklearn.clone, joblib) start with an empty cache.
        return {"_build": self._build, "_size": self._size, "_entries": []}
