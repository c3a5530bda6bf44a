"""The ``lightgbm-dask`` engine: ``lightgbm.DaskLGBMRanker`` on the cluster of the ``dask`` section (a
scheduler address, or a LocalCluster), the training queries partitioned at query boundaries.
DaskLGBMRanker has no early stopping: it trains ``num_boost_round`` rounds, then vali is scored after every
round and the round is selected as early stopping would have."""

from __future__ import annotations

import contextlib
import time
import warnings
from collections.abc import Iterator
from typing import Any

import lightgbm as lgb
import numpy as np

from gaprank.lightgbm import LambdaRankObjective

from ._common import Trained, select_like_early_stopping
from .lightgbm_engine import check, lightgbm_params

__all__ = ["check", "train"]


@contextlib.contextmanager
def _dask_client(settings: Any) -> Iterator[Any]:
    """A client of the configured scheduler, or of a LocalCluster that lives as long as the client."""
    from distributed import Client, LocalCluster

    if settings.scheduler is not None:
        with Client(settings.scheduler) as client:
            yield client
        return
    with LocalCluster(n_workers=settings.workers, threads_per_worker=settings.threads_per_worker,
                      dashboard_address=":0", processes=True) as cluster, Client(cluster) as client:
        yield client


def train(config: Any, fold: Any) -> Trained:
    from gaprank.dask import partition_by_query
    from gaprank.lightgbm import SklearnObjective

    ev, b, o, settings = config.evaluation, config.booster, config.objective, config.dask
    X, y, group = fold.train.to_flat()
    Xv, yv, gv = fold.vali.to_flat()
    # native lambdarank's own parameters stay in params; the objective itself goes to DaskLGBMRanker
    params = {k: v for k, v in lightgbm_params(config).items() if k not in ("objective", "num_threads", "metric")}
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
    return Trained(lambda features: booster.predict(features, num_iteration=best), best,
                    int(booster.current_iteration()), curve, seconds, booster.feature_importance("gain").tolist())
