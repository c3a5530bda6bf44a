"""Click logs on disk: a CSV file with a header (or a Parquet file, ``.parquet``, with the same columns: the
``parquet`` extra), one row per document shown in a session, read in chunks so that memory follows the chunk, not
the log, and checked row by row (a bad row is one error naming the file and its line, or its row in a Parquet file).

Columns: ``session`` (an id; a session's rows are contiguous), ``query`` (the split's query id), ``document`` (the
split's document id, LETOR's ``#docid``), ``position`` (1 at the top) and ``event`` (an integer grade 0..c:
0 none, 1 click, 2 cart, 3 purchase, or the user's own scale).
"""

from __future__ import annotations

import csv
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .._inputs import GaprankInputError
from .._padding import group_positions
from ._log import EVENTS, ClickCounts, ClickLog

COLUMNS = ("session", "query", "document", "position", "event")
ROWS_PER_CHUNK = 1 << 18  # rows parsed at once: the memory of a read, whatever the log's length


class ClickLogError(GaprankInputError):
    """A click log that cannot be used; the message names the file and the line."""


def _document_rows(split: Any) -> dict[tuple[str, str], int]:
    rows = {(str(q), str(d)): i for i, (q, d) in enumerate(zip(split.qids, split.docids, strict=True))}
    if len(rows) != len(split.qids):
        raise GaprankInputError("the split's (query id, document id) pairs must be unique to read a click log against it "
                                "(a LETOR file needs its #docid comments)")
    return rows


def _csv_batches(path: Path) -> Iterator[list[tuple[int, list[str]]]]:
    """A CSV log's rows, ``ROWS_PER_CHUNK`` at a time: ``(line, fields)``, blank lines passed over."""
    try:
        handle = path.open(newline="", encoding="utf-8")
    except OSError as exc:
        raise ClickLogError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    with handle:
        reader = csv.reader(handle)
        header = next(reader, None)
        if header is None:
            raise ClickLogError(f"{path}: the log is empty (no header line)")
        if [h.strip() for h in header] != list(COLUMNS):
            raise ClickLogError(f"{path}, line 1: the header must be {','.join(COLUMNS)}; got {','.join(header)}")
        line = 1
        while True:
            batch = []
            for fields in reader:
                line += 1
                if not fields:  # a blank line (a trailing newline, say)
                    continue
                batch.append((line, fields))
                if len(batch) == ROWS_PER_CHUNK:
                    break
            if not batch:
                return
            yield batch


def _parquet_batches(path: Path) -> Iterator[list[tuple[int, list[str]]]]:
    """A Parquet log's rows, ``ROWS_PER_CHUNK`` at a time: ``(row, fields as text)``, rows numbered from 1."""
    from .._extras import require

    parquet = require("pyarrow.parquet", "parquet", "reading a Parquet click log")
    try:
        file = parquet.ParquetFile(path)
    except (OSError, ValueError) as exc:
        raise ClickLogError(f"{path}: cannot be read as Parquet ({exc})") from None
    names = list(file.schema_arrow.names)
    if sorted(names) != sorted(COLUMNS):
        raise ClickLogError(f"{path}: the columns must be {','.join(COLUMNS)}; got {','.join(names)}")
    row = 0
    for table in file.iter_batches(batch_size=ROWS_PER_CHUNK, columns=list(COLUMNS)):
        columns = [["" if v is None else str(v) for v in table.column(i).to_pylist()] for i in range(len(COLUMNS))]
        batch = [(row + k + 1, [c[k] for c in columns]) for k in range(table.num_rows)]
        row += table.num_rows
        if batch:
            yield batch


def _chunks(path: Path, split: Any, levels: int) -> Iterator[tuple[np.ndarray, ClickLog]]:
    """``(each row's line, the chunk's rows as a ClickLog with session ids as read)`` for each chunk of ``path``."""
    rows = _document_rows(split)
    query_of_row, _ = group_positions(split.group_sizes)
    unit = _unit(path)
    for batch in (_parquet_batches(path) if unit == "row" else _csv_batches(path)):
        sessions, documents, positions, events = [], [], [], []
        for number, fields in batch:
            where = f"{path}, {unit} {number}"
            if len(fields) != len(COLUMNS):
                raise ClickLogError(f"{where}: {len(fields)} fields; a row has {len(COLUMNS)} ({','.join(COLUMNS)})")
            session, query, document, position, event = (f.strip() for f in fields)
            row = rows.get((query, document))
            if row is None:
                raise ClickLogError(f"{where}: document {document!r} of query {query!r} is not in the split")
            if not (position.isascii() and position.isdigit()) or int(position) < 1:
                raise ClickLogError(f"{where}: position must be an integer >= 1; got {position!r}")
            if not (event.isascii() and event.isdigit()) or int(event) >= levels:
                raise ClickLogError(f"{where}: event must be an integer grade 0..{levels - 1}; got {event!r}")
            sessions.append(session)
            documents.append(row)
            positions.append(int(position))
            events.append(int(event))
        document_rows = np.asarray(documents, dtype=np.int64)
        yield np.asarray([number for number, _ in batch]), ClickLog(
            np.asarray(sessions, dtype=object), query_of_row[document_rows], document_rows,
            np.asarray(positions, dtype=np.int64), np.asarray(events, dtype=np.int8))


