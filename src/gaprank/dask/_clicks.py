"""Click log files counted on a Dask cluster, one task per file."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .._extras import require
from .._inputs import GaprankInputError
from ..clicks import EVENTS, ClickCounts, ClickLogError
from ..clicks import count_clicks as count_file_clicks
from ..data import RankingSplit


def count_clicks(paths: str | Path | Sequence[str | Path], split: Any, *, client: Any = None,
                 levels: int = len(EVENTS), positions: int = 10) -> ClickCounts:
    """A click log's files counted on a Dask cluster: one task per file runs :func:`gaprank.clicks.count_clicks`
    (streamed, each file's rows checked), and the client adds the counts.

    The result is the local :func:`gaprank.clicks.count_clicks` of the same files. A session whose rows are in two
    files is refused, as locally: the task that finds it reads the two files in order and names the line.

    Parameters
    ----------
    paths : str, Path or sequence of them
        The log's files (CSV, or Parquet with the ``parquet`` extra), readable by the workers at these paths.
    split : RankingSplit
        The queries and documents the log's ids refer to; only its ids travel to the workers.
    client : distributed.Client, optional
        The cluster's client; by default the current one (``distributed.get_client()``).
    levels, positions : int
        As in :func:`gaprank.clicks.count_clicks`.

    Returns
    -------
    ClickCounts
        The counts of all the files, their sessions and the sessions' ids.

    Examples
    --------
    >>> from distributed import Client, LocalCluster                                # doctest: +SKIP
    >>> with LocalCluster(n_workers=2) as cluster, Client(cluster) as client:       # doctest: +SKIP
    ...     counts = count_clicks(["day1.csv", "day2.csv"], split, client=client)
    """
    distributed = require("distributed", "dask", "counting click logs on a Dask cluster")
    files = [str(paths)] if isinstance(paths, str | Path) else [str(p) for p in paths]
    if not files:
        raise GaprankInputError("no click log files given (paths is empty)")
    client = distributed.get_client() if client is None else client
    rows = len(split.qids)
    split_ids = RankingSplit(features=np.empty((rows, 0)), labels=np.zeros(rows, dtype=np.int64),
                       qids=np.asarray(split.qids), docids=np.asarray(split.docids))
    shared = client.scatter(split_ids, broadcast=True, hash=False)  # a key of its own: not one a past call releases
    tasks = client.map(count_file_clicks, files, split=shared, levels=levels, positions=positions, pure=False)
    index = {task.key: number for number, task in enumerate(tasks)}
    counts: np.ndarray | None = None
    sessions = 0
    ids: list[np.ndarray] = [np.array([], dtype=str)] * len(files)
    for task, part in distributed.as_completed(tasks, with_results=True):  # one file's table held at a time
        if counts is None:
            counts = part.counts
        else:
            counts += part.counts
        sessions += part.sessions
        ids[index[task.key]] = np.asarray(part.session_ids)
    _check_files_apart(client, files, ids, shared, levels, positions)
    assert counts is not None
    return ClickCounts(counts, sessions, np.sort(np.concatenate(ids)))


def _check_files_apart(client: Any, files: list[str], ids: list[np.ndarray], shared: Any, levels: int,
                       positions: int) -> None:
    """Refuse a session whose rows are in two files, as the local reader does: the first file (in reading order)
    holding a session of an earlier one is read on a worker after those, and the error names its line."""
    seen = np.array([], dtype=str)
    for number, file_ids in enumerate(ids):
        if number and np.isin(file_ids, seen).any():
            client.submit(count_file_clicks, files[:number + 1], shared, levels=levels, positions=positions,
                          pure=False).result()
            raise ClickLogError(f"{files[number]}: a session of an earlier file is in it; a session's rows must be in "
                                "one file")
        seen = np.union1d(seen, file_ids)
