"""gaprank's measures inside ir_measures and PyTerrier: GAP, xGAP, eGAP, vG, eRAP, eRRBP and every other
gaprank measure ir_measures lacks, computed by gaprank.

Importing this module registers them with ir_measures (its measure registry and its default provider
pipeline), so ``ir_measures.calc_aggregate``, ``ir_measures.iter_calc``, ``ir_measures.parse_measure`` and
``pyterrier.Experiment(..., eval_metrics=[...])`` take them beside ir_measures' own, no Java needed:

```python
import ir_measures
from gaprank.ir_measures import GAP, eGAP

ir_measures.calc_aggregate([GAP(g=[0.5, 0.5]), eGAP@10, ir_measures.nDCG@10], qrels, run)
```

PyTerrier reads a string in ``eval_metrics`` as a trec_eval name, so pass these measures as objects (or
``ir_measures.parse_measure("GAP(g={1:0.5,2:0.5})")``).

Parameters are the registry's: ``cutoff`` (``@k``) where the measure takes one, and a per-grade list as
gaprank spells it (GAP's ``g`` over grades 1..c, eRAP's ``p`` over grades 0..c) or as a dict ``{grade: value}``
(ir_measures' string parser reads dicts, not lists), a missing grade meaning 0. They are checked when the
measure is made. The values are those of ``gaprank eval``'s TREC mode on the same qrels and run
(:func:`gaprank.metrics.evaluate_trec`): trec_eval's tie rule, the whole qrels as recall base, query and
document ids compared as text (an integer id 7 and "7" are one id). As ir_measures does for every measure, a
query of the qrels that the run lacks scores 0. Without ``g``, GAP's user model is uniform over the grades of
the qrels it is given: pass ``g`` when the qrels are evaluated in parts.
"""

from __future__ import annotations

import numbers
from collections.abc import Iterator
from typing import Any

import numpy as np
import torch

from ._extras import missing_extra

try:
    import ir_measures
    from ir_measures import providers
    from ir_measures.measures import base as measures_base
    from ir_measures.util import Metric, QrelsConverter, RunConverter
except ImportError as _exc:
    raise missing_extra("ir_measures", "ir-measures", "gaprank.ir_measures") from _exc

from ._inputs import GaprankInputError
from .metrics import Measure as GaprankMeasureString
from .metrics import MeasureInfo, ParamInfo, evaluate_trec, measures, parse_measure, text_ids

__all__ = ["GaprankMeasure", "GaprankProvider", "register_measures", "provider", "GAP", "xGAP", "eGAP", "vG", "eRAP",
           "eRRBP", "Q", "SR", "DCG"]


class GaprankMeasure(measures_base.Measure):
    """An ir_measures measure computed by gaprank; :meth:`gaprank_measure` is the gaprank measure it stands for.

    Its parameters are checked when it is made (``GAP(g=...)``, ``GAP @ 10``, ``ir_measures.parse_measure``), so
    a bad one is a one-line error there, not at evaluation. A per-grade list (GAP's ``g``, eRAP's ``p``) may be
    given as gaprank spells it, a list (``g=[0.5, 0.5]``: grades 1..c; ``p=[0, 0.5, 1]``: grades 0..c), or as a
    dict ``{grade: value}`` (what ir_measures' string parser reads); either is kept as the dict of every grade
    from the first to the largest, so equal measures are equal to ir_measures (which compares them by repr).
    """

    ENTRY: MeasureInfo

    def gaprank_measure(self) -> GaprankMeasureString:
        """The gaprank measure string of these parameters, parsed (``GAP(g={1: 0.5, 2: 0.5})@10`` →
        ``GAP(g=[0.5,0.5])@10``)."""
        self.validate_params()
        return parse_measure(self._gaprank_text())

    def _gaprank_text(self) -> str:
        parts = []
        for info in self.ENTRY.params:
            value = self.params.get(info.name)
            if value is None:
                continue
            parts.append(f"{info.name}={_gaprank_value(self, info, value)}")
        text = self.ENTRY.name + (f"({','.join(parts)})" if parts else "")
        if self.params.get("cutoff") is not None:
            text += f"@{self.params['cutoff']}"
        return text

    def __init__(self, **params: Any) -> None:
        unknown = sorted(set(params) - set(self.SUPPORTED_PARAMS))
        if unknown:  # refused when built: ir_measures hashes a measure by its repr, which reads known parameters only
            raise GaprankInputError(f"measure {self.NAME}: unsupported parameters {unknown}; parameters of "
                                    f"{self.NAME}: {', '.join(self.SUPPORTED_PARAMS) or 'none'}")
        super().__init__(**params)
        per_grade = {info.name: info for info in self.ENTRY.params if info.dtype is list}
        for name, value in params.items():
            if name in per_grade and value is not None:
                self.params[name] = _grade_dict(self, per_grade[name], value)
            elif not _has_type(self.SUPPORTED_PARAMS[name], value):
                raise GaprankInputError(f"measure {self!r}: {name} must be {_TYPE_WORDS[self.SUPPORTED_PARAMS[name].dtype]} "
                                        f"({self.SUPPORTED_PARAMS[name].desc}); got {value!r}")
        cutoff = self.params.get("cutoff")
        if cutoff is not None and cutoff < 1:
            raise GaprankInputError(f"measure {self!r}: the cutoff must be a positive integer; got {cutoff}")
        if not any(info.required and self.params.get(info.name) is None for info in self.ENTRY.params):
            try:  # values checked now (g sums to 1, p in [0, 1], ...), not at evaluation
                parse_measure(self._gaprank_text()).settings()
            except GaprankInputError as exc:
                raise GaprankInputError(f"measure {self!r}: {exc}") from None

    def __repr__(self) -> str:
        # ir_measures' format, with two changes so that equal measures share a repr (ir_measures compares and
        # hashes measures by it, and PyTerrier names columns by it): parameters in a fixed order, and every entry
        # of a dict (ir_measures' own repr leaves out an entry whose key equals its value, as in {1: 1.0})
        params = ",".join(f"{name}={_param_text(self.params[name])}" for name, info in self.SUPPORTED_PARAMS.items()
                          if name != self.AT_PARAM and self.params.get(name) is not None and self.params[name] != info.default)
        text = f"{self.NAME}({params})" if params else str(self.NAME)
        return text + (f"@{self.params[self.AT_PARAM]}" if self.AT_PARAM in self.params else "")

    def validate_params(self) -> None:
        for info in self.ENTRY.params:
            if info.required and self.params.get(info.name) is None:
                example = "[0, 0.5, 1.0]" if info.dtype is list else info.example
                raise GaprankInputError(f"measure {self!r}: {self.NAME} needs {info.name} ({info.desc}), e.g. "
                                        f"{self.NAME}({info.name}={example})")
        try:
            super().validate_params()
        except AssertionError as exc:
            raise GaprankInputError(f"measure {self!r}: {exc}; parameters of {self.NAME}: "
                                    f"{', '.join(self.SUPPORTED_PARAMS) or 'none'}") from None


