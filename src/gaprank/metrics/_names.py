"""Measure names as strings, ir_measures style: ``nDCG@10``, ``P(rel=2)@5``, ``GAP(g=[0.5,0.5])``,
``RBP(p=0.9)``, ``nDCG(gain=linear,discount=jk)@10``. Used by the CLI, configs and LightGBM evals."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .._inputs import GaprankInputError
from .._typing import ArrayLike
from ._registry import find_measure, known_names

_NAME = re.compile(r"^\s*([A-Za-z][A-Za-z0-9_]*)\s*(?:\((.*)\))?\s*(?:@\s*(\d+))?\s*$")


@dataclass(frozen=True)
class Measure:
    """A parsed measure: ``measure(scores, labels, **common_keywords)`` evaluates it."""

    name: str
    function: Callable[..., Any]
    kwargs: dict[str, Any] = field(default_factory=dict)
    uses_g: bool = False

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
    (``p`` list), eRRBP (``p`` list, ``q`` persistence). ``@k`` sets the cutoff.

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
        kwargs["k"] = int(cutoff)
    elif entry.needs_cutoff:
        raise GaprankInputError(f"measure {name!r}: {base} needs a cutoff, e.g. {base}@10")
    return Measure(name.strip(), entry.function, kwargs, entry.uses_g)
