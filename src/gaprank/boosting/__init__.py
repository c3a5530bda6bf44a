"""LambdaMART, engine-neutral: the objective settings, the objective and the ranking evaluation that the
LightGBM and XGBoost adapters (:mod:`gaprank.lightgbm`, :mod:`gaprank.xgboost`) and PyTorch training share.

``LambdaMARTSettings`` is what an objective is (the measure string and how pairs are weighed), declared
once; ``LambdaMARTObjective(settings).gradients(preds, labels, group, weight)`` gives the gradients and
hessians for flat rows grouped by query; ``RankingEval(measures).evaluate(preds, labels, group)`` the mean
of each measure over the queries.
"""

from ._eval import RankingEval
from ._objective import LambdaMARTObjective
from ._settings import LambdaMARTSettings

__all__ = ["LambdaMARTSettings", "LambdaMARTObjective", "RankingEval"]
