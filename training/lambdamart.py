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

import contextlib
import dataclasses
import difflib
import os
import sys
import time
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

import lightgbm as lgb
import numpy as np

from gaprank import GaprankInputError
from gaprank.boosting import LambdaMARTObjective, LambdaMARTSettings
from gaprank.data import load_fold
from gaprank.lightgbm import LambdaRankObjective, ranking_feval

from ._runner import fold_script_main, quick_variant, run_folds
from ._sections import DataConfig, EvaluationConfig


@dataclass(frozen=True)
class ObjectiveConfig(LambdaMARTSettings):
    """gaprank's objective settings (:class:`gaprank.boosting.LambdaMARTSettings`: the measure string, g, sigma,
    truncation_level, norm, label_gain, precision), or LightGBM's native lambdarank with the same ones."""

    kind: Literal["gaprank", "native"] = "gaprank"

    def validate(self) -> None:
        if self.kind == "native" and (self.metric != "ndcg" or self.g is not None):
            raise GaprankInputError("objective.kind 'native' is LightGBM's lambdarank: metric must be 'ndcg' and g unset")

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
        if self.engine == "xgboost":
            check_xgboost_settings(self.objective, self.booster)
        else:
            check_lightgbm_params(self.booster.params)


def quick(config: LambdaMARTConfig) -> LambdaMARTConfig:
    """CI's smoke version: fold 1 (the first configured), at most 5 boosting rounds."""
    return quick_variant(config, booster=dataclasses.replace(
        config.booster, num_boost_round=min(config.booster.num_boost_round, 5)))


def check_xgboost_settings(objective: ObjectiveConfig, booster: BoosterConfig) -> None:
    """What the xgboost engine cannot take, and ``booster.params`` as XGBoost reads them (probed on a tiny
    DMatrix: an unknown name, which XGBoost only warns about, or a value it refuses is an error)."""
    import xgboost as xgb

    if objective.kind == "native":
        if objective.sigma != 1.0 or objective.label_gain is not None:
            raise GaprankInputError("objective.kind 'native' on XGBoost is rank:ndcg: sigma 1 and its own gain "
                                    "(leave objective.sigma and objective.label_gain unset)")
    elif objective.label_gain is not None:
        raise GaprankInputError("objective.label_gain is for the lightgbm engines")
    if booster.min_data_in_leaf != BoosterConfig.min_data_in_leaf:
        raise GaprankInputError("booster.min_data_in_leaf is LightGBM's; XGBoost bounds leaves by hessian: set "
                                "booster.params.min_child_weight")
    own = {"eta", "learning_rate", "max_leaves", "nthread", "n_jobs", "seed", "random_state", "objective",
           "eval_metric", "num_boost_round", "n_estimators"}
    taken = sorted(own & set(booster.params))
    if taken:
        raise GaprankInputError(f"booster.params may not set {taken}: the config sets them through booster and objective")
    data = xgb.DMatrix(np.random.default_rng(0).random((40, 3)), label=np.tile([0.0, 1.0, 2.0, 1.0], 10),
                       qid=np.repeat([0, 1], 20))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            xgb.train({**booster.params, "objective": "rank:ndcg", "verbosity": 1, "nthread": 1}, data, 1)
        except xgb.core.XGBoostError as exc:
            reason = str(exc).strip().splitlines()[0].split(": ", 1)[-1]
            raise GaprankInputError(f"booster.params: XGBoost refuses them: {reason}") from None
    unused = [str(w.message) for w in caught if "are not used" in str(w.message)]
    if unused:
        names = unused[0][unused[0].index("{"):unused[0].index("}") + 1]
        raise GaprankInputError(f"booster.params: XGBoost does not know {names}")


@dataclass
class _Trained:
    """A booster early-stopped on vali, whatever the engine."""

    predict: Any  # features -> scores at the best iteration
    best_iteration: int
    rounds_trained: int
    vali_curve: list[float]  # the selection measure on vali after each round
    seconds: float
    importance_gain: list[float]


def _lightgbm_params(config: LambdaMARTConfig) -> dict[str, Any]:
    return {**config.booster.lightgbm_params(), **config.objective.build()}


def _train_lightgbm(config: LambdaMARTConfig, fold: Any) -> _Trained:
    X, y, group = fold.train.to_flat()
    Xv, yv, gv = fold.vali.to_flat()
    ev = config.evaluation
    train = lgb.Dataset(X, y, group=group, free_raw_data=False)
    vali = lgb.Dataset(Xv, yv, group=gv, reference=train, free_raw_data=False)
    history: dict[str, dict[str, list[float]]] = {}
    start = time.perf_counter()
    booster = lgb.train(
        _lightgbm_params(config), train, num_boost_round=config.booster.num_boost_round, valid_sets=[vali],
        valid_names=["vali"], feval=ranking_feval([ev.selection], g=ev.g, conventions=ev.conventions),
        callbacks=[lgb.early_stopping(config.booster.early_stopping_rounds, verbose=False),
                   lgb.record_evaluation(history)],
    )
    seconds = time.perf_counter() - start
    best = booster.best_iteration or booster.current_iteration()
    return _Trained(lambda features: booster.predict(features, num_iteration=best), int(best),
                    int(booster.current_iteration()), list(history["vali"][ev.selection]), seconds,
                    booster.feature_importance("gain").tolist())


