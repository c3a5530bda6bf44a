r"""From a click log's counts to what a learner trains on: the shown documents, each with its events' inverse-
propensity estimates per level (docs: The maths, "Weights: inverse-propensity estimates").

A document shown in :math:`S_i` sessions, at position :math:`p_{i,s}` in session s, gets for each level
:math:`a = 1..c`

.. math::

    X_i(a) = \frac{1}{S_i} \sum_s \frac{1[e_{i,s} \ge a]}{\theta_a(p_{i,s})},

the estimate that an examined user's event on it reaches level a (:math:`\theta_a(p)`: the propensity of level a
at position p; one curve for every level, or one per level). Its label is the highest level with a non-zero
estimate, and its weights per level are the :math:`X_i(a)`: the metrics', losses' and objectives' ``weights=``.
With every propensity 1 the weights are the raw event rates (a naive learner that takes the clicks as they come).

**Trust bias: the affine correction** (Vardasbi, Oosterhuis and de Rijke, CIKM 2020). When a user also acts on
documents that are not relevant, more often at the top ranks they trust, the event probability at position p is
affine in the document's relevance: :math:`P(e \ge a \mid p) = \alpha_a(p) R_a + \beta_a(p)`. Inverting it per
session,

.. math::

    X_i(a) = \frac{1}{S_i} \sum_s \frac{1[e_{i,s} \ge a] - \beta_a(p_{i,s})}{\alpha_a(p_{i,s})},

is unbiased for :math:`R_a` (the ``propensities`` are the slopes :math:`\alpha`, the ``offsets`` the
:math:`\beta`; with no offsets it is the estimate above). A document without events then gets a negative
estimate at each level with a positive offset: it is evidence against its relevance, and it weighs negatively in
the measure (the label, the highest level with a non-zero estimate, reaches those levels).
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


def click_training_set(split: Any, counts: ClickCounts, propensities: Any, *,
                       offsets: Any = None) -> ClickTrainingSet:
    """The documents of ``split`` that ``counts`` shows, labelled and weighted by their events' inverse-propensity
    estimates per level, or their affine estimates under trust bias (module doc).

    Parameters
    ----------
    split : RankingSplit
        The split the log's rows index (its features; its labels are not read).
    counts : ClickCounts
        The log's events per row, position and level (:func:`count_clicks`, :meth:`ClickLog.count`).
    propensities : array_like of float
        :math:`\\theta_p` per position 1..P (``[P]``, every level alike) or per position and level 1..c
        (``[P, c]``), in (0, 1]; all ones for the naive rates. With ``offsets``, the slopes :math:`\\alpha`.
    offsets : array_like of float, optional
        The affine correction's :math:`\\beta`: the event probability of a document that is not relevant, per
        position (``[P]``) or per position and level (``[P, c]``), in [0, 1), with ``propensities + offsets <= 1``
        (:meth:`ClickModel.affine` for a simulated log's clicks). None: no correction (all 0).

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
    theta = _per_level(propensities, levels, "propensities", "probabilities in (0, 1]", lambda t: (t > 0) & (t <= 1))
    beta = (np.zeros_like(theta) if offsets is None else
            _per_level(offsets, levels, "offsets", "probabilities in [0, 1)", lambda b: (b >= 0) & (b < 1)))
    if beta.shape != theta.shape:
        raise GaprankInputError(f"offsets must have the shape of propensities (one per position, or per position and "
                                f"level); got {beta.shape} and {theta.shape}")
    over = np.argwhere(theta + beta > 1 + 1e-12)
    if over.size:
        k, a = (int(i) for i in over[0])
        raise GaprankInputError(f"propensities + offsets must be <= 1 (probabilities of an event); got "
                                f"{theta[k, a]:g} + {beta[k, a]:g} at position {k + 1}, level {a + 1}")
    shown_at = table.sum(-1)  # [rows, P]
    deepest = int(np.flatnonzero(shown_at.any(0))[-1]) + 1 if shown_at.any() else 0
    if deepest > theta.shape[0]:
        raise GaprankInputError(f"the counts show position {deepest}, but propensities give positions 1..{theta.shape[0]}"
                                " only")
    shown = np.flatnonzero(shown_at.sum(-1) > 0)
    if shown.size == 0:
        raise GaprankInputError("the counts show no document: an empty log")
    # positions 1..deepest: the counts may be wider than the positions shown (and than the propensities)
    reached = counts.reached(shown)[:, :deepest]  # [n, P, c]: events >= a
    sessions = shown_at[shown].sum(-1)
    shown_here = shown_at[shown, :deepest, None]  # [n, P, 1]
    weights = ((reached - shown_here * beta[None, :deepest]) / theta[None, :deepest]).sum(1) / sessions[:, None]
    nonzero = weights != 0
    labels = np.where(nonzero.any(-1), levels - 1 - np.argmax(nonzero[:, ::-1], axis=-1), 0).astype(np.int64)
    subset = RankingSplit(split.features[shown], labels, split.qids[shown], split.docids[shown],
                          source=f"{split.source} (shown in a click log)" if split.source else "shown in a click log")
    return ClickTrainingSet(subset, weights, shown.astype(np.int64), sessions.astype(np.int64))


def _per_level(value: Any, levels: int, name: str, what: str, allowed: Any) -> np.ndarray:
    """``value`` per position (``[P]``, every level alike) or per position and level (``[P, c]``), as ``[P, c]``."""
    array = np.asarray(value, dtype=np.float64)
    if array.ndim == 1:
        array = np.repeat(array[:, None], levels - 1, axis=1)
    if array.ndim != 2 or array.shape[1] != levels - 1:
        raise GaprankInputError(f"{name} must be one per position ([P]) or one per position and level 1..{levels - 1} "
                                f"([P, {levels - 1}]); got shape {np.shape(value)}")
    bad = np.argwhere(~(np.isfinite(array) & allowed(np.nan_to_num(array))))
    if bad.size:
        k, a = (int(i) for i in bad[0])
        raise GaprankInputError(f"{name} must be {what}; got {array[k, a]:g} at position {k + 1}, level {a + 1}")
    return array
