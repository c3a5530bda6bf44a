"""Cross-validation folds that keep every query whole, and the check that ``lgb.cv``'s folds do.

``lgb.cv`` groups its folds by query only for LightGBM's own string ranking objectives; with a callable
objective it splits rows, so each query's documents land on both sides and every "query" the objective
and the metrics see is a fragment. ``query_folds`` gives folds to pass as ``lgb.cv(folds=...)``;
``check_whole_queries`` is what the objective and ``ranking_feval`` run on a subset of a data set.
"""

from __future__ import annotations

import weakref
from typing import Any

import numpy as np

from .._inputs import GaprankInputError, check_positive_int
from .._padding import check_group_sizes
from .._typing import ArrayLike

_CHECKED: weakref.WeakKeyDictionary[Any, bool] = weakref.WeakKeyDictionary()


def query_folds(group: ArrayLike, nfold: int = 5, *, shuffle: bool = True,
                seed: int = 0) -> list[tuple[np.ndarray, np.ndarray]]:
    """``nfold`` (train rows, test rows) splits whose test parts are disjoint sets of whole queries.

    Queries are taken in a seeded random order (``shuffle``) or in file order, and each goes to the fold
    holding the fewest documents so far, so the folds have about equal numbers of documents (as
    scikit-learn's ``GroupKFold``). Pass the result as ``lgb.cv(..., folds=query_folds(group))``.

    Parameters
    ----------
    group
        Documents per query, in row order (LightGBM's ``group``).
    nfold
        Number of folds, at least 2 and at most the number of queries.
    shuffle, seed
        Whether to take the queries in a random order, and its seed.

    Returns
    -------
    list of (numpy.ndarray, numpy.ndarray)
        Sorted row indices of the training and of the test part of each fold.

    Examples
    --------
    >>> from gaprank.lightgbm import query_folds
    >>> [test.tolist() for _, test in query_folds([2, 3, 1], nfold=3, shuffle=False)]
    [[0, 1], [2, 3, 4], [5]]
    """
    sizes = check_group_sizes(group, None, what="group")
    nfold = check_positive_int(nfold, "nfold", allow_none=False)
    if not 2 <= nfold <= sizes.size:
        raise GaprankInputError(f"nfold must be between 2 and the number of queries ({sizes.size}); got {nfold}")
    order = np.random.default_rng(seed).permutation(sizes.size) if shuffle else np.arange(sizes.size)
    load = np.zeros(nfold, dtype=np.int64)
    fold_of = np.empty(sizes.size, dtype=np.int64)
    for query in order:  # one step per query, not per row or pair
        fold = int(np.argmin(load))
        fold_of[query] = fold
        load[fold] += sizes[query]
    row_fold = np.repeat(fold_of, sizes)
    rows = np.arange(int(sizes.sum()))
    return [(rows[row_fold != k], rows[row_fold == k]) for k in range(nfold)]


def check_whole_queries(dataset: Any) -> None:
    """Refuse a subset of a LightGBM data set that holds only part of some query's rows.

    A subset (``Dataset.subset``, as ``lgb.cv`` builds its folds) keeps the query sizes of its rows, so
    fragments pass for short queries and give wrong gradients and measures without any warning.
    """
    used = getattr(dataset, "used_indices", None)
    reference = getattr(dataset, "reference", None)
    if used is None or reference is None:
        return
    try:
        if _CHECKED.get(dataset):
            return
    except TypeError:  # pragma: no cover - an object that cannot be weakly referenced
        pass
    full = reference.get_group()
    if full is None:
        return
    sizes = np.asarray(full, dtype=np.int64)
    taken = np.bincount(np.repeat(np.arange(sizes.size), sizes)[np.asarray(used, dtype=np.int64)], minlength=sizes.size)
    split = np.flatnonzero((taken > 0) & (taken < sizes))
    if split.size:
        q = int(split[0])
        raise GaprankInputError(
            f"this LightGBM data set is a subset that cuts queries apart ({split.size} queries; query {q} has "
            f"{taken[q]} of its {sizes[q]} rows here): lgb.cv splits rows, not queries, for a custom objective. "
            "Pass folds=gaprank.lightgbm.query_folds(group, nfold) to lgb.cv")
    try:
        _CHECKED[dataset] = True
    except TypeError:  # pragma: no cover
        pass
