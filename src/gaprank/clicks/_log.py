"""A click log held column by column: one row per document shown in a session."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._inputs import GaprankInputError

EVENTS = ("none", "click", "cart", "purchase")  # the event grades 0..3, each implying the ones below it


@dataclass(frozen=True)
class ClickLog:
    """One row per document shown in a session, in session order and, within a session, by position.

    Attributes
    ----------
    session : numpy.ndarray of int64
        The session of each row (0, 1, ...): the rows of a session are contiguous.
    query : numpy.ndarray of int64
        The session's query, an index into the split's queries (its ``query_ids``).
    document : numpy.ndarray of int64
        The shown document, a row of the split.
    position : numpy.ndarray of int16
        Where it was shown, 1 at the top.
    event : numpy.ndarray of int8
        What it got: 0 none, 1 click, 2 cart, 3 purchase (:data:`EVENTS`), or the user's own scale 0..c.
    """

    session: np.ndarray
    query: np.ndarray
    document: np.ndarray
    position: np.ndarray
    event: np.ndarray

    def __post_init__(self) -> None:
        lengths = {name: getattr(self, name).shape for name in ("session", "query", "document", "position", "event")}
        if len(set(lengths.values())) != 1 or len(next(iter(lengths.values()))) != 1:
            raise GaprankInputError(f"a click log's columns must be 1-D and of one length; got {lengths}")

    def __len__(self) -> int:
        return int(self.session.size)

    @property
    def num_sessions(self) -> int:
        return int(self.session[-1]) + 1 if self.session.size else 0

    def sessions_between(self, first: int, last: int) -> ClickLog:
        """The rows of sessions ``first..last-1``, their numbers kept: views of the columns (the rows are in session
        order), no copy."""
        lo, hi = np.searchsorted(self.session, [first, last])
        return ClickLog(*(getattr(self, column)[lo:hi] for column in ("session", "query", "document", "position",
                                                                      "event")))

    def counts(self) -> np.ndarray:
        """``[levels]``: how many rows got each event 0..max."""
        return np.bincount(self.event.astype(np.int64), minlength=len(EVENTS))

    def add_to(self, counts: np.ndarray) -> None:
        """Add this log's rows to ``counts`` ``[rows, positions, levels]`` (one per shown document, position, event)."""
        np.add.at(counts, (self.document, self.position.astype(np.int64) - 1, self.event.astype(np.int64)), 1)

    def count(self, rows: int, positions: int = 10, levels: int = len(EVENTS)) -> ClickCounts:
        """The log's events per shown document and position (:class:`ClickCounts`), for a split of ``rows`` rows."""
        if len(self) and (int(self.position.max()) > positions or int(self.event.max()) >= levels):
            raise GaprankInputError(f"the log shows positions up to {int(self.position.max())} and events up to "
                                    f"{int(self.event.max())}; count them with positions >= and levels > those")
        counts = np.zeros((rows, positions, levels), dtype=np.int64)
        self.add_to(counts)
        return ClickCounts(counts, self.num_sessions)


@dataclass(frozen=True)
class ClickCounts:
    """A log's events counted per shown document and position: ``counts[row, position - 1, event]`` is how many
    sessions showed the split's ``row`` at ``position`` and got ``event`` from it.

    Attributes
    ----------
    counts : numpy.ndarray of int64
        ``[rows, positions, levels]``.
    sessions : int
        The sessions counted.
    session_ids : numpy.ndarray of str, optional
        The ids of the sessions counted, sorted, as read from the log's files (:func:`count_clicks` keeps them, so
        that counts of several files can be added with a check that no session is in two).
    """

    counts: np.ndarray
    sessions: int
    session_ids: np.ndarray | None = None

    @property
    def shown(self) -> np.ndarray:
        """``[rows, positions]``: how many sessions showed each row at each position."""
        return self.counts.sum(-1)

    def reached(self, rows: np.ndarray) -> np.ndarray:
        """``[len(rows), positions, levels - 1]``: how many sessions showed each of ``rows`` at each position with an
        event of level a or above, a = 1..levels-1 (an event implies the ones below it)."""
        return np.cumsum(np.asarray(self.counts)[rows, :, ::-1], axis=-1)[..., ::-1][..., 1:]
