"""LambdaMART across the five LETOR folds: train on train, early-stop on vali, evaluate once on test.

    python -m training.lambdamart --config configs/ohsumed/lambdamart_gap.yaml [--folds 1,2] [--force] [--quick]

The objective is gaprank's (``objective.kind: gaprank``: GAP, eGAP, xGAP, AP or nDCG swap weights) or
the engine's native nDCG objective (``kind: native``: LightGBM's ``lambdarank``, XGBoost's ``rank:ndcg``).
Early stopping watches ``evaluation.selection`` on the validation fold (gaprank's measure, LETOR
conventions; the engines' own metrics are off), and the test fold is scored at the best iteration with
``evaluation.measures``.

``engine`` picks the booster: ``lightgbm`` (``lgb.train``), ``xgboost`` (``xgboost.train``; ``num_leaves``
becomes ``max_leaves`` with leaf-wise growth, ``booster.params`` are XGBoost's) or ``lightgbm-dask``
(``lightgbm.DaskLGBMRanker`` on the cluster of the ``dask`` section: a scheduler address, or a
LocalCluster; the training queries are partitioned at query boundaries). DaskLGBMRanker has no early
stopping, so that engine trains ``num_boost_round`` rounds, then scores vali after every round and
selects the round as early stopping would have (the first best value, stopping ``early_stopping_rounds``
rounds after it).

Writes to ``output_dir``: ``folds/FoldK.json`` (one per fold: best iteration, seconds, vali history,
test means and per-query values; a fold whose file exists with the same config is skipped on re-run),
``summary.json`` (config, conventions, per-fold and mean test values), ``per_query.tsv``, ``table.md``
and ``log.jsonl`` (one JSON line per event); prints the table. ``--quick`` (fold 1, 5 rounds) writes under
``<output_dir>-quick`` instead.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Literal

import lightgbm as lgb

from gaprank import GaprankInputError
from gaprank.boosting import LambdaMARTSettings
from gaprank.data import load_fold
from gaprank.lightgbm import LambdaRankObjective

from ._runner import fold_script_main, quick_variant, run_folds, use_threads
from ._sections import DataConfig, EvaluationConfig
from .engines import ENGINES, Trained


@dataclass(frozen=True)
class ObjectiveConfig(LambdaMARTSettings):
    """gaprank's objective settings (:class:`gaprank.boosting.LambdaMARTSettings`: the measure string, g, sigma,
    truncation_level, norm, label_gain, precision), or LightGBM's native lambdarank with the same ones."""

    kind: Literal["gaprank", "native"] = "gaprank"

    def validate(self) -> None:
        if self.kind == "native" and (self.measure != "ndcg" or self.g is not None):
            raise GaprankInputError("objective.kind 'native' is LightGBM's lambdarank: measure must be 'ndcg' and g unset")

    def build(self) -> Any:
        """The ``objective`` LightGBM parameter (and native lambdarank's own parameters)."""
        if self.kind == "native":
            params: dict[str, Any] = {"objective": "lambdarank", "sigmoid": self.sigma, "lambdarank_norm": self.norm}
            if self.truncation_level is not None:
                params["lambdarank_truncation_level"] = self.truncation_level
            if self.label_gain is not None:
                params["label_gain"] = self.label_gain
            return params
        return {"objective": LambdaRankObjective(self)}


@dataclass
class BoosterConfig:
    num_boost_round: int = 1000
    early_stopping_rounds: int = 50
    learning_rate: float = 0.05
    num_leaves: int = 31
    min_data_in_leaf: int = 20
    num_threads: int = 2
    seed: int = 1
    params: dict[str, Any] = field(default_factory=dict)  # further LightGBM parameters, passed as they are

    def validate(self) -> None:
        for name in ("num_boost_round", "early_stopping_rounds", "num_threads"):
            if getattr(self, name) < 1:
                raise GaprankInputError(f"booster.{name} must be >= 1; got {getattr(self, name)}")
        if self.num_leaves < 2:  # LightGBM's own limit: a tree needs a split
            raise GaprankInputError(f"booster.num_leaves must be >= 2; got {self.num_leaves}")
        if not self.learning_rate > 0:
            raise GaprankInputError(f"booster.learning_rate must be > 0; got {self.learning_rate}")
        if not 0 <= self.seed < 2**31:  # LightGBM's seed is a 32-bit int
            raise GaprankInputError(f"booster.seed must be in 0..2^31-1; got {self.seed}")

    def lightgbm_params(self) -> dict[str, Any]:
        return {"learning_rate": self.learning_rate, "num_leaves": self.num_leaves,
                "min_data_in_leaf": self.min_data_in_leaf, "num_threads": self.num_threads, "seed": self.seed,
                "deterministic": True, "force_row_wise": True, "verbosity": -1, "metric": "None", **self.params}


