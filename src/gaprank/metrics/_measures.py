"""The built-in measures: one registry entry each, with its docstring; the metric functions are their entries'.

Each entry names its form and the formulas it is made of (:mod:`._kernels`, :mod:`._formulas`), its
parameters, its reference and its docs; :func:`~gaprank.metrics.register` builds its metric function.
"""

from __future__ import annotations

from ._forms import GainDiscountForm, KernelForm, ListForm
from ._formulas import (
    DISCOUNTS,
    GAINS,
    SHORT_LIST_RULES,
    binary_gain,
    check_beta,
    check_g,
    check_max_grade,
    check_persistence,
    check_relevance_probabilities,
    check_threshold,
    choice,
    cutoff_norm,
    err_swap_factors,
    err_value,
    flat_discount,
    geometric_discount,
    graded_discount,
    graded_gain,
    ideal_dcg,
    ideal_within_list,
    linear_gain,
    q_swap_factors,
    q_value,
    recall_norm,
    reciprocal_discount,
    relevance_gain,
    rprec_swap_factors,
    rprec_value,
    rr_swap_factors,
    rr_value,
    success_swap_factors,
    success_value,
    uniform_g,
)
from ._kernels import ap_kernel, egap_kernel, erap_kernel, gap_kernel, kishida_kernel, xgap_kernel
from ._registry import MeasureInfo, ParamInfo, register

_G = ParamInfo("g", "g", list, None, "user threshold probabilities g_1..g_c (default uniform over grades 1..c)",
               check=check_g, grade_scale=lambda g: int(g.numel()), fill=uniform_g)
_REL = ParamInfo("rel", "threshold", int, 1, "smallest grade counted as relevant", check=check_threshold)
_RELEVANCE_P = ParamInfo("p", "p", list, None, "probability of relevance of each grade 0..c", required=True,
                         example="[0,0.5,1]", check=check_relevance_probabilities,
                         grade_scale=lambda p: int(p.numel()) - 1)
_SHORT = ParamInfo("short_list", "short_list", str, "pad", "a list shorter than k: 'pad' (missing ranks count as "
                   "non-relevant) or 'zero' (the query scores 0, as LETOR 3.0's tool)",
                   check=choice("short_list", SHORT_LIST_RULES))
_GAIN = ParamInfo("gain", "gain", str, "exp2", "'exp2' (2^l - 1) or 'linear' (the grade)", check=choice("gain", GAINS))
_DISCOUNT = ParamInfo("discount", "discount", str, "log2p1", "'log2p1' (1/log2(r+1)) or 'jk' (1/max(1, log2 r), LETOR)",
                      check=choice("discount", DISCOUNTS))


# the examples' lists: scores, labels; Kishida's (2005) Table 5, pattern a, with its recall base
_S, _Y = "[3.0, 2.0, 1.0]", "[1, 2, 0]"
_KISHIDA = ("[5.0, 4, 3, 2, 1]", "[3, 2, 0, 0, 0]", "grade_counts=[3, 1, 1, 1]")


def _persistence(name: str) -> ParamInfo:
    return ParamInfo(name, "persistence", float, 0.8, "persistence", check=check_persistence)


_GAP_DOC = r"""Graded Average Precision (Robertson, Kanoulas and Yilmaz, SIGIR 2010, sec. 2.2).

    .. math::

        \mathrm{GAP} = \frac{\sum_n \frac{1}{n} \sum_{m \le n} G(\min(r_m, r_n))}{\sum_k R(k)\, G(k)},
        \qquad G(a) = g_1 + \dots + g_a

    (Ferrante et al., eq. 4). ``g`` holds the user threshold probabilities g_1..g_c (non-negative,
    summing to 1; default uniform over grades 1..c, c = the largest label of the input). With one
    g_t = 1, GAP is binary AP at threshold t. ``k`` truncates the sum over pivots at rank k, keeping
    the normaliser (like trec_eval's ``map_cut``). Undefined (``empty_value``) when the normaliser is 0.
    """

_XGAP_DOC = r"""Extended Graded Average Precision (Ferrante, Ferro et al., eq. 5).

    .. math::

        \mathrm{xGAP} = \sum_n 1[r_n > 0]\, \frac{w(r_n)}{n} \sum_{m \le n} G(\min(r_m, r_n)),
        \qquad w(a) = \frac{\sum_{k \le a} g_k / RB(k)}{G(a)}

    with RB(k) the number of judged documents of grade >= k. The ideal ranking scores
    ``sum_{k <= tau} g_k`` (below 1 when the top grades are absent), as the paper defines.
    Undefined when the query has no relevant document.
    """

