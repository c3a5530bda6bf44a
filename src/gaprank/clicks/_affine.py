r"""Trust bias estimated from a log whose top ranks were randomised: the slopes and offsets of the affine correction.

Under trust bias (Agarwal et al., WWW 2019) a document d shown at rank k gets an event of level a or above with
probability :math:`\alpha_k R_d + \beta_k`: examination times a trusted reaction to its relevance,
:math:`\alpha_k = \theta_k (\epsilon^+_k - \epsilon^-_k)`, plus examination times the reaction to a document that is
not relevant, :math:`\beta_k = \theta_k \epsilon^-_k`. A logger that shuffles its top n documents shows each of them
at every one of those ranks, so the rates of one document across the ranks trace :math:`\alpha_k R_d + \beta_k`.
Counting every document's events and showings per rank, the documents are taken to fall in ``classes`` relevance
classes, :math:`R_d = r_{c(d)}` with :math:`0 = r_0 < r_1 < \dots < r_{C-1} = 1` (the least relevant class gets the
offsets only, the most relevant the slopes and offsets), and the model

.. math::

    \Pr(\text{events} \mid d \in c) = \prod_k \binom{n_{dk}}{e_{dk}} p_{kc}^{e_{dk}} (1 - p_{kc})^{n_{dk} - e_{dk}},
    \qquad p_{kc} = \alpha_k r_c + \beta_k,

is fitted by EM: each document's class posterior given the current parameters, then the slopes, offsets, class
values and class shares that maximise the expected log-likelihood (Newton steps on its sufficient statistics, the
events and showings per rank and class; the likelihood is concave in :math:`p`, which is linear in
:math:`(\alpha_k, \beta_k)` and in :math:`r_c`). Fixing :math:`r_0 = 0` and :math:`r_{C-1} = 1` removes the model's
freedom to rescale and shift relevance. With a relevance graded on a scale 0..G the classes are its G + 1 grades
(the simulator's :math:`R = (2^g - 1)/(2^G - 1)`); two classes are Agarwal et al.'s relevant and not relevant.

The slopes and offsets are the ``propensities`` and ``offsets`` of :func:`click_training_set`'s affine correction
(Vardasbi, Oosterhuis and de Rijke, CIKM 2020).
"""

from __future__ import annotations

import numpy as np

from .._inputs import GaprankInputError
from ._log import ClickLog

# a probability is kept this far inside (0, 1) in the logarithms
_EDGE = 1e-9
# a slope below this share of the steepest is refused (estimate_affine's Raises)
_FLAT = 1e-3


