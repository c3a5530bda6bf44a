r"""From a click log's counts to what a learner trains on: the shown documents, each with its events' inverse-
propensity estimates per level (docs: The maths, "Weights: inverse-propensity estimates").

A document shown in :math:`S_i` sessions, at position :math:`p_{i,s}` in session s, gets for each level
:math:`a = 1..c`

.. math::

    X_i(a) = \frac{1}{S_i} \sum_s \frac{1[e_{i,s} \ge a]}{\theta_a(p_{i,s})},

the estimate that an examined user's event on it reaches level a (:math:`\theta_a(p)`: the propensity of level a
at position p; one curve for every level, or one per level). Its label is the highest level with a positive
estimate, and its weights per level are the :math:`X_i(a)`: the metrics', losses' and objectives' ``weights=``.
With every propensity 1 the weights are the raw event rates (a naive learner that takes the clicks as they come).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .._inputs import GaprankInputError
from ._log import ClickCounts


@dataclass(frozen=True)
class ClickTrainingSet:
    """The shown documents of a split with their events' estimates per level (module doc).

    Attributes
    ----------
    split : RankingSplit
        The shown rows of the original split (grouped by query, in its order), labelled with their events' highest
        level with a positive estimate.
    weights : numpy.ndarray
        ``[rows, c]`` float64: each shown document's estimates :math:`X_i(a)`, levels 1..c (the ``weights=`` of
        the metrics and losses, ``level_weights`` of :class:`gaprank.lightgbm.LambdaRankObjective`).
    rows : numpy.ndarray
        ``[rows]`` int64: the shown documents' rows in the original split.
    sessions : numpy.ndarray
        ``[rows]`` int64: how many sessions showed each.
    """

    split: Any
    weights: np.ndarray
    rows: np.ndarray
    sessions: np.ndarray


def click_training_set(split: Any, counts: ClickCounts, propensities: Any) -> ClickTrainingSet:
    """The documents of ``split`` that ``counts`` shows, labelled and weighted by their events' inverse-propensity
    estimates per level (module doc).

    Parameters
    ----------
    split : RankingSplit
        The split the log's rows index (its features; its labels are not read).
    counts : ClickCounts
        The log's events per row, position and level (:func:`count_clicks`, :meth:`ClickLog.count`).
    propensities : array_like of float
        :math:`\\theta_p` per position 1..P (``[P]``, every level alike) or per position and level 1..c
        (``[P, c]``), in (0, 1]; all ones for the naive rates.

    Returns
    -------
    ClickTrainingSet

    Examples
    --------
    >>> import numpy as np
    >>> from gaprank.clicks import ClickModel, click_training_set, simulate_clicks
    >>> from gaprank.data import load_fold
    >>> train = load_fold("MQ2008", 1).train
    >>> model = ClickModel(eta=1.0)
    >>> log = simulate_clicks(train, train.features[:, 0], 20_000, model, seed=1)
    >>> data = click_training_set(train, log.count(len(train.labels)), model.examined(10))
    >>> data.weights.shape[1], bool((data.split.labels <= 3).all())
    (3, True)
    """
    from ..data import RankingSplit

    table = np.asarray(counts.counts)
    rows_total, positions, levels = table.shape
    if rows_total != len(split.labels):
        raise GaprankInputError(f"the counts are of {rows_total} rows; the split has {len(split.labels)}")
    if levels < 2:
        raise GaprankInputError("the counts hold no event level above 0 (levels must be at least 2)")
    theta = np.asarray(propensities, dtype=np.float64)
    if theta.ndim == 1:
        theta = np.repeat(theta[:, None], levels - 1, axis=1)
    if (theta.ndim != 2 or theta.shape[1] != levels - 1 or not np.isfinite(theta).all() or (theta <= 0).any()
            or (theta > 1).any()):
        raise GaprankInputError(f"propensities must be probabilities in (0, 1], one per position ([P]) or one per "
                                f"position and level 1..{levels - 1} ([P, {levels - 1}]); got shape {theta.shape}")
    shown_at = table.sum(-1)  # [rows, P]
    deepest = int(np.flatnonzero(shown_at.any(0))[-1]) + 1 if shown_at.any() else 0
    if deepest > theta.shape[0]:
        raise GaprankInputError(f"the counts show position {deepest}, but propensities give positions 1..{theta.shape[0]}"
                                " only")
    shown = np.flatnonzero(shown_at.sum(-1) > 0)
    if shown.size == 0:
        raise GaprankInputError("the counts show no document: an empty log")
    reached = np.cumsum(table[shown][..., ::-1], axis=-1)[..., ::-1][..., 1:]  # [n, P, c]: events >= a, a = 1..c
    sessions = shown_at[shown].sum(-1)
    weights = (reached / theta[None, :positions]).sum(1) / sessions[:, None]
    positive = weights > 0
    labels = np.where(positive.any(-1), levels - 1 - np.argmax(positive[:, ::-1], axis=-1), 0).astype(np.int64)
    subset = RankingSplit(split.features[shown], labels, split.qids[shown], split.docids[shown],
                          source=f"{split.source} (shown in a click log)" if split.source else "shown in a click log")
    return ClickTrainingSet(subset, weights, shown.astype(np.int64), sessions.astype(np.int64))