def _unit(path: Path) -> str:
    """What a message calls a place in the file: a CSV file's line, a Parquet file's row."""
    return "row" if path.suffix.lower() == ".parquet" else "line"


def _checked_sessions(path: Path, lines: np.ndarray, chunk: ClickLog, carried: dict[str, Any]) -> np.ndarray:
    """The chunk's sessions numbered 0, 1, ... continuing the previous chunk's (``carried``), each checked: its rows
    contiguous and in one file, one query, no position twice."""
    ids = chunk.session
    unit = _unit(path)
    first_row = np.concatenate([[True], ids[1:] != ids[:-1]])  # a session's first row in the chunk
    starts = np.flatnonzero(first_row)
    continuing = carried["last"] is not None and ids[0] == carried["last"]
    numbers = np.cumsum(first_row) - 1 + carried["next"] - int(continuing)
    new = starts[1:] if continuing else starts  # the rows that open a session not seen before in this read
    _check_new_sessions(path, lines, ids, new, carried)
    for start, end in zip(starts, np.append(starts[1:], len(ids)), strict=True):
        session = ids[start]
        positions, query = (carried["positions"], carried["query"]) if start == 0 and continuing else (set(), None)
        for row in range(start, end):  # the first row that breaks the session is the line named
            position = int(chunk.position[row])
            if query is not None and int(chunk.query[row]) != query:
                raise ClickLogError(f"{path}, {unit} {int(lines[row])}: session {session!r} holds more than one query")
            if position in positions:
                raise ClickLogError(f"{path}, {unit} {int(lines[row])}: session {session!r} shows position {position} "
                                    "twice")
            positions.add(position)
            query = int(chunk.query[row])
        carried["positions"], carried["query"] = positions, query
    carried["last"] = ids[-1]
    carried["next"] = int(numbers[-1]) + 1
    return numbers.astype(np.int64)


def _check_new_sessions(path: Path, lines: np.ndarray, ids: np.ndarray, new: np.ndarray,
                        carried: dict[str, Any]) -> None:
    """Refuse a session that opens at a row of ``new`` when it was seen before: earlier in this file (its rows not
    contiguous) or in an earlier file (its rows in two files). The ids seen are kept sorted, as text (this file's,
    and the earlier files' with the file each came from): the memory of the check is the ids', not the rows'."""
    opened = ids[new].astype(str)
    order = np.argsort(opened, kind="stable")
    again = np.zeros(len(opened), dtype=bool)
    again[order[1:][opened[order][1:] == opened[order][:-1]]] = True  # a second opening within the chunk
    again |= _found(carried["ids"], opened) >= 0
    earlier = _found(carried["earlier_ids"], opened)
    bad = np.flatnonzero(again | (earlier >= 0))
    if bad.size:
        first = int(bad[0])
        where = f"{path}, {_unit(path)} {int(lines[new[first]])}: session {str(opened[first])!r}"
        if again[first]:
            raise ClickLogError(f"{where} appears again after other sessions; a session's rows must be contiguous")
        other = carried["files"][int(carried["earlier_owner"][earlier[first]])]
        raise ClickLogError(f"{where} was already read from {other}; a session's rows must be in one file")
    carried["ids"] = _merged(carried["ids"], opened[order])[0]