@dataclass
class DaskConfig:
    scheduler: str | None = None  # address of a running Dask scheduler; None: a LocalCluster per fold
    workers: int = 2  # LocalCluster workers (processes)
    threads_per_worker: int = 1
    partitions: int | None = None  # of the training queries; default: one per worker

    def validate(self) -> None:
        for name in ("workers", "threads_per_worker"):
            if getattr(self, name) < 1:
                raise GaprankInputError(f"dask.{name} must be >= 1; got {getattr(self, name)}")
        if self.partitions is not None and self.partitions < 1:
            raise GaprankInputError(f"dask.partitions must be >= 1; got {self.partitions}")


@dataclass
class LambdaMARTConfig:
    name: str
    data: DataConfig
    output_dir: str
    objective: ObjectiveConfig = field(default_factory=ObjectiveConfig)
    booster: BoosterConfig = field(default_factory=BoosterConfig)
    evaluation: EvaluationConfig = field(default_factory=EvaluationConfig)
    engine: Literal["lightgbm", "lightgbm-dask", "xgboost"] = "lightgbm"
    dask: DaskConfig = field(default_factory=DaskConfig)

    def validate(self) -> None:
        ENGINES[self.engine].check(self)


def quick(config: LambdaMARTConfig) -> LambdaMARTConfig:
    """CI's smoke version: fold 1 (the first configured), at most 5 boosting rounds."""
    return quick_variant(config, booster=dataclasses.replace(
        config.booster, num_boost_round=min(config.booster.num_boost_round, 5)))


TRAINERS = {name: engine.train for name, engine in ENGINES.items()}


def _train(config: LambdaMARTConfig, fold: Any) -> Trained:
    """The configured engine on one fold; an engine that refuses its settings (LightGBM's or XGBoost's own
    checks of ``booster.params``) is a one-line config error, not the engine's traceback."""
    use_threads(config.booster.num_threads)  # the objective's compiled kernel follows the booster's threads
    try:
        return TRAINERS[config.engine](config, fold)
    except Exception as exc:
        if type(exc).__name__ not in ("LightGBMError", "XGBoostError"):
            raise
        first = next((line.strip() for line in str(exc).splitlines() if line.strip()), type(exc).__name__)
        raise GaprankInputError(f"{config.name}: {config.engine} refused the booster settings: {first}") from None


def vali_score(config: LambdaMARTConfig, fold_number: int) -> float:
    """The vali value of ``evaluation.selection`` at the best iteration of one fold (what tuning
    maximises). Only train and vali are used: the test split is never read."""
    fold = load_fold(config.data.dataset, fold_number, variant=config.data.variant, data_dir=config.data.data_dir)
    trained = _train(config, fold)
    return float(trained.vali_curve[trained.best_iteration - 1])


def run_fold(config: LambdaMARTConfig, fold_number: int) -> dict[str, Any]:
    """Train and evaluate one fold; returns the fold record (what folds/FoldK.json holds)."""
    fold = load_fold(config.data.dataset, fold_number, variant=config.data.variant, data_dir=config.data.data_dir)
    ev = config.evaluation
    trained = _train(config, fold)
    test = fold.test
    per_query = ev.scorer().per_query(trained.predict(test.features), test.labels, test.group_sizes)
    return {
        "fold": f"Fold{fold_number}",
        "selected": {"iteration": trained.best_iteration},
        "best_iteration": trained.best_iteration,
        "rounds_trained": trained.rounds_trained,
        "seconds": round(trained.seconds, 3),
        "vali": {ev.selection: trained.vali_curve},
        "test": {name: float(values.mean()) for name, values in per_query.items()},
        "per_query": {name: dict(zip(test.query_ids, map(float, values), strict=True)) for name, values in per_query.items()},
        "feature_importance_gain": trained.importance_gain,
    }


def _engine_versions(engine: str) -> dict[str, str]:
    versions = {"lightgbm": lgb.__version__}
    if engine == "xgboost":
        import xgboost

        versions["xgboost"] = xgboost.__version__
    if engine == "lightgbm-dask":
        import dask
        import distributed

        versions.update(dask=dask.__version__, distributed=distributed.__version__)
    return versions


def run(config: LambdaMARTConfig, *, folds: list[int] | None = None, force: bool = False,
        progress: bool = True) -> dict[str, Any]:
    """Every fold of ``config`` (or ``folds``); see the module doc for what is written."""
    ev = config.evaluation
    return run_folds(config, run_fold=lambda number: run_fold(config, number), folds=folds,
                     measures=ev.measures, conventions=ev.conventions, g=ev.g,
                     versions=_engine_versions(config.engine), force=force, progress=progress)


def main(argv: list[str] | None = None) -> int:
    return fold_script_main(argv, prog="python -m training.lambdamart", doc=__doc__,
                            example="configs/ohsumed/lambdamart_gap.yaml",
                            config_class=LambdaMARTConfig, run=run, quick=quick, quick_help="fold 1, 5 boosting rounds (CI)")


if __name__ == "__main__":
    raise SystemExit(main())
