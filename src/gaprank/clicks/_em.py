r"""Examination propensities estimated from an ordinary log by expectation-maximisation (Wang et al., WSDM 2018).

Under the position-based model a document d shown at position k gets an event of level a or above with probability
:math:`\theta_a(k)\,\gamma_a(d)`: examined, with probability :math:`\theta_a(k)`, and relevant enough, with
probability :math:`\gamma_a(d)`. Neither is observed. EM alternates

* **E-step**: an event means examined and relevant; no event at position k leaves the posteriors
  :math:`P(E=1, R=0 \mid \text{none}) = \theta(1-\gamma)/(1-\theta\gamma)` and
  :math:`P(E=0, R=1 \mid \text{none}) = (1-\theta)\gamma/(1-\theta\gamma)`;
* **M-step**: :math:`\theta_a(k)` is the expected share of examined showings at k, and :math:`\gamma_a(d)` the
  expected share of relevant showings of d: one value per document, or, in **regression EM**, a gradient-boosted
  model of the document's features fitted to those shares (weighted by its showings), so that documents seen at
  one position only borrow from similar documents seen elsewhere.

The log's counts are all it reads: every step is a sum over (document, position) cells. The scale of
:math:`\theta` and :math:`\gamma` is not identified (:math:`\theta s` and :math:`\gamma / s` fit alike), so the
propensities are returned relative to the top position, :math:`\theta_a(1) = 1`, as the weights need them.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._inputs import GaprankInputError
from ._log import ClickCounts

REGRESSION_PARAMS = {"objective": "cross_entropy", "num_leaves": 15, "learning_rate": 0.3, "min_data_in_leaf": 20,
                     "verbose": -1, "num_threads": 1, "deterministic": True, "seed": 1}
REGRESSION_ROUNDS = 50  # trees of each M-step's model of the relevance
FLOOR = 1e-6  # probabilities kept inside (0, 1), where the posteriors are defined


def em_propensities(counts: ClickCounts, features: Any = None, *, iterations: int = 200,
                    tolerance: float = 1e-6) -> np.ndarray:
    r"""The examination propensity of each position and event level, estimated by EM from a log's counts (module
    doc): no randomised sessions needed, but only as good as the log's variety of positions per document (or, with
    ``features``, per kind of document) allows.

    Parameters
    ----------
    counts : ClickCounts
        The log's events per row, position and level (:func:`count_clicks`, :meth:`ClickLog.count`).
    features : array_like of shape (rows, features), optional
        The rows' features (the split's): regression EM, each M-step's relevance a LightGBM model of them (the
        ``lightgbm`` extra). Without them, one relevance per shown document.
    iterations : int
        The most EM iterations.
    tolerance : float
        Stop when no propensity moves more than this in an iteration.

    Returns
    -------
    numpy.ndarray
        ``[P, c]`` float64: :math:`\theta_a(k)` for positions 1..P (the deepest shown) and levels 1..c, with
        :math:`\theta_a(1) = 1`; the ``propensities`` of :func:`click_training_set`. A position that draws more
        events than the top one for its documents gets a value above 1, which :func:`click_training_set` refuses
        (naming it).

    Examples
    --------
    >>> from gaprank.clicks import ClickModel, em_propensities, simulate_clicks
    >>> from gaprank.data import load_fold
    >>> train = load_fold("MQ2008", 1).train
    >>> log = simulate_clicks(train, train.features[:, 0], 200_000, ClickModel(eta=1.0), randomise=10, seed=1)
    >>> em_propensities(log.count(len(train.labels)))[:4, 0].round(2)
    array([1.  , 0.5 , 0.33, 0.25])
    """
    table = np.asarray(counts.counts)
    if table.ndim != 3 or table.shape[2] < 2:
        raise GaprankInputError(f"counts must be [rows, positions, levels] with levels >= 2; got {table.shape}")
    if not isinstance(iterations, int) or isinstance(iterations, bool) or iterations < 1:
        raise GaprankInputError(f"iterations must be a positive integer; got {iterations!r}")
    if isinstance(tolerance, bool) or not (isinstance(tolerance, float | int) and tolerance > 0):
        raise GaprankInputError(f"tolerance must be a positive number; got {tolerance!r}")
    shown_at = table.sum(-1).astype(np.float64)  # [rows, P]
    shown = np.flatnonzero(shown_at.sum(-1) > 0)
    if shown.size == 0:
        raise GaprankInputError("the counts show no document: an empty log")
    deepest = int(np.flatnonzero(shown_at.any(0))[-1]) + 1
    unseen = np.flatnonzero(shown_at[:, :deepest].sum(0) == 0)
    if unseen.size:
        raise GaprankInputError(f"no document was shown at position {int(unseen[0]) + 1}: its propensity cannot be "
                                "estimated")
    x = None
    if features is None:
        _check_linked(shown_at[shown, :deepest] > 0)
    else:
        x = np.asarray(features, dtype=np.float64)
        if x.ndim != 2 or x.shape[0] != table.shape[0]:
            raise GaprankInputError(f"features must be [rows, features] with {table.shape[0]} rows (the counts'); got "
                                    f"shape {x.shape}")
        x = x[shown]
    n = shown_at[shown, :deepest]
    reached = np.cumsum(table[shown, :deepest, ::-1], axis=-1)[..., ::-1][..., 1:].astype(np.float64)  # [d, P, c]
    theta = np.empty((deepest, reached.shape[2]))
    for level in range(reached.shape[2]):
        events = reached[..., level]
        if events[:, 0].sum() == 0:
            raise GaprankInputError(f"no event of level {level + 1} or above at position 1: its propensities cannot "
                                    "be estimated")
        theta[:, level] = _em(n, events, x, iterations, float(tolerance))
    return theta


def _check_linked(seen: np.ndarray) -> None:
    """Without features, a position's propensity is identified only through documents shown both there and at a
    position linked to the top one (``seen``: ``[documents, positions]``, shown there at least once)."""
    linked = np.zeros(seen.shape[1], dtype=bool)
    linked[0] = True
    while True:
        reached = seen[seen[:, linked].any(1)].any(0) | linked
        if (reached == linked).all():
            break
        linked = reached
    if not linked.all():
        position = int(np.flatnonzero(~linked)[0]) + 1
        raise GaprankInputError(f"no document links position {position} to position 1 (shown at both, or through "
                                "other positions): without features its propensity is not identified; randomise "
                                "some sessions or pass features= for regression EM")


def _em(n: np.ndarray, events: np.ndarray, x: np.ndarray | None, iterations: int, tolerance: float) -> np.ndarray:
    """One level's propensities: EM over the (document, position) cells of showings ``n`` and events ``events``."""
    theta = np.clip(events.sum(0) / n.sum(0), FLOOR, 1 - FLOOR)  # the click rates: a start that orders positions
    theta = np.clip(theta / theta[0], FLOOR, 1 - FLOOR)
    shows = n.sum(1)
    gamma = np.clip(events.sum(1) / shows, FLOOR, 1 - FLOOR)
    observed = n > 0
    for _ in range(iterations):
        t, g = theta[None, :], gamma[:, None]
        none = n - events
        unlikely = 1 - t * g
        examined_not_relevant = t * (1 - g) / unlikely
        relevant_not_examined = (1 - t) * g / unlikely
        updated = np.clip((events + none * examined_not_relevant).sum(0) / n.sum(0), FLOOR, 1 - FLOOR)
        target = np.where(observed, events + none * relevant_not_examined, 0).sum(1) / shows
        gamma = np.clip(target if x is None else _regressed(x, target, shows), FLOOR, 1 - FLOOR)
        moved = np.abs(updated / updated[0] - theta / theta[0]).max()
        theta = updated
        if moved < tolerance:
            break
    return theta / theta[0]


def _regressed(x: np.ndarray, target: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """Regression EM's relevance: a LightGBM model of the features fitted to the expected relevant shares."""
    from .._extras import require

    lgb = require("lightgbm", "lightgbm", "regression EM")
    data = lgb.Dataset(x, label=np.clip(target, 0.0, 1.0), weight=weight, params={"verbose": -1})
    model = lgb.train(REGRESSION_PARAMS, data, num_boost_round=REGRESSION_ROUNDS)
    return np.asarray(model.predict(x), dtype=np.float64)
