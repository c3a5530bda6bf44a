"""The built-in measures: each a metric function, written out, and its registry entry.

Each metric function calls its entry's :meth:`~gaprank.metrics.MeasureInfo.evaluate`; each entry names its form
and the formulas it is made of (:mod:`._kernels`, :mod:`._formulas`), its parameters, its reference and its
function. The functions' signatures are :func:`~gaprank.metrics._registry.metric_signature` of their entries (a
test compares them), so they cannot drift from the registry.
"""

from __future__ import annotations

from typing import Literal

from .._inputs import check_max_grade
from .._typing import ArrayLike, MetricValue
from ._forms import GainDiscountForm, KernelForm, ListForm
from ._formulas import (
    DISCOUNTS,
    GAINS,
    SHORT_LIST_RULES,
    binary_gain,
    check_beta,
    check_g,
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
from ._registry import MeasureInfo, ParamInfo, register, seal_built_ins

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

_MAX_GRADE = ParamInfo("max_grade", "max_grade", int, None, "g_max (default: the largest label)", check=check_max_grade,
                       grade_scale=int, fill=int)
_BETA = ParamInfo("beta", "beta", float, 1.0, "Sakai's beta", check=check_beta)

def _persistence(name: str) -> ParamInfo:
    return ParamInfo(name, "persistence", float, 0.8, "persistence", check=check_persistence)


def average_precision(
    scores: ArrayLike,
    labels: ArrayLike,
    *,
    threshold: int = 1,
    k: int | None = None,
    mask: ArrayLike | None = None,
    grade_counts: ArrayLike | None = None,
    ties: Literal["stable", "pessimistic", "optimistic"] = "stable",
    empty_value: float = 0.0,
    reduction: Literal["mean", "sum", "none"] = "mean",
) -> MetricValue:
    r"""Binary average precision with grades >= ``threshold`` relevant.

    .. math::

        AP = \frac{1}{RB} \sum_n 1[r_n \ge \theta]\, \frac{1}{n} \sum_{m \le n} 1[r_m \ge \theta]

    RB = the number of judged relevant documents (``grade_counts``, default: in the list).
    ``k`` truncates at rank k with the same RB (trec_eval ``map_cut``). Undefined when RB = 0.

    Parameters
    ----------
    scores : array-like or torch.Tensor
        ``[list]`` (one query) or ``[batch, list]``; a higher score ranks a document higher. NumPy
        in, NumPy out; a tensor in, a tensor out, on its device.
    labels : array-like or torch.Tensor
        The documents' relevance grades, integers 0..30, in the shape of ``scores``.
    threshold : int, default 1
        Smallest grade counted as relevant.
    k : int, optional
        Cutoff: only ranks 1..k count; a normaliser (recall base, ideal list) is kept as it is, as
        in trec_eval's cut measures.
    mask : array-like of bool, optional
        True marks a real document, False padding. Padding ranks after every real document and never
        counts; its scores and labels are never read. Default: every position is real.
    grade_counts : array-like, optional
        R(0)..R(c) per query, shape ``[c+1]`` or ``[batch, c+1]``: the judged documents of each
        grade, when the list does not hold every judged document (a run that missed relevant ones).
        The recall base and the ideal ranking are built from it. Default: counted from the labels.
    ties : {"stable", "pessimistic", "optimistic"}, default "stable"
        "stable" keeps tied documents in input order (as LETOR's evaluation tools); "pessimistic"
        puts the lower grades of a tie first, "optimistic" the higher grades.
    empty_value : float, default 0.0
        The value of a query whose measure is undefined because its normaliser is 0 (no relevant
        document). Measures without a normaliser (P@k, RBP, ERR, eRRBP) are always defined.
    reduction : {"mean", "sum", "none"}, default "mean"
        "mean" or "sum" over the queries, or "none": one value per query.

    Returns
    -------
    value : float, numpy.ndarray or torch.Tensor
        The mean or the sum over the queries, or one value per query (``reduction="none"``, a scalar
        for a 1-D input), in the scores' array type.

    Examples
    --------
    >>> import numpy as np
    >>> from gaprank.metrics import average_precision
    >>> round(float(average_precision(np.array([3.0, 2.0, 1.0]), np.array([1, 0, 1]))), 4)
    0.8333
    """
    return AP.evaluate(scores, labels, k=k, mask=mask, grade_counts=grade_counts, ties=ties,
                       empty_value=empty_value, reduction=reduction, threshold=threshold)


def gap(
    scores: ArrayLike,
    labels: ArrayLike,
    *,
    g: ArrayLike | None = None,
    k: int | None = None,
    mask: ArrayLike | None = None,
    grade_counts: ArrayLike | None = None,
    ties: Literal["stable", "pessimistic", "optimistic"] = "stable",
    empty_value: float = 0.0,
    reduction: Literal["mean", "sum", "none"] = "mean",
) -> MetricValue:
    r"""Graded Average Precision (Robertson, Kanoulas and Yilmaz, SIGIR 2010, sec. 2.2).

    .. math::

        \mathrm{GAP} = \frac{\sum_n \frac{1}{n} \sum_{m \le n} G(\min(r_m, r_n))}{\sum_k R(k)\, G(k)},
        \qquad G(a) = g_1 + \dots + g_a

    (Ferrante et al., eq. 4). ``g`` holds the user threshold probabilities g_1..g_c (non-negative,
    summing to 1; default uniform over grades 1..c, c = the largest label of the input). With one
    g_t = 1, GAP is binary AP at threshold t. ``k`` truncates the sum over pivots at rank k, keeping
    the normaliser (like trec_eval's ``map_cut``). Undefined (``empty_value``) when the normaliser is 0.

    Parameters
    ----------
    scores : array-like or torch.Tensor
        ``[list]`` (one query) or ``[batch, list]``; a higher score ranks a document higher. NumPy
        in, NumPy out; a tensor in, a tensor out, on its device.
    labels : array-like or torch.Tensor
        The documents' relevance grades, integers 0..30, in the shape of ``scores``.
    g : sequence of float, optional
        User threshold probabilities g_1..g_c (default uniform over grades 1..c).
    k : int, optional
        Cutoff: only ranks 1..k count; a normaliser (recall base, ideal list) is kept as it is, as
        in trec_eval's cut measures.
    mask : array-like of bool, optional
        True marks a real document, False padding. Padding ranks after every real document and never
        counts; its scores and labels are never read. Default: every position is real.
    grade_counts : array-like, optional
        R(0)..R(c) per query, shape ``[c+1]`` or ``[batch, c+1]``: the judged documents of each
        grade, when the list does not hold every judged document (a run that missed relevant ones).
        The recall base and the ideal ranking are built from it. Default: counted from the labels.
    ties : {"stable", "pessimistic", "optimistic"}, default "stable"
        "stable" keeps tied documents in input order (as LETOR's evaluation tools); "pessimistic"
        puts the lower grades of a tie first, "optimistic" the higher grades.
    empty_value : float, default 0.0
        The value of a query whose measure is undefined because its normaliser is 0 (no relevant
        document). Measures without a normaliser (P@k, RBP, ERR, eRRBP) are always defined.
    reduction : {"mean", "sum", "none"}, default "mean"
        "mean" or "sum" over the queries, or "none": one value per query.

    Returns
    -------
    value : float, numpy.ndarray or torch.Tensor
        The mean or the sum over the queries, or one value per query (``reduction="none"``, a scalar
        for a 1-D input), in the scores' array type.

    Examples
    --------
    >>> import numpy as np
    >>> from gaprank.metrics import gap
    >>> round(float(gap(np.array([3.0, 2.0, 1.0]), np.array([1, 2, 0]), g=[0.5, 0.5])), 4)
    0.8333
    """
    return GAP.evaluate(scores, labels, k=k, mask=mask, grade_counts=grade_counts, ties=ties,
                        empty_value=empty_value, reduction=reduction, g=g)


def xgap(
    scores: ArrayLike,
    labels: ArrayLike,
    *,
    g: ArrayLike | None = None,
    k: int | None = None,
    mask: ArrayLike | None = None,
    grade_counts: ArrayLike | None = None,
    ties: Literal["stable", "pessimistic", "optimistic"] = "stable",
    empty_value: float = 0.0,
    reduction: Literal["mean", "sum", "none"] = "mean",
) -> MetricValue:
    r"""Extended Graded Average Precision (Ferrante, Ferro et al., eq. 5).

    .. math::

        \mathrm{xGAP} = \sum_n 1[r_n > 0]\, \frac{w(r_n)}{n} \sum_{m \le n} G(\min(r_m, r_n)),
        \qquad w(a) = \frac{\sum_{k \le a} g_k / RB(k)}{G(a)}

    with RB(k) the number of judged documents of grade >= k. The ideal ranking scores
    ``sum_{k <= tau} g_k`` (below 1 when the top grades are absent), as the paper defines.
    Undefined when the query has no relevant document.

    Parameters
    ----------
    scores : array-like or torch.Tensor
        ``[list]`` (one query) or ``[batch, list]``; a higher score ranks a document higher. NumPy
        in, NumPy out; a tensor in, a tensor out, on its device.
    labels : array-like or torch.Tensor
        The documents' relevance grades, integers 0..30, in the shape of ``scores``.
    g : sequence of float, optional
        User threshold probabilities g_1..g_c (default uniform over grades 1..c).
    k : int, optional
        Cutoff: only ranks 1..k count; a normaliser (recall base, ideal list) is kept as it is, as
        in trec_eval's cut measures.
    mask : array-like of bool, optional
        True marks a real document, False padding. Padding ranks after every real document and never
        counts; its scores and labels are never read. Default: every position is real.
    grade_counts : array-like, optional
        R(0)..R(c) per query, shape ``[c+1]`` or ``[batch, c+1]``: the judged documents of each
        grade, when the list does not hold every judged document (a run that missed relevant ones).
        The recall base and the ideal ranking are built from it. Default: counted from the labels.
    ties : {"stable", "pessimistic", "optimistic"}, default "stable"
        "stable" keeps tied documents in input order (as LETOR's evaluation tools); "pessimistic"
        puts the lower grades of a tie first, "optimistic" the higher grades.
    empty_value : float, default 0.0
        The value of a query whose measure is undefined because its normaliser is 0 (no relevant
        document). Measures without a normaliser (P@k, RBP, ERR, eRRBP) are always defined.
    reduction : {"mean", "sum", "none"}, default "mean"
        "mean" or "sum" over the queries, or "none": one value per query.

    Returns
    -------
    value : float, numpy.ndarray or torch.Tensor
        The mean or the sum over the queries, or one value per query (``reduction="none"``, a scalar
        for a 1-D input), in the scores' array type.

    Examples
    --------
    >>> import numpy as np
    >>> from gaprank.metrics import xgap
    >>> round(float(xgap(np.array([3.0, 2.0, 1.0]), np.array([1, 2, 0]), g=[0.5, 0.5])), 4)
    0.8125
    """
    return XGAP.evaluate(scores, labels, k=k, mask=mask, grade_counts=grade_counts, ties=ties,
                         empty_value=empty_value, reduction=reduction, g=g)


def egap(
    scores: ArrayLike,
    labels: ArrayLike,
    *,
    g: ArrayLike | None = None,
    k: int | None = None,
    mask: ArrayLike | None = None,
    grade_counts: ArrayLike | None = None,
    ties: Literal["stable", "pessimistic", "optimistic"] = "stable",
    empty_value: float = 0.0,
    reduction: Literal["mean", "sum", "none"] = "mean",
) -> MetricValue:
    r"""Expected Graded Average Precision (Ferrante, Ferro et al., eq. 6).

    .. math::

        \mathrm{eGAP} = E[AP(K)] = \sum_{k \le \tau} g_k\, AP(k)

    where AP(k) is binary AP with grades >= k relevant and tau the highest grade with a judged
    document. Undefined when the query has no relevant document.

    Parameters
    ----------
    scores : array-like or torch.Tensor
        ``[list]`` (one query) or ``[batch, list]``; a higher score ranks a document higher. NumPy
        in, NumPy out; a tensor in, a tensor out, on its device.
    labels : array-like or torch.Tensor
        The documents' relevance grades, integers 0..30, in the shape of ``scores``.
    g : sequence of float, optional
        User threshold probabilities g_1..g_c (default uniform over grades 1..c).
    k : int, optional
        Cutoff: only ranks 1..k count; a normaliser (recall base, ideal list) is kept as it is, as
        in trec_eval's cut measures.
    mask : array-like of bool, optional
        True marks a real document, False padding. Padding ranks after every real document and never
        counts; its scores and labels are never read. Default: every position is real.
    grade_counts : array-like, optional
        R(0)..R(c) per query, shape ``[c+1]`` or ``[batch, c+1]``: the judged documents of each
        grade, when the list does not hold every judged document (a run that missed relevant ones).
        The recall base and the ideal ranking are built from it. Default: counted from the labels.
    ties : {"stable", "pessimistic", "optimistic"}, default "stable"
        "stable" keeps tied documents in input order (as LETOR's evaluation tools); "pessimistic"
        puts the lower grades of a tie first, "optimistic" the higher grades.
    empty_value : float, default 0.0
        The value of a query whose measure is undefined because its normaliser is 0 (no relevant
        document). Measures without a normaliser (P@k, RBP, ERR, eRRBP) are always defined.
    reduction : {"mean", "sum", "none"}, default "mean"
        "mean" or "sum" over the queries, or "none": one value per query.

    Returns
    -------
    value : float, numpy.ndarray or torch.Tensor
        The mean or the sum over the queries, or one value per query (``reduction="none"``, a scalar
        for a 1-D input), in the scores' array type.

    Examples
    --------
    >>> import numpy as np
    >>> from gaprank.metrics import egap
    >>> round(float(egap(np.array([3.0, 2.0, 1.0]), np.array([1, 2, 0]), g=[0.5, 0.5])), 4)
    0.75
    """
    return EGAP.evaluate(scores, labels, k=k, mask=mask, grade_counts=grade_counts, ties=ties,
                         empty_value=empty_value, reduction=reduction, g=g)


def ndcg(
    scores: ArrayLike,
    labels: ArrayLike,
    *,
    gain: str = "exp2",
    discount: str = "log2p1",
    short_list: str = "pad",
    k: int | None = None,
    mask: ArrayLike | None = None,
    grade_counts: ArrayLike | None = None,
    ties: Literal["stable", "pessimistic", "optimistic"] = "stable",
    empty_value: float = 0.0,
    reduction: Literal["mean", "sum", "none"] = "mean",
) -> MetricValue:
    r"""Normalised discounted cumulative gain at cutoff k (Järvelin and Kekäläinen 2002).

    .. math::

        \mathrm{nDCG@k} = \frac{\sum_{n \le k} \mathrm{gain}(r_n) D(n)}{\sum_{i \le k} \mathrm{gain}(y_i) D(i)}

    ``gain="exp2"``: 2^l - 1; ``"linear"``: l. ``discount="log2p1"``: 1/log2(n+1) (Burges et al.);
    ``"jk"``: 1/max(1, log2 n) (Järvelin-Kekäläinen, LETOR's tool). The ideal list y comes from
    ``grade_counts``. ``short_list``: for a query with fewer than k documents, ``"pad"`` counts the
    missing ranks as non-relevant, ``"zero"`` scores it 0 (the LETOR 3.0/4.0 tools). Undefined when the
    ideal DCG is 0.

    Parameters
    ----------
    scores : array-like or torch.Tensor
        ``[list]`` (one query) or ``[batch, list]``; a higher score ranks a document higher. NumPy
        in, NumPy out; a tensor in, a tensor out, on its device.
    labels : array-like or torch.Tensor
        The documents' relevance grades, integers 0..30, in the shape of ``scores``.
    gain : str, default 'exp2'
        'exp2' (2^l - 1) or 'linear' (the grade).
    discount : str, default 'log2p1'
        'log2p1' (1/log2(r+1)) or 'jk' (1/max(1, log2 r), LETOR).
    short_list : str, default 'pad'
        A list shorter than k: 'pad' (missing ranks count as non-relevant) or 'zero' (the query
        scores 0, as LETOR 3.0's tool).
    k : int, optional
        Cutoff: only ranks 1..k count; a normaliser (recall base, ideal list) is kept as it is, as
        in trec_eval's cut measures.
    mask : array-like of bool, optional
        True marks a real document, False padding. Padding ranks after every real document and never
        counts; its scores and labels are never read. Default: every position is real.
    grade_counts : array-like, optional
        R(0)..R(c) per query, shape ``[c+1]`` or ``[batch, c+1]``: the judged documents of each
        grade, when the list does not hold every judged document (a run that missed relevant ones).
        The recall base and the ideal ranking are built from it. Default: counted from the labels.
    ties : {"stable", "pessimistic", "optimistic"}, default "stable"
        "stable" keeps tied documents in input order (as LETOR's evaluation tools); "pessimistic"
        puts the lower grades of a tie first, "optimistic" the higher grades.
    empty_value : float, default 0.0
        The value of a query whose measure is undefined because its normaliser is 0 (no relevant
        document). Measures without a normaliser (P@k, RBP, ERR, eRRBP) are always defined.
    reduction : {"mean", "sum", "none"}, default "mean"
        "mean" or "sum" over the queries, or "none": one value per query.

    Returns
    -------
    value : float, numpy.ndarray or torch.Tensor
        The mean or the sum over the queries, or one value per query (``reduction="none"``, a scalar
        for a 1-D input), in the scores' array type.

    Examples
    --------
    >>> import numpy as np
    >>> from gaprank.metrics import ndcg
    >>> round(float(ndcg(np.array([3.0, 2.0, 1.0]), np.array([1, 2, 0]), k=2)), 4)
    0.7967
    """
    return NDCG.evaluate(scores, labels, k=k, mask=mask, grade_counts=grade_counts, ties=ties,
                         empty_value=empty_value, reduction=reduction, gain=gain, discount=discount,
                         short_list=short_list)


def precision(
    scores: ArrayLike,
    labels: ArrayLike,
    *,
    k: int,
    threshold: int = 1,
    short_list: str = "pad",
    mask: ArrayLike | None = None,
    grade_counts: ArrayLike | None = None,
    ties: Literal["stable", "pessimistic", "optimistic"] = "stable",
    empty_value: float = 0.0,
    reduction: Literal["mean", "sum", "none"] = "mean",
) -> MetricValue:
    r"""Precision at cutoff k: :math:`P@k = \frac{1}{k} \sum_{n \le k} 1[r_n \ge \theta]`.

    Always divides by k. ``short_list="zero"`` gives 0 to a query with fewer than k documents
    (LETOR 3.0's tool); ``"pad"`` counts the missing ranks as non-relevant (trec_eval, LETOR 4.0).
    Always defined (0 for a query without relevant documents).

    Parameters
    ----------
    scores : array-like or torch.Tensor
        ``[list]`` (one query) or ``[batch, list]``; a higher score ranks a document higher. NumPy
        in, NumPy out; a tensor in, a tensor out, on its device.
    labels : array-like or torch.Tensor
        The documents' relevance grades, integers 0..30, in the shape of ``scores``.
    k : int
        Cutoff: only ranks 1..k count; a normaliser (recall base, ideal list) is kept as it is, as
        in trec_eval's cut measures.
    threshold : int, default 1
        Smallest grade counted as relevant.
    short_list : str, default 'pad'
        A list shorter than k: 'pad' (missing ranks count as non-relevant) or 'zero' (the query
        scores 0, as LETOR 3.0's tool).
    mask : array-like of bool, optional
        True marks a real document, False padding. Padding ranks after every real document and never
        counts; its scores and labels are never read. Default: every position is real.
    grade_counts : array-like, optional
        R(0)..R(c) per query, shape ``[c+1]`` or ``[batch, c+1]``: the judged documents of each
        grade, when the list does not hold every judged document (a run that missed relevant ones).
        The recall base and the ideal ranking are built from it. Default: counted from the labels.
    ties : {"stable", "pessimistic", "optimistic"}, default "stable"
        "stable" keeps tied documents in input order (as LETOR's evaluation tools); "pessimistic"
        puts the lower grades of a tie first, "optimistic" the higher grades.
    empty_value : float, default 0.0
        The value of a query whose measure is undefined because its normaliser is 0 (no relevant
        document). Measures without a normaliser (P@k, RBP, ERR, eRRBP) are always defined.
    reduction : {"mean", "sum", "none"}, default "mean"
        "mean" or "sum" over the queries, or "none": one value per query.

    Returns
    -------
    value : float, numpy.ndarray or torch.Tensor
        The mean or the sum over the queries, or one value per query (``reduction="none"``, a scalar
        for a 1-D input), in the scores' array type.

    Examples
    --------
    >>> import numpy as np
    >>> from gaprank.metrics import precision
    >>> round(float(precision(np.array([3.0, 2.0, 1.0]), np.array([1, 0, 2]), k=2)), 4)
    0.5
    """
    return P.evaluate(scores, labels, k=k, mask=mask, grade_counts=grade_counts, ties=ties, empty_value=empty_value,
                      reduction=reduction, threshold=threshold, short_list=short_list)


def rbp(
    scores: ArrayLike,
    labels: ArrayLike,
    *,
    persistence: float = 0.8,
    threshold: int = 1,
    k: int | None = None,
    mask: ArrayLike | None = None,
    grade_counts: ArrayLike | None = None,
    ties: Literal["stable", "pessimistic", "optimistic"] = "stable",
    empty_value: float = 0.0,
    reduction: Literal["mean", "sum", "none"] = "mean",
) -> MetricValue:
    r"""Rank-biased precision (Moffat and Zobel 2008), binary relevance at ``threshold``.

    .. math::

        \mathrm{RBP} = (1 - q) \sum_n q^{n-1}\, 1[r_n \ge \theta]

    with persistence q in (0, 1). Always defined. ``k`` truncates the sum (no residual).

    Parameters
    ----------
    scores : array-like or torch.Tensor
        ``[list]`` (one query) or ``[batch, list]``; a higher score ranks a document higher. NumPy
        in, NumPy out; a tensor in, a tensor out, on its device.
    labels : array-like or torch.Tensor
        The documents' relevance grades, integers 0..30, in the shape of ``scores``.
    persistence : float, default 0.8
        Persistence.
    threshold : int, default 1
        Smallest grade counted as relevant.
    k : int, optional
        Cutoff: only ranks 1..k count; a normaliser (recall base, ideal list) is kept as it is, as
        in trec_eval's cut measures.
    mask : array-like of bool, optional
        True marks a real document, False padding. Padding ranks after every real document and never
        counts; its scores and labels are never read. Default: every position is real.
    grade_counts : array-like, optional
        R(0)..R(c) per query, shape ``[c+1]`` or ``[batch, c+1]``: the judged documents of each
        grade, when the list does not hold every judged document (a run that missed relevant ones).
        The recall base and the ideal ranking are built from it. Default: counted from the labels.
    ties : {"stable", "pessimistic", "optimistic"}, default "stable"
        "stable" keeps tied documents in input order (as LETOR's evaluation tools); "pessimistic"
        puts the lower grades of a tie first, "optimistic" the higher grades.
    empty_value : float, default 0.0
        The value of a query whose measure is undefined because its normaliser is 0 (no relevant
        document). Measures without a normaliser (P@k, RBP, ERR, eRRBP) are always defined.
    reduction : {"mean", "sum", "none"}, default "mean"
        "mean" or "sum" over the queries, or "none": one value per query.

    Returns
    -------
    value : float, numpy.ndarray or torch.Tensor
        The mean or the sum over the queries, or one value per query (``reduction="none"``, a scalar
        for a 1-D input), in the scores' array type.

    Examples
    --------
    >>> import numpy as np
    >>> from gaprank.metrics import rbp
    >>> round(float(rbp(np.array([3.0, 2.0, 1.0]), np.array([1, 0, 2]), persistence=0.5)), 4)
    0.625
    """
    return RBP.evaluate(scores, labels, k=k, mask=mask, grade_counts=grade_counts, ties=ties,
                        empty_value=empty_value, reduction=reduction, persistence=persistence, threshold=threshold)


def err(
    scores: ArrayLike,
    labels: ArrayLike,
    *,
    max_grade: int | None = None,
    k: int | None = None,
    mask: ArrayLike | None = None,
    grade_counts: ArrayLike | None = None,
    ties: Literal["stable", "pessimistic", "optimistic"] = "stable",
    empty_value: float = 0.0,
    reduction: Literal["mean", "sum", "none"] = "mean",
) -> MetricValue:
    r"""Expected reciprocal rank (Chapelle, Metzler, Zhang and Grinspan, CIKM 2009).

    .. math::

        \mathrm{ERR} = \sum_n \frac{1}{n} R_n \prod_{i<n} (1 - R_i),
        \qquad R = \frac{2^{r} - 1}{2^{g_{max}}}

    ``max_grade`` (g_max) defaults to the largest label of the input; pass it explicitly to compare
    numbers across batches. Always defined.

    Parameters
    ----------
    scores : array-like or torch.Tensor
        ``[list]`` (one query) or ``[batch, list]``; a higher score ranks a document higher. NumPy
        in, NumPy out; a tensor in, a tensor out, on its device.
    labels : array-like or torch.Tensor
        The documents' relevance grades, integers 0..30, in the shape of ``scores``.
    max_grade : int, optional
        The top grade g_max of ERR's relevance probabilities (default: the largest label).
    k : int, optional
        Cutoff: only ranks 1..k count; a normaliser (recall base, ideal list) is kept as it is, as
        in trec_eval's cut measures.
    mask : array-like of bool, optional
        True marks a real document, False padding. Padding ranks after every real document and never
        counts; its scores and labels are never read. Default: every position is real.
    grade_counts : array-like, optional
        R(0)..R(c) per query, shape ``[c+1]`` or ``[batch, c+1]``: the judged documents of each
        grade, when the list does not hold every judged document (a run that missed relevant ones).
        The recall base and the ideal ranking are built from it. Default: counted from the labels.
    ties : {"stable", "pessimistic", "optimistic"}, default "stable"
        "stable" keeps tied documents in input order (as LETOR's evaluation tools); "pessimistic"
        puts the lower grades of a tie first, "optimistic" the higher grades.
    empty_value : float, default 0.0
        The value of a query whose measure is undefined because its normaliser is 0 (no relevant
        document). Measures without a normaliser (P@k, RBP, ERR, eRRBP) are always defined.
    reduction : {"mean", "sum", "none"}, default "mean"
        "mean" or "sum" over the queries, or "none": one value per query.

    Returns
    -------
    value : float, numpy.ndarray or torch.Tensor
        The mean or the sum over the queries, or one value per query (``reduction="none"``, a scalar
        for a 1-D input), in the scores' array type.

    Examples
    --------
    >>> import numpy as np
    >>> from gaprank.metrics import err
    >>> round(float(err(np.array([3.0, 2.0, 1.0]), np.array([1, 2, 0]), max_grade=2)), 4)
    0.5312
    """
    return ERR.evaluate(scores, labels, k=k, mask=mask, grade_counts=grade_counts, ties=ties,
                        empty_value=empty_value, reduction=reduction, max_grade=max_grade)


def q_measure(
    scores: ArrayLike,
    labels: ArrayLike,
    *,
    beta: float = 1.0,
    mask: ArrayLike | None = None,
    grade_counts: ArrayLike | None = None,
    ties: Literal["stable", "pessimistic", "optimistic"] = "stable",
    empty_value: float = 0.0,
    reduction: Literal["mean", "sum", "none"] = "mean",
) -> MetricValue:
    r"""Sakai's Q-measure with gain = grade (Kishida 2005, eq. 35 for beta = 1).

    .. math::

        v_Q = \frac{1}{R} \sum_i 1[x_i > 0]\,
              \frac{\sum_{k \le i} 1[x_k > 0] + \beta \sum_{k \le i} x_k}{i + \beta \sum_{k \le i} y_k}

    R = number of judged relevant documents, y = the ideal list. Undefined when R = 0. The example is pattern a of
    Kishida's Table 5.

    Parameters
    ----------
    scores : array-like or torch.Tensor
        ``[list]`` (one query) or ``[batch, list]``; a higher score ranks a document higher. NumPy
        in, NumPy out; a tensor in, a tensor out, on its device.
    labels : array-like or torch.Tensor
        The documents' relevance grades, integers 0..30, in the shape of ``scores``.
    beta : float, default 1.0
        Sakai's beta.
    mask : array-like of bool, optional
        True marks a real document, False padding. Padding ranks after every real document and never
        counts; its scores and labels are never read. Default: every position is real.
    grade_counts : array-like, optional
        R(0)..R(c) per query, shape ``[c+1]`` or ``[batch, c+1]``: the judged documents of each
        grade, when the list does not hold every judged document (a run that missed relevant ones).
        The recall base and the ideal ranking are built from it. Default: counted from the labels.
    ties : {"stable", "pessimistic", "optimistic"}, default "stable"
        "stable" keeps tied documents in input order (as LETOR's evaluation tools); "pessimistic"
        puts the lower grades of a tie first, "optimistic" the higher grades.
    empty_value : float, default 0.0
        The value of a query whose measure is undefined because its normaliser is 0 (no relevant
        document). Measures without a normaliser (P@k, RBP, ERR, eRRBP) are always defined.
    reduction : {"mean", "sum", "none"}, default "mean"
        "mean" or "sum" over the queries, or "none": one value per query.

    Returns
    -------
    value : float, numpy.ndarray or torch.Tensor
        The mean or the sum over the queries, or one value per query (``reduction="none"``, a scalar
        for a 1-D input), in the scores' array type.

    Examples
    --------
    >>> import numpy as np
    >>> from gaprank.metrics import q_measure
    >>> round(float(q_measure(np.array([5.0, 4, 3, 2, 1]), np.array([3, 2, 0, 0, 0]), grade_counts=[3, 1, 1, 1])), 4)
    0.6667
    """
    return Q.evaluate(scores, labels, k=None, mask=mask, grade_counts=grade_counts, ties=ties,
                      empty_value=empty_value, reduction=reduction, beta=beta)


def sliding_ratio(
    scores: ArrayLike,
    labels: ArrayLike,
    *,
    k: int | None = None,
    mask: ArrayLike | None = None,
    grade_counts: ArrayLike | None = None,
    ties: Literal["stable", "pessimistic", "optimistic"] = "stable",
    empty_value: float = 0.0,
    reduction: Literal["mean", "sum", "none"] = "mean",
) -> MetricValue:
    r"""Sagara's modified sliding ratio (Kishida 2005, eq. 27).

    .. math::

        v_{S'} = \frac{\sum_{i \le n} x_i / i}{\sum_{i \le n} y_i / i}

    n = the list length (or ``k``), y = the ideal list truncated at n. Undefined when the ideal sum is 0.
    The example is pattern a of Kishida's Table 5.

    Parameters
    ----------
    scores : array-like or torch.Tensor
        ``[list]`` (one query) or ``[batch, list]``; a higher score ranks a document higher. NumPy
        in, NumPy out; a tensor in, a tensor out, on its device.
    labels : array-like or torch.Tensor
        The documents' relevance grades, integers 0..30, in the shape of ``scores``.
    k : int, optional
        Cutoff: only ranks 1..k count; a normaliser (recall base, ideal list) is kept as it is, as
        in trec_eval's cut measures.
    mask : array-like of bool, optional
        True marks a real document, False padding. Padding ranks after every real document and never
        counts; its scores and labels are never read. Default: every position is real.
    grade_counts : array-like, optional
        R(0)..R(c) per query, shape ``[c+1]`` or ``[batch, c+1]``: the judged documents of each
        grade, when the list does not hold every judged document (a run that missed relevant ones).
        The recall base and the ideal ranking are built from it. Default: counted from the labels.
    ties : {"stable", "pessimistic", "optimistic"}, default "stable"
        "stable" keeps tied documents in input order (as LETOR's evaluation tools); "pessimistic"
        puts the lower grades of a tie first, "optimistic" the higher grades.
    empty_value : float, default 0.0
        The value of a query whose measure is undefined because its normaliser is 0 (no relevant
        document). Measures without a normaliser (P@k, RBP, ERR, eRRBP) are always defined.
    reduction : {"mean", "sum", "none"}, default "mean"
        "mean" or "sum" over the queries, or "none": one value per query.

    Returns
    -------
    value : float, numpy.ndarray or torch.Tensor
        The mean or the sum over the queries, or one value per query (``reduction="none"``, a scalar
        for a 1-D input), in the scores' array type.

    Examples
    --------
    >>> import numpy as np
    >>> from gaprank.metrics import sliding_ratio
    >>> round(float(sliding_ratio(np.array([5.0, 4, 3, 2, 1]), np.array([3, 2, 0, 0, 0]), grade_counts=[3, 1, 1, 1])), 4)
    0.9231
    """
    return SR.evaluate(scores, labels, k=k, mask=mask, grade_counts=grade_counts, ties=ties,
                       empty_value=empty_value, reduction=reduction)


def generalized_ap(
    scores: ArrayLike,
    labels: ArrayLike,
    *,
    k: int | None = None,
    mask: ArrayLike | None = None,
    grade_counts: ArrayLike | None = None,
    ties: Literal["stable", "pessimistic", "optimistic"] = "stable",
    empty_value: float = 0.0,
    reduction: Literal["mean", "sum", "none"] = "mean",
) -> MetricValue:
    r"""Kishida's generalized average precision v_G (Kishida 2005, eq. 42).

    .. math::

        v_G = \frac{\sum_i 1[x_i > 0]\, \frac{1}{i} \sum_{k \le i} x_k}
                   {\sum_i 1[y_i > 0]\, \frac{1}{i} \sum_{k \le i} y_k}

    x = grades in ranked order, y = the ideal list (all judged grades, descending). The example is pattern a of
    Kishida's Table 5.

    Parameters
    ----------
    scores : array-like or torch.Tensor
        ``[list]`` (one query) or ``[batch, list]``; a higher score ranks a document higher. NumPy
        in, NumPy out; a tensor in, a tensor out, on its device.
    labels : array-like or torch.Tensor
        The documents' relevance grades, integers 0..30, in the shape of ``scores``.
    k : int, optional
        Cutoff: only ranks 1..k count; a normaliser (recall base, ideal list) is kept as it is, as
        in trec_eval's cut measures.
    mask : array-like of bool, optional
        True marks a real document, False padding. Padding ranks after every real document and never
        counts; its scores and labels are never read. Default: every position is real.
    grade_counts : array-like, optional
        R(0)..R(c) per query, shape ``[c+1]`` or ``[batch, c+1]``: the judged documents of each
        grade, when the list does not hold every judged document (a run that missed relevant ones).
        The recall base and the ideal ranking are built from it. Default: counted from the labels.
    ties : {"stable", "pessimistic", "optimistic"}, default "stable"
        "stable" keeps tied documents in input order (as LETOR's evaluation tools); "pessimistic"
        puts the lower grades of a tie first, "optimistic" the higher grades.
    empty_value : float, default 0.0
        The value of a query whose measure is undefined because its normaliser is 0 (no relevant
        document). Measures without a normaliser (P@k, RBP, ERR, eRRBP) are always defined.
    reduction : {"mean", "sum", "none"}, default "mean"
        "mean" or "sum" over the queries, or "none": one value per query.

    Returns
    -------
    value : float, numpy.ndarray or torch.Tensor
        The mean or the sum over the queries, or one value per query (``reduction="none"``, a scalar
        for a 1-D input), in the scores' array type.

    Examples
    --------
    >>> import numpy as np
    >>> from gaprank.metrics import generalized_ap
    >>> round(float(generalized_ap(np.array([5.0, 4, 3, 2, 1]), np.array([3, 2, 0, 0, 0]), grade_counts=[3, 1, 1, 1])), 4)
    0.7333
    """
    return VG.evaluate(scores, labels, k=k, mask=mask, grade_counts=grade_counts, ties=ties,
                       empty_value=empty_value, reduction=reduction)


def erap(
    scores: ArrayLike,
    labels: ArrayLike,
    *,
    p: ArrayLike,
    k: int | None = None,
    mask: ArrayLike | None = None,
    grade_counts: ArrayLike | None = None,
    ties: Literal["stable", "pessimistic", "optimistic"] = "stable",
    empty_value: float = 0.0,
    reduction: Literal["mean", "sum", "none"] = "mean",
) -> MetricValue:
    r"""Expected random average precision, eRAP (Ferrante, Ferro, Pontarollo, eq. 2).

    .. math::

        \mathrm{eRAP} = \frac{1}{\widehat{RB}} \sum_n \frac{1}{n}
            \Big(1 + \sum_{m<n} p_{r_m}\Big) p_{r_n}, \qquad \widehat{RB} = \sum_k R(k)\, p_k

    ``p[k]`` is the probability that a document of grade k is relevant, k = 0..c.
    Undefined when the expected recall base is 0.

    Parameters
    ----------
    scores : array-like or torch.Tensor
        ``[list]`` (one query) or ``[batch, list]``; a higher score ranks a document higher. NumPy
        in, NumPy out; a tensor in, a tensor out, on its device.
    labels : array-like or torch.Tensor
        The documents' relevance grades, integers 0..30, in the shape of ``scores``.
    p : sequence of float
        Probability of relevance of each grade 0..c.
    k : int, optional
        Cutoff: only ranks 1..k count; a normaliser (recall base, ideal list) is kept as it is, as
        in trec_eval's cut measures.
    mask : array-like of bool, optional
        True marks a real document, False padding. Padding ranks after every real document and never
        counts; its scores and labels are never read. Default: every position is real.
    grade_counts : array-like, optional
        R(0)..R(c) per query, shape ``[c+1]`` or ``[batch, c+1]``: the judged documents of each
        grade, when the list does not hold every judged document (a run that missed relevant ones).
        The recall base and the ideal ranking are built from it. Default: counted from the labels.
    ties : {"stable", "pessimistic", "optimistic"}, default "stable"
        "stable" keeps tied documents in input order (as LETOR's evaluation tools); "pessimistic"
        puts the lower grades of a tie first, "optimistic" the higher grades.
    empty_value : float, default 0.0
        The value of a query whose measure is undefined because its normaliser is 0 (no relevant
        document). Measures without a normaliser (P@k, RBP, ERR, eRRBP) are always defined.
    reduction : {"mean", "sum", "none"}, default "mean"
        "mean" or "sum" over the queries, or "none": one value per query.

    Returns
    -------
    value : float, numpy.ndarray or torch.Tensor
        The mean or the sum over the queries, or one value per query (``reduction="none"``, a scalar
        for a 1-D input), in the scores' array type.

    Examples
    --------
    >>> import numpy as np
    >>> from gaprank.metrics import erap
    >>> round(float(erap(np.array([3.0, 2.0, 1.0]), np.array([1, 2, 0]), p=[0.0, 0.5, 1.0])), 4)
    0.8333
    """
    return ERAP.evaluate(scores, labels, k=k, mask=mask, grade_counts=grade_counts, ties=ties,
                         empty_value=empty_value, reduction=reduction, p=p)


def errbp(
    scores: ArrayLike,
    labels: ArrayLike,
    *,
    p: ArrayLike,
    persistence: float = 0.8,
    k: int | None = None,
    mask: ArrayLike | None = None,
    grade_counts: ArrayLike | None = None,
    ties: Literal["stable", "pessimistic", "optimistic"] = "stable",
    empty_value: float = 0.0,
    reduction: Literal["mean", "sum", "none"] = "mean",
) -> MetricValue:
    r"""Expected random rank-biased precision, eRRBP (Ferrante, Ferro, Pontarollo, eq. 1).

    .. math::

        \mathrm{eRRBP} = (1 - q) \sum_n q^{n-1}\, p_{r_n}

    ``p[k]`` is the probability that a document of grade k is relevant, k = 0..c. Always defined.

    Parameters
    ----------
    scores : array-like or torch.Tensor
        ``[list]`` (one query) or ``[batch, list]``; a higher score ranks a document higher. NumPy
        in, NumPy out; a tensor in, a tensor out, on its device.
    labels : array-like or torch.Tensor
        The documents' relevance grades, integers 0..30, in the shape of ``scores``.
    p : sequence of float
        Probability of relevance of each grade 0..c.
    persistence : float, default 0.8
        Persistence.
    k : int, optional
        Cutoff: only ranks 1..k count; a normaliser (recall base, ideal list) is kept as it is, as
        in trec_eval's cut measures.
    mask : array-like of bool, optional
        True marks a real document, False padding. Padding ranks after every real document and never
        counts; its scores and labels are never read. Default: every position is real.
    grade_counts : array-like, optional
        R(0)..R(c) per query, shape ``[c+1]`` or ``[batch, c+1]``: the judged documents of each
        grade, when the list does not hold every judged document (a run that missed relevant ones).
        The recall base and the ideal ranking are built from it. Default: counted from the labels.
    ties : {"stable", "pessimistic", "optimistic"}, default "stable"
        "stable" keeps tied documents in input order (as LETOR's evaluation tools); "pessimistic"
        puts the lower grades of a tie first, "optimistic" the higher grades.
    empty_value : float, default 0.0
        The value of a query whose measure is undefined because its normaliser is 0 (no relevant
        document). Measures without a normaliser (P@k, RBP, ERR, eRRBP) are always defined.
    reduction : {"mean", "sum", "none"}, default "mean"
        "mean" or "sum" over the queries, or "none": one value per query.

    Returns
    -------
    value : float, numpy.ndarray or torch.Tensor
        The mean or the sum over the queries, or one value per query (``reduction="none"``, a scalar
        for a 1-D input), in the scores' array type.

    Examples
    --------
    >>> import numpy as np
    >>> from gaprank.metrics import errbp
    >>> round(float(errbp(np.array([3.0, 2.0, 1.0]), np.array([1, 2, 0]), p=[0.0, 0.5, 1.0], persistence=0.5)), 4)
    0.5
    """
    return ERRBP.evaluate(scores, labels, k=k, mask=mask, grade_counts=grade_counts, ties=ties,
                          empty_value=empty_value, reduction=reduction, p=p, persistence=persistence)


def reciprocal_rank(
    scores: ArrayLike,
    labels: ArrayLike,
    *,
    threshold: int = 1,
    k: int | None = None,
    mask: ArrayLike | None = None,
    grade_counts: ArrayLike | None = None,
    ties: Literal["stable", "pessimistic", "optimistic"] = "stable",
    empty_value: float = 0.0,
    reduction: Literal["mean", "sum", "none"] = "mean",
) -> MetricValue:
    r"""Reciprocal rank of the first document whose grade reaches ``threshold`` (MRR is its mean).

    .. math::

        \mathrm{RR} = \frac{1}{f}, \qquad f = \min\{n : r_n \ge \theta\}

    0 when no such document is ranked (or none within ``k``). Undefined when the query has no judged relevant
    document (``grade_counts``, default: in the list). trec_eval's ``recip_rank``.

    Parameters
    ----------
    scores : array-like or torch.Tensor
        ``[list]`` (one query) or ``[batch, list]``; a higher score ranks a document higher. NumPy
        in, NumPy out; a tensor in, a tensor out, on its device.
    labels : array-like or torch.Tensor
        The documents' relevance grades, integers 0..30, in the shape of ``scores``.
    threshold : int, default 1
        Smallest grade counted as relevant.
    k : int, optional
        Cutoff: only ranks 1..k count; a normaliser (recall base, ideal list) is kept as it is, as
        in trec_eval's cut measures.
    mask : array-like of bool, optional
        True marks a real document, False padding. Padding ranks after every real document and never
        counts; its scores and labels are never read. Default: every position is real.
    grade_counts : array-like, optional
        R(0)..R(c) per query, shape ``[c+1]`` or ``[batch, c+1]``: the judged documents of each
        grade, when the list does not hold every judged document (a run that missed relevant ones).
        The recall base and the ideal ranking are built from it. Default: counted from the labels.
    ties : {"stable", "pessimistic", "optimistic"}, default "stable"
        "stable" keeps tied documents in input order (as LETOR's evaluation tools); "pessimistic"
        puts the lower grades of a tie first, "optimistic" the higher grades.
    empty_value : float, default 0.0
        The value of a query whose measure is undefined because its normaliser is 0 (no relevant
        document). Measures without a normaliser (P@k, RBP, ERR, eRRBP) are always defined.
    reduction : {"mean", "sum", "none"}, default "mean"
        "mean" or "sum" over the queries, or "none": one value per query.

    Returns
    -------
    value : float, numpy.ndarray or torch.Tensor
        The mean or the sum over the queries, or one value per query (``reduction="none"``, a scalar
        for a 1-D input), in the scores' array type.

    Examples
    --------
    >>> import numpy as np
    >>> from gaprank.metrics import reciprocal_rank
    >>> round(float(reciprocal_rank(np.array([3.0, 2.0, 1.0]), np.array([0, 0, 1]))), 4)
    0.3333
    """
    return RR.evaluate(scores, labels, k=k, mask=mask, grade_counts=grade_counts, ties=ties,
                       empty_value=empty_value, reduction=reduction, threshold=threshold)


def recall(
    scores: ArrayLike,
    labels: ArrayLike,
    *,
    k: int,
    threshold: int = 1,
    mask: ArrayLike | None = None,
    grade_counts: ArrayLike | None = None,
    ties: Literal["stable", "pessimistic", "optimistic"] = "stable",
    empty_value: float = 0.0,
    reduction: Literal["mean", "sum", "none"] = "mean",
) -> MetricValue:
    r"""Recall at cutoff k: the share of the judged relevant documents ranked within k.

    .. math::

        R@k = \frac{1}{RB} \sum_{n \le k} 1[r_n \ge \theta]

    RB = the number of judged documents of grade >= ``threshold`` (``grade_counts``, default: in the list).
    Undefined when RB = 0. trec_eval's ``recall_k``.

    Parameters
    ----------
    scores : array-like or torch.Tensor
        ``[list]`` (one query) or ``[batch, list]``; a higher score ranks a document higher. NumPy
        in, NumPy out; a tensor in, a tensor out, on its device.
    labels : array-like or torch.Tensor
        The documents' relevance grades, integers 0..30, in the shape of ``scores``.
    k : int
        Cutoff: only ranks 1..k count; a normaliser (recall base, ideal list) is kept as it is, as
        in trec_eval's cut measures.
    threshold : int, default 1
        Smallest grade counted as relevant.
    mask : array-like of bool, optional
        True marks a real document, False padding. Padding ranks after every real document and never
        counts; its scores and labels are never read. Default: every position is real.
    grade_counts : array-like, optional
        R(0)..R(c) per query, shape ``[c+1]`` or ``[batch, c+1]``: the judged documents of each
        grade, when the list does not hold every judged document (a run that missed relevant ones).
        The recall base and the ideal ranking are built from it. Default: counted from the labels.
    ties : {"stable", "pessimistic", "optimistic"}, default "stable"
        "stable" keeps tied documents in input order (as LETOR's evaluation tools); "pessimistic"
        puts the lower grades of a tie first, "optimistic" the higher grades.
    empty_value : float, default 0.0
        The value of a query whose measure is undefined because its normaliser is 0 (no relevant
        document). Measures without a normaliser (P@k, RBP, ERR, eRRBP) are always defined.
    reduction : {"mean", "sum", "none"}, default "mean"
        "mean" or "sum" over the queries, or "none": one value per query.

    Returns
    -------
    value : float, numpy.ndarray or torch.Tensor
        The mean or the sum over the queries, or one value per query (``reduction="none"``, a scalar
        for a 1-D input), in the scores' array type.

    Examples
    --------
    >>> import numpy as np
    >>> from gaprank.metrics import recall
    >>> round(float(recall(np.array([3.0, 2.0, 1.0]), np.array([1, 0, 2]), k=2)), 4)
    0.5
    """
    return R.evaluate(scores, labels, k=k, mask=mask, grade_counts=grade_counts, ties=ties, empty_value=empty_value,
                      reduction=reduction, threshold=threshold)


def r_precision(
    scores: ArrayLike,
    labels: ArrayLike,
    *,
    threshold: int = 1,
    mask: ArrayLike | None = None,
    grade_counts: ArrayLike | None = None,
    ties: Literal["stable", "pessimistic", "optimistic"] = "stable",
    empty_value: float = 0.0,
    reduction: Literal["mean", "sum", "none"] = "mean",
) -> MetricValue:
    r"""R-precision: precision at rank RB, the number of judged relevant documents.

    .. math::

        \mathrm{Rprec} = \frac{1}{RB} \sum_{n \le RB} 1[r_n \ge \theta]

    A list shorter than RB counts its missing ranks as non-relevant. Undefined when RB = 0. trec_eval's
    ``Rprec``.

    Parameters
    ----------
    scores : array-like or torch.Tensor
        ``[list]`` (one query) or ``[batch, list]``; a higher score ranks a document higher. NumPy
        in, NumPy out; a tensor in, a tensor out, on its device.
    labels : array-like or torch.Tensor
        The documents' relevance grades, integers 0..30, in the shape of ``scores``.
    threshold : int, default 1
        Smallest grade counted as relevant.
    mask : array-like of bool, optional
        True marks a real document, False padding. Padding ranks after every real document and never
        counts; its scores and labels are never read. Default: every position is real.
    grade_counts : array-like, optional
        R(0)..R(c) per query, shape ``[c+1]`` or ``[batch, c+1]``: the judged documents of each
        grade, when the list does not hold every judged document (a run that missed relevant ones).
        The recall base and the ideal ranking are built from it. Default: counted from the labels.
    ties : {"stable", "pessimistic", "optimistic"}, default "stable"
        "stable" keeps tied documents in input order (as LETOR's evaluation tools); "pessimistic"
        puts the lower grades of a tie first, "optimistic" the higher grades.
    empty_value : float, default 0.0
        The value of a query whose measure is undefined because its normaliser is 0 (no relevant
        document). Measures without a normaliser (P@k, RBP, ERR, eRRBP) are always defined.
    reduction : {"mean", "sum", "none"}, default "mean"
        "mean" or "sum" over the queries, or "none": one value per query.

    Returns
    -------
    value : float, numpy.ndarray or torch.Tensor
        The mean or the sum over the queries, or one value per query (``reduction="none"``, a scalar
        for a 1-D input), in the scores' array type.

    Examples
    --------
    >>> import numpy as np
    >>> from gaprank.metrics import r_precision
    >>> round(float(r_precision(np.array([3.0, 2.0, 1.0]), np.array([1, 0, 2]))), 4)
    0.5
    """
    return RPREC.evaluate(scores, labels, k=None, mask=mask, grade_counts=grade_counts, ties=ties,
                          empty_value=empty_value, reduction=reduction, threshold=threshold)


def success(
    scores: ArrayLike,
    labels: ArrayLike,
    *,
    k: int,
    threshold: int = 1,
    mask: ArrayLike | None = None,
    grade_counts: ArrayLike | None = None,
    ties: Literal["stable", "pessimistic", "optimistic"] = "stable",
    empty_value: float = 0.0,
    reduction: Literal["mean", "sum", "none"] = "mean",
) -> MetricValue:
    r"""Success at cutoff k: 1 when a document whose grade reaches ``threshold`` is ranked within k, else 0.

    .. math::

        \mathrm{Success@k} = 1\Big[\sum_{n \le k} 1[r_n \ge \theta] > 0\Big]

    Always defined (0 for a query without relevant documents). trec_eval's ``success_k``.

    Parameters
    ----------
    scores : array-like or torch.Tensor
        ``[list]`` (one query) or ``[batch, list]``; a higher score ranks a document higher. NumPy
        in, NumPy out; a tensor in, a tensor out, on its device.
    labels : array-like or torch.Tensor
        The documents' relevance grades, integers 0..30, in the shape of ``scores``.
    k : int
        Cutoff: only ranks 1..k count; a normaliser (recall base, ideal list) is kept as it is, as
        in trec_eval's cut measures.
    threshold : int, default 1
        Smallest grade counted as relevant.
    mask : array-like of bool, optional
        True marks a real document, False padding. Padding ranks after every real document and never
        counts; its scores and labels are never read. Default: every position is real.
    grade_counts : array-like, optional
        R(0)..R(c) per query, shape ``[c+1]`` or ``[batch, c+1]``: the judged documents of each
        grade, when the list does not hold every judged document (a run that missed relevant ones).
        The recall base and the ideal ranking are built from it. Default: counted from the labels.
    ties : {"stable", "pessimistic", "optimistic"}, default "stable"
        "stable" keeps tied documents in input order (as LETOR's evaluation tools); "pessimistic"
        puts the lower grades of a tie first, "optimistic" the higher grades.
    empty_value : float, default 0.0
        The value of a query whose measure is undefined because its normaliser is 0 (no relevant
        document). Measures without a normaliser (P@k, RBP, ERR, eRRBP) are always defined.
    reduction : {"mean", "sum", "none"}, default "mean"
        "mean" or "sum" over the queries, or "none": one value per query.

    Returns
    -------
    value : float, numpy.ndarray or torch.Tensor
        The mean or the sum over the queries, or one value per query (``reduction="none"``, a scalar
        for a 1-D input), in the scores' array type.

    Examples
    --------
    >>> import numpy as np
    >>> from gaprank.metrics import success
    >>> round(float(success(np.array([3.0, 2.0, 1.0]), np.array([0, 0, 1]), k=2)), 4)
    0.0
    """
    return SUCCESS.evaluate(scores, labels, k=k, mask=mask, grade_counts=grade_counts, ties=ties,
                            empty_value=empty_value, reduction=reduction, threshold=threshold)


def dcg(
    scores: ArrayLike,
    labels: ArrayLike,
    *,
    gain: str = "exp2",
    discount: str = "log2p1",
    k: int | None = None,
    mask: ArrayLike | None = None,
    grade_counts: ArrayLike | None = None,
    ties: Literal["stable", "pessimistic", "optimistic"] = "stable",
    empty_value: float = 0.0,
    reduction: Literal["mean", "sum", "none"] = "mean",
) -> MetricValue:
    r"""Discounted cumulative gain at cutoff k, unnormalised (Järvelin and Kekäläinen 2002).

    .. math::

        \mathrm{DCG@k} = \sum_{n \le k} \mathrm{gain}(r_n) D(n)

    ``gain`` and ``discount`` as :func:`ndcg`'s. Always defined.

    Parameters
    ----------
    scores : array-like or torch.Tensor
        ``[list]`` (one query) or ``[batch, list]``; a higher score ranks a document higher. NumPy
        in, NumPy out; a tensor in, a tensor out, on its device.
    labels : array-like or torch.Tensor
        The documents' relevance grades, integers 0..30, in the shape of ``scores``.
    gain : str, default 'exp2'
        'exp2' (2^l - 1) or 'linear' (the grade).
    discount : str, default 'log2p1'
        'log2p1' (1/log2(r+1)) or 'jk' (1/max(1, log2 r), LETOR).
    k : int, optional
        Cutoff: only ranks 1..k count; a normaliser (recall base, ideal list) is kept as it is, as
        in trec_eval's cut measures.
    mask : array-like of bool, optional
        True marks a real document, False padding. Padding ranks after every real document and never
        counts; its scores and labels are never read. Default: every position is real.
    grade_counts : array-like, optional
        R(0)..R(c) per query, shape ``[c+1]`` or ``[batch, c+1]``: the judged documents of each
        grade, when the list does not hold every judged document (a run that missed relevant ones).
        The recall base and the ideal ranking are built from it. Default: counted from the labels.
    ties : {"stable", "pessimistic", "optimistic"}, default "stable"
        "stable" keeps tied documents in input order (as LETOR's evaluation tools); "pessimistic"
        puts the lower grades of a tie first, "optimistic" the higher grades.
    empty_value : float, default 0.0
        The value of a query whose measure is undefined because its normaliser is 0 (no relevant
        document). Measures without a normaliser (P@k, RBP, ERR, eRRBP) are always defined.
    reduction : {"mean", "sum", "none"}, default "mean"
        "mean" or "sum" over the queries, or "none": one value per query.

    Returns
    -------
    value : float, numpy.ndarray or torch.Tensor
        The mean or the sum over the queries, or one value per query (``reduction="none"``, a scalar
        for a 1-D input), in the scores' array type.

    Examples
    --------
    >>> import numpy as np
    >>> from gaprank.metrics import dcg
    >>> round(float(dcg(np.array([3.0, 2.0, 1.0]), np.array([1, 2, 0]), k=2)), 4)
    2.8928
    """
    return DCG.evaluate(scores, labels, k=k, mask=mask, grade_counts=grade_counts, ties=ties,
                        empty_value=empty_value, reduction=reduction, gain=gain, discount=discount)



# The registry entries: each names its form, parameters, reference and metric function.
AP = register(MeasureInfo("AP", KernelForm(ap_kernel), (_REL,), aliases=("MAP",), function=average_precision,
                          reference="binary average precision; Robertson, Kanoulas and Yilmaz 2010, sec. 2.1"))
GAP = register(MeasureInfo("GAP", KernelForm(gap_kernel), (_G,), function=gap,
                           reference="Robertson, Kanoulas and Yilmaz, SIGIR 2010, sec. 2.2; Ferrante, Ferro et al., eq. 4"))
XGAP = register(MeasureInfo("xGAP", KernelForm(xgap_kernel), (_G,), function=xgap, reference="Ferrante, Ferro et al., eq. 5"))
EGAP = register(MeasureInfo("eGAP", KernelForm(egap_kernel), (_G,), function=egap, reference="Ferrante, Ferro et al., eq. 6"))
NDCG = register(MeasureInfo("nDCG", GainDiscountForm(graded_gain, graded_discount, ideal_dcg), (_GAIN, _DISCOUNT, _SHORT),
                            function=ndcg, reference="Järvelin and Kekäläinen 2002; SoftNDCG: Taylor et al., WSDM 2008"))
P = register(MeasureInfo("P", GainDiscountForm(binary_gain, flat_discount, cutoff_norm), (_REL, _SHORT), needs_cutoff=True,
                         function=precision, reference="precision at k"))
RBP = register(MeasureInfo("RBP", GainDiscountForm(binary_gain, geometric_discount), (_persistence("p"), _REL), function=rbp,
                           reference="Moffat and Zobel 2008"))
ERR = register(MeasureInfo("ERR", ListForm(err_value, err_swap_factors), (_MAX_GRADE,), function=err,
                           reference="Chapelle, Metzler, Zhang and Grinspan, CIKM 2009"))
Q = register(MeasureInfo("Q", ListForm(q_value, q_swap_factors), (_BETA,), takes_cutoff=False, function=q_measure,
                         reference="Sakai; Kishida 2005, eq. 35"))
SR = register(MeasureInfo("SR", GainDiscountForm(linear_gain, reciprocal_discount, ideal_within_list), function=sliding_ratio,
                          reference="Sagara's modified sliding ratio; Kishida 2005, eq. 27"))
VG = register(MeasureInfo("vG", KernelForm(kishida_kernel), function=generalized_ap,
                          reference="Kishida's generalized average precision; Kishida 2005, eq. 42"))
ERAP = register(MeasureInfo("eRAP", KernelForm(erap_kernel), (_RELEVANCE_P,), function=erap,
                            reference="Ferrante, Ferro, Pontarollo, eq. 2"))
ERRBP = register(MeasureInfo("eRRBP", GainDiscountForm(relevance_gain, geometric_discount), (_RELEVANCE_P, _persistence("q")),
                             function=errbp, reference="Ferrante, Ferro, Pontarollo, eq. 1"))
RR = register(MeasureInfo("RR", ListForm(rr_value, rr_swap_factors), (_REL,), aliases=("MRR",), function=reciprocal_rank,
                          reference="reciprocal rank; trec_eval recip_rank"))
R = register(MeasureInfo("R", GainDiscountForm(binary_gain, flat_discount, recall_norm), (_REL,), needs_cutoff=True,
                         function=recall, reference="recall at k; trec_eval recall_k"))
RPREC = register(MeasureInfo("Rprec", ListForm(rprec_value, rprec_swap_factors), (_REL,), takes_cutoff=False,
                             function=r_precision, reference="R-precision; trec_eval Rprec"))
SUCCESS = register(MeasureInfo("Success", ListForm(success_value, success_swap_factors), (_REL,), needs_cutoff=True,
                               function=success, reference="success at k; trec_eval success_k"))
DCG = register(MeasureInfo("DCG", GainDiscountForm(graded_gain, graded_discount), (_GAIN, _DISCOUNT), function=dcg,
                           reference="Järvelin and Kekäläinen 2002"))
seal_built_ins()  # the entries above are gaprank's own: unregister refuses them
