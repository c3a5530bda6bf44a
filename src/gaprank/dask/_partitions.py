"""Query-aligned Dask partitions."""

from __future__ import annotations

from typing import Any

import numpy as np

from .._extras import require
from .._grouped import GroupedLists
from .._inputs import GaprankInputError
from .._typing import ArrayLike


def partition_by_query(X: ArrayLike, y: ArrayLike, qid: ArrayLike, npartitions: int) -> tuple[Any, Any, Any]:
    """Dask arrays of ``X``, ``y`` and the query sizes, in ``npartitions`` partitions cut at query
    boundaries, each holding about the same number of documents.

    The rows of a query must be contiguous (as in a LETOR file). ``group`` holds, per partition, the
    sizes of its queries: what ``DaskLGBMRanker.fit(X, y, group=group)`` expects.

    Parameters
    ----------
    X : array_like of shape (rows, features)
    y : array_like of shape (rows,)
        Integer relevance grades.
    qid : array_like of shape (rows,)
        The query of each row.
    npartitions : int
        The number of partitions; at most the number of queries.

    Returns
    -------
    X, y, group : dask.array.Array
        ``X`` and ``y`` chunked by rows, ``group`` chunked by queries, partition by partition.

    Examples
    --------
    >>> import numpy as np
    >>> from gaprank.dask import partition_by_query
    >>> X, y, group = partition_by_query(np.zeros((8, 2)), [1, 0, 2, 0, 0, 1, 0, 0], [5, 5, 6, 6, 6, 9, 9, 9], 2)
    >>> X.chunks[0], group.compute().tolist(), group.chunks[0]
    ((5, 3), [2, 3, 3], (2, 1))
    """
    da = require("dask.array", "dask", "gaprank.dask")
    features = np.asarray(X)
    labels = np.asarray(y)
    ids = np.asarray(qid)
    if features.ndim != 2 or labels.shape != (features.shape[0],) or ids.shape != labels.shape:
        raise GaprankInputError(f"X must be (rows, features) with y and qid one per row; got X {features.shape}, "
                                f"y {labels.shape}, qid {ids.shape}")
    queries = GroupedLists.from_query_runs(ids, what="qid")
    starts, sizes = queries.starts, queries.group_sizes
    if not isinstance(npartitions, (int, np.integer)) or not 1 <= npartitions <= sizes.size:
        raise GaprankInputError(f"npartitions must be an integer in 1..{sizes.size} (the number of queries); "
                                f"got {npartitions!r}")
    # the query starting nearest each equal share of the documents begins a new partition
    targets = np.arange(1, npartitions) * (labels.size / npartitions)
    after = np.clip(np.searchsorted(starts, targets), 1, sizes.size - 1)
    nearest = np.where(targets - starts[after - 1] < starts[after] - targets, after - 1, after)
    cuts = np.unique(np.clip(nearest, 1, sizes.size - 1))
    if cuts.size != npartitions - 1:  # too few distinct boundaries: spread them evenly over queries
        cuts = np.linspace(0, sizes.size, npartitions + 1).astype(int)[1:-1]
    query_edges = np.concatenate([[0], cuts, [sizes.size]])
    row_edges = np.concatenate([starts, [labels.size]])[query_edges]
    row_chunks = tuple(int(n) for n in np.diff(row_edges))
    return (da.from_array(features, chunks=(row_chunks, features.shape[1])),
            da.from_array(labels, chunks=(row_chunks,)),
            da.from_array(sizes, chunks=(tuple(int(n) for n in np.diff(query_edges)),)))


def check_query_partitions(qid: Any) -> None:
    """Raise when a query's rows lie in more than one partition of the Dask collection ``qid``
    (an array or series of query ids partitioned like the data), or are not contiguous within one.

    Parameters
    ----------
    qid : dask.array.Array or dask.dataframe.Series
        The query id of every row, partitioned as ``X`` is.

    Examples
    --------
    >>> import dask.array as da
    >>> from gaprank.dask import check_query_partitions
    >>> check_query_partitions(da.from_array([1, 1, 2, 2, 3], chunks=3))
    Traceback (most recent call last):
    ...
    gaprank._inputs.GaprankInputError: query 2 is split across partitions 0 and 1: ...
    """
    import dask

    parts = qid.to_delayed()
    parts = parts.flatten().tolist() if isinstance(parts, np.ndarray) else list(parts)
    owner: dict[Any, int] = {}
    for index, part in enumerate(dask.compute(*parts)):
        values = np.asarray(part)
        if values.size == 0:
            continue
        for query in values[GroupedLists.from_query_runs(values, what="qid").starts].tolist():
            if query in owner:
                raise GaprankInputError(f"query {query!r} is split across partitions {owner[query]} and {index}: each "
                                        "worker would rank its part as a separate list and the gradients would be "
                                        "wrong; cut the partitions at query boundaries (gaprank.dask.partition_by_query)")
            owner[query] = index
