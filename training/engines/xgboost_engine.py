"""The ``xgboost`` engine: ``xgboost.train`` with gaprank's objective or XGBoost's native ``rank:ndcg``
(``num_leaves`` becomes ``max_leaves`` with leaf-wise growth; ``booster.params`` are XGBoost's).

``booster.params`` are checked when a config is loaded by XGBoost's own parameter checks: a Booster is
configured (``save_config``, which validates every name and value) on a tiny DMatrix; no boosting round
is run.
"""

from __future__ import annotations

import time
import warnings
from typing import Any

import numpy as np

from gaprank import GaprankInputError
from gaprank.boosting import LambdaMARTObjective

from ._common import Trained


def check(config: Any) -> None:
    """What the xgboost engine cannot take, and ``booster.params`` as XGBoost reads them: a Booster is
    configured with them on a tiny DMatrix (XGBoost checks every value then, and warns of a name it does not
    use); no round is trained."""
    import xgboost as xgb

    objective, booster = config.objective, config.booster
    if objective.kind == "native":
        if objective.sigma != 1.0 or objective.label_gain is not None:
            raise GaprankInputError("objective.kind 'native' on XGBoost is rank:ndcg: sigma 1 and its own gain "
                                    "(leave objective.sigma and objective.label_gain unset)")
    elif objective.label_gain is not None:
        raise GaprankInputError("objective.label_gain is for the lightgbm engines")
    if booster.min_data_in_leaf != type(booster).min_data_in_leaf:
        raise GaprankInputError("booster.min_data_in_leaf is LightGBM's; XGBoost bounds leaves by hessian: set "
                                "booster.params.min_child_weight")
    own = {"eta", "learning_rate", "max_leaves", "nthread", "n_jobs", "seed", "random_state", "objective",
           "eval_metric", "num_boost_round", "n_estimators"}
    taken = sorted(own & set(booster.params))
    if taken:
        raise GaprankInputError(f"booster.params may not set {taken}: the config sets them through booster and objective")
    data = xgb.DMatrix(np.zeros((4, 1)), label=np.array([0.0, 1.0, 0.0, 1.0]), qid=np.array([0, 0, 1, 1]))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            xgb.Booster({**booster.params, "objective": "rank:ndcg", "verbosity": 1, "nthread": 1},
                        [data]).save_config()  # configuring checks every parameter; nothing is trained
        except xgb.core.XGBoostError as exc:
            reason = str(exc).strip().splitlines()[0].split(": ", 1)[-1]
            raise GaprankInputError(f"booster.params: XGBoost refuses them: {reason}") from None
    unused = [str(w.message) for w in caught if "are not used" in str(w.message)]
    if unused:
        names = unused[0][unused[0].index("{"):unused[0].index("}") + 1]
        raise GaprankInputError(f"booster.params: XGBoost does not know {names}")


def train(config: Any, fold: Any) -> Trained:
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
    selection = gx.metric([ev.selection], g=ev.g, conventions=ev.conventions)
    start = time.perf_counter()
    booster = xgb.train(params, train, num_boost_round=b.num_boost_round, obj=obj, evals=[(vali, "vali")],
                        custom_metric=selection, maximize=True,
                        early_stopping_rounds=b.early_stopping_rounds, evals_result=history, verbose_eval=False)
    seconds = time.perf_counter() - start
    best = booster.best_iteration + 1  # XGBoost counts from 0
    gains = booster.get_score(importance_type="total_gain")
    importance = [float(gains.get(f"f{i}", 0.0)) for i in range(X.shape[1])]
    return Trained(lambda features: booster.predict(xgb.DMatrix(features), iteration_range=(0, best)), int(best),
                    int(booster.num_boosted_rounds()), list(history["vali"][selection.evaluator.names[0]]), seconds,
                    importance)