def _param_text(value: Any) -> str:
    if isinstance(value, dict):
        return "{" + ",".join(f"{k}:{v}" for k, v in sorted(value.items(), key=lambda item: str(item[0]))) + "}"
    return repr(value)


_TYPE_WORDS: dict[Any, str] = {int: "an integer", (int, float): "a number", str: "a string",
                               dict: "a list or a dict {grade: value}"}


def _has_type(info: measures_base.ParamInfo, value: Any) -> bool:
    return value is None or (info.validate(value) and not isinstance(value, bool))


def _first_grade(info: ParamInfo) -> int:
    """The grade a per-grade list's first entry stands for: 1 for GAP's ``g`` (c entries), 0 for eRAP's ``p``
    (c + 1 entries), read from the entry's own ``grade_scale``."""
    assert info.grade_scale is not None
    probe = torch.ones(3, dtype=torch.float64)
    return info.grade_scale(probe) - probe.numel() + 1


def _grade_dict(measure: GaprankMeasure, info: ParamInfo, value: Any) -> dict[int, float]:
    """A per-grade parameter, given as gaprank's list (first entry: the entry's first grade) or as a dict
    ``{grade: value}``, as the dict of every grade from the first to the largest given (a missing grade is 0)."""
    first = _first_grade(info) if info.grade_scale is not None else 0
    example = f"{info.name}=[0.5, 0.5] or {info.name}={{1: 0.5, 2: 0.5}}" if first == 1 else \
        f"{info.name}=[0, 0.5, 1] or {info.name}={{1: 0.5, 2: 1.0}}"
    if isinstance(value, (list, tuple, np.ndarray)):
        value = dict(enumerate(np.asarray(value).reshape(-1).tolist() if isinstance(value, np.ndarray) else value,
                               start=first))
    if not isinstance(value, dict) or not value:
        raise GaprankInputError(f"measure {measure!r}: {info.name} must be a non-empty list (grades {first}..c) or dict "
                                f"{{grade: value}} ({info.desc}), e.g. {example}; got {value!r}")
    if not all(isinstance(grade, numbers.Integral) and not isinstance(grade, bool) and int(grade) >= first for grade in value):
        raise GaprankInputError(f"measure {measure!r}: the keys of {info.name} must be integer grades >= {first}; "
                                f"got {sorted(value, key=str)}")
    if not all(isinstance(v, numbers.Real) and not isinstance(v, bool) for v in value.values()):
        raise GaprankInputError(f"measure {measure!r}: the values of {info.name} must be numbers ({info.desc}); "
                                f"got {list(value.values())}")
    value = {int(grade): float(v) for grade, v in value.items()}
    return {grade: value.get(grade, 0.0) for grade in range(first, max(value) + 1)}


def _gaprank_value(measure: GaprankMeasure, info: ParamInfo, value: Any) -> str:
    if info.dtype is not list:
        return str(value)
    dense = _grade_dict(measure, info, value)
    return "[" + ",".join(repr(v) for v in dense.values()) + "]"


