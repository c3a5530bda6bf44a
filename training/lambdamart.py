"""LambdaMART across the five LETOR folds: train on train, early-stop on vali, evaluate once on test.

    python -m training.lambdamart --config configs/ohsumed/lambdamart_gap.yaml [--folds 1,2] [--force]

The objective is gaprank's (``objective.kind: gaprank``: GAP, eGAP, xGAP, AP or nDCG swap weights) or
LightGBM's native ``lambdarank`` (``kind: native``, nDCG). Early stopping watches
``evaluation.selection`` on the validation fold (gaprank's measure, LETOR conventions; built-in LightGBM
metrics are off), and the test fold is scored at the best iteration with ``evaluation.measures``.

Writes to ``output_dir``: ``folds/FoldK.json`` (one per fold: best iteration, seconds, vali history,
test means and per-query values; a fold whose file exists with the same config is skipped on re-run),
``summary.json`` (config, conventions, per-fold and mean test values), ``per_query.tsv``, ``table.md``
and ``log.jsonl`` (one JSON line per event); prints the table.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import lightgbm as lgb
import numpy as np
from tqdm import tqdm

from gaprank import GaprankInputError
from gaprank.data import load_fold
from gaprank.lightgbm import lambdarank_objective, ranking_feval
from gaprank.metrics import get_conventions, parse_measure

from .config import ConfigError, load_config, to_dict

DEFAULT_MEASURES = ["NDCG@10", "MAP", "P@10", "GAP"]


@dataclass
class DataConfig:
    dataset: Literal["OHSUMED", "MQ2008", "MQ2007"]
    variant: str | None = None  # OHSUMED: QueryLevelNorm (default), Feature-min, Feature-null
    data_dir: str | None = None  # default: $GAPRANK_DATA, then ../shared/data beside the repository
    folds: list[int] = field(default_factory=lambda: [1, 2, 3, 4, 5])

    def validate(self) -> None:
        if not self.folds or any(f not in (1, 2, 3, 4, 5) for f in self.folds) or len(set(self.folds)) != len(self.folds):
            raise GaprankInputError(f"data.folds must be distinct fold numbers from 1..5; got {self.folds}")


@dataclass
class ObjectiveConfig:
    kind: Literal["gaprank", "native"] = "gaprank"
    metric: Literal["gap", "egap", "xgap", "ap", "ndcg"] = "gap"
    g: list[float] | None = None
    sigma: float = 1.0
    truncation_level: int | None = None
    norm: bool = False
    label_gain: list[float] | None = None

    def validate(self) -> None:
        if self.kind == "native" and (self.metric != "ndcg" or self.g is not None):
            raise GaprankInputError("objective.kind 'native' is LightGBM's lambdarank: metric must be 'ndcg' and g unset")
        self.build()  # gaprank's own checks: g sums to 1, sigma > 0, ...

    def build(self) -> Any:
        """The ``objective`` LightGBM parameter (and native lambdarank's own parameters)."""
        if self.kind == "native":
            params: dict[str, Any] = {"objective": "lambdarank", "sigmoid": self.sigma, "lambdarank_norm": self.norm}
            if self.truncation_level is not None:
                params["lambdarank_truncation_level"] = self.truncation_level
            if self.label_gain is not None:
                params["label_gain"] = self.label_gain
            return params
        return {"objective": lambdarank_objective(self.metric, g=self.g, sigma=self.sigma,
                                                  truncation_level=self.truncation_level, norm=self.norm,
                                                  label_gain=self.label_gain)}


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
        for name in ("num_boost_round", "early_stopping_rounds", "num_leaves", "num_threads"):
            if getattr(self, name) < 1:
                raise GaprankInputError(f"booster.{name} must be >= 1; got {getattr(self, name)}")
        if not self.learning_rate > 0:
            raise GaprankInputError(f"booster.learning_rate must be > 0; got {self.learning_rate}")
        clash = sorted(set(self.params) & {"objective", "metric", "num_iterations", "num_boost_round", "seed"})
        if clash:
            raise GaprankInputError(f"booster.params may not set {clash}: they come from the config's own keys")

    def lightgbm_params(self) -> dict[str, Any]:
        return {"learning_rate": self.learning_rate, "num_leaves": self.num_leaves,
                "min_data_in_leaf": self.min_data_in_leaf, "num_threads": self.num_threads, "seed": self.seed,
                "deterministic": True, "force_row_wise": True, "verbosity": -1, "metric": "None", **self.params}


@dataclass
class EvaluationConfig:
    selection: str = "GAP"  # the measure early stopping maximises on the validation fold
    measures: list[str] = field(default_factory=lambda: list(DEFAULT_MEASURES))
    g: list[float] | None = field(default_factory=lambda: [0.5, 0.5])  # for GAP/xGAP/eGAP
    conventions: Literal["letor3", "letor4"] = "letor3"

    def validate(self) -> None:
        for name in [self.selection, *self.measures]:
            parse_measure(name)
        ranking_feval(self.measures, g=self.g, conventions=self.conventions)


@dataclass
class LambdaMARTConfig:
    name: str
    data: DataConfig
    output_dir: str
    objective: ObjectiveConfig = field(default_factory=ObjectiveConfig)
    booster: BoosterConfig = field(default_factory=BoosterConfig)
    evaluation: EvaluationConfig = field(default_factory=EvaluationConfig)


def _log(path: Path, **event: Any) -> None:
    with path.open("a") as fh:
        fh.write(json.dumps({"time": time.strftime("%Y-%m-%dT%H:%M:%S"), **event}) + "\n")


def run_fold(config: LambdaMARTConfig, fold_number: int) -> dict[str, Any]:
    """Train and evaluate one fold; returns the fold record (what folds/FoldK.json holds)."""
    fold = load_fold(config.data.dataset, fold_number, variant=config.data.variant, data_dir=config.data.data_dir)
    X, y, group = fold.train.to_flat()
    Xv, yv, gv = fold.vali.to_flat()
    ev = config.evaluation
    train = lgb.Dataset(X, y, group=group, free_raw_data=False)
    vali = lgb.Dataset(Xv, yv, group=gv, reference=train, free_raw_data=False)
    params = {**config.booster.lightgbm_params(), **config.objective.build()}
    history: dict[str, dict[str, list[float]]] = {}
    start = time.perf_counter()
    booster = lgb.train(
        params, train, num_boost_round=config.booster.num_boost_round, valid_sets=[vali], valid_names=["vali"],
        feval=ranking_feval([ev.selection], g=ev.g, conventions=ev.conventions),
        callbacks=[lgb.early_stopping(config.booster.early_stopping_rounds, verbose=False),
                   lgb.record_evaluation(history)],
    )
    seconds = time.perf_counter() - start
    best = booster.best_iteration or booster.current_iteration()
    test = fold.test
    per_query = ranking_feval(ev.measures, g=ev.g, conventions=ev.conventions).per_query(
        booster.predict(test.features, num_iteration=best), test.labels, test.group_sizes)
    return {
        "fold": f"Fold{fold_number}",
        "best_iteration": int(best),
        "rounds_trained": int(booster.current_iteration()),
        "seconds": round(seconds, 3),
        "vali": {ev.selection: history["vali"][ev.selection]},
        "test": {name: float(values.mean()) for name, values in per_query.items()},
        "per_query": {name: dict(zip(test.query_ids, map(float, values))) for name, values in per_query.items()},
        "feature_importance_gain": booster.feature_importance("gain").tolist(),
    }


def _table(config: LambdaMARTConfig, folds: list[dict[str, Any]], means: dict[str, float]) -> str:
    measures = config.evaluation.measures
    lines = [f"| {config.name} | " + " | ".join(measures) + " | best iter |",
             "|---|" + "---:|" * (len(measures) + 1)]
    for record in folds:
        lines.append(f"| {record['fold']} | " + " | ".join(f"{record['test'][m]:.4f}" for m in measures)
                     + f" | {record['best_iteration']} |")
    lines.append("| **mean** | " + " | ".join(f"**{means[m]:.4f}**" for m in measures) + " | |")
    return "\n".join(lines) + "\n"


def run(config: LambdaMARTConfig, *, folds: list[int] | None = None, force: bool = False) -> dict[str, Any]:
    out = Path(config.output_dir)
    (out / "folds").mkdir(parents=True, exist_ok=True)
    log = out / "log.jsonl"
    config_data = to_dict(config)
    records = []
    for number in tqdm(folds or config.data.folds, desc=config.name, unit="fold", file=sys.stderr):
        path = out / "folds" / f"Fold{number}.json"
        if path.exists() and not force:
            record = json.loads(path.read_text())
            if record.get("config") == config_data:
                _log(log, event="fold_skipped", fold=number, reason="finished with the same config")
                records.append(record)
                continue
        _log(log, event="fold_start", fold=number)
        record = run_fold(config, number)
        record["config"] = config_data
        path.write_text(json.dumps(record, indent=1))
        _log(log, event="fold_done", fold=number, best_iteration=record["best_iteration"],
             seconds=record["seconds"], test=record["test"])
        records.append(record)
    measures = config.evaluation.measures
    means = {m: float(np.mean([r["test"][m] for r in records])) for m in measures}
    summary = {
        "name": config.name,
        "dataset": config.data.dataset,
        "folds": [r["fold"] for r in records],
        "mean": means,
        "per_fold": {r["fold"]: {**r["test"], "best_iteration": r["best_iteration"], "seconds": r["seconds"]}
                     for r in records},
        "conventions": get_conventions(config.evaluation.conventions).describe(),
        "g": config.evaluation.g,
        "config": config_data,
        "versions": {"lightgbm": lgb.__version__},
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=1))
    with (out / "per_query.tsv").open("w") as fh:
        fh.write("fold\tqid\t" + "\t".join(measures) + "\n")
        for r in records:
            for qid in r["per_query"][measures[0]]:
                fh.write(f"{r['fold']}\t{qid}\t" + "\t".join(f"{r['per_query'][m][qid]:.6f}" for m in measures) + "\n")
    table = _table(config, records, means)
    (out / "table.md").write_text(table)
    _log(log, event="run_done", mean=means)
    return summary | {"table": table}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m training.lambdamart", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", required=True, help="YAML config, e.g. configs/ohsumed/lambdamart_gap.yaml")
    parser.add_argument("--folds", help="comma-separated subset of the config's folds, e.g. 1,2")
    parser.add_argument("--force", action="store_true", help="retrain folds that already have results")
    args = parser.parse_args(argv)
    try:
        config = load_config(args.config, LambdaMARTConfig)
        folds = None
        if args.folds:
            try:
                folds = [int(f) for f in args.folds.split(",")]
            except ValueError:
                raise ConfigError(f"--folds must be comma-separated fold numbers; got {args.folds!r}") from None
            DataConfig(config.data.dataset, folds=folds).validate()
        result = run(config, folds=folds, force=args.force)
    except GaprankInputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(result["table"], end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
