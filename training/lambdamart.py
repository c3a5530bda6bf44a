"""LambdaMART across the five LETOR folds: train on train, early-stop on vali, evaluate once on test.

    python -m training.lambdamart --config configs/ohsumed/lambdamart_gap.yaml [--folds 1,2] [--force] [--quick]

The objective is gaprank's (``objective.kind: gaprank``: GAP, eGAP, xGAP, AP or nDCG swap weights) or
LightGBM's native ``lambdarank`` (``kind: native``, nDCG). Early stopping watches
``evaluation.selection`` on the validation fold (gaprank's measure, LETOR conventions; built-in LightGBM
metrics are off), and the test fold is scored at the best iteration with ``evaluation.measures``.

Writes to ``output_dir``: ``folds/FoldK.json`` (one per fold: best iteration, seconds, vali history,
test means and per-query values; a fold whose file exists with the same config is skipped on re-run),
``summary.json`` (config, conventions, per-fold and mean test values), ``per_query.tsv``, ``table.md``
and ``log.jsonl`` (one JSON line per event); prints the table. ``--quick`` (fold 1, 5 rounds) writes under
``<output_dir>-quick`` instead.
"""

from __future__ import annotations

import contextlib
import dataclasses
import difflib
import os
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

import lightgbm as lgb
import numpy as np

from gaprank import GaprankInputError
from gaprank.data import load_fold
from gaprank.lightgbm import lambdarank_objective

from ._runner import fold_script_main, quick_variant, run_folds
from ._sections import DataConfig, EvaluationConfig


@dataclass
class ObjectiveConfig:
    kind: Literal["gaprank", "native"] = "gaprank"
    metric: str = "gap"  # a measure of gaprank's registry with swap deltas (gap, egap, xgap, ap, ndcg, ...)
    g: list[float] | None = None
    sigma: float = 1.0
    truncation_level: int | None = None
    norm: bool = False
    label_gain: list[float] | None = None
    precision: Literal["float32", "float64"] = "float32"  # gaprank's pair arithmetic (LightGBM keeps float32)

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
                                                  label_gain=self.label_gain, precision=self.precision)}


# LightGBM parameters the config sets through its own keys (canonical names), and where.
_OWN_KEYS = {"objective": "objective", "metric": "evaluation.selection", "num_iterations": "booster.num_boost_round",
             "early_stopping_round": "booster.early_stopping_rounds", "seed": "booster.seed",
             "learning_rate": "booster.learning_rate", "num_leaves": "booster.num_leaves",
             "min_data_in_leaf": "booster.min_data_in_leaf", "num_threads": "booster.num_threads",
             "sigmoid": "objective.sigma", "lambdarank_norm": "objective.norm",
             "lambdarank_truncation_level": "objective.truncation_level", "label_gain": "objective.label_gain"}


def lightgbm_aliases() -> dict[str, str]:
    """Every LightGBM parameter name and alias -> its canonical name, from LightGBM's own table
    (``LGBM_DumpParamAliases``, the table ``lgb.train`` resolves aliases with)."""
    from lightgbm.basic import _ConfigAliases

    return {alias: name for name, aliases in _ConfigAliases._get_all_param_aliases().items()
            for alias in [name, *aliases]}


@contextlib.contextmanager
def _quiet_native_stderr() -> Iterator[None]:
    """LightGBM prints a refused parameter as '[Fatal] ...' from C++ before raising: keep it off the terminal."""
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "w") as devnull:
            os.dup2(devnull.fileno(), 2)
            yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def check_lightgbm_params(params: dict[str, Any]) -> None:
    """``booster.params`` checked as LightGBM will read them: names resolved through its alias table
    (an unknown name, a name given twice under two aliases, or one the config sets through its own key
    is an error) and values accepted by LightGBM itself (probed on a tiny data set)."""
    aliases = lightgbm_aliases()
    seen: dict[str, str] = {}
    for key in params:
        name = aliases.get(key)
        if name is None:
            close = difflib.get_close_matches(key, list(aliases), n=3)
            hint = f"; did you mean {' or '.join(map(repr, close))}?" if close else ""
            raise GaprankInputError(f"booster.params: {key!r} is not a LightGBM parameter{hint}")
        if name in _OWN_KEYS:
            alias = f" (LightGBM's alias of {name})" if key != name else ""
            raise GaprankInputError(f"booster.params may not set {key!r}{alias}: it comes from {_OWN_KEYS[name]}")
        if name in seen:
            raise GaprankInputError(f"booster.params sets {name} twice: as {seen[name]!r} and {key!r}")
        seen[name] = key
    features = np.random.default_rng(0).random((40, 3))
    labels = np.tile([0.0, 1.0, 2.0, 1.0], 10)
    try:
        with _quiet_native_stderr():
            data = lgb.Dataset(features, labels, group=[20, 20], params={**params, "verbosity": -1})
            lgb.Booster(params={**params, "objective": "lambdarank", "verbosity": -1}, train_set=data)
    except lgb.basic.LightGBMError as exc:
        reason = str(exc).strip().splitlines()[0].split(" at /")[0]
        raise GaprankInputError(f"booster.params: LightGBM refuses them: {reason}") from None


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
        if not 0 <= self.seed < 2**31:  # LightGBM's seed is a 32-bit int
            raise GaprankInputError(f"booster.seed must be in 0..2^31-1; got {self.seed}")
        check_lightgbm_params(self.params)

    def lightgbm_params(self) -> dict[str, Any]:
        return {"learning_rate": self.learning_rate, "num_leaves": self.num_leaves,
                "min_data_in_leaf": self.min_data_in_leaf, "num_threads": self.num_threads, "seed": self.seed,
                "deterministic": True, "force_row_wise": True, "verbosity": -1, "metric": "None", **self.params}