_EGAP_DOC = r"""Expected Graded Average Precision (Ferrante, Ferro et al., eq. 6).

    .. math::

        \mathrm{eGAP} = E[AP(K)] = \sum_{k \le \tau} g_k\, AP(k)

    where AP(k) is binary AP with grades >= k relevant and tau the highest grade with a judged
    document. Undefined when the query has no relevant document.
    """

_AVERAGE_PRECISION_DOC = r"""Binary average precision with grades >= ``threshold`` relevant.

    .. math::

        AP = \frac{1}{RB} \sum_n 1[r_n \ge \theta]\, \frac{1}{n} \sum_{m \le n} 1[r_m \ge \theta]

    RB = the number of judged relevant documents (``grade_counts``, default: in the list).
    ``k`` truncates at rank k with the same RB (trec_eval ``map_cut``). Undefined when RB = 0.
    """

_GENERALIZED_AP_DOC = r"""Kishida's generalized average precision v_G (Kishida 2005, eq. 42).

    .. math::

        v_G = \frac{\sum_i 1[x_i > 0]\, \frac{1}{i} \sum_{k \le i} x_k}
                   {\sum_i 1[y_i > 0]\, \frac{1}{i} \sum_{k \le i} y_k}

    x = grades in ranked order, y = the ideal list (all judged grades, descending). The example is pattern a of
    Kishida's Table 5.
    """

_ERAP_DOC = r"""Expected random average precision, eRAP (Ferrante, Ferro, Pontarollo, eq. 2).

    .. math::

        \mathrm{eRAP} = \frac{1}{\widehat{RB}} \sum_n \frac{1}{n}
            \Big(1 + \sum_{m<n} p_{r_m}\Big) p_{r_n}, \qquad \widehat{RB} = \sum_k R(k)\, p_k

    ``p[k]`` is the probability that a document of grade k is relevant, k = 0..c.
    Undefined when the expected recall base is 0.
    """

_NDCG_DOC = r"""Normalised discounted cumulative gain at cutoff k (Järvelin and Kekäläinen 2002).

    .. math::

        \mathrm{nDCG@k} = \frac{\sum_{n \le k} \mathrm{gain}(r_n) D(n)}{\sum_{i \le k} \mathrm{gain}(y_i) D(i)}

    ``gain="exp2"``: 2^l - 1; ``"linear"``: l. ``discount="log2p1"``: 1/log2(n+1) (Burges et al.);
    ``"jk"``: 1/max(1, log2 n) (Järvelin-Kekäläinen, LETOR's tool). The ideal list y comes from
    ``grade_counts``. ``short_list``: for a query with fewer than k documents, ``"pad"`` counts the
    missing ranks as non-relevant, ``"zero"`` scores it 0 (the LETOR 3.0/4.0 tools). Undefined when the
    ideal DCG is 0.
    """

_PRECISION_DOC = r"""Precision at cutoff k: :math:`P@k = \frac{1}{k} \sum_{n \le k} 1[r_n \ge \theta]`.

    Always divides by k. ``short_list="zero"`` gives 0 to a query with fewer than k documents
    (LETOR 3.0's tool); ``"pad"`` counts the missing ranks as non-relevant (trec_eval, LETOR 4.0).
    Always defined (0 for a query without relevant documents).
    """

_RBP_DOC = r"""Rank-biased precision (Moffat and Zobel 2008), binary relevance at ``threshold``.

    .. math::

        \mathrm{RBP} = (1 - q) \sum_n q^{n-1}\, 1[r_n \ge \theta]

    with persistence q in (0, 1). Always defined. ``k`` truncates the sum (no residual).
    """

_ERRBP_DOC = r"""Expected random rank-biased precision, eRRBP (Ferrante, Ferro, Pontarollo, eq. 1).

    .. math::

        \mathrm{eRRBP} = (1 - q) \sum_n q^{n-1}\, p_{r_n}

    ``p[k]`` is the probability that a document of grade k is relevant, k = 0..c. Always defined.
    """

_ERR_DOC = r"""Expected reciprocal rank (Chapelle, Metzler, Zhang and Grinspan, CIKM 2009).

    .. math::

        \mathrm{ERR} = \sum_n \frac{1}{n} R_n \prod_{i<n} (1 - R_i),
        \qquad R = \frac{2^{r} - 1}{2^{g_{max}}}

    ``max_grade`` (g_max) defaults to the largest label of the input; pass it explicitly to compare
    numbers across batches. Always defined.
    """

