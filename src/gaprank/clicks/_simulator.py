r"""Sessions simulated from true grades: which documents are shown, examined and what event each gets.

A session draws a query uniformly from the split, shows the logging ranker's top ``shown`` documents (ties in row
order) and the user examines them:

* position-based (``examination="position"``): rank r is examined with probability :math:`\theta_r = (1/r)^\eta`,
  independently of the rest (Joachims et al. 2017);
* cascade (``examination="cascade"``): the user reads from the top and stops at the first click (Craswell et al.
  2008), so rank r is examined when no document above it was clicked.

An examined document of grade g is clicked with probability
:math:`\epsilon^-_r + (\epsilon^+_r - \epsilon^-_r)(2^g - 1)/(2^{g_{max}} - 1)` (Chapelle et al.'s ERR mapping
between a noise floor :math:`\epsilon^-` and a ceiling :math:`\epsilon^+`; per rank: trust bias, Agarwal et al.
2019); a click becomes a cart with probability ``cart[g]`` and a cart a purchase with probability ``purchase[g]``.
The events are graded: 0 none, 1 click, 2 cart, 3 purchase.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from .._inputs import GaprankInputError
from .._padding import group_positions
from ._log import ClickLog

SESSIONS_PER_BLOCK = 1 << 16  # sessions drawn at once, so that memory stays bounded (the seed fixes the log for this size)


def _probabilities(value: Any, name: str, size: int | None = None, per: str = "grade") -> np.ndarray:
    """``value`` checked as probabilities: one, or ``size`` (one per ``per``), broadcast to ``size``."""
    array = np.atleast_1d(np.asarray(value, dtype=np.float64))
    if array.ndim != 1 or not np.isfinite(array).all() or (array < 0).any() or (array > 1).any():
        raise GaprankInputError(f"{name} must be probabilities in [0, 1]; got {value!r}")
    if size is None:
        return array
    if array.size not in (1, size):
        raise GaprankInputError(f"{name} must give one probability, or one per {per} ({size}); got {array.size}")
    return np.broadcast_to(array, (size,))


def _relevance(grades: np.ndarray, top: int) -> np.ndarray:
    """ERR's mapping of a grade to [0, 1] on the scale 0..``top``: (2^g - 1)/(2^top - 1)."""
    return (np.exp2(grades) - 1.0) / (2.0 ** top - 1.0) if top > 0 else np.zeros(np.shape(grades))