def _train_xgboost(config: LambdaMARTConfig, fold: Any) -> _Trained:
    import xgboost as xgb

    import gaprank.xgboost as gx

    ev, b, o = config.evaluation, config.booster, config.objective
    X, y, group = fold.train.to_flat()
    Xv, yv, gv = fold.vali.to_flat()
    train, vali = xgb.DMatrix(X, label=y), xgb.DMatrix(Xv, label=yv)
    train.set_group(group)
    vali.set_group(gv)
    params = {"tree_method": "hist", "grow_policy": "lossguide", "max_depth": 0, "max_leaves": b.num_leaves,
              "eta": b.learning_rate, "nthread": b.num_threads, "seed": b.seed, "base_score": 0.5,
              "disable_default_eval_metric": 1, **b.params}
    obj = None
    if o.kind == "native":
        params["objective"] = "rank:ndcg"
        if o.truncation_level is not None:
            params["lambdarank_num_pair_per_sample"] = o.truncation_level
        params["lambdarank_normalization"] = params["lambdarank_score_normalization"] = o.norm
    else:
        obj = gx.XGBoostObjective(LambdaMARTObjective(o))
    history: dict[str, dict[str, list[float]]] = {}
    start = time.perf_counter()
    booster = xgb.train(params, train, num_boost_round=b.num_boost_round, obj=obj, evals=[(vali, "vali")],
                        custom_metric=gx.metric([ev.selection], g=ev.g, conventions=ev.conventions), maximize=True,
                        early_stopping_rounds=b.early_stopping_rounds, evals_result=history, verbose_eval=False)
    seconds = time.perf_counter() - start
    best = booster.best_iteration + 1  # XGBoost counts from 0
    gains = booster.get_score(importance_type="total_gain")
    importance = [float(gains.get(f"f{i}", 0.0)) for i in range(X.shape[1])]
    return _Trained(lambda features: booster.predict(xgb.DMatrix(features), iteration_range=(0, best)), int(best),
                    int(booster.num_boosted_rounds()), list(history["vali"][ev.selection]), seconds, importance)


@contextlib.contextmanager
def _dask_client(settings: DaskConfig) -> Iterator[Any]:
    """A client of the configured scheduler, or of a LocalCluster that lives as long as the client."""
    from distributed import Client, LocalCluster

    if settings.scheduler is not None:
        with Client(settings.scheduler) as client:
            yield client
        return
    with LocalCluster(n_workers=settings.workers, threads_per_worker=settings.threads_per_worker,
                      dashboard_address=":0", processes=True) as cluster, Client(cluster) as client:
        yield client


def select_like_early_stopping(curve: list[float], patience: int) -> int:
    """The round (1-based) early stopping would have kept: the first best value, stopping once ``patience``
    rounds pass without a better one."""
    best, best_round = -np.inf, 0
    for round_number, value in enumerate(curve, start=1):
        if value > best:
            best, best_round = value, round_number
        elif round_number - best_round >= patience:
            break
    return best_round


def _train_lightgbm_dask(config: LambdaMARTConfig, fold: Any) -> _Trained:
    from gaprank.dask import partition_by_query
    from gaprank.lightgbm import SklearnObjective

    ev, b, o, settings = config.evaluation, config.booster, config.objective, config.dask
    X, y, group = fold.train.to_flat()
    Xv, yv, gv = fold.vali.to_flat()
    # native lambdarank's own parameters stay in params; the objective itself goes to DaskLGBMRanker
    params = {k: v for k, v in _lightgbm_params(config).items() if k not in ("objective", "num_threads", "metric")}
    objective = "lambdarank" if o.kind == "native" else SklearnObjective(LambdaRankObjective(o))
    start = time.perf_counter()
    with _dask_client(settings) as client:
        workers = len(client.scheduler_info()["workers"])
        dX, dy, dgroup = partition_by_query(X, y, np.repeat(np.arange(group.size), group),
                                            min(settings.partitions or workers, group.size))
        ranker = lgb.DaskLGBMRanker(objective=objective, client=client, n_estimators=b.num_boost_round, **params)
        with warnings.catch_warnings():  # the workers' threads come from the cluster, as LightGBM says
            warnings.filterwarnings("ignore", "Parameter n_jobs will be ignored")
            booster = ranker.fit(dX, dy, group=dgroup).to_local().booster_
    # vali after every round, from each tree's own contribution (one pass over the trees)
    per_tree = np.stack([booster.predict(Xv, start_iteration=i, num_iteration=1, raw_score=True)
                         for i in range(booster.current_iteration())])
    cumulative = np.cumsum(per_tree, axis=0)
    scorer = ev.scorer([ev.selection])
    curve = [scorer.evaluate(scores, yv, gv)[ev.selection] for scores in cumulative]
    seconds = time.perf_counter() - start
    best = select_like_early_stopping(curve, b.early_stopping_rounds)
    return _Trained(lambda features: booster.predict(features, num_iteration=best), best,
                    int(booster.current_iteration()), curve, seconds, booster.feature_importance("gain").tolist())


TRAINERS = {"lightgbm": _train_lightgbm, "xgboost": _train_xgboost, "lightgbm-dask": _train_lightgbm_dask}


def _train(config: LambdaMARTConfig, fold: Any) -> _Trained:
    """The configured engine on one fold; an engine that refuses its settings (LightGBM's or XGBoost's own
    checks of ``booster.params``) is a one-line config error, not the engine's traceback."""
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