def estimate_affine(log: ClickLog, randomise: int, *, classes: int = 2, level: int = 1, iterations: int = 500,
                    tolerance: float = 1e-9) -> tuple[np.ndarray, np.ndarray]:
    r"""The slopes :math:`\alpha_k` and offsets :math:`\beta_k` of events of ``level`` or above at ranks
    1..``randomise``, from a log whose logger shuffled its top ``randomise`` documents (module doc).

    Only sessions that show all ``randomise`` shuffled ranks are read, as for :func:`estimate_propensities`.

    Parameters
    ----------
    log : ClickLog
        The randomised sessions.
    randomise : int
        How many top ranks the logger shuffled.
    classes : int, default 2
        The relevance classes C >= 2 of the documents (module doc): the size of the grade scale (3 for grades 0..2)
        where relevance is graded, 2 (relevant or not) by default.
    level : int, default 1
        The event level whose probability is modelled (events of that level or above: 1, a click).
    iterations : int, default 500
        At most this many EM steps.
    tolerance : float, default 1e-9
        Stop when a step raises the log-likelihood by less than this share of it.

    Returns
    -------
    slopes, offsets : numpy.ndarray
        ``[randomise]`` float64 each: :math:`\alpha_k > 0` and :math:`\beta_k \ge 0`, with
        :math:`\alpha_k + \beta_k < 1`.

    Raises
    ------
    GaprankInputError
        Where a rank's slope comes out below a thousandth of the steepest: too few sessions to tell its trusted
        events from its noise (their inverse would weigh each event without bound).

    Examples
    --------
    >>> import numpy as np
    >>> from gaprank.clicks import ClickModel, estimate_affine, simulate_clicks
    >>> from gaprank.data import load_fold
    >>> train = load_fold("MQ2008", 1).train
    >>> model = ClickModel(eta=1.0, epsilon_plus=[1.0, 0.95, 0.9], epsilon_minus=[0.6, 0.3, 0.2])
    >>> log = simulate_clicks(train, train.features[:, 0], 100_000, model, shown=3, randomise=3, seed=3)
    >>> slopes, offsets = estimate_affine(log, 3, classes=3)
    >>> slopes.round(2), offsets.round(2)
    (array([0.42, 0.32, 0.23]), array([0.58, 0.15, 0.07]))
    >>> model.affine(3)[0].round(2), model.affine(3)[1].round(2)  # the simulator's
    (array([0.4 , 0.32, 0.23]), array([0.6 , 0.15, 0.07]))
    """
    for name, value, least in (("randomise", randomise, 1), ("classes", classes, 2), ("level", level, 1),
                               ("iterations", iterations, 1)):
        if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < least:
            raise GaprankInputError(f"{name} must be an integer >= {least}; got {value!r}")
    if not isinstance(tolerance, (int, float)) or isinstance(tolerance, bool) or not 0 < tolerance < np.inf:
        raise GaprankInputError(f"tolerance must be a finite number > 0; got {tolerance!r}")
    events, shown = _per_document_and_rank(log, randomise, level)
    if not events.any():
        raise GaprankInputError(f"the randomised sessions have no event of level {level} or above")
    if shown.shape[0] < classes:
        raise GaprankInputError(f"the randomised sessions show {shown.shape[0]} documents: too few for {classes} "
                                "classes")
    rank_events = events.sum(0)
    if (rank_events == 0).any():
        rank = int(np.flatnonzero(rank_events == 0)[0]) + 1
        raise GaprankInputError(f"rank {rank} got no event of level {level} in the {int(shown[:, rank - 1].sum())} "
                                "randomised sessions: too few sessions to estimate its slope and offset")
    # start: the documents in equal shares of the classes by the rank of their event rates (ties in document order:
    # a sparse log leaves most rates 0, whose quantiles would put them all in one class), each posterior softened so
    # that no class starts empty (an empty class's share of 0 would keep it empty); the classes evenly spaced
    rate = events.sum(1) / shown.sum(1)
    order = np.argsort(rate, kind="stable")
    start = np.empty(rate.size, dtype=np.int64)
    start[order] = np.arange(rate.size) * classes // rate.size
    posterior = 0.8 * np.eye(classes)[start] + 0.2 / classes
    values = np.linspace(0.0, 1.0, classes)
    overall = rank_events / shown.sum(0)
    slopes, offsets = 0.5 * overall, 0.25 * overall  # a start inside the feasible set: 0 < p < 1
    previous = -np.inf
    for _ in range(iterations):
        hits, tries = events.T @ posterior, shown.T @ posterior  # [ranks, classes]: the sufficient statistics
        share = posterior.mean(0)
        for _ in range(5):
            slopes, offsets = _rank_step(hits, tries, values, slopes, offsets)
            values = _class_step(hits, tries, values, slopes, offsets)
        p = np.clip(slopes[:, None] * values + offsets[:, None], _EDGE, 1.0 - _EDGE)
        joint = np.log(np.maximum(share, 1e-300)) + events @ np.log(p) + (shown - events) @ np.log1p(-p)
        total = np.logaddexp.reduce(joint, axis=1)
        posterior = np.exp(joint - total[:, None])
        likelihood = float(total.sum())
        if likelihood - previous <= tolerance * abs(likelihood):
            break
        previous = likelihood
    flat = np.flatnonzero(slopes < _FLAT * slopes.max())
    if flat.size:  # its events all put down to noise: 1/slope would weigh each of them without bound
        raise GaprankInputError(f"rank {int(flat[0]) + 1}'s slope comes out at {slopes[flat[0]]:.2g}, against "
                                f"{slopes.max():.2g} at the steepest: too few randomised sessions to tell its trusted "
                                "events from its noise")
    return slopes, offsets