@dataclass(frozen=True)
class ClickModel:
    """How a simulated user examines a shown list and which events they emit (module doc).

    Parameters
    ----------
    examination : {"position", "cascade"}
        The position-based model or the cascade model.
    eta : float
        The position-based model's severity: rank r is examined with probability (1/r)^eta (0: every rank).
    epsilon_plus, epsilon_minus : float or sequence of float
        The click probability of an examined document of the top grade and of grade 0, one value or one per
        rank (trust bias: the user trusts higher ranks more).
    cart, purchase : float or sequence of float, optional
        The probability that a click becomes a cart, and a cart a purchase, one value or one per grade 0..c.
        Default: 0.6 and 0.5 times the grade's share of the click mapping, (2^g - 1)/(2^c - 1), on whatever
        scale the split has (0, 0.2, 0.6 and 0, 0.17, 0.5 for grades 0..2).
    """

    examination: Literal["position", "cascade"] = "position"
    eta: float = 1.0
    epsilon_plus: Any = 1.0
    epsilon_minus: Any = 0.1
    cart: Any = None
    purchase: Any = None

    def __post_init__(self) -> None:
        if self.examination not in ("position", "cascade"):
            raise GaprankInputError(f"examination must be 'position' or 'cascade'; got {self.examination!r}")
        if not (isinstance(self.eta, (int, float)) and np.isfinite(self.eta) and self.eta >= 0):
            raise GaprankInputError(f"eta must be a finite number >= 0; got {self.eta!r}")
        for name in ("epsilon_plus", "epsilon_minus", "cart", "purchase"):
            if getattr(self, name) is not None:
                _probabilities(getattr(self, name), name)

    def examined(self, shown: int) -> np.ndarray:
        """``[shown]``: the position-based model's examination probability of ranks 1..shown."""
        return (1.0 / np.arange(1, shown + 1)) ** float(self.eta)

    def affine(self, shown: int) -> tuple[np.ndarray, np.ndarray]:
        """``([shown], [shown])``: the slope and offset of a click's probability at ranks 1..shown in the relevance
        r = (2^g - 1)/(2^c - 1) of the document, P(click at rank k) = slope_k r + offset_k, with
        slope_k = theta_k (epsilon_plus_k - epsilon_minus_k) and offset_k = theta_k epsilon_minus_k under the
        position-based model: the ``propensities`` and ``offsets`` of :func:`click_training_set`'s affine
        correction of trust bias (for clicks; a cart or a purchase follows a click, and its probability,
        theta_k (epsilon_minus_k + (epsilon_plus_k - epsilon_minus_k) r) times the grade's cart share, is affine in one
        value of the document only where epsilon_minus_k / (epsilon_plus_k - epsilon_minus_k) is the same at every
        rank)."""
        if self.examination != "position":
            raise GaprankInputError("the affine correction is for the position-based model; the cascade model's "
                                    "examination depends on the documents above")
        theta = self.examined(shown)
        plus = _probabilities(self.epsilon_plus, "epsilon_plus", shown, per="rank")
        minus = _probabilities(self.epsilon_minus, "epsilon_minus", shown, per="rank")
        if (plus <= minus).any():
            raise GaprankInputError("the affine correction needs epsilon_plus > epsilon_minus at every rank (a "
                                    "click must say something about relevance)")
        return theta * (plus - minus), theta * minus

    def click_probabilities(self, grades: np.ndarray, top: int) -> np.ndarray:
        """The click probability of an examined document of ``grades`` ``[S, shown]`` on the scale 0..``top``."""
        shown = grades.shape[-1]
        plus = _probabilities(self.epsilon_plus, "epsilon_plus", shown, per="rank")
        minus = _probabilities(self.epsilon_minus, "epsilon_minus", shown, per="rank")
        return minus + (plus - minus) * _relevance(grades, top)

    def per_grade(self, name: str, top: int) -> np.ndarray:
        """``[top + 1]``: the model's cart or purchase probability of each grade 0..top."""
        given = getattr(self, name)
        if given is None:  # the default: a share of the grade's click mapping, on the split's own scale
            return {"cart": 0.6, "purchase": 0.5}[name] * _relevance(np.arange(top + 1), top)
        return _probabilities(given, name, top + 1)


