r"""Dual learning (DLA; Ai, Bi, Luo, Guo and Croft, SIGIR 2018): a relevance model and the examination propensities
learned together from the same sessions, each weighting the other's loss, and a ranker of any weighted measure
(GAP first) trained on the propensities as they are learned.

A session shows documents at positions 1..n with events :math:`e_i`. A position model holds one logit per position
and event level, :math:`o_a(k)`; its propensities are
:math:`\hat\theta_a(k) = \mathrm{softmax}(o_a)_k / \mathrm{softmax}(o_a)_1 = e^{o_a(k) - o_a(1)}`. A relevance model
gives each shown document a logit per event level, :math:`v_{i,a}` (each level has its own observation model).

* **The relevance model** minimises DLA's softmax cross-entropy over the session's documents, each event of level a
  or above weighted by :math:`1/\hat\theta_a(p_i)` (inverse propensity weighting, the weights held constant),
  per level: its softmax then estimates how the session's relevance at that level is shared among its documents.
* **The position model** minimises the softmax cross-entropy of its logits over the session's positions, each event
  of level a or above weighted by :math:`r_{top} / r_i = e^{v_{top,a} - v_{i,a}}` (inverse relevance weighting:
  the relevance model's share of the document at position 1 over the document's, held constant):

.. math::

    L_\theta = -\frac{\sum_{sessions} \sum_a \sum_{i: e_i \ge a} e^{v_{top,a} - v_{i,a}} \log
    \mathrm{softmax}_{k \in session}(o_a)_{p_i}}{\sum_{sessions} \sum_a \sum_{i: e_i \ge a} e^{v_{top,a} - v_{i,a}}}.

* **The ranker** (with a ``measure``) minimises a LambdaRank loss of the measure on the events, each document
  weighted per level by :math:`1/\hat\theta_a(p_i)`.

Under the position-based model, events at position k are :math:`\theta(k)` times the relevance shown there; divided
by the relevance the relevance model sees, the weighted events are proportional to :math:`\theta(k)`, which is where
the position model's cross-entropy is minimal. That needs the relevance model's softmax to be a share of relevance,
which DLA's own loss makes it and a LambdaRank loss does not (its scores have no scale): with a measure, the
relevance logits are more outputs of the model (a head per level), without one they are the ranker's scores (and
the events one level: clicks).
The losses share no parameter: their sum trains all three.
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
import torch

from .._inputs import GaprankInputError
from .._typing import ArrayLike
from ._log import ClickLog


def session_lists(log: ClickLog, width: int | None = None) -> tuple[np.ndarray, ...]:
    """A log's sessions as padded lists, each in position order, the shape :class:`DualLearningLoss` takes.

    Parameters
    ----------
    log : ClickLog
        The sessions.
    width : int, optional
        The lists' length: at least the most documents a session shows (default: that).

    Returns
    -------
    rows, events, positions, mask : numpy.ndarray
        ``[sessions, width]``: the split's row of each shown document (-1 at padding), its event, its position
        (0 at padding) and True where a document was shown.

    Examples
    --------
    >>> import numpy as np
    >>> from gaprank.clicks import ClickLog, session_lists
    >>> log = ClickLog(np.array([0, 0, 1]), np.array([0, 0, 1]), np.array([4, 7, 2]), np.array([1, 2, 1]),
    ...                np.array([1, 0, 0], dtype=np.int8))
    >>> session_lists(log)[0]
    array([[ 4,  7],
           [ 2, -1]])
    """
    if len(log) and int(log.session.min()) < 0:
        raise GaprankInputError("a log's sessions are numbered 0, 1, ...; got a negative session")
    sessions = int(log.session.max()) + 1 if len(log) else 0
    sizes = np.bincount(log.session, minlength=sessions)
    longest = int(sizes.max()) if sizes.size else 0
    width = longest if width is None else width
    if width < longest:
        raise GaprankInputError(f"width {width} is less than the {longest} documents a session shows")
    order = np.lexsort((log.position, log.session))  # by session, then by position
    session = log.session[order]
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    slot = np.arange(len(log)) - starts[session]
    rows = np.full((sessions, width), -1, dtype=np.int64)
    events = np.zeros((sessions, width), dtype=np.int64)
    positions = np.zeros((sessions, width), dtype=np.int64)
    rows[session, slot] = log.document[order]
    events[session, slot] = log.event[order]
    positions[session, slot] = log.position[order]
    return rows, events, positions, rows >= 0


class DualLearningLoss(torch.nn.Module):
    """Dual learning's losses (module doc): DLA's relevance model and position model, each weighted by the other,
    and, with a ``measure``, a LambdaRank loss of the measure weighted by the inverse propensities. Train the
    model's parameters and this module's (``position_logits``) on their sum.

    Parameters
    ----------
    measure : str, optional
        The ranker's measure, one whose metric takes weights (``"gap"``, ``"ndcg"``, ``"AP"``, ...); its scores are
        then ``forward``'s ``scores`` and the relevance model's logits its ``relevance``. None: DLA alone, the
        scores being the relevance logits of one event level (``levels=1``).
    positions : int
        The deepest position a session shows.
    levels : int
        The event levels above 0 (1: clicks only; 3: click, cart, purchase), each with its own propensities.
    max_weight : float, optional
        Clip every loss's weights at this value (None: no clip).
    reduction : {"mean", "sum"}
        The LambdaRank loss's reduction over the sessions (the two cross-entropies are means over the weighted
        events).
    **settings
        The rest of :class:`gaprank.losses.LambdaRankLoss`'s settings (``g``, ``sigma``, ``truncation_level``,
        ``backend``).

    Examples
    --------
    >>> import torch
    >>> from gaprank.clicks import DualLearningLoss
    >>> dla = DualLearningLoss("gap", positions=3, levels=1, g=[1.0])
    >>> outputs = torch.randn(2, 3, 2, requires_grad=True)  # a GAP score and a relevance logit per document
    >>> events, positions = torch.tensor([[1, 0, 1], [0, 1, 0]]), torch.tensor([[1, 2, 3], [1, 2, 3]])
    >>> dla(outputs[..., 0], events, positions, relevance=outputs[..., 1:]).backward()
    >>> dla.propensities().shape
    torch.Size([3, 1])
    """

    def __init__(self, measure: str | None = None, *, positions: int = 10, levels: int = 1,
                 max_weight: float | None = None, reduction: Literal["mean", "sum"] = "mean", **settings: Any) -> None:
        from ..losses import LambdaRankLoss
        from ..metrics import objective_measure

        super().__init__()
        for name, value in (("positions", positions), ("levels", levels)):
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise GaprankInputError(f"{name} must be a positive integer; got {value!r}")
        if max_weight is not None and (isinstance(max_weight, bool) or not isinstance(max_weight, int | float)
                                       or not max_weight >= 1):
            raise GaprankInputError(f"max_weight must be a number >= 1 or None; got {max_weight!r}")
        if reduction not in ("mean", "sum"):
            raise GaprankInputError(f"reduction must be 'mean' or 'sum' (the losses add up); got {reduction!r}")
        self.positions, self.levels, self.max_weight = positions, levels, max_weight
        self.ranking: torch.nn.Module | None = None
        if measure is not None:
            info = objective_measure(measure).info
            if not info.form.takes_weights:
                raise GaprankInputError(f"{info.name} does not take weights (its form weighs no document): dual "
                                        "learning weighs each document by its inverse propensity")
            self.ranking = LambdaRankLoss(measure, max_grade=levels, reduction=reduction, **settings)
        elif settings:
            raise GaprankInputError(f"{', '.join(sorted(settings))}: settings of the LambdaRank loss, which needs a "
                                    "measure")
        elif levels != 1:
            raise GaprankInputError(f"without a measure the scores are one relevance model, of clicks: levels must be "
                                    f"1; got {levels} (give a measure, and relevance logits per level)")
        self.position_logits = torch.nn.Parameter(torch.zeros(positions, levels, dtype=torch.float64))

    def propensities(self) -> torch.Tensor:
        """``[positions, levels]``: the learned :math:`\\hat\\theta_a(k)`, 1 at the top position (no gradient)."""
        logits = self.position_logits.detach()
        return torch.exp(logits - logits[:1])

    def forward(self, scores: torch.Tensor, events: ArrayLike, positions: ArrayLike, mask: ArrayLike | None = None,
                relevance: torch.Tensor | None = None) -> torch.Tensor:
        """The sum of the losses for a batch of sessions (:meth:`terms`): each model's gradient is its own loss's."""
        return sum(self.terms(scores, events, positions, mask, relevance).values(), torch.zeros((), dtype=torch.float64,
                                                                                                 device=scores.device))

    def terms(self, scores: torch.Tensor, events: ArrayLike, positions: ArrayLike, mask: ArrayLike | None = None,
              relevance: torch.Tensor | None = None) -> dict[str, torch.Tensor]:
        """The losses for a batch of sessions, apart.

        Parameters
        ----------
        scores : torch.Tensor
            ``[sessions, list]``: the ranker's scores of the shown documents (without a measure: the relevance
            model's logits).
        events : array_like of int
            ``[sessions, list]``: each document's event, 0..levels.
        positions : array_like of int
            ``[sessions, list]``: where each was shown, 1..positions; every session shows position 1 once.
        mask : array_like of bool, optional
            ``[sessions, list]``: True where a document was shown (default: everywhere).
        relevance : torch.Tensor, optional
            ``[sessions, list, levels]`` (or ``[sessions, list]`` for one level): the relevance model's logits per
            event level, required with a measure (more outputs of the model), refused without one.

        Returns
        -------
        dict of str to torch.Tensor
            Scalars: ``"relevance"`` (DLA's inverse-propensity-weighted softmax loss), ``"propensity"`` (the
            position model's inverse-relevance-weighted loss) and, with a measure, ``"ranking"`` (the LambdaRank
            loss; its value depends on the propensities, its gradient only on the scores).
        """
        if (relevance is None) != (self.ranking is None):
            raise GaprankInputError("relevance= is required with a measure (the relevance model's logits, a second "
                                    "output: LambdaRank scores have no scale to read relevance from) and refused "
                                    "without one (the scores are the relevance logits)" if relevance is None else
                                    "relevance= is for a measure's ranker; without one the scores are the relevance "
                                    "logits")
        v = scores if relevance is None else relevance
        if v.ndim == scores.ndim and self.levels == 1:
            v = v[..., None]
        device = scores.device
        e = torch.as_tensor(events, device=device)
        p = torch.as_tensor(positions, device=device)
        m = torch.ones_like(e, dtype=torch.bool) if mask is None else torch.as_tensor(mask, device=device)
        if scores.ndim != 2 or any(t.shape != scores.shape for t in (e, p, m)) or v.shape != (*scores.shape,
                                                                                              self.levels):
            raise GaprankInputError(f"scores, events, positions and mask must be [sessions, list] of one shape, and "
                                    f"relevance [sessions, list, {self.levels}] (levels); got {tuple(scores.shape)}, "
                                    f"{tuple(e.shape)}, {tuple(p.shape)}, {tuple(m.shape)} and {tuple(v.shape)}")
        if m.dtype != torch.bool:
            raise GaprankInputError(f"mask must be boolean (True = a shown document); got dtype {m.dtype}")
        self._check(e, p, m)
        logits = self.position_logits.to(device)
        slot = (p.clamp(1, self.positions) - 1).long()
        shown = m[..., None]
        reached = (e[..., None] >= torch.arange(1, self.levels + 1, device=device)) & shown  # [S, N, levels]
        inverse_propensity = torch.exp(-(logits - logits[:1]).detach())[slot]  # [S, N, levels]
        # padding may hold anything (-inf, NaN): it never reaches a weight or a softmax
        v = torch.where(shown, v.double(), 0.0)  # [S, N, levels]
        log_share = _session_log_softmax(v, shown)
        top = torch.where(((p == 1) & m)[..., None], v.detach(), 0.0).sum(1, keepdim=True)
        log_relevance_ratio = top - v.detach()  # log(r_top / r_i) per level, the softmax's ratio
        if self.max_weight is not None:
            inverse_propensity = inverse_propensity.clamp(max=self.max_weight)
            log_relevance_ratio = log_relevance_ratio.clamp(max=float(np.log(self.max_weight)))
        losses = {"relevance": _weighted_cross_entropy(torch.where(reached, inverse_propensity, 0.0), log_share)}
        relevance_weight = torch.where(reached, torch.exp(log_relevance_ratio), 0.0)
        losses["propensity"] = _weighted_cross_entropy(relevance_weight, _session_log_softmax(logits[slot], shown))
        if self.ranking is not None:
            losses["ranking"] = self.ranking(scores, e, m, weights=torch.where(shown, inverse_propensity, 0.0))
        return losses

    def _check(self, events: torch.Tensor, positions: torch.Tensor, mask: torch.Tensor) -> None:
        if events.is_floating_point() or positions.is_floating_point():
            raise GaprankInputError("events and positions must be integers")
        real_events, real_positions = events[mask], positions[mask]
        if real_events.numel() and (int(real_events.min()) < 0 or int(real_events.max()) > self.levels):
            raise GaprankInputError(f"events must be 0..{self.levels} (levels); got {int(real_events.min())}.."
                                    f"{int(real_events.max())}")
        if real_positions.numel() and (int(real_positions.min()) < 1 or int(real_positions.max()) > self.positions):
            raise GaprankInputError(f"positions must be 1..{self.positions}; got {int(real_positions.min())}.."
                                    f"{int(real_positions.max())}")
        tops = ((positions == 1) & mask).sum(1)
        if bool((tops != 1).any()):
            session = int(torch.nonzero(tops != 1)[0, 0])
            raise GaprankInputError(f"session {session} shows position 1 {int(tops[session])} times; each session "
                                    "shows it once (the inverse relevance weights are relative to it)")

    def extra_repr(self) -> str:
        return f"positions={self.positions}, levels={self.levels}, max_weight={self.max_weight}"


def _session_log_softmax(logits: torch.Tensor, shown: torch.Tensor) -> torch.Tensor:
    """``[S, N, levels]``: the log-softmax of ``logits`` over each session's shown documents, 0 at padding."""
    return torch.log_softmax(logits.masked_fill(~shown, float("-inf")), dim=1).masked_fill(~shown, 0.0)


def _weighted_cross_entropy(weights: torch.Tensor, log_probabilities: torch.Tensor) -> torch.Tensor:
    """``-sum(w log p) / sum(w)`` (0 when no weight: a batch without events)."""
    total = weights.sum()
    if not bool(total > 0):
        return (log_probabilities * 0.0).sum()
    return -(weights * log_probabilities).sum() / total
