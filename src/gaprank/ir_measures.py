"""gaprank's measures inside ir_measures and PyTerrier: GAP, xGAP, eGAP, vG, eRAP, eRRBP and every other
gaprank measure ir_measures lacks, computed by gaprank.

Importing this module registers them with ir_measures (its measure registry and its default provider
pipeline), so ``ir_measures.calc_aggregate``, ``ir_measures.iter_calc``, ``ir_measures.parse_measure`` and
``pyterrier.Experiment(..., eval_metrics=[...])`` take them beside ir_measures' own, no Java needed::

    import ir_measures
    from gaprank.ir_measures import GAP, eGAP

    ir_measures.calc_aggregate([GAP(g={1: 0.5, 2: 0.5}), eGAP@10, ir_measures.nDCG@10], qrels, run)

Parameters are the registry's, as ir_measures spells them: ``cutoff`` (``@k``) where the measure takes one,
and a per-grade list as a dict ``{grade: value}`` (ir_measures' parser reads dicts, not lists): GAP's ``g``
keyed by grades 1..c, eRAP's ``p`` by grades 0..c, a missing grade meaning 0. The values are those of
``gaprank eval``'s TREC mode on the same qrels and run (:func:`gaprank.metrics.evaluate_trec`): trec_eval's
tie rule, the whole qrels as recall base. As ir_measures does for every measure, a query of the qrels that the
run lacks scores 0. Without ``g``, GAP's user model is uniform over the grades of the qrels it is given: pass
``g`` when the qrels are evaluated in parts.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import ir_measures
import torch
from ir_measures import providers
from ir_measures.measures import base as measures_base
from ir_measures.util import Metric, QrelsConverter, RunConverter

from ._inputs import GaprankInputError
from .metrics import Measure as GaprankMeasureString
from .metrics import MeasureInfo, ParamInfo, evaluate_trec, measures, parse_measure

__all__ = ["GaprankMeasure", "GaprankProvider", "register_measures", "provider"]


class GaprankMeasure(measures_base.Measure):
    """An ir_measures measure computed by gaprank; :meth:`gaprank_measure` is the gaprank measure it stands for."""

    ENTRY: MeasureInfo

    def gaprank_measure(self) -> GaprankMeasureString:
        """The gaprank measure string of these parameters, parsed (``GAP(g={1: 0.5, 2: 0.5})@10`` →
        ``GAP(g=[0.5,0.5])@10``)."""
        self.validate_params()
        parts = []
        for info in self.ENTRY.params:
            value = self.params.get(info.name)
            if value is None:
                continue
            parts.append(f"{info.name}={_gaprank_value(self, info, value)}")
        text = self.ENTRY.name + (f"({','.join(parts)})" if parts else "")
        if self.params.get("cutoff") is not None:
            text += f"@{self.params['cutoff']}"
        return parse_measure(text)

    def __init__(self, **params: Any) -> None:
        unknown = sorted(set(params) - set(self.SUPPORTED_PARAMS))
        if unknown:  # refused when built: ir_measures hashes a measure by its repr, which reads known parameters only
            raise GaprankInputError(f"measure {self.NAME}: unsupported parameters {unknown}; parameters of "
                                    f"{self.NAME}: {', '.join(self.SUPPORTED_PARAMS) or 'none'}")
        super().__init__(**params)

    def validate_params(self) -> None:
        for info in self.ENTRY.params:
            if info.required and self.params.get(info.name) is None:
                example = "{1: 0.5, 2: 1.0}" if info.dtype is list else info.example
                raise GaprankInputError(f"measure {self!r}: {self.NAME} needs {info.name} ({info.desc}), e.g. "
                                        f"{self.NAME}({info.name}={example})")
        try:
            super().validate_params()
        except AssertionError as exc:
            raise GaprankInputError(f"measure {self!r}: {exc}; parameters of {self.NAME}: "
                                    f"{', '.join(self.SUPPORTED_PARAMS) or 'none'}") from None


def _first_grade(info: ParamInfo) -> int:
    """The grade a per-grade list's first entry stands for: 1 for GAP's ``g`` (c entries), 0 for eRAP's ``p``
    (c + 1 entries), read from the entry's own ``grade_scale``."""
    assert info.grade_scale is not None
    probe = torch.ones(3, dtype=torch.float64)
    return info.grade_scale(probe) - probe.numel() + 1


def _gaprank_value(measure: GaprankMeasure, info: ParamInfo, value: Any) -> str:
    if info.dtype is not list:
        return str(value)
    if not isinstance(value, dict) or not value:
        raise GaprankInputError(f"measure {measure!r}: {info.name} must be a dict {{grade: value}} ({info.desc}), "
                                f"e.g. {info.name}={{1: 0.5, 2: 0.5}}; got {value!r}")
    first = _first_grade(info) if info.grade_scale is not None else 0
    if not all(isinstance(grade, int) and not isinstance(grade, bool) and grade >= first for grade in value):
        raise GaprankInputError(f"measure {measure!r}: the keys of {info.name} must be integer grades >= {first}; "
                                f"got {sorted(value, key=str)}")
    dense = [float(value.get(grade, 0.0)) for grade in range(first, max(value) + 1)]
    return "[" + ",".join(repr(v) for v in dense) + "]"


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
        run = RunConverter(run).as_dict_of_dict()
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
        return GaprankEvaluator(list(measures), QrelsConverter(qrels).as_dict_of_dict())


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
GAP, xGAP, eGAP, vG, eRAP, eRRBP, Q, SR, DCG = (_PROVIDED[name] for name in
                                               ("GAP", "xGAP", "eGAP", "vG", "eRAP", "eRRBP", "Q", "SR", "DCG"))
__all__ += ["GAP", "xGAP", "eGAP", "vG", "eRAP", "eRRBP", "Q", "SR", "DCG"]