def simulate_clicks(split: Any, scores: Any, sessions: int, model: ClickModel | None = None, *, shown: int = 10,
                    randomise: int = 0, seed: int = 0) -> ClickLog:
    """Simulate ``sessions`` sessions on ``split`` (a :class:`gaprank.data.RankingSplit`) with its true grades.

    Each session draws one of the split's queries uniformly, shows the top ``shown`` documents by ``scores`` (one
    per row of the split: the logging ranker's; ties in row order) and gets its events from ``model`` (module
    doc). With ``randomise``, the logger shows its top ``randomise`` documents in a uniformly random order in each
    session (result randomisation, from which :func:`estimate_propensities` reads the examination
    curve). Vectorised over blocks of sessions; the same ``seed`` gives the same log.

    Parameters
    ----------
    split : RankingSplit
        The queries, their documents and their true grades.
    scores : array_like
        The logging ranker's score of every row of ``split``.
    sessions : int
        How many sessions.
    model : ClickModel, optional
        The user model; default ``ClickModel()``: position-based at eta = 1.
    shown : int
        How many documents a session shows (fewer for a shorter query).
    randomise : int, default 0
        How many of the top ranks the logger shuffles in each session (0: none; at most ``shown``).
    seed : int
        The random seed.

    Returns
    -------
    ClickLog
        One row per shown document per session.

    Examples
    --------
    >>> from gaprank.clicks import ClickModel, simulate_clicks
    >>> from gaprank.data import load_fold
    >>> train = load_fold("MQ2008", 1).train
    >>> log = simulate_clicks(train, train.features[:, 0], 1000, ClickModel(eta=1.0), seed=1)
    >>> log.num_sessions, int(log.position.max())
    (1000, 10)
    """
    model = model or ClickModel()
    if not isinstance(sessions, (int, np.integer)) or isinstance(sessions, bool) or sessions < 1:
        raise GaprankInputError(f"sessions must be a positive integer; got {sessions!r}")
    if not isinstance(shown, (int, np.integer)) or isinstance(shown, bool) or shown < 1:
        raise GaprankInputError(f"shown must be a positive integer; got {shown!r}")
    if not isinstance(randomise, (int, np.integer)) or isinstance(randomise, bool) or not 0 <= randomise <= shown:
        raise GaprankInputError(f"randomise must be an integer from 0 to shown ({shown}); got {randomise!r}")
    values = np.asarray(scores, dtype=np.float64)
    labels = np.asarray(split.labels, dtype=np.int64)
    if values.shape != labels.shape or not np.isfinite(values).all():
        raise GaprankInputError(f"scores must be finite, one per row of the split ({labels.size}); got shape "
                                f"{values.shape}")
    top = int(labels.max()) if labels.size else 0
    cart, purchase = model.per_grade("cart", top), model.per_grade("purchase", top)
    sizes = np.asarray(split.group_sizes, dtype=np.int64)
    query_of_row, rank = group_positions(sizes)
    # each query's shown rows, best first (ties in row order: lexsort is stable), padded with -1: [queries, shown]
    by_score = np.lexsort((-values, query_of_row))
    lists = np.full((sizes.size, shown), -1, dtype=np.int64)
    top_ranks = rank < shown  # rank: the position within its query, which by_score keeps in query order
    lists[query_of_row[top_ranks], rank[top_ranks]] = by_score[top_ranks]
    examined = model.examined(shown)
    rng = np.random.default_rng(seed)
    parts = []
    for first in range(0, int(sessions), SESSIONS_PER_BLOCK):
        count = min(SESSIONS_PER_BLOCK, int(sessions) - first)
        queries = rng.integers(0, sizes.size, count)
        rows = lists[queries]  # [S, shown]
        if randomise > 1:  # each session's top documents in a random order; padding (-1) stays last
            keys = np.where(rows[:, :randomise] >= 0, rng.random((count, randomise)), np.inf)
            rows[:, :randomise] = np.take_along_axis(rows[:, :randomise], np.argsort(keys, axis=1), axis=1)
        real = rows >= 0
        grades = np.where(real, labels[np.maximum(rows, 0)], 0)
        click = rng.random(rows.shape) < model.click_probabilities(grades, top)
        if model.examination == "position":
            click &= rng.random(rows.shape) < examined[None, :]
        else:  # cascade: a rank is read when nothing above it was clicked; the first click ends the session
            click &= np.cumsum(click, axis=1) - click == 0
        event = click.astype(np.int8)
        carted = click & (rng.random(rows.shape) < cart[grades])
        event[carted] = 2
        event[carted & (rng.random(rows.shape) < purchase[grades])] = 3
        session = np.broadcast_to(np.arange(first, first + count)[:, None], rows.shape)
        position = np.broadcast_to(np.arange(1, shown + 1, dtype=np.int16)[None, :], rows.shape)
        parts.append((session[real], np.broadcast_to(queries[:, None], rows.shape)[real], rows[real],
                      position[real], event[real]))
    columns = [np.concatenate([part[i] for part in parts]) for i in range(5)]
    return ClickLog(columns[0].astype(np.int64), columns[1].astype(np.int64), columns[2].astype(np.int64),
                    columns[3].astype(np.int16), columns[4].astype(np.int8))
