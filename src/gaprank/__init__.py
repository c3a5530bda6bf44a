"""gaprank: train learning-to-rank models for Graded Average Precision.

The public API is flat: ``gaprank.gap``, ``gaprank.ndcg``, ... and the sub-namespaces
``gaprank.metrics`` and ``gaprank.data``.
"""

from . import data, metrics
from ._inputs import GaprankInputError
from .metrics import (
    average_precision,
    egap,
    erap,
    err,
    errbp,
    gap,
    generalized_ap,
    ndcg,
    precision,
    q_measure,
    rbp,
    sliding_ratio,
    xgap,
)

__version__ = "0.1.0"

__all__ = [
    "GaprankInputError",
    "data",
    "metrics",
    "average_precision",
    "gap",
    "xgap",
    "egap",
    "generalized_ap",
    "ndcg",
    "precision",
    "q_measure",
    "sliding_ratio",
    "rbp",
    "err",
    "erap",
    "errbp",
]