def _per_document_and_rank(log: ClickLog, randomise: int, level: int) -> tuple[np.ndarray, np.ndarray]:
    """``[documents, randomise]`` each: the events of ``level`` or above and the showings of every document the
    sessions showing all ``randomise`` shuffled ranks show, per rank."""
    top = log.position <= randomise
    per_session = np.bincount(log.session[top], minlength=log.num_sessions)
    rows = top & (per_session[log.session] == randomise)
    if not rows.any():
        raise GaprankInputError(f"no session of the log shows all {randomise} randomised ranks")
    _, document = np.unique(log.document[rows], return_inverse=True)
    cell = document * randomise + log.position[rows].astype(np.int64) - 1
    size = (int(document.max()) + 1) * randomise
    shown = np.bincount(cell, minlength=size).reshape(-1, randomise).astype(np.float64)
    events = np.bincount(cell, weights=(log.event[rows] >= level).astype(np.float64),
                         minlength=size).reshape(-1, randomise)
    return events, shown


def _log_likelihood(hits: np.ndarray, tries: np.ndarray, p: np.ndarray) -> np.ndarray:
    """Per rank: the expected log-likelihood of the events at probabilities ``p`` ``[ranks, classes]``."""
    q = np.clip(p, _EDGE, 1.0 - _EDGE)
    return (hits * np.log(q) + (tries - hits) * np.log1p(-q)).sum(1)


def _derivatives(hits: np.ndarray, tries: np.ndarray, p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The first and second derivatives of the expected log-likelihood in each ``p``."""
    q = np.clip(p, _EDGE, 1.0 - _EDGE)
    return hits / q - (tries - hits) / (1.0 - q), -hits / q**2 - (tries - hits) / (1.0 - q) ** 2


def _rank_step(hits: np.ndarray, tries: np.ndarray, values: np.ndarray, slopes: np.ndarray,
               offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """One Newton step on every rank's (slope, offset) at once, halved where it would leave
    :math:`0 < \\alpha`, :math:`0 \\le \\beta`, :math:`\\alpha + \\beta < 1` or lower the likelihood."""
    p = slopes[:, None] * values + offsets[:, None]
    first, second = _derivatives(hits, tries, p)
    gradient = np.stack([(first * values).sum(1), first.sum(1)], 1)
    cross = (second * values).sum(1)
    hessian = np.stack([np.stack([(second * values**2).sum(1), cross], 1), np.stack([cross, second.sum(1)], 1)], 1)
    # the pseudo-inverse: a rank whose events fall in one class (rare events) has a singular hessian
    step = (np.linalg.pinv(hessian) @ -gradient[..., None])[..., 0]
    before = _log_likelihood(hits, tries, p)
    scale = np.ones(slopes.size)
    for _ in range(40):
        new_slopes, new_offsets = slopes + scale * step[:, 0], offsets + scale * step[:, 1]
        feasible = (new_slopes > 0) & (new_offsets >= 0) & (new_slopes + new_offsets < 1)
        better = feasible & (_log_likelihood(hits, tries, new_slopes[:, None] * values + new_offsets[:, None])
                             >= before)
        if better.all():
            break
        scale = np.where(better, scale, scale / 2)
    keep = ~better
    return np.where(keep, slopes, new_slopes), np.where(keep, offsets, new_offsets)


def _class_step(hits: np.ndarray, tries: np.ndarray, values: np.ndarray, slopes: np.ndarray,
                offsets: np.ndarray) -> np.ndarray:
    """One Newton step on the inner classes' relevance values (the first 0 and the last 1 stay), kept inside
    (0, 1)."""
    if values.size <= 2:
        return values
    first, second = _derivatives(hits, tries, slopes[:, None] * values + offsets[:, None])
    curvature = (second * slopes[:, None] ** 2).sum(0)  # 0 for a class no document is in: it stays
    moved = values - np.divide((first * slopes[:, None]).sum(0), curvature, out=np.zeros_like(values),
                               where=curvature < 0)
    return np.concatenate([[0.0], np.clip(moved[1:-1], 1e-6, 1.0 - 1e-6), [1.0]])
