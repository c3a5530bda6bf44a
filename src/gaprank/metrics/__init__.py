"""Exact ranking metrics: the graded-AP family, nDCG, DCG, P@k, Q-measure, RBP, ERR, eRAP/eRRBP, RR, R@k,
R-precision, Success@k; evaluation with named conventions; measure strings and the registry.

The forms, kernels and ranked lists a new measure is built from are the extension API, :mod:`gaprank.extend`
(also importable from here, as before).
"""

from ._forms import GainDiscountForm, KernelForm, ListForm, ideal_sum
from ._kernels import Kernel, pivot_sum
from ._letor_eval import CONVENTIONS, Conventions, evaluate_letor, get_conventions, letor_measure_names
from ._measures import (
    average_precision,
    dcg,
    egap,
    erap,
    err,
    errbp,
    gap,
    generalized_ap,
    ndcg,
    precision,
    q_measure,
    r_precision,
    rbp,
    recall,
    reciprocal_rank,
    sliding_ratio,
    success,
    xgap,
)
from ._names import Measure, objective_measure, parse_measure
from ._ranking import RankedLists, grade_indicators, rank_lists, resolve_g
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
from ._trec import TrecEvaluation, evaluate_trec, text_ids
from ._trec_names import did_you_mean, trec_measure

# Not in __all__ (the public API): the extension API's names, served by gaprank.extend, and the TREC-mode
# helpers gaprank's CLI and ir_measures integration share (text_ids, trec_measure, did_you_mean)
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
    "dcg",
    "reciprocal_rank",
    "recall",
    "r_precision",
    "success",
    "CONVENTIONS",
    "Conventions",
    "get_conventions",
    "evaluate_letor",
    "letor_measure_names",
    "evaluate_trec",
    "TrecEvaluation",
    "parse_measure",
    "Measure",
    "measures",
    "find_measure",
    "register",
    "unregister",
]
