"""gaprank: train learning-to-rank models for Graded Average Precision.

The flat public API holds what a user calls: every metric (``gaprank.gap``, ``gaprank.ndcg``, ...), every loss
by its measure string (``gaprank.SoftMetricLoss("gap")``, ``gaprank.LambdaRankLoss("gap")``, ...), the LightGBM
objectives, evaluation (``evaluate_letor``, ``evaluate_trec``), measure strings and the registry's ``register``, and
the errors.
Beside it: ``gaprank.metrics``, ``gaprank.losses``, ``gaprank.data``, ``gaprank.boosting`` (engine-neutral
LambdaMART), ``gaprank.lightgbm``, ``gaprank.distributions``, ``gaprank.extend`` (the extension API for measure
authors) and, imported when needed, ``gaprank.xgboost``, ``gaprank.dask``, ``gaprank.testing`` and the
integrations ``gaprank.ir_measures``, ``gaprank.torchmetrics``, ``gaprank.sentence_transformers``.
"""

from . import boosting, data, distributions, extend, lightgbm, losses, metrics  # noqa: F401 - the sub-namespaces
from ._autograd import FirstDerivativesOnly
from ._inputs import MAX_GRADE, GaprankInputError
from .lightgbm import lambdarank_objective, ranking_feval, sklearn_objective
from .losses import *  # noqa: F403 - the flat public API
from .losses import __all__ as _losses_all
from .metrics import (
    average_precision,
    dcg,
    egap,
    erap,
    err,
    errbp,
    evaluate_letor,
    evaluate_trec,
    gap,
    generalized_ap,
    ndcg,
    parse_measure,
    precision,
    q_measure,
    r_precision,
    rbp,
    recall,
    reciprocal_rank,
    register,
    sliding_ratio,
    success,
    unregister,
    xgap,
)

__version__ = "0.1.0"

# One spelling per loss at the top level: a soft loss by its measure string (soft_metric_loss, SoftMetricLoss), as
# LambdaRankLoss takes one. The named twins (SoftGAPLoss, soft_ndcg_loss, ...) and gaprank.losses.build (a loss from
# a config's kind and measure) stay in gaprank.losses.
_IN_LOSSES_ONLY = ("build", "soft_gap_loss", "soft_xgap_loss", "soft_egap_loss", "soft_ap_loss", "soft_ndcg_loss",
                   "SoftGAPLoss", "SoftXGAPLoss", "SoftEGAPLoss", "SoftAPLoss", "SoftNDCGLoss")
_loss_names = [name for name in _losses_all if name not in _IN_LOSSES_ONLY]
for _name in _IN_LOSSES_ONLY:
    del globals()[_name]  # bound by the star import above
del _name

__all__ = [
    # metrics
    "average_precision", "gap", "xgap", "egap", "generalized_ap", "ndcg", "dcg", "precision", "recall",
    "r_precision", "reciprocal_rank", "success", "q_measure", "sliding_ratio", "rbp", "err", "erap", "errbp",
    # evaluation and measure strings
    "evaluate_letor", "evaluate_trec", "parse_measure", "register", "unregister",
    # losses
    *_loss_names,
    # LambdaMART with LightGBM
    "lambdarank_objective", "sklearn_objective", "ranking_feval",
    # errors and limits
    "GaprankInputError", "FirstDerivativesOnly", "MAX_GRADE",
]
