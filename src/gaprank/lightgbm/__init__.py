"""LambdaMART for GAP: LightGBM custom objectives (GAP, eGAP, xGAP, AP, nDCG) and matching eval metrics.

``lambdarank_objective`` plugs into ``lgb.train``, ``sklearn_objective`` into ``LGBMRanker``, and
``ranking_feval`` reports gaprank's measures during training (``feval`` / ``eval_metric``).
``query_folds`` gives ``lgb.cv`` folds of whole queries (with a callable objective ``lgb.cv`` splits rows,
which both refuse).
"""

from ._eval import LightGBMEval, ranking_feval
from ._folds import query_folds
from ._objective import LambdaRankObjective, SklearnObjective, lambdarank_objective, sklearn_objective

__all__ = [
    "lambdarank_objective",
    "sklearn_objective",
    "ranking_feval",
    "query_folds",
    "LambdaRankObjective",
    "SklearnObjective",
    "LightGBMEval",
]
