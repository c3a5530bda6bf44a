"""gaprank: train learning-to-rank models for Graded Average Precision.

The public API is flat: every metric of :mod:`gaprank.metrics` and every objective of
:mod:`gaprank.losses` and the LightGBM objectives of :mod:`gaprank.lightgbm` are re-exported here
(``gaprank.gap``, ``gaprank.SoftGAPLoss``, ...), next to the sub-namespaces ``gaprank.metrics``,
``gaprank.losses``, ``gaprank.distributions``, ``gaprank.boosting`` (engine-neutral LambdaMART),
``gaprank.lightgbm``, ``gaprank.data`` and, imported when needed, ``gaprank.xgboost``, ``gaprank.dask`` and
``gaprank.testing``.
"""

from . import boosting, data, distributions, lightgbm, losses, metrics
from ._autograd import FirstDerivativesOnly
from ._inputs import MAX_GRADE, GaprankInputError
from .lightgbm import lambdarank_objective, ranking_feval, sklearn_objective
from .losses import *  # noqa: F403 - the flat public API
from .losses import __all__ as _loss_names
from .metrics import *  # noqa: F403
from .metrics import __all__ as _metric_names

__version__ = "0.1.0"

__all__ = [
    "GaprankInputError", "FirstDerivativesOnly", "MAX_GRADE", "boosting", "data", "distributions", "lightgbm", "losses",
    "metrics",
    "lambdarank_objective", "sklearn_objective", "ranking_feval", *_metric_names, *_loss_names,
]
