"""The parameters the built-in measures share (:class:`~gaprank.metrics.ParamInfo`), declared once."""

from __future__ import annotations

from .._inputs import check_max_grade
from ._formulas import (
    DISCOUNTS,
    GAINS,
    SHORT_LIST_RULES,
    check_beta,
    check_g,
    check_persistence,
    check_relevance_probabilities,
    check_threshold,
    choice,
    uniform_g,
)
from ._registry import ParamInfo

G = ParamInfo("g", "g", list, None, "user threshold probabilities g_1..g_c (default uniform over grades 1..c)",
              check=check_g, grade_scale=lambda g: int(g.numel()), fill=uniform_g)
REL = ParamInfo("rel", "threshold", int, 1, "smallest grade counted as relevant", check=check_threshold)
RELEVANCE_P = ParamInfo("p", "p", list, None, "probability of relevance of each grade 0..c", required=True,
                        example="[0,0.5,1]", check=check_relevance_probabilities,
                        grade_scale=lambda p: int(p.numel()) - 1)
SHORT_LIST = ParamInfo("short_list", "short_list", str, "pad", "a list shorter than k: 'pad' (missing ranks count "
                       "as non-relevant) or 'zero' (the query scores 0, as LETOR 3.0's tool)",
                       check=choice("short_list", SHORT_LIST_RULES))
GAIN = ParamInfo("gain", "gain", str, "exp2", "'exp2' (2^l - 1) or 'linear' (the grade)", check=choice("gain", GAINS))
DISCOUNT = ParamInfo("discount", "discount", str, "log2p1", "'log2p1' (1/log2(r+1)) or 'jk' (1/max(1, log2 r), LETOR)",
                     check=choice("discount", DISCOUNTS))
ERR_MAX_GRADE = ParamInfo("max_grade", "max_grade", int, None, "g_max (default: the largest label)",
                          check=check_max_grade, grade_scale=int, fill=int)
BETA = ParamInfo("beta", "beta", float, 1.0, "Sakai's beta", check=check_beta)


def persistence(name: str) -> ParamInfo:
    """A persistence parameter (RBP's p, eRRBP's q) named ``name`` in measure strings."""
    return ParamInfo(name, "persistence", float, 0.8, "persistence", check=check_persistence)
