"""A loss from its kind, a measure string and settings: how a training config asks the library for its loss.

The kinds are the loss modules of this package; the settings a kind takes are its module's parameters, and the
measures it serves are the registry's objectives of its form, so neither list is written twice.
"""

from __future__ import annotations

import inspect
from typing import Any

import torch

from .._engine.backends import check_backend, lambda_backend
from .._inputs import REDUCTIONS, GaprankInputError, check_choice, check_positive_int, check_sigma
from ..metrics import Measure, objective_measure, objective_names
from ._listnet import ListNetLoss
from ._pairwise import LambdaRankLoss, RankNetLoss
from ._soft import SoftMetricLoss, resolve_smoothing, smoothing_measure

# the module of each kind; "exact" is SoftRank's model with smoothing "expected"
_MODULES: dict[str, type[torch.nn.Module]] = {"soft": SoftMetricLoss, "exact": SoftMetricLoss,
                                              "lambdarank": LambdaRankLoss, "ranknet": RankNetLoss,
                                              "listnet": ListNetLoss}
KINDS: tuple[str, ...] = tuple(_MODULES)
# a module's parameters that are not settings: the measure itself and deprecated aliases
_NOT_SETTINGS = ("self", "measure", "mode")
# the registry mode (which form of a measure) of each kind driven by a measure; "soft" with a smoothing of the ranks
# serves a subset of the soft form's measures (checked by smoothing_measure)
_MEASURE_MODES = {"soft": "soft", "exact": "exact", "lambdarank": "swap_deltas"}


def kind_settings(kind: str) -> tuple[str, ...]:
    """The settings ``kind`` takes: its module's parameters but the measure (``exact`` fixes the smoothing)."""
    names = [name for name in inspect.signature(_MODULES[kind]).parameters if name not in _NOT_SETTINGS]
    return tuple(name for name in names if not (kind == "exact" and name == "smoothing"))


def _check_settings(measure: Measure | None, settings: dict[str, Any]) -> None:
    """Check the values of ``settings`` (with the ``measure``, if any); the module gets them as they are given."""
    if "g" in settings and measure is not None:
        measure = measure.with_params(g=settings["g"])  # g taken by the measure, not set twice
        measure.settings()  # ... and well formed
    if "sigma" in settings:
        check_sigma(settings["sigma"])
    if "k" in settings:
        check_positive_int(settings["k"])
    if "reduction" in settings:
        check_choice(settings["reduction"], "reduction", REDUCTIONS)
    if "validate" in settings and not isinstance(settings["validate"], bool):
        raise GaprankInputError(f"validate must be True or False; got {settings['validate']!r}")
    if settings.get("max_grade") is not None:
        max_grade = check_positive_int(settings["max_grade"], "max_grade", allow_none=False)
        if measure is not None:
            _, scale, source = measure.settings()
            if scale is not None and scale != max_grade:
                raise GaprankInputError(f"max_grade={max_grade} disagrees with the grade scale 0..{scale} set by "
                                        f"{source}")
    if "backend" in settings and check_backend(settings["backend"]) == "compiled":
        lambda_backend("compiled", measure, torch.device("cpu"))  # refused where the kernel cannot serve on the CPU


def build(kind: str, measure: str | None = None, **settings: Any) -> torch.nn.Module:
    """The loss module of ``kind`` for ``measure`` with ``settings``, checked once against the registry.

    What a training config names (``kind``, a measure string, its settings) becomes the module that
    computes it; a kind, measure or setting that does not fit is refused in one line naming it, before
    any data is read.

    Parameters
    ----------
    kind : {"soft", "exact", "lambdarank", "ranknet", "listnet"}
        "soft": a smooth measure, :class:`SoftMetricLoss` (``smoothing`` "softrank" by default, or "approx",
        "neuralsort", "softsort", "fast_soft_rank", "expected"); "exact": its exact expectation under SoftRank's
        model (smoothing "expected"); "lambdarank": :class:`LambdaRankLoss`; "ranknet": :class:`RankNetLoss`;
        "listnet": :class:`ListNetLoss`.
    measure : str, optional
        A measure string ("gap", "nDCG@10", "AP(rel=2)", ...) with the form the kind uses; required for "soft",
        "exact" and "lambdarank", refused for "ranknet" and "listnet".
    **settings
        The module's own parameters: ``g``, ``sigma``, ``smoothing`` (soft only), ``k`` and ``backend``
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
    >>> loss = build("lambdarank", "gap", g=[0.5, 0.5], k=10)
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
    if kind not in _MEASURE_MODES:
        if measure is not None:
            raise GaprankInputError(f"kind {kind!r} takes no measure; got measure {measure!r}")
        _checked(kind, None, settings)
        return _MODULES[kind](**settings)
    if measure is None:
        names = ", ".join(objective_names(mode=_MEASURE_MODES[kind]))
        raise GaprankInputError(f"kind {kind!r} needs a measure: one of {names}")
    try:
        if kind == "lambdarank":
            parsed = objective_measure(measure)
        else:
            smoothing = resolve_smoothing(settings["smoothing"], None) if "smoothing" in settings else "softrank"
            parsed = smoothing_measure(measure, smoothing if kind == "soft" else "expected")
    except GaprankInputError as exc:
        raise GaprankInputError(f"kind {kind!r}: {exc}") from None
    _checked(kind, parsed, settings)
    return _MODULES[kind](measure, **settings, **({"smoothing": "expected"} if kind == "exact" else {}))


def _checked(kind: str, measure: Measure | None, settings: dict[str, Any]) -> None:
    try:
        _check_settings(measure, settings)
    except GaprankInputError as exc:
        raise GaprankInputError(f"kind {kind!r}: {exc}") from None
