"""A loss from its kind, a measure string and settings: how a training config asks the library for its loss.

The kinds are the loss modules of this package; the settings a kind takes are its module's parameters, and the
measures it serves are the registry's objectives of its form, so neither list is written twice.
"""

from __future__ import annotations

import inspect
from typing import Any

import torch

from .._inputs import GaprankInputError, check_choice
from ..metrics import objective_names
from ._listnet import ListNetLoss
from ._pairwise import LambdaRankLoss, RankNetLoss
from ._soft import SoftMetricLoss

# the module of each kind
_MODULES: dict[str, type[torch.nn.Module]] = {"soft": SoftMetricLoss, "lambdarank": LambdaRankLoss,
                                              "ranknet": RankNetLoss, "listnet": ListNetLoss}
KINDS: tuple[str, ...] = tuple(_MODULES)
# a module's parameters that are not settings: the measure itself
_NOT_SETTINGS = ("self", "measure")
# the objective kind (which form of a measure) of each kind driven by a measure; "soft" with another smoothing
# serves another set (the module checks it: smoothing_measure)
_OBJECTIVE_KINDS = {"soft": "soft", "lambdarank": "swap_deltas"}


def kind_settings(kind: str) -> tuple[str, ...]:
    """The settings ``kind`` takes: its module's parameters but the measure."""
    return tuple(name for name in inspect.signature(_MODULES[kind]).parameters if name not in _NOT_SETTINGS)


def build(kind: str, measure: str | None = None, **settings: Any) -> torch.nn.Module:
    """The loss module of ``kind`` for ``measure`` with ``settings``, checked once against the registry.

    What a training config names (``kind``, a measure string, its settings) becomes the module that
    computes it; a kind, measure or setting that does not fit is refused in one line naming it, before
    any data is read.

    Parameters
    ----------
    kind : {"soft", "lambdarank", "ranknet", "listnet"}
        "soft": a smooth measure, :class:`SoftMetricLoss` (``smoothing`` "softrank" by default, or "approx",
        "neuralsort", "softsort", "fast_soft_rank", or "expected": the exact expectation under SoftRank's
        model); "lambdarank": :class:`LambdaRankLoss`; "ranknet": :class:`RankNetLoss`; "listnet":
        :class:`ListNetLoss`.
    measure : str, optional
        A measure string ("gap", "nDCG@10", "AP(rel=2)", ...) with the form the kind uses; required for "soft"
        and "lambdarank", refused for "ranknet" and "listnet".
    **settings
        The module's own parameters: ``g``, ``sigma``, ``smoothing`` (soft only), ``truncation_level`` and
        ``backend``
        (lambdarank), ``reduction``, ``max_grade``, ``validate``, as the kind's module takes them.

    Returns
    -------
    torch.nn.Module
        ``loss(scores, labels, mask=None)``: the value to minimise, the module that the kind's class builds from
        the same arguments.

    Raises
    ------
    GaprankInputError
        For an unknown kind, a measure the kind cannot serve (or a missing one), a setting the kind does not
        take, or a setting's bad value; the message names the kind and the setting.

    Examples
    --------
    >>> import torch
    >>> from gaprank.losses import build
    >>> loss = build("lambdarank", "gap", g=[0.5, 0.5], truncation_level=10)
    >>> type(loss).__name__
    'LambdaRankLoss'
    >>> scores = torch.tensor([[0.0, 1.0, 2.0]], requires_grad=True)
    >>> loss(scores, torch.tensor([[2, 1, 0]])).backward()
    >>> bool(scores.grad[0, 0] < 0)   # push the grade-2 document up
    True
    >>> type(build("soft", "nDCG@10", smoothing="approx", sigma=0.1)).__name__
    'SoftMetricLoss'
    """
    check_choice(kind, "kind", KINDS)
    takes = kind_settings(kind)
    for name in settings:
        if name not in takes:
            others = [other for other in KINDS if name in kind_settings(other)]
            also = f"; kinds that take it: {', '.join(others)}" if others else ""
            raise GaprankInputError(f"kind {kind!r} takes no setting {name!r} (its settings: {', '.join(takes)}){also}")
    if kind not in _OBJECTIVE_KINDS:
        if measure is not None:
            raise GaprankInputError(f"kind {kind!r} takes no measure; got measure {measure!r}")
        return _made(kind, settings)
    if measure is None:
        names = ", ".join(objective_names(objective_kind=_OBJECTIVE_KINDS[kind]))
        raise GaprankInputError(f"kind {kind!r} needs a measure: one of {names}")
    return _made(kind, {"measure": measure, **settings})


def _made(kind: str, arguments: dict[str, Any]) -> torch.nn.Module:
    """The kind's module, which checks its measure and settings when made; a refusal names the kind."""
    try:
        return _MODULES[kind](**arguments)
    except GaprankInputError as exc:
        raise GaprankInputError(f"kind {kind!r}: {exc}") from None
