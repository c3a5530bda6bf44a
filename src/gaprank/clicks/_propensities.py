r"""Examination propensities: estimated from a log whose top ranks were randomised, and turned into the weights of
inverse-propensity estimates.

Under the position-based model a document shown at rank p is examined with probability :math:`\theta_p`,
whatever it is. A logger that shows its top n documents in a random order puts every one of them at every rank
equally often, so the click rate at rank p is :math:`\theta_p` times one average click probability, the same for
every rank: :math:`\theta_p / \theta_1` is the ratio of the click rates (result randomisation; Joachims et al.
2017, Wang et al. 2016). The top rank is taken as always examined, :math:`\theta_1 = 1`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._inputs import GaprankInputError
from ._log import ClickLog


def estimate_propensities(log: ClickLog, randomise: int) -> np.ndarray:
    """The examination propensity of ranks 1..``randomise`` from a log whose logger shuffled its top
    ``randomise`` documents in every session (:func:`simulate_clicks` with ``randomise=``).

    Only sessions that show all ``randomise`` shuffled ranks are read: a shorter list would put its documents,
    and their relevance, at the top ranks only. A click is any event (>= 1).

    Parameters
    ----------
    log : ClickLog
        The randomised sessions.
    randomise : int
        How many top ranks the logger shuffled.

    Returns
    -------
    numpy.ndarray
        ``[randomise]`` float64: :math:`\\theta_p`, with :math:`\\theta_1 = 1`.

    Examples
    --------
    >>> from gaprank.clicks import ClickModel, estimate_propensities, simulate_clicks
    >>> from gaprank.data import load_fold
    >>> train = load_fold("MQ2008", 1).train
    >>> log = simulate_clicks(train, train.features[:, 0], 200_000, ClickModel(eta=1.0), randomise=3, seed=1)
    >>> estimate_propensities(log, 3).round(1)
    array([1. , 0.5, 0.3])
    """
    if not isinstance(randomise, (int, np.integer)) or isinstance(randomise, bool) or randomise < 1:
        raise GaprankInputError(f"randomise must be a positive integer; got {randomise!r}")
    top = log.position <= randomise
    shown_per_session = np.bincount(log.session[top], minlength=log.num_sessions)
    full = shown_per_session[log.session] == randomise  # rows of sessions that show every shuffled rank
    rows = full & top
    if not rows.any():
        raise GaprankInputError(f"no session of the log shows all {randomise} randomised ranks")
    position = log.position[rows].astype(np.int64) - 1
    shown = np.bincount(position, minlength=randomise)
    clicks = np.bincount(position, weights=(log.event[rows] >= 1).astype(np.float64), minlength=randomise)
    if (clicks == 0).any():
        rank = int(np.flatnonzero(clicks == 0)[0]) + 1
        raise GaprankInputError(f"rank {rank} got no click in the {int(shown[rank - 1])} randomised sessions: too "
                                "few sessions to estimate its propensity")
    rate = clicks / shown
    return rate / rate[0]


def inverse_propensities(log: ClickLog, propensities: Any) -> np.ndarray:
    """Each row's inverse-propensity weight, :math:`1/\\theta_p` at the position it was shown at: the ``weights``
    of a metric's IPW estimate on the session's events (docs: The maths, "Weights: inverse-propensity estimates").

    Parameters
    ----------
    log : ClickLog
        The sessions.
    propensities : array_like of float
        :math:`\\theta_1, \\theta_2, \\dots`: the examination probability of each rank, in (0, 1], at least as many
        as the log's deepest position (:meth:`ClickModel.examined` for a simulated log, or
        :func:`estimate_propensities`).

    Returns
    -------
    numpy.ndarray
        ``[rows]`` float64.

    Examples
    --------
    >>> import numpy as np
    >>> from gaprank.clicks import ClickLog, inverse_propensities
    >>> log = ClickLog(np.array([0, 0]), np.array([0, 0]), np.array([4, 7]), np.array([1, 2], dtype=np.int16),
    ...                np.array([1, 0], dtype=np.int8))
    >>> inverse_propensities(log, [1.0, 0.5])
    array([1., 2.])
    """
    theta = np.asarray(propensities, dtype=np.float64)
    if theta.ndim != 1 or theta.size == 0 or not np.isfinite(theta).all() or (theta <= 0).any() or (theta > 1).any():
        raise GaprankInputError(f"propensities must be a 1-D sequence of probabilities in (0, 1], one per rank; got "
                                f"{np.asarray(propensities).tolist()!r}")
    deepest = int(log.position.max()) if len(log) else 0
    if deepest > theta.size:
        raise GaprankInputError(f"the log shows rank {deepest}, but propensities give ranks 1..{theta.size} only")
    return 1.0 / theta[log.position.astype(np.int64) - 1]
