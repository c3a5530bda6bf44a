"""Measure names as strings, ir_measures style: ``nDCG@10``, ``P(rel=2)@5``, ``GAP(g=[0.5,0.5])``,
``RBP(p=0.9)``, ``nDCG(gain=linear,discount=jk)@10``. Used by the CLI, configs and LightGBM evals."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from .._inputs import MAX_COUNT, GaprankInputError, check_positive_int
from .._typing import ArrayLike
from ._registry import MEASURE_NAME, MODES, MeasureInfo, find_measure, g_not_taken, known_names, objective_names

_NAME = re.compile(r"^\s*(" + MEASURE_NAME.pattern + r")\s*(?:\((.*)\))?\s*(?:@\s*(\d+))?\s*$")


@dataclass(frozen=True)
class Measure:
    """A parsed measure: ``measure(scores, labels, **common_keywords)`` evaluates it.

    ``info`` is its registry entry; ``kwargs`` the keywords its string sets (``k`` for ``@k``)."""

    name: str
    info: MeasureInfo
    kwargs: dict[str, Any] = field(default_factory=dict)

    def serves(self, mode: str) -> bool:
        """Whether it is an objective of this kind ("swap_deltas", "soft", "exact"), cutoff included."""
        if not getattr(self.info, mode):
            return False
        return mode == "swap_deltas" or self.k is None or self.info.form.smooth_takes_cutoff

    def __reduce__(self) -> tuple[Any, ...]:
        # pickled as its string: the entry is the registry's (a process that registered it has it)
        return (parse_measure, (self.name,))

    @property
    def function(self) -> Callable[..., Any]:
        """The metric function of its entry."""
        return self.info.function

    @property
    def uses_g(self) -> bool:
        return self.info.uses_g

    @property
    def k(self) -> int | None:
        """The cutoff ``@k`` (None: the whole list)."""
        return self.kwargs.get("k")

    def settings(self, g: ArrayLike | None = None) -> tuple[dict[str, Any], int | None, str]:
        """Its own parameters, checked (unset ones at their defaults; GAP's ``g`` from the string or, when
        the string sets none, the given ``g``), the grade scale they fix (None when none does) and what fixes
        it. Defaults that depend on the data (a uniform ``g``) stay None until
        :meth:`MeasureInfo.fill`."""
        given = {key: value for key, value in self.kwargs.items() if key != "k"}
        if g is not None:
            if not self.uses_g:
                raise g_not_taken(self.name)
            if "g" in given:
                raise GaprankInputError(f"measure {self.name!r} sets g; do not pass g as well")
            given["g"] = g
        return self.info.resolve(given)

    def whole_set_keywords(self, top: int, g: ArrayLike | None = None) -> dict[str, Any]:
        """Keywords for evaluating one part of a data set (a length bucket, a batch) as the whole: GAP's
        ``g`` when given (and the string sets none), and every setting that defaults from the data (a
        uniform ``g``, ERR's ``max_grade``) fixed at the whole set's grade scale 0..``top``."""
        given_g = g if self.uses_g and "g" not in self.kwargs else None
        values, _, _ = self.settings(given_g)
        filled = self.info.fill(values, max(top, 1), torch.device("cpu"))
        unset = {keyword: filled[keyword] for keyword, value in values.items()
                 if value is None and filled[keyword] is not None}
        return unset if given_g is None else {"g": given_g, **unset}

    def __call__(self, scores: ArrayLike, labels: ArrayLike, *, g: ArrayLike | None = None, **common: Any) -> Any:
        """Evaluate; keywords in ``common`` that the measure's own name already set (``nDCG(gain=linear)``)
        yield to the name."""
        kwargs = {**common, **self.kwargs}
        if self.uses_g and g is not None:
            kwargs.setdefault("g", g)
        return self.function(scores, labels, **kwargs)


def _split_args(text: str) -> list[str]:
    parts, depth, current = [], 0, ""
    for ch in text:
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += ch
    if current.strip():
        parts.append(current)
    return parts


def _value(text: str, name: str) -> Any:
    text = text.strip().strip("'\"")
    if text.startswith("["):
        if not text.endswith("]"):
            raise GaprankInputError(f"measure {name!r}: unterminated list {text!r}")
        return [_value(t, name) for t in text[1:-1].split(",") if t.strip()]
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return text


def parse_measure(name: str) -> Measure:
    """Parse a measure string into a callable :class:`Measure`.

    Names (case-insensitive) and parameters are those of the measure registry
    (:mod:`gaprank.metrics._registry`): AP / MAP (``rel``), GAP, xGAP, eGAP (``g``), nDCG (``gain``,
    ``discount``, ``short_list``), P (``rel``, ``short_list``; needs ``@k``), RBP (``p`` = persistence,
    ``rel``), ERR (``max_grade``), Q (``beta``), SR (sliding ratio), vG (Kishida's generalized AP), eRAP
    (``p`` list), eRRBP (``p`` list, ``q`` persistence), RR / MRR, R (recall; needs ``@k``), Rprec, Success
    (needs ``@k``), all with ``rel``, and DCG (``gain``, ``discount``). ``@k`` sets the cutoff.

    Parameters
    ----------
    name : str
        ``NAME[(key=value,...)][@k]``.

    Returns
    -------
    Measure
        Callable as ``measure(scores, labels, **common_keywords)``.

    Examples
    --------
    >>> from gaprank.metrics import parse_measure
    >>> m = parse_measure("nDCG(discount=jk)@10")
    >>> m.function.__name__, m.kwargs
    ('ndcg', {'discount': 'jk', 'k': 10})
    """
    match = _NAME.match(name)
    if not match:
        raise GaprankInputError(f"cannot parse measure {name!r}; expected NAME[(key=value,...)][@k], e.g. 'nDCG@10'")
    base, args, cutoff = match.groups()
    entry = find_measure(base)
    if entry is None:
        raise GaprankInputError(f"unknown measure {base!r} in {name!r}; known: {known_names()}")
    kwargs: dict[str, Any] = {}
    for part in _split_args(args or ""):
        key, sep, value = part.partition("=")
        key = key.strip()
        if not sep or key not in entry.parameters:
            allowed = ", ".join(entry.parameters) or "none"
            raise GaprankInputError(f"measure {name!r}: bad parameter {part.strip()!r}; parameters of {base}: {allowed}")
        info = entry.parameters[key]
        if info.keyword in kwargs:
            raise GaprankInputError(f"measure {name!r}: parameter {key} given twice")
        kwargs[info.keyword] = _value(value, name)
        if info.dtype is list and not isinstance(kwargs[info.keyword], list):
            raise GaprankInputError(f"measure {name!r}: {key} is a list ({info.desc}), e.g. "
                                    f"{base}({key}={info.example or '[0.5,0.5]'}); got {value.strip()}")
    for info in entry.params:
        if info.required and info.keyword not in kwargs:
            raise GaprankInputError(f"measure {name!r}: {base} needs {info.name} ({info.desc}), e.g. "
                                    f"{base}({info.name}={info.example})")
    if cutoff is not None:
        if not entry.takes_cutoff:
            raise GaprankInputError(f"measure {name!r}: {base} takes no @k cutoff")
        try:  # more digits than any allowed cutoff has: refused before int() (which limits its digits)
            cut = int(cutoff) if len(cutoff.lstrip("0")) <= 10 else MAX_COUNT + 1
            kwargs["k"] = check_positive_int(cut, "the cutoff @k", allow_none=False)
        except GaprankInputError as exc:
            raise GaprankInputError(f"measure {name!r}: {exc}") from None
    elif entry.needs_cutoff:
        raise GaprankInputError(f"measure {name!r}: {base} needs a cutoff, e.g. {base}@10")
    return Measure(name.strip(), entry, kwargs)


def objective_measure(metric: str | Measure, *, mode: str = "swap_deltas") -> Measure:
    """A measure string as an objective of one kind, checked: ``"gap"``, ``"nDCG@10"``, ``"AP(rel=2)"``,
    ``"eRAP(p=[0,0.5,1])"``.

    Parameters
    ----------
    metric : str or Measure
        A measure string (:func:`parse_measure`).
    mode : {"swap_deltas", "soft", "exact"}
        LambdaRank / LambdaMART, SoftRank's smooth value, or the exact expectation.

    Returns
    -------
    Measure

    Raises
    ------
    GaprankInputError
        When the measure has no such form; the message lists those that do.

    Examples
    --------
    >>> from gaprank.metrics import objective_measure
    >>> objective_measure("nDCG@10").k
    10
    """
    if mode not in MODES:
        raise GaprankInputError(f"mode must be one of {', '.join(map(repr, MODES))}; got {mode!r}")
    if not isinstance(metric, (str, Measure)):
        raise GaprankInputError(f"metric must be a measure string such as 'gap' or 'nDCG@10'; got {metric!r}")
    try:
        measure = parse_measure(metric) if isinstance(metric, str) else metric
    except GaprankInputError as exc:
        raise GaprankInputError(f"metric: {exc}") from None
    if not getattr(measure.info, mode):
        names = ", ".join(objective_names(mode=mode))
        raise GaprankInputError(f"metric {measure.name!r}: {measure.info.name} has no {MODES[mode]}; "
                                f"measures with one: {names}")
    if not measure.serves(mode):
        raise GaprankInputError(f"metric {measure.name!r}: the smooth forms of {measure.info.name} take no cutoff @k")
    return measure