def _found(seen: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """Where each of ``ids`` is in the sorted ``seen``, -1 where it is not."""
    if not seen.size:
        return np.full(len(ids), -1)
    at = np.minimum(np.searchsorted(seen, ids), seen.size - 1)
    return np.where(seen[at] == ids, at, -1)


def _merged(seen: np.ndarray, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The sorted ``seen`` with the sorted ``ids`` inserted (text widened to the longer id: never cut), and where
    they went in ``seen`` (for arrays kept beside it)."""
    wide = seen.astype(np.result_type(seen, ids))
    at = np.searchsorted(wide, ids)
    return np.insert(wide, at, ids), at


def _paths(paths: str | Path | Sequence[str | Path]) -> list[Path]:
    files = [Path(paths)] if isinstance(paths, str | Path) else [Path(p) for p in paths]
    if not files:
        raise GaprankInputError("no click log files given (paths is empty)")
    return files


def read_click_log(paths: str | Path | Sequence[str | Path], split: Any, *, levels: int = len(EVENTS)) -> ClickLog:
    """A click log (module doc), one file or several read one after the other, checked row by row.

    Parameters
    ----------
    paths : str, Path or sequence of them
        The CSV files, or Parquet files (``.parquet``; the ``parquet`` extra). A session's rows are in one file.
    split : RankingSplit
        The queries and documents the log's ids refer to.
    levels : int
        The number of event grades (default 4: none, click, cart, purchase).

    Returns
    -------
    ClickLog
        Sessions numbered 0, 1, ... in the order read.
    """
    parts = [(chunk, numbers) for chunk, numbers in _read(paths, split, levels)]
    return ClickLog(np.concatenate([n for _, n in parts]), *(np.concatenate([getattr(c, name) for c, _ in parts])
                                                            for name in ("query", "document", "position", "event")))


def count_clicks(paths: str | Path | Sequence[str | Path], split: Any, *, levels: int = len(EVENTS),
                 positions: int = 10) -> ClickCounts:
    """A click log's events counted per shown document and position (:class:`ClickCounts`), one file or several,
    streamed chunk by chunk: the rows are never held whole (the memory is the split's counts and the sessions' ids,
    kept to check that each session's rows are contiguous and in one file). ``positions``: the deepest position
    counted; a row shown deeper is an error. :func:`gaprank.dask.count_clicks` counts the files on a cluster."""
    counts = np.zeros((len(split.qids), positions, levels), dtype=np.int64)
    sessions = 0
    carried = _carried()
    for chunk, numbers in _read(paths, split, levels, carried):
        if int(chunk.position.max()) > positions:
            raise ClickLogError(f"{carried['path']}: position {int(chunk.position.max())} is deeper than the "
                                f"{positions} counted (positions=)")
        chunk.add_to(counts)
        sessions = int(numbers[-1]) + 1
    return ClickCounts(counts, sessions, carried["earlier_ids"])


def _carried() -> dict[str, Any]:
    return {"next": 0, "files": [], "earlier_ids": np.array([], dtype=str), "earlier_owner": np.array([], dtype=int)}


def _read(paths: str | Path | Sequence[str | Path], split: Any, levels: int,
          carried: dict[str, Any] | None = None) -> Iterator[tuple[ClickLog, np.ndarray]]:
    if not isinstance(levels, int) or isinstance(levels, bool) or levels < 2:
        raise GaprankInputError(f"levels must be an integer >= 2 (none and at least one event); got {levels!r}")
    carried = _carried() if carried is None else carried
    for file in _paths(paths):
        carried.update(path=file, last=None, positions=set(), query=None, ids=np.array([], dtype=str))
        for lines, chunk in _chunks(file, split, levels):
            yield chunk, _checked_sessions(file, lines, chunk, carried)
        if carried["last"] is None:
            raise ClickLogError(f"{file}: the log has no rows")
        carried["earlier_ids"], at = _merged(carried["earlier_ids"], carried["ids"])
        carried["earlier_owner"] = np.insert(carried["earlier_owner"], at, len(carried["files"]))
        carried["files"].append(file)


def write_click_log(path: str | Path, log: ClickLog, split: Any) -> None:
    """``log`` (against ``split``) as a click log file (module doc): CSV, or Parquet for a ``.parquet`` path (the
    ``parquet`` extra); written whole, then moved into place."""
    from ..data import write_atomic

    queries = np.asarray(split.qids)[log.document]
    documents = np.asarray(split.docids)[log.document]
    if _unit(Path(path)) == "row":
        _write_parquet(Path(path), log, queries, documents)
        return
    lines = [",".join(COLUMNS)]
    lines += [f"{s},{q},{d},{p},{e}" for s, q, d, p, e in zip(log.session.tolist(), queries.tolist(), documents.tolist(),
                                                               log.position.tolist(), log.event.tolist(), strict=True)]
    write_atomic(path, "\n".join(lines) + "\n")


def _write_parquet(path: Path, log: ClickLog, queries: np.ndarray, documents: np.ndarray) -> None:
    import os
    import tempfile

    from .._extras import require

    arrow = require("pyarrow", "parquet", "writing a Parquet click log")
    parquet = require("pyarrow.parquet", "parquet", "writing a Parquet click log")
    table = arrow.table({"session": log.session.astype(np.int64), "query": queries.astype(str),
                         "document": documents.astype(str), "position": log.position.astype(np.int64),
                         "event": log.event.astype(np.int64)})
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(handle)
    try:
        parquet.write_table(table, temporary)
        os.replace(temporary, path)
    finally:
        if os.path.exists(temporary):
            os.remove(temporary)