def _ir_param(info: ParamInfo) -> measures_base.ParamInfo:
    dtype: Any = {list: dict, float: (int, float), int: int, str: str}[info.dtype]
    default = measures_base._NOT_PROVIDED if info.default is None else info.default
    return measures_base.ParamInfo(dtype=dtype, required=info.required, default=default, desc=info.desc)


def _measure_of(entry: MeasureInfo) -> GaprankMeasure:
    params: dict[str, measures_base.ParamInfo] = {}
    if entry.takes_cutoff:
        params["cutoff"] = measures_base.ParamInfo(dtype=int, required=entry.needs_cutoff,
                                                   desc="ranking cutoff threshold")
    params.update({info.name: _ir_param(info) for info in entry.params})
    summary = (entry.doc or entry.reference).strip().splitlines()[0]
    namespace = {"__name__": entry.name, "NAME": entry.name, "SUPPORTED_PARAMS": params, "ENTRY": entry,
                 "PRETTY_NAME": entry.name, "SHORT_DESC": summary, "__doc__": summary}
    return type(f"_{entry.name}", (GaprankMeasure,), namespace)()


class GaprankEvaluator(providers.Evaluator):
    """Evaluates gaprank measures for one qrels, run after run."""

    def __init__(self, measures: list[GaprankMeasure], qrels: dict[str, dict[str, int]]) -> None:
        super().__init__(measures, set(qrels))
        self.qrels = qrels
        self.gaprank = {measure: measure.gaprank_measure() for measure in measures}

    def _iter_calc(self, run: Any) -> Iterator[Metric]:
        run = text_ids(RunConverter(run).as_dict_of_dict(), "run")
        if not any(q in self.qrels for q in run):
            return  # every query of the qrels scores the measures' default, 0
        unique = list({m.name: m for m in self.gaprank.values()}.values())
        result = evaluate_trec(self.qrels, run, unique)
        for measure, string in self.gaprank.items():
            for qid, value in zip(result.query_ids, result.per_query[string.name], strict=True):
                yield Metric(query_id=qid, measure=measure, value=float(value))


class GaprankProvider(providers.Provider):
    """The ir_measures provider of gaprank's measures."""

    NAME = "gaprank"

    def supports(self, measure: Any) -> bool:
        if not isinstance(measure, GaprankMeasure):
            return False
        measure.validate_params()
        return True

    def _evaluator(self, measures: Any, qrels: Any) -> GaprankEvaluator:
        return GaprankEvaluator(list(measures), text_ids(QrelsConverter(qrels).as_dict_of_dict(), "qrels"))


provider = GaprankProvider()


def register_measures() -> dict[str, GaprankMeasure]:
    """Register every gaprank measure whose name ir_measures lacks (a measure registered with gaprank later
    too, when called again), and gaprank's provider in ir_measures' default pipeline.

    Returns
    -------
    dict of str to GaprankMeasure
        The measures gaprank provides, by name.
    """
    taken = measures_base.registry
    for entry in measures():
        if entry.name not in taken:
            measures_base.register(_measure_of(entry))
    providers.register(provider)
    if provider not in ir_measures.DefaultPipeline.providers:
        ir_measures.DefaultPipeline.providers.append(provider)
    return {name: m for name, m in taken.items() if isinstance(m, GaprankMeasure)}


_PROVIDED = register_measures()
GAP = _PROVIDED["GAP"]
"""Graded Average Precision, ``GAP(g=[0.5, 0.5]) @ 10``: :func:`gaprank.gap`."""
xGAP = _PROVIDED["xGAP"]
"""Extended GAP, ``xGAP(g=[0.5, 0.5])``: :func:`gaprank.xgap`."""
eGAP = _PROVIDED["eGAP"]
"""Expected GAP, ``eGAP(g=[0.5, 0.5]) @ 10``: :func:`gaprank.egap`."""
vG = _PROVIDED["vG"]
"""Kishida's generalized average precision, ``vG``: :func:`gaprank.generalized_ap`."""
eRAP = _PROVIDED["eRAP"]
"""Expected rank-biased AP, ``eRAP(p=[0, 0.5, 1])``: :func:`gaprank.erap`."""
eRRBP = _PROVIDED["eRRBP"]
"""Expected rank-biased precision over graded relevance, ``eRRBP(p=[0, 0.5, 1], q=0.8)``: :func:`gaprank.errbp`."""
Q = _PROVIDED["Q"]
"""Sakai's Q-measure, ``Q(beta=1)``: :func:`gaprank.q_measure`."""
SR = _PROVIDED["SR"]
"""The sliding ratio, ``SR @ 10``: :func:`gaprank.sliding_ratio`."""
DCG = _PROVIDED["DCG"]
"""Discounted cumulative gain, ``DCG @ 10`` (gain 2^grade - 1): :func:`gaprank.dcg`."""
