"""Exact ranking metrics: the graded-AP family, nDCG, P@k, Q-measure, RBP, ERR, eRAP/eRRBP."""

from ._functional import (
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
from ._letor_eval import CONVENTIONS, Conventions, evaluate_letor, get_conventions, letor_measure_names
from ._names import Measure, parse_measure

__all__ = [
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
    "CONVENTIONS",
    "Conventions",
    "Measure",
    "evaluate_letor",
    "get_conventions",
    "letor_measure_names",
    "parse_measure",
]