_Q_MEASURE_DOC = r"""Sakai's Q-measure with gain = grade (Kishida 2005, eq. 35 for beta = 1).

    .. math::

        v_Q = \frac{1}{R} \sum_i 1[x_i > 0]\,
              \frac{\sum_{k \le i} 1[x_k > 0] + \beta \sum_{k \le i} x_k}{i + \beta \sum_{k \le i} y_k}

    R = number of judged relevant documents, y = the ideal list. Undefined when R = 0. The example is pattern a of
    Kishida's Table 5.
    """

_SLIDING_RATIO_DOC = r"""Sagara's modified sliding ratio (Kishida 2005, eq. 27).

    .. math::

        v_{S'} = \frac{\sum_{i \le n} x_i / i}{\sum_{i \le n} y_i / i}

    n = the list length (or ``k``), y = the ideal list truncated at n. Undefined when the ideal sum is 0.
    The example is pattern a of Kishida's Table 5.
    """

_RR_DOC = r"""Reciprocal rank of the first document whose grade reaches ``threshold`` (MRR is its mean).

    .. math::

        \mathrm{RR} = \frac{1}{f}, \qquad f = \min\{n : r_n \ge \theta\}

    0 when no such document is ranked (or none within ``k``). Undefined when the query has no judged relevant
    document (``grade_counts``, default: in the list). trec_eval's ``recip_rank``.
    """

_RECALL_DOC = r"""Recall at cutoff k: the share of the judged relevant documents ranked within k.

    .. math::

        R@k = \frac{1}{RB} \sum_{n \le k} 1[r_n \ge \theta]

    RB = the number of judged documents of grade >= ``threshold`` (``grade_counts``, default: in the list).
    Undefined when RB = 0. trec_eval's ``recall_k``.
    """

_RPREC_DOC = r"""R-precision: precision at rank RB, the number of judged relevant documents.

    .. math::

        \mathrm{Rprec} = \frac{1}{RB} \sum_{n \le RB} 1[r_n \ge \theta]

    A list shorter than RB counts its missing ranks as non-relevant. Undefined when RB = 0. trec_eval's
    ``Rprec``.
    """

_SUCCESS_DOC = r"""Success at cutoff k: 1 when a document whose grade reaches ``threshold`` is ranked within k, else 0.

    .. math::

        \mathrm{Success@k} = 1\Big[\sum_{n \le k} 1[r_n \ge \theta] > 0\Big]

    Always defined (0 for a query without relevant documents). trec_eval's ``success_k``.
    """

_DCG_DOC = r"""Discounted cumulative gain at cutoff k, unnormalised (Järvelin and Kekäläinen 2002).

    .. math::

        \mathrm{DCG@k} = \sum_{n \le k} \mathrm{gain}(r_n) D(n)

    ``gain`` and ``discount`` as :func:`ndcg`'s. Always defined.
    """

AP = register(MeasureInfo(
    "AP", KernelForm(ap_kernel), (_REL,), aliases=("MAP",), function_name="average_precision",
    reference="binary average precision; Robertson, Kanoulas and Yilmaz 2010, sec. 2.1", doc=_AVERAGE_PRECISION_DOC,
    example=("[3.0, 2.0, 1.0]", "[1, 0, 1]", "", "0.8333")))
GAP = register(MeasureInfo(
    "GAP", KernelForm(gap_kernel), (_G,), doc=_GAP_DOC, example=(_S, _Y, "g=[0.5, 0.5]", "0.8333"),
    reference="Robertson, Kanoulas and Yilmaz, SIGIR 2010, sec. 2.2; Ferrante, Ferro et al., eq. 4"))
XGAP = register(MeasureInfo("xGAP", KernelForm(xgap_kernel), (_G,), doc=_XGAP_DOC,
                            example=(_S, _Y, "g=[0.5, 0.5]", "0.8125"),
                            reference="Ferrante, Ferro et al., eq. 5"))
EGAP = register(MeasureInfo("eGAP", KernelForm(egap_kernel), (_G,), doc=_EGAP_DOC,
                            example=(_S, _Y, "g=[0.5, 0.5]", "0.75"),
                            reference="Ferrante, Ferro et al., eq. 6"))
NDCG = register(MeasureInfo(
    "nDCG", GainDiscountForm(graded_gain, graded_discount, ideal_dcg), (_GAIN, _DISCOUNT, _SHORT), doc=_NDCG_DOC,
    example=(_S, _Y, "k=2", "0.7967"),
    reference="Järvelin and Kekäläinen 2002; SoftNDCG: Taylor et al., WSDM 2008"))
P = register(MeasureInfo(
    "P", GainDiscountForm(binary_gain, flat_discount, cutoff_norm), (_REL, _SHORT), needs_cutoff=True,
    function_name="precision", doc=_PRECISION_DOC, reference="precision at k",
    example=(_S, "[1, 0, 2]", "k=2", "0.5")))