@dataclass
class LambdaMARTConfig:
    name: str
    data: DataConfig
    output_dir: str
    objective: ObjectiveConfig = field(default_factory=ObjectiveConfig)
    booster: BoosterConfig = field(default_factory=BoosterConfig)
    evaluation: EvaluationConfig = field(default_factory=EvaluationConfig)


def quick(config: LambdaMARTConfig) -> LambdaMARTConfig:
    """CI's smoke version: fold 1 (the first configured), at most 5 boosting rounds."""
    return quick_variant(config, booster=dataclasses.replace(
        config.booster, num_boost_round=min(config.booster.num_boost_round, 5)))


def _train(config: LambdaMARTConfig, fold: Any) -> tuple[Any, dict[str, dict[str, list[float]]], float]:
    """The booster early-stopped on vali, its vali history and its training seconds (train and vali only)."""
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
        feval=ev.scorer([ev.selection]),
        callbacks=[lgb.early_stopping(config.booster.early_stopping_rounds, verbose=False),
                   lgb.record_evaluation(history)],
    )
    return booster, history, time.perf_counter() - start


def vali_score(config: LambdaMARTConfig, fold_number: int) -> float:
    """The vali value of ``evaluation.selection`` at the best iteration of one fold (what tuning
    maximises). Only train and vali are used: the test split is never read."""
    fold = load_fold(config.data.dataset, fold_number, variant=config.data.variant, data_dir=config.data.data_dir)
    booster, history, _ = _train(config, fold)
    best = booster.best_iteration or booster.current_iteration()
    return float(history["vali"][config.evaluation.selection][best - 1])


def run_fold(config: LambdaMARTConfig, fold_number: int) -> dict[str, Any]:
    """Train and evaluate one fold; returns the fold record (what folds/FoldK.json holds)."""
    fold = load_fold(config.data.dataset, fold_number, variant=config.data.variant, data_dir=config.data.data_dir)
    ev = config.evaluation
    booster, history, seconds = _train(config, fold)
    best = booster.best_iteration or booster.current_iteration()
    test = fold.test
    per_query = ev.scorer().per_query(
        booster.predict(test.features, num_iteration=best), test.labels, test.group_sizes)
    return {
        "fold": f"Fold{fold_number}",
        "selected": {"iteration": int(best)},
        "best_iteration": int(best),
        "rounds_trained": int(booster.current_iteration()),
        "seconds": round(seconds, 3),
        "vali": {ev.selection: history["vali"][ev.selection]},
        "test": {name: float(values.mean()) for name, values in per_query.items()},
        "per_query": {name: dict(zip(test.query_ids, map(float, values), strict=True)) for name, values in per_query.items()},
        "feature_importance_gain": booster.feature_importance("gain").tolist(),
    }


def run(config: LambdaMARTConfig, *, folds: list[int] | None = None, force: bool = False,
        progress: bool = True) -> dict[str, Any]:
    """Every fold of ``config`` (or ``folds``); see the module doc for what is written."""
    ev = config.evaluation
    return run_folds(config, run_fold=lambda number: run_fold(config, number), folds=folds,
                     measures=ev.measures, conventions=ev.conventions, g=ev.g,
                     versions={"lightgbm": lgb.__version__}, force=force, progress=progress)


def main(argv: list[str] | None = None) -> int:
    return fold_script_main(argv, prog="python -m training.lambdamart", doc=__doc__,
                            example="configs/ohsumed/lambdamart_gap.yaml",
                            config_class=LambdaMARTConfig, run=run, quick=quick, quick_help="fold 1, 5 boosting rounds (CI)")


if __name__ == "__main__":
    raise SystemExit(main())
