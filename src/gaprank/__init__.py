"""gaprank: train learning-to-rank models for Graded Average Precision.

The public API is flat: every metric of :mod:`gaprank.metrics` is re-exported here
(``gaprank.gap``, ``gaprank.ndcg``, ...), next to the sub-namespaces ``gaprank.metrics`` and
``gaprank.data``.
"""

from . import data, metrics
from ._inputs import GaprankInputError
from .metrics import *  # noqa: F403 - the flat public API
from .metrics import __all__ as _metric_names

__version__ = "0.1.0"

__all__ = ["GaprankInputError", "data", "metrics", *_metric_names]