RBP = register(MeasureInfo(
    "RBP", GainDiscountForm(binary_gain, geometric_discount), (_persistence("p"), _REL), doc=_RBP_DOC,
    example=(_S, "[1, 0, 2]", "persistence=0.5", "0.625"),
    reference="Moffat and Zobel 2008"))
ERR = register(MeasureInfo(
    "ERR", ListForm(err_value, err_swap_factors),
    (ParamInfo("max_grade", "max_grade", int, None, "g_max (default: the largest label)", check=check_max_grade,
               grade_scale=int, fill=int),), doc=_ERR_DOC,
    example=(_S, _Y, "max_grade=2", "0.5312"),
    reference="Chapelle, Metzler, Zhang and Grinspan, CIKM 2009"))
Q = register(MeasureInfo(
    "Q", ListForm(q_value, q_swap_factors), (ParamInfo("beta", "beta", float, 1.0, "Sakai's beta", check=check_beta),),
    takes_cutoff=False, function_name="q_measure", doc=_Q_MEASURE_DOC, reference="Sakai; Kishida 2005, eq. 35",
    example=_KISHIDA + ("0.6667",)))
SR = register(MeasureInfo(
    "SR", GainDiscountForm(linear_gain, reciprocal_discount, ideal_within_list), function_name="sliding_ratio",
    doc=_SLIDING_RATIO_DOC, reference="Sagara's modified sliding ratio; Kishida 2005, eq. 27",
    example=_KISHIDA + ("0.9231",)))
VG = register(MeasureInfo(
    "vG", KernelForm(kishida_kernel), function_name="generalized_ap", doc=_GENERALIZED_AP_DOC,
    reference="Kishida's generalized average precision; Kishida 2005, eq. 42",
    example=_KISHIDA + ("0.7333",)))
ERAP = register(MeasureInfo("eRAP", KernelForm(erap_kernel), (_RELEVANCE_P,), doc=_ERAP_DOC,
                            example=(_S, _Y, "p=[0.0, 0.5, 1.0]", "0.8333"),
                            reference="Ferrante, Ferro, Pontarollo, eq. 2"))
ERRBP = register(MeasureInfo(
    "eRRBP", GainDiscountForm(relevance_gain, geometric_discount), (_RELEVANCE_P, _persistence("q")), doc=_ERRBP_DOC,
    example=(_S, _Y, "p=[0.0, 0.5, 1.0], persistence=0.5", "0.5"),
    reference="Ferrante, Ferro, Pontarollo, eq. 1"))
RR = register(MeasureInfo(
    "RR", ListForm(rr_value, rr_swap_factors), (_REL,), aliases=("MRR",), function_name="reciprocal_rank",
    doc=_RR_DOC, reference="reciprocal rank; trec_eval recip_rank", example=(_S, "[0, 0, 1]", "", "0.3333")))
R = register(MeasureInfo(
    "R", GainDiscountForm(binary_gain, flat_discount, recall_norm), (_REL,), needs_cutoff=True, function_name="recall",
    doc=_RECALL_DOC, reference="recall at k; trec_eval recall_k", example=(_S, "[1, 0, 2]", "k=2", "0.5")))
RPREC = register(MeasureInfo(
    "Rprec", ListForm(rprec_value, rprec_swap_factors), (_REL,), takes_cutoff=False, function_name="r_precision",
    doc=_RPREC_DOC, reference="R-precision; trec_eval Rprec", example=(_S, "[1, 0, 2]", "", "0.5")))
SUCCESS = register(MeasureInfo(
    "Success", ListForm(success_value, success_swap_factors), (_REL,), needs_cutoff=True, function_name="success",
    doc=_SUCCESS_DOC, reference="success at k; trec_eval success_k", example=(_S, "[0, 0, 1]", "k=2", "0.0")))
DCG = register(MeasureInfo(
    "DCG", GainDiscountForm(graded_gain, graded_discount), (_GAIN, _DISCOUNT), doc=_DCG_DOC,
    example=(_S, _Y, "k=2", "2.8928"), reference="Järvelin and Kekäläinen 2002"))

# the metric functions, named as gaprank.metrics exports them
(average_precision, gap, xgap, egap, ndcg, precision, rbp, err, q_measure, sliding_ratio, generalized_ap, erap,
 errbp, reciprocal_rank, recall, r_precision, success, dcg) = (
    entry.function for entry in (AP, GAP, XGAP, EGAP, NDCG, P, RBP, ERR, Q, SR, VG, ERAP, ERRBP, RR, R, RPREC,
                                 SUCCESS, DCG))
