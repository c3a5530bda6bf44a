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
from ._registry import (
    MEASURE_NAME,
    OBJECTIVE_KINDS,
    MeasureInfo,
    check_objective_kind,
    find_measure,
    g_not_taken,
    known_names,
    objective_names,
)

_NAME = re.compile(r"^\s*(" + MEASURE_NAME.pattern + r")\s*(?:\((.*)\))?\s*(?:@\s*(\d+))?\s*$")


@dataclass(frozen=True)
class Measure:
    """A parsed measure: ``measure(scores, labels, **common_keywords)`` evaluates it.

    ``info`` is its registry entry; ``kwargs`` the keywords its string sets (``k`` for ``@k``)."""

    name: str
    info: MeasureInfo
    kwargs: dict[str, Any] = field(default_factory=dict)

    def serves(self, objective_kind: str) -> bool:
        """Whether it is an objective of this kind ("swap_deltas", "soft", "expected"), cutoff included."""
        check_objective_kind(objective_kind)
        if not getattr(self.info, objective_kind):
            return False
        return objective_kind == "swap_deltas" or self.k is None or self.info.form.smooth_takes_cutoff

    def __reduce__(self) -> tuple[Any, ...]:
        # pickled as its string (the entry is the registry's: a process that registered it has it) and the
        # parameters given beside the string (with_params)
        from_string = parse_measure(self.name).kwargs
        given = {key: value for key, value in self.kwargs.items() if key not in from_string}
        return (_restore_measure, (self.name, given))

    @property
    def function(self) -> Callable[..., Any]:
        """The metric function of its entry."""
        return self.info.function

    @property
    def uses_g(self) -> bool:
        """It takes GAP's user model ``g``."""
        return self.info.uses_g

    @property
    def k(self) -> int | None:
        """The cutoff ``@k`` (None: the whole list)."""
        return self.kwargs.get("k")

    def with_params(self, **params: Any) -> Measure:
        """This measure with more of its own parameters set: how a keyword given beside the string (GAP's
        ``g=`` on a loss or an objective) joins the measure, so that everything downstream reads the
        measure's own parameters only.

        Parameters
        ----------
        **params
            Parameters of the measure, by keyword (``g``, ``persistence``, ...); None means not given.

        Returns
        -------
        Measure
            A new measure (this one when nothing is given); its name stays the string.

        Raises
        ------
        GaprankInputError
            For a parameter the string sets already, and for one the measure does not take.

        Examples
        --------
        >>> from gaprank.metrics import parse_measure
        >>> parse_measure("GAP@10").with_params(g=[0.5, 0.5]).kwargs
        {'k': 10, 'g': [0.5, 0.5]}
        """
        given = {key: value for key, value in params.items() if value is not None}
        if not given:
            return self
        own = {param.keyword for param in self.info.params}
        for key in given:
            if key not in own:
                if key == "g":
                    raise g_not_taken(self.name)
                raise GaprankInputError(f"measure {self.name!r}: {self.info.name} has no parameter {key!r}; "
                                        f"parameters: {', '.join(sorted(own)) or 'none'}")
            if key in self.kwargs:
                raise GaprankInputError(f"measure {self.name!r} sets {key}; do not pass {key} as well")
        return Measure(self.name, self.info, {**self.kwargs, **given})

    def with_defaults(self, **params: Any) -> Measure:
        """This measure with those of ``params`` it takes and its string does not set (None means not
        given): an evaluator's ``g=``, given once for several measures, reaches GAP, xGAP and eGAP and
        passes the others by. :meth:`with_params` otherwise.

        Examples
        --------
        >>> from gaprank.metrics import parse_measure
        >>> parse_measure("nDCG@10").with_defaults(g=[0.5, 0.5]).kwargs
        {'k': 10}
        """
        own = {param.keyword for param in self.info.params}
        return self.with_params(**{key: value for key, value in params.items() if key in own and key not in self.kwargs})

    def settings(self) -> tuple[dict[str, Any], int | None, str]:
        """Its own parameters, checked (unset ones at their defaults), the grade scale they fix (None when
        none does) and what fixes it. Defaults that depend on the data (a uniform ``g``) stay None until
        :meth:`MeasureInfo.fill`."""
        return self.info.resolve({key: value for key, value in self.kwargs.items() if key != "k"})

    def whole_set_keywords(self, top: int) -> dict[str, Any]:
        """Keywords for evaluating one part of a data set (a length bucket, a batch) as the whole: every
        setting that defaults from the data (a uniform ``g``, ERR's ``max_grade``) fixed at the whole
        set's grade scale 0..``top``."""
        values, _, _ = self.settings()
        filled = self.info.fill(values, max(top, 1), torch.device("cpu"))
        return {keyword: filled[keyword] for keyword, value in values.items()
                if value is None and filled[keyword] is not None}

    def __call__(self, scores: ArrayLike, labels: ArrayLike, **common: Any) -> Any:
        """Evaluate; keywords in ``common`` that the measure's own parameters already set
        (``nDCG(gain=linear)``) yield to them."""
        return self.function(scores, labels, **{**common, **self.kwargs})


def _restore_measure(name: str, given: dict[str, Any]) -> Measure:
    """A pickled :class:`Measure` back: its string parsed, the parameters given beside it set again."""
    return parse_measure(name).with_params(**given)


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


def objective_measure(measure: str | Measure, *, objective_kind: str = "swap_deltas") -> Measure:
    """A measure string as an objective of one kind, checked: ``"gap"``, ``"nDCG@10"``, ``"AP(rel=2)"``,
    ``"eRAP(p=[0,0.5,1])"``.

    Parameters
    ----------
    measure : str or Measure
        A measure string (:func:`parse_measure`).
    objective_kind : {"swap_deltas", "soft", "expected"}
        LambdaRank / LambdaMART (swap deltas), a soft loss's smooth value, or the exact expectation.

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
    check_objective_kind(objective_kind)
    if not isinstance(measure, (str, Measure)):
        raise GaprankInputError(f"measure must be a measure string such as 'gap' or 'nDCG@10'; got {measure!r}")
    try:
        parsed = parse_measure(measure) if isinstance(measure, str) else measure
    except GaprankInputError as exc:
        raise GaprankInputError(f"measure: {exc}") from None
    if not getattr(parsed.info, objective_kind):
        names = ", ".join(objective_names(objective_kind=objective_kind))
        raise GaprankInputError(f"measure {parsed.name!r}: {parsed.info.name} has no {OBJECTIVE_KINDS[objective_kind]}; "
                                f"measures with one: {names}")
    if not parsed.serves(objective_kind):
        raise GaprankInputError(f"measure {parsed.name!r}: the smooth forms of {parsed.info.name} take no cutoff @k")
    return parsed
