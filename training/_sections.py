"""Config sections every training script shares: which data, and how runs are scored."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from gaprank import GaprankInputError
from gaprank.boosting import RankingEval
from gaprank.metrics import parse_measure

DEFAULT_MEASURES = ["NDCG@10", "MAP", "P@10", "GAP"]


@dataclass
class DataConfig:
    dataset: Literal["OHSUMED", "MQ2008", "MQ2007", "MSLR-WEB10K", "MSLR-WEB30K"]
    variant: str | None = None  # OHSUMED: QueryLevelNorm (default), Feature-min, Feature-null
    data_dir: str | None = None  # looked in first; then $GAPRANK_DATA, the user data directory, the bundled sets
    folds: list[int] = field(default_factory=lambda: [1, 2, 3, 4, 5])

    def validate(self) -> None:
        if not self.folds or any(f not in (1, 2, 3, 4, 5) for f in self.folds) or len(set(self.folds)) != len(self.folds):
            raise GaprankInputError(f"data.folds must be distinct fold numbers from 1..5; got {self.folds}")


@dataclass
class EvaluationConfig:
    selection: str = "GAP"  # the measure maximised on the validation fold (epoch / iteration / tuning)
    measures: list[str] = field(default_factory=lambda: list(DEFAULT_MEASURES))
    g: list[float] | None = field(default_factory=lambda: [0.5, 0.5])  # for GAP/xGAP/eGAP
    # an evaluation tool's rules (LETOR's short lists, its discount), to reproduce its tables; none: each measure
    # string as gaprank's metric functions read it
    conventions: Literal["letor3", "letor4", "trec"] | None = None

    def validate(self) -> None:
        for name in [self.selection, *self.measures]:
            parse_measure(name)
        self.scorer()

    def scorer(self, measures: list[str] | None = None) -> RankingEval:
        """The engine-neutral :class:`gaprank.boosting.RankingEval` of ``measures`` (default: all of
        ``self.measures``)."""
        return RankingEval(measures or self.measures, g=self.g, conventions=self.conventions)
