"""LambdaMART for GAP in XGBoost: a custom objective (GAP, eGAP, xGAP, AP, nDCG) and matching eval metrics.

``objective`` plugs into ``xgboost.train(params, dtrain, obj=...)`` (and ``xgboost.dask.train``),
``metric`` into ``custom_metric=``. Both read the query groups from the DMatrix (``qid`` or
``group``); the gradients are those of :mod:`gaprank.boosting`'s engine-neutral LambdaMART, which
:mod:`gaprank.lightgbm` adapts too.
"""

from ._objective import XGBoostMetric, XGBoostObjective, metric, objective

__all__ = ["objective", "metric", "XGBoostObjective", "XGBoostMetric"]
