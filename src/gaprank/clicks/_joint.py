r"""Propensities estimated with the ranker as it learns: Unbiased LambdaMART's estimator (Hu, Wang, Peng and Li,
WWW 2019, eqs. 30-31), one curve per event level, feeding the inverse-propensity weights of gaprank's objectives
(docs: Learning from clicks, "Propensities estimated with the ranker").

In a session, a pair (i, j) at level a is a document i with an event of level a or above and a document j, shown in
the same session, without one. On the ranker's current scores s its cost is the logistic
:math:`L_{ij} = \log(1 + e^{-\sigma (s_i - s_j)})`. With :math:`p_i` the position i was shown at,

.. math::

    t^+_a(k) = \Big(\frac{\frac{1}{n_k}\sum_{p_i = k} L_{ij} / t^-_a(p_j)}
                         {\frac{1}{n_1}\sum_{p_i = 1} L_{ij} / t^-_a(p_j)}\Big)^{1/(1+r)},
    \qquad
    t^-_a(k) = \Big(\frac{\frac{1}{n_k}\sum_{p_j = k} L_{ij} / t^+_a(p_i)}
                         {\frac{1}{n_1}\sum_{p_j = 1} L_{ij} / t^+_a(p_i)}\Big)^{1/(1+r)},

sums over every session's pairs at level a (:math:`n_k`: the sessions that show position k; r: the Lp
regularisation's exponent, XGBoost's ``lambdarank_bias_norm``). :math:`t^+_a(k)` is the ratio of the event
probability at position k to the relevance probability, relative to position 1: under the position-based model the
examination propensity :math:`\theta_a(k)`. Each round the estimate is taken on the current scores, and the
documents' weights are the inverse-propensity estimates with :math:`\theta = t^+`
(:func:`gaprank.clicks.click_training_set`'s): the objective learns from them, and the next round's scores move
the estimate.

Where Unbiased LambdaMART divides each pair's lambda by :math:`t^+ t^-`, here the propensities enter the measure
(GAP's weighted pairs), as for known propensities; the pair cost is the plain logistic, without XGBoost's
:math:`|\Delta M|` factor, so that the cost of a pair does not depend on the measure being learned (the scores
still do); and the sums are per session showing a position, since with lists of several lengths the deep positions
are shown less often. A position with no
pairs at a level keeps its previous value (1 at the start); a level with none at position 1 keeps its curve.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np

from .._inputs import GaprankInputError
from ._dla import session_lists
from ._log import EVENTS, ClickCounts, ClickLog
from ._training import ClickTrainingSet, click_training_set

# elements of the [sessions, width, width] pair masks built at a time (10^5 sessions of 10 documents)
_PAIR_ELEMENTS = 10_000_000


class JointPropensities:
    r"""Propensities per position and event level estimated from a click log's sessions with the ranker as it
    learns (module doc), and the training set whose weights they give.

    Parameters
    ----------
    split : RankingSplit
        The split the logs' documents index (its features; its labels are not read).
    logs : ClickLog or sequence of ClickLog
        The sessions (several logs: each one's sessions apart, e.g. a logger's and the randomised ones).
    levels : int, default 4
        The event levels 0..levels-1 (0 none, 1 click, 2 cart, 3 purchase).
    bias_norm : float, default 0.0
        r in the module doc: the Lp regularisation of the estimate (0: the cost ratio itself; larger: nearer 1),
        XGBoost's ``lambdarank_bias_norm`` (default 2 there; on a simulated log the plain ratio is the one near the
        examination curve).
    sigma : float, default 1.0
        The logistic's steepness in the pair cost (give the objective's ``sigma``, if not 1).

    Attributes
    ----------
    data : ClickTrainingSet
        The shown documents (:func:`click_training_set`); ``data.split`` is what the ranker trains on, and
        :meth:`weights` its weights under the current propensities.
    propensities : numpy.ndarray
        ``[P, levels - 1]``: :math:`t^+` per position and level, 1 at position 1 (all ones before the first
        :meth:`update`).
    negatives : numpy.ndarray
        ``[P, levels - 1]``: :math:`t^-`.

    Examples
    --------
    >>> import lightgbm as lgb
    >>> from gaprank.clicks import ClickModel, JointPropensities, simulate_clicks
    >>> from gaprank.data import load_fold
    >>> from gaprank.lightgbm import lambdarank_objective
    >>> train = load_fold("MQ2008", 1).train
    >>> log = simulate_clicks(train, train.features[:, 0], 20_000, ClickModel(eta=1.0), randomise=10, seed=1)
    >>> joint = JointPropensities(train, log)
    >>> objective = joint.objective(lambdarank_objective("gap", row_weights="measure"))
    >>> data = joint.data.split
    >>> booster = lgb.train({"objective": objective, "verbosity": -1},
    ...                     lgb.Dataset(data.features, data.labels, group=data.group_sizes), num_boost_round=5)
    >>> joint.propensities.shape, float(joint.propensities[0, 0])
    ((10, 3), 1.0)
    """

    def __init__(self, split: Any, logs: ClickLog | Sequence[ClickLog], *, levels: int = len(EVENTS),
                 bias_norm: float = 0.0, sigma: float = 1.0) -> None:
        given: list[Any] = list(logs) if isinstance(logs, (list, tuple)) else [logs]
        bad = next((log for log in given if not isinstance(log, ClickLog)), None)
        if bad is not None:
            raise GaprankInputError(f"logs must be ClickLog(s): the estimate reads each session's pairs, which counts "
                                    f"do not keep; got {type(bad).__name__}")
        logs = given
        if not any(len(log) for log in logs):
            raise GaprankInputError("JointPropensities needs a log with sessions; got an empty log")
        bias_norm, sigma = _number(bias_norm, "bias_norm"), _number(sigma, "sigma")
        if not bias_norm >= 0:
            raise GaprankInputError(f"bias_norm must be a finite number >= 0; got {bias_norm}")
        if not sigma > 0:
            raise GaprankInputError(f"sigma must be a finite number > 0; got {sigma}")
        for number, log in enumerate(logs):
            _check_log(log, number, levels)
        positions = max(int(log.position.max()) for log in logs if len(log))
        rows_total = len(split.labels)
        table = np.zeros((rows_total, positions, levels), dtype=np.int64)
        for log in logs:
            table += log.count(rows_total, positions, levels).counts
        counts = ClickCounts(table, sum(log.num_sessions for log in logs))
        self.data: ClickTrainingSet = click_training_set(split, counts, np.ones(positions))
        self.bias_norm, self.sigma = bias_norm, sigma
        # each shown document's sessions with an event >= a at each position, over all its sessions: [n, P, c]
        self._reached = counts.reached(self.data.rows) / self.data.sessions[:, None, None]
        self._slots = np.maximum(table.sum((0, 2)), 1).astype(np.float64)  # [P]: the sessions showing each position
        index = np.full(rows_total, -1, dtype=np.int64)
        index[self.data.rows] = np.arange(self.data.rows.size)
        level, high, low, self._first, self._second, self._count = _session_pairs(logs, index, positions, levels - 1)
        # each pair's entry in the [P, c] curves (row-major) by the higher document's position and by the lower's
        self._at_high, self._at_low = high * (levels - 1) + level, low * (levels - 1) + level
        self.propensities = np.ones((positions, levels - 1))
        self.negatives = np.ones((positions, levels - 1))

    def update(self, scores: Any) -> None:
        """One step of the estimate (module doc) on the ranker's ``scores`` of ``data.split``'s rows."""
        s = np.asarray(scores, dtype=np.float64).reshape(-1)
        if s.size != self.data.rows.size:
            raise GaprankInputError(f"scores has {s.size} values; the training set has {self.data.rows.size} rows")
        if not np.isfinite(s).all():
            raise GaprankInputError("scores must be finite")
        cost = self._count * np.logaddexp(0.0, -self.sigma * (s[self._first] - s[self._second]))
        positions, levels = self.propensities.shape
        size = positions * levels
        # [P, c] sums by the higher document's position (t+) and by the lower's (t-), each over the other's t, per
        # session that shows the position: with lists of several lengths, the deep positions are shown less
        slots = self._slots[:, None]
        by_high = np.bincount(self._at_high, weights=cost / self.negatives.ravel()[self._at_low],
                              minlength=size).reshape(positions, levels) / slots
        by_low = np.bincount(self._at_low, weights=cost / self.propensities.ravel()[self._at_high],
                             minlength=size).reshape(positions, levels) / slots
        exponent = 1.0 / (1.0 + self.bias_norm)
        for sums, curve in ((by_high, self.propensities), (by_low, self.negatives)):
            known = (sums > 0) & (sums[:1] > 0)
            curve[known] = ((sums / np.where(sums[:1] > 0, sums[:1], 1.0)) ** exponent)[known]

    def weights(self) -> np.ndarray:
        """``[rows, levels - 1]``: ``data.split``'s weights per level under the current propensities (the
        inverse-propensity estimates of :func:`click_training_set` with these propensities)."""
        return (self._reached / self.propensities[None]).sum(1)

    def objective(self, objective: Any) -> JointObjective:
        """A booster's objective that updates the propensities on each round's scores, then hands ``objective`` the
        weights they give: a :class:`gaprank.lightgbm.LambdaRankObjective` (``lgb.train``) or a
        :class:`gaprank.xgboost.XGBoostObjective` (``xgb.train``'s ``obj``; the DMatrix's rows those of
        ``data.split``, in order), with ``row_weights="measure"``."""
        if getattr(getattr(objective, "settings", None), "row_weights", None) != "measure" or not hasattr(
                objective, "level_weights") or not callable(objective):
            raise GaprankInputError("JointPropensities.objective takes a gaprank.lightgbm or gaprank.xgboost objective "
                                    "with row_weights='measure' (the propensities weigh the documents in the measure)")
        return JointObjective(self, objective)


def _number(value: Any, name: str) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise GaprankInputError(f"{name} must be a number; got {value!r}") from None
    if not np.isfinite(number):
        raise GaprankInputError(f"{name} must be a finite number; got {number}")
    return number


def _check_log(log: ClickLog, number: int, levels: int) -> None:
    """What the pairs need of a log: sessions 0, 1, ... in order, positions from 1, events 0..levels-1."""
    if not len(log):
        return
    where = f"logs[{number}]"
    if int(log.session.min()) < 0 or bool((np.diff(log.session) < 0).any()):
        raise GaprankInputError(f"{where}: sessions must be numbered 0, 1, ... with each session's rows together, in "
                                "order (as simulate_clicks and read_click_log give them)")
    if int(log.position.min()) < 1:
        raise GaprankInputError(f"{where}: positions start at 1; got {int(log.position.min())}")
    low, high = int(log.event.min()), int(log.event.max())
    if low < 0 or high >= levels:
        raise GaprankInputError(f"{where}: events must be 0..levels-1 = 0..{levels - 1}; got {low if low < 0 else high}"
                                " (give levels)")


class JointObjective:
    """``lgb.train``'s or ``xgb.train``'s ``(preds, train_data) -> (grad, hess)``: the propensities updated on
    ``preds``, then the wrapped objective on the weights they give (:meth:`JointPropensities.objective`)."""

    def __init__(self, propensities: JointPropensities, objective: Any) -> None:
        self.propensities, self.objective = propensities, objective

    def __deepcopy__(self, memo: dict[int, Any]) -> JointObjective:
        # lgb.train deep-copies its params: the copy must update the estimate the caller reads after training
        return self

    def __call__(self, preds: np.ndarray, train_data: Any) -> tuple[np.ndarray, np.ndarray]:
        self.propensities.update(preds)
        self.objective.level_weights = self.propensities.weights()
        return self.objective(preds, train_data)  # type: ignore[no-any-return]


def _session_pairs(logs: list[ClickLog], index: np.ndarray, positions: int,
                   levels: int) -> tuple[np.ndarray, ...]:
    """Every session's pairs at every level (module doc), counted per (level, the higher document's position, the
    lower's, the higher document, the lower): ``level, high, low, first, second`` (positions 0-based, documents
    as training-set rows) and ``count``."""
    n = int(index.max()) + 1
    if levels * positions * positions * n * n >= 2**62:
        raise GaprankInputError(f"too many shown documents ({n}) to count the sessions' pairs")
    found: list[np.ndarray] = []
    found_counts: list[np.ndarray] = []
    for log in logs:
        if not len(log):
            continue
        width = int(np.bincount(log.session).max())
        sessions = max(1, _PAIR_ELEMENTS // width**2)  # at a time
        for start in range(0, log.num_sessions, sessions):
            part = log.sessions_between(start, start + sessions)
            part = dataclasses.replace(part, session=part.session - start)  # numbered from 0: session_lists' rows
            rows, events, shown_at, mask = session_lists(part)
            rows = index[np.where(mask, rows, 0)]
            chunk = []
            for a in range(1, levels + 1):
                reached = events >= a
                s, u, v = np.nonzero(reached[:, :, None] & (mask & ~reached)[:, None, :])
                key = ((a - 1) * positions + shown_at[s, u] - 1) * positions + shown_at[s, v] - 1
                chunk.append((key * n + rows[s, u]) * n + rows[s, v])
            keys, counts = np.unique(np.concatenate(chunk), return_counts=True)
            found.append(keys)
            found_counts.append(counts)
    keys, inverse = np.unique(np.concatenate(found), return_inverse=True)
    counts = np.bincount(inverse, weights=np.concatenate(found_counts), minlength=keys.size)
    second, rest = keys % n, keys // n
    first, rest = rest % n, rest // n
    low, rest = rest % positions, rest // positions
    high, level = rest % positions, rest // positions
    return level, high, low, first, second, counts
