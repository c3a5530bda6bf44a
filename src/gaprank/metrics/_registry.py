"""One registry of measures: each is said once, with its implementation, and everything reads it.

An entry (:class:`MeasureInfo`) holds a measure's canonical name and aliases, its parameters
(:class:`ParamInfo`, as ir_measures names them: the name in a measure string, the keyword, type, default,
description, how a value is checked), its reference, its docstring, and its *form*: the implementation
the library computes it with (:mod:`gaprank.metrics._forms`). What a measure can do follows from its form,
never from a flag:

* :class:`~gaprank.metrics.KernelForm` (the AP family): the metric, swap deltas (LambdaRank, LambdaMART),
  SoftRank's smooth value and the exact expectation;
* :class:`~gaprank.metrics.GainDiscountForm` (nDCG, DCG, P@k, RBP, eRRBP, sliding ratio): the metric, swap
  deltas and the smooth value;
* :class:`~gaprank.metrics.ListForm` (ERR, Q): its own value and, when given, its own swap-delta factors.

The metric function (``gaprank.metrics.gap``, ...) is built from the entry at registration; measure
strings, the losses, the LightGBM and XGBoost objectives, LETOR evaluation and the training configs all
read the registry; nothing else lists measures. A bad entry (no form, a form missing a part, a parameter
without a type, a name already taken) is refused when it is built or registered.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from .._inputs import GaprankInputError, check_positive_int, finalize, on_device
from .._typing import ArrayLike, MetricValue
from ._docs import document_metric
from ._forms import Form
from ._ranking import WeightsNotTaken, rank_lists

PARAM_TYPES = (int, float, str, list)
# What a measure string can name (gaprank.metrics.parse_measure): an ASCII letter, then letters, digits or _.
MEASURE_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]*")


def is_measure_name(name: Any) -> bool:
    """Whether ``name`` can stand in a measure string."""
    return isinstance(name, str) and MEASURE_NAME.fullmatch(name) is not None


# Keywords every metric function has; a measure's own parameter may not take one of them.
COMMON_KEYWORDS = ("scores", "labels", "k", "mask", "weights", "grade_counts", "ties", "empty_value", "reduction")


@dataclass(frozen=True)
class ParamInfo:
    """A parameter of a measure.

    Parameters
    ----------
    name : str
        Its name in measure strings (``nDCG(gain=linear)``).
    keyword : str
        The keyword of the metric function.
    dtype : {int, float, str, list}
        Its type (``list``: a sequence of numbers, e.g. GAP's ``g``).
    default : object
        The value when none is given (None: unset, or filled from the data by ``fill``).
    desc : str
        What it means, for docs and messages.
    required : bool
        A measure string without it is refused when parsed.
    example : str
        A value to show in messages, e.g. ``"[0,0.5,1]"``.
    check : callable, optional
        ``check(value) -> value``: validates a given value (raising :class:`~gaprank.GaprankInputError`)
        and returns it normalised (a list as a float64 tensor, say). Default: kept as given.
    grade_scale : callable, optional
        ``grade_scale(checked value) -> c``: the top grade a value fixes (GAP's ``g`` has c entries).
    fill : callable, optional
        ``fill(c) -> value``: the value of an unset parameter once the data's grade scale 0..c is known
        (GAP's uniform ``g``, ERR's ``max_grade``).
    """

    name: str
    keyword: str
    dtype: type
    default: Any
    desc: str
    required: bool = False
    example: str = ""
    check: Callable[[Any], Any] | None = None
    grade_scale: Callable[[Any], int] | None = None
    fill: Callable[[int], Any] | None = None

    def __post_init__(self) -> None:
        if self.dtype not in PARAM_TYPES:
            raise GaprankInputError(f"parameter {self.name!r}: dtype must be one of int, float, str, list; "
                                    f"got {self.dtype!r}")
        if not self.name.isidentifier() or not self.keyword.isidentifier():
            raise GaprankInputError(f"parameter {self.name!r}: name and keyword must be identifiers")
        if not self.desc:
            raise GaprankInputError(f"parameter {self.name!r}: desc is empty (docs and messages show it)")

    @property
    def type_text(self) -> str:
        """numpydoc's type line: ``float, default 0.8``, ``sequence of float, optional`` or, required,
        ``sequence of float``."""
        kind = "sequence of float" if self.dtype is list else self.dtype.__name__
        if self.required:
            return kind
        return f"{kind}, optional" if self.default is None else f"{kind}, default {self.default!r}"

    def checked(self, value: Any) -> Any:
        """``value`` validated and normalised (None stays None)."""
        if value is None or self.check is None:
            return value
        return self.check(value)


@dataclass(frozen=True)
class MeasureInfo:
    """Everything the library knows of one measure; see the module doc.

    Parameters
    ----------
    name : str
        Canonical spelling in measure strings and tables, e.g. "GAP".
    form : KernelForm, GainDiscountForm or ListForm
        The implementation.
    params : tuple of ParamInfo
        Its own parameters, in the order of the metric function's keywords.
    aliases : tuple of str
        Other names (case-insensitive), e.g. "MAP" for AP.
    reference : str
        The paper and equation.
    doc : str
        The metric function's docstring: the definition in math, its reference, an example.
    function_name : str
        The metric function's ``__name__`` (default: the name in lower case).
    needs_cutoff : bool
        Defined at a cutoff only (P@k).
    takes_cutoff : bool
        Accepts ``@k``.
    example : tuple of str
        The docstring's example: scores, labels, other arguments (Python text) and the value rounded to
        four digits, which the doctests check.
    """

    name: str
    form: Form
    params: tuple[ParamInfo, ...] = ()
    aliases: tuple[str, ...] = ()
    reference: str = ""
    doc: str = ""
    function_name: str = ""
    needs_cutoff: bool = False
    takes_cutoff: bool = True
    example: tuple[str, ...] = ()
    # None: made from the entry (a measure a user registers); always set once the entry is built
    function: Callable[..., MetricValue] = field(default=None, repr=False, compare=False)  # type: ignore[assignment]
    parameters: dict[str, ParamInfo] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not is_measure_name(self.name):
            raise GaprankInputError(f"measure name must be an ASCII letter followed by ASCII letters, digits or _ "
                                    f"(what a measure string can name); got {self.name!r}")
        if not isinstance(self.form, Form):
            raise GaprankInputError(f"measure {self.name}: form must be a KernelForm, GainDiscountForm or ListForm "
                                    f"(its implementation); got {type(self.form).__name__}")
        self.form.check(self.name)
        for param in self.params:
            if not isinstance(param, ParamInfo):
                raise GaprankInputError(f"measure {self.name}: params must be ParamInfo; got {type(param).__name__}")
            if param.keyword in COMMON_KEYWORDS:
                raise GaprankInputError(f"measure {self.name}: parameter keyword {param.keyword!r} is one every "
                                        "metric has")
        for attribute in ("name", "keyword"):
            names = [getattr(p, attribute) for p in self.params]
            if len(set(names)) != len(names):
                raise GaprankInputError(f"measure {self.name}: a parameter {attribute} appears twice in {names}")
        if self.needs_cutoff and not self.takes_cutoff:
            raise GaprankInputError(f"measure {self.name}: needs_cutoff without takes_cutoff")
        object.__setattr__(self, "parameters", {p.name: p for p in self.params})
        if self.function is None:  # a measure a user registers: its metric function is made from the entry
            object.__setattr__(self, "function", _metric_function(self))
        elif not callable(self.function):
            raise GaprankInputError(f"measure {self.name}: function must be callable; got {type(self.function).__name__}")
        elif not self.doc:
            object.__setattr__(self, "doc", inspect.getdoc(self.function) or "")

    def __reduce__(self) -> tuple[Any, ...]:
        # pickled by name: the entry is the registry's (a process that registered it has it)
        return (registered, (self.name,))

    @property
    def key(self) -> str:
        """Its canonical name in lower case ("gap", "ndcg")."""
        return self.name.lower()

    @property
    def uses_g(self) -> bool:
        """It takes GAP's user model ``g``."""
        return "g" in self.parameters

    @property
    def swap_deltas(self) -> bool:
        """It has swap deltas: a LambdaRank loss and a LambdaMART objective."""
        return self.form.has_swap_deltas

    @property
    def soft(self) -> bool:
        """It has SoftRank's smooth value (``soft_metric``, ``smoothing="softrank"``)."""
        return self.form.has_smooth

    @property
    def expected(self) -> bool:
        """It has the exact expectation under the Gaussian score model (``smoothing="expected"``)."""
        return self.form.has_expected

    def resolve(self, given: dict[str, Any]) -> tuple[dict[str, Any], int | None, str]:
        """Check the given keyword values; returns them (unset ones at their defaults), the grade scale
        they fix (None when none does) and what fixes it, for messages."""
        unknown = set(given) - {p.keyword for p in self.params}
        if unknown:
            raise GaprankInputError(f"{self.name} has no parameter {sorted(unknown)[0]!r}")
        values, scale, source = {}, None, ""
        for param in self.params:
            value = param.checked(given.get(param.keyword, param.default))
            if value is None and param.required:
                raise GaprankInputError(f"{self.name} needs {param.keyword} ({param.desc})")
            values[param.keyword] = value
            if value is not None and param.grade_scale is not None:
                scale = param.grade_scale(value)
                shown = value.tolist() if isinstance(value, torch.Tensor) else value
                source = (f"{param.keyword} (c = {scale} grades)" if param.keyword == "g"
                          else f"{param.keyword} (grades 0..{scale})" if param.dtype is list
                          else f"{param.keyword}={shown}")
        return values, scale, source

    def evaluate(self, scores: ArrayLike, labels: ArrayLike, *, k: int | None, mask: ArrayLike | None,
                 grade_counts: ArrayLike | None, ties: str, empty_value: float, reduction: str,
                 weights: ArrayLike | None = None, **own: Any) -> MetricValue:
        """The exact metric: what every metric function, built in or made for a registered measure, calls.

        ``own`` holds the measure's own keywords (unset ones at None or their defaults)."""
        k = check_positive_int(k, allow_none=not self.needs_cutoff)
        if weights is not None and not self.form.takes_weights:
            raise GaprankInputError(f"{self.name} does not take weights (its form weighs no document)")
        values, scale, source = self.resolve(own)
        ranked = rank_lists(scores, labels, mask=mask, grade_counts=grade_counts, ties=ties, num_grades=scale,
                            scale_source=source, weights=weights)
        params = self.fill(values, ranked.num_grades, ranked.grades.device)
        try:
            result, defined = self.form.value(ranked, k, params)
        except WeightsNotTaken as reason:
            raise GaprankInputError(f"{self.name} does not take weights: {reason}") from None
        return finalize(result, defined, ranked.spec, empty_value=empty_value, reduction=reduction)

    def fill(self, values: dict[str, Any], num_grades: int, device: torch.device) -> dict[str, Any]:
        """The values with unset data-dependent ones filled for the grade scale 0..``num_grades``, tensors
        on ``device``."""
        out = {}
        for param in self.params:
            value = values[param.keyword]
            if value is None and param.fill is not None:
                value = param.fill(num_grades)
            out[param.keyword] = on_device(value, device) if isinstance(value, torch.Tensor) else value
        return out


def metric_signature(info: MeasureInfo) -> inspect.Signature:
    """The signature every metric function of a measure has: ``scores, labels``, then keyword-only the cutoff
    ``k`` and the measure's own parameters (P@k-style measures that need a cutoff list it first), then
    ``mask``, ``weights`` (when its form takes them), ``grade_counts, ties, empty_value, reduction``. The built-in
    metric functions are written out with it (a test compares them); a registered measure's function is made with it."""
    keyword = inspect.Parameter.KEYWORD_ONLY
    arrays = [inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation="ArrayLike")
              for n in ("scores", "labels")]
    cutoff = [inspect.Parameter("k", keyword, default=inspect.Parameter.empty if info.needs_cutoff else None,
                                annotation="int" if info.needs_cutoff else "int | None")] if info.takes_cutoff else []
    own = [inspect.Parameter(p.keyword, keyword, default=inspect.Parameter.empty if p.required else p.default,
                             annotation=("ArrayLike" if p.dtype is list else p.dtype.__name__)
                             + (" | None" if p.default is None and not p.required else "")) for p in info.params]
    weights = ([inspect.Parameter("weights", keyword, default=None, annotation="ArrayLike | None")]
               if info.form.takes_weights else [])
    common = [inspect.Parameter("mask", keyword, default=None, annotation="ArrayLike | None"), *weights,
              inspect.Parameter("grade_counts", keyword, default=None, annotation="ArrayLike | None"),
              inspect.Parameter("ties", keyword, default="stable", annotation="str"),
              inspect.Parameter("empty_value", keyword, default=0.0, annotation="float"),
              inspect.Parameter("reduction", keyword, default="mean", annotation="str")]
    # P@k lists k first, then its own parameters; other measures list their parameters, then k
    ordered = cutoff + own if info.needs_cutoff else own + cutoff
    return inspect.Signature(arrays + ordered + common, return_annotation="MetricValue")


def _metric_function(info: MeasureInfo) -> Callable[..., MetricValue]:
    """The exact metric of a registered measure's entry, with :func:`metric_signature`."""
    signature = metric_signature(info)
    parameters = list(signature.parameters.values())[2:]
    defaults = {p.name: p.default for p in parameters if p.default is not inspect.Parameter.empty}
    required = [p.name for p in parameters if p.default is inspect.Parameter.empty]
    accepted = frozenset(defaults) | frozenset(required)
    own_keywords = [p.keyword for p in info.params]

    def metric(*args: Any, **kwargs: Any) -> MetricValue:
        # the signature's binding, written out for the common call (scores and labels by position): the
        # metric functions are called per bucket and per measure
        if len(args) == 2 and kwargs.keys() <= accepted and all(n in kwargs for n in required):
            arguments = {**defaults, **kwargs}
            scores, labels = args
        else:
            bound = signature.bind(*args, **kwargs)  # the TypeError Python would give, or the arguments
            bound.apply_defaults()
            arguments = bound.arguments
            scores, labels = arguments["scores"], arguments["labels"]
        return info.evaluate(scores, labels, k=arguments.get("k"), mask=arguments["mask"],
                             grade_counts=arguments["grade_counts"], ties=arguments["ties"],
                             empty_value=arguments["empty_value"], reduction=arguments["reduction"],
                             weights=arguments.get("weights"), **{keyword: arguments[keyword] for keyword in own_keywords})

    name = info.function_name or info.key
    metric.__name__ = metric.__qualname__ = name
    metric.__module__ = "gaprank.metrics"
    metric.__signature__ = signature  # type: ignore[attr-defined]
    metric.__doc__ = (info.doc or f"{info.name}: {info.reference}") + _example(name, info.example)
    document_metric(metric, {p.keyword: (p.type_text, p.desc) for p in info.params})
    return metric


def _example(name: str, example: tuple[str, ...]) -> str:
    """The Examples section of a metric's docstring."""
    if not example:
        return ""
    scores, labels, options, value = example
    call = f"{name}(np.array({scores}), np.array({labels}){', ' + options if options else ''})"
    return ("\n\n    Examples\n    --------\n    >>> import numpy as np\n"
            f"    >>> from gaprank.metrics import {name}\n    >>> round(float({call}), 4)\n    {value}\n    ")


_REGISTRY: dict[str, MeasureInfo] = {}
_LOOKUP: dict[str, MeasureInfo] = {}


def register(info: MeasureInfo) -> MeasureInfo:
    """Add a measure; its name and aliases (case-insensitive) must be new.

    Its metric function is ``info.function``; its name becomes a measure string (``parse_measure``), and,
    as its form allows, a LambdaRank loss, a LambdaMART objective and a smooth loss. See the docs' page
    "Adding a measure".

    Parameters
    ----------
    info : MeasureInfo
        The measure's entry.

    Returns
    -------
    MeasureInfo
        ``info``.

    Examples
    --------
    >>> from gaprank.metrics import GainDiscountForm, MeasureInfo, register, unregister
    >>> import numpy as np, torch
    >>> toy = register(MeasureInfo("TopGrade", GainDiscountForm(
    ...     gain=lambda c, params: torch.arange(c + 1, dtype=torch.float64),
    ...     discount=lambda positions, params: (positions == 1).to(torch.float64))))
    >>> float(toy.function(np.array([0.2, 0.9]), np.array([3, 1])))   # the grade ranked first
    1.0
    >>> unregister("TopGrade")
    """
    if not isinstance(info, MeasureInfo):
        raise GaprankInputError(f"register takes a MeasureInfo; got {type(info).__name__}")
    names = [info.name, *info.aliases]
    for alias in info.aliases:
        if not is_measure_name(alias):
            raise GaprankInputError(f"measure {info.name}: alias {alias!r} is not an ASCII letter followed by ASCII "
                                    "letters, digits or _ (what a measure string can name)")
    if len({n.lower() for n in names}) != len(names):
        raise GaprankInputError(f"measure {info.name}: a name appears twice in {names}")
    taken = [n for n in names if n.lower() in _LOOKUP]
    if taken:
        raise GaprankInputError(f"measure name {taken[0]!r} is already registered")
    _REGISTRY[info.name] = info
    for n in names:
        _LOOKUP[n.lower()] = info
    return info


def unregister(name: str) -> None:
    """Remove a measure added with :func:`register`.

    Parameters
    ----------
    name : str
        Its canonical name.
    """
    if name not in _REGISTRY:
        raise GaprankInputError(f"unregister: no measure is registered as {name!r} (canonical names: "
                                f"{', '.join(_REGISTRY)})")
    if name in _BUILT_IN:
        raise GaprankInputError(f"unregister: {name!r} is one of gaprank's own measures; only a measure added with "
                                "register can be removed")
    info = _REGISTRY.pop(name)
    for n in [info.name, *info.aliases]:
        _LOOKUP.pop(n.lower(), None)


_BUILT_IN: frozenset[str] = frozenset()


def seal_built_ins() -> None:
    """Mark every measure registered so far as gaprank's own (:func:`unregister` refuses them); called once,
    after the built-in entries."""
    global _BUILT_IN
    _BUILT_IN = frozenset(_REGISTRY)


def registered(name: str) -> MeasureInfo:
    """The entry registered under canonical ``name`` (how an entry is unpickled)."""
    if name not in _REGISTRY:
        raise GaprankInputError(f"measure {name!r} is not registered in this process; register it before unpickling")
    return _REGISTRY[name]


def measures() -> list[MeasureInfo]:
    """Every registered measure.

    Returns
    -------
    list of MeasureInfo
        In registration order.
    """
    return list(_REGISTRY.values())


def user_model_measures() -> list[MeasureInfo]:
    """The measures that take GAP's user model ``g`` (GAP, xGAP, eGAP), in registration order.

    Returns
    -------
    list of MeasureInfo
    """
    return [info for info in _REGISTRY.values() if info.uses_g]


def g_not_taken(measure: str) -> GaprankInputError:
    """The error for a ``g`` given with a measure that takes none.

    Parameters
    ----------
    measure : str
        The measure that was given a ``g``.

    Returns
    -------
    GaprankInputError
        To raise; its message lists the measures that do take ``g``.
    """
    names = ", ".join(info.key for info in user_model_measures())
    return GaprankInputError(f"g applies to {names}, not {measure!r}")


def known_names() -> str:
    """The registered names (with aliases), for messages."""
    return ", ".join(n for info in _REGISTRY.values() for n in (info.name, *info.aliases))


def find_measure(name: str) -> MeasureInfo | None:
    """The entry of a measure by name.

    Parameters
    ----------
    name : str
        A canonical name or an alias, in any case.

    Returns
    -------
    MeasureInfo or None
        None when no measure has that name.
    """
    return _LOOKUP.get(name.lower())


# What an objective of each kind needs of a measure's form, in messages.
OBJECTIVE_KINDS = {"swap_deltas": "swap deltas (LambdaRank, LambdaMART)", "soft": "smooth (SoftRank) form",
                  "expected": "exact expectation (smoothing='expected', the AP family)"}


def objective_names(*, objective_kind: str = "swap_deltas") -> tuple[str, ...]:
    """The measures that can serve as objectives of one kind (each with its parameters and ``@k`` as a
    measure string: ``"nDCG@10"``, ``"AP(rel=2)"``).

    Parameters
    ----------
    objective_kind : {"swap_deltas", "soft", "expected"}
        LambdaRank / LambdaMART (swap deltas), a soft loss's smooth value, or the exact expectation.

    Returns
    -------
    tuple of str
        Lower-case canonical names, in registration order.
    """
    check_objective_kind(objective_kind)
    return tuple(info.key for info in _REGISTRY.values() if getattr(info, objective_kind))


def check_objective_kind(objective_kind: str) -> None:
    """Refuse an objective kind that is not one of :data:`OBJECTIVE_KINDS`, in one line."""
    if objective_kind not in OBJECTIVE_KINDS:
        raise GaprankInputError(f"objective_kind must be one of {', '.join(map(repr, OBJECTIVE_KINDS))}; "
                                f"got {objective_kind!r}")
