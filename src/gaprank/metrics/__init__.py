"""Exact ranking metrics: the graded-AP family, nDCG, P@k, Q-measure, RBP, ERR, eRAP/eRRBP; the measure
registry and measure strings."""

from ._forms import GainDiscountForm, KernelForm, ListForm, ideal_sum
from ._kernels import Kernel, pivot_sum
from ._letor_eval import CONVENTIONS, Conventions, evaluate_letor, get_conventions, letor_measure_names
from ._measures import (
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
from ._names import Measure, objective_measure, parse_measure
from ._ranking import RankedLists, rank_lists, resolve_g
from ._registry import (
    MeasureInfo,
    ParamInfo,
    find_measure,
    g_not_taken,
    measures,
    objective_names,
    register,
    unregister,
    user_model_measures,
)

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
    "objective_measure",
    "MeasureInfo",
    "ParamInfo",
    "KernelForm",
    "GainDiscountForm",
    "ListForm",
    "Kernel",
    "RankedLists",
    "rank_lists",
    "resolve_g",
    "pivot_sum",
    "ideal_sum",
    "find_measure",
    "g_not_taken",
    "measures",
    "objective_names",
    "register",
    "unregister",
    "user_model_measures",
]
