"""The AP family's built-in measures (AP, GAP, xGAP, eGAP, vG, eRAP): each a metric function, written out, and its
registry entry beside it, a kernel form (:mod:`._kernels`)."""

from __future__ import annotations

from typing import Literal

from .._typing import ArrayLike, MetricValue
from ._forms import KernelForm
from ._kernels import ap_kernel, egap_kernel, erap_kernel, gap_kernel, kishida_kernel, xgap_kernel
from ._measure_params import REL, RELEVANCE_P, G
from ._registry import MeasureInfo, register


def average_precision(
    scores: ArrayLike,
    labels: ArrayLike,
    *,
    threshold: int = 1,
    k: int | None = None,
    mask: ArrayLike | None = None,
    weights: ArrayLike | None = None,
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
    scores : array_like or torch.Tensor
        ``[list]`` (one query) or ``[batch, list]``; a higher score ranks a document higher. NumPy
        in, NumPy out; a tensor in, a tensor out, on its device.
    labels : array_like or torch.Tensor
        The documents' relevance grades, integers 0..30, in the shape of ``scores``.
    threshold : int, default 1
        Smallest grade counted as relevant.
    k : int, optional
        Cutoff: only ranks 1..k count; a normaliser (recall base, ideal list) is kept as it is, as
        in trec_eval's cut measures.
    mask : array_like of bool, optional
        True marks a real document, False padding. Padding ranks after every real document and never
        counts; its scores and labels are never read. Default: every position is real.
    weights : array_like, optional
        Per document, >= 0, in the shape of ``scores``: a document of weight w counts w times at its
        grade, in the grade counts, in its own terms and (times the other's weight) in its pairs:
        the inverse-propensity estimate of the measure from documents each observed with probability
        1/w (docs: Simulating clicks). With a last axis of c, one weight per document and level
        1..c: the document counts w_a at each threshold a up to its label (graded events, each level
        observed with its own probability). Padding's weights are never read. Default: every
        document weighs 1.
    grade_counts : array_like, optional
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
    return AP.evaluate(scores, labels, weights=weights, k=k, mask=mask, grade_counts=grade_counts, ties=ties,
                       empty_value=empty_value, reduction=reduction, threshold=threshold)


AP = register(MeasureInfo("AP", KernelForm(ap_kernel), (REL,), aliases=("MAP",), function=average_precision,
                          reference="binary average precision; Robertson, Kanoulas and Yilmaz 2010, sec. 2.1"))


def gap(
    scores: ArrayLike,
    labels: ArrayLike,
    *,
    g: ArrayLike | None = None,
    k: int | None = None,
    mask: ArrayLike | None = None,
    weights: ArrayLike | None = None,
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
    scores : array_like or torch.Tensor
        ``[list]`` (one query) or ``[batch, list]``; a higher score ranks a document higher. NumPy
        in, NumPy out; a tensor in, a tensor out, on its device.
    labels : array_like or torch.Tensor
        The documents' relevance grades, integers 0..30, in the shape of ``scores``.
    g : sequence of float, optional
        User threshold probabilities g_1..g_c (default uniform over grades 1..c).
    k : int, optional
        Cutoff: only ranks 1..k count; a normaliser (recall base, ideal list) is kept as it is, as
        in trec_eval's cut measures.
    mask : array_like of bool, optional
        True marks a real document, False padding. Padding ranks after every real document and never
        counts; its scores and labels are never read. Default: every position is real.
    weights : array_like, optional
        Per document, >= 0, in the shape of ``scores``: a document of weight w counts w times at its
        grade, in the grade counts, in its own terms and (times the other's weight) in its pairs:
        the inverse-propensity estimate of the measure from documents each observed with probability
        1/w (docs: Simulating clicks). With a last axis of c, one weight per document and level
        1..c: the document counts w_a at each threshold a up to its label (graded events, each level
        observed with its own probability). Padding's weights are never read. Default: every
        document weighs 1.
    grade_counts : array_like, optional
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
    return GAP.evaluate(scores, labels, weights=weights, k=k, mask=mask, grade_counts=grade_counts, ties=ties,
                        empty_value=empty_value, reduction=reduction, g=g)


GAP = register(MeasureInfo("GAP", KernelForm(gap_kernel), (G,), function=gap,
                           reference="Robertson, Kanoulas and Yilmaz, SIGIR 2010, sec. 2.2; Ferrante, Ferro et al., eq. 4"))


def xgap(
    scores: ArrayLike,
    labels: ArrayLike,
    *,
    g: ArrayLike | None = None,
    k: int | None = None,
    mask: ArrayLike | None = None,
    weights: ArrayLike | None = None,
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
    scores : array_like or torch.Tensor
        ``[list]`` (one query) or ``[batch, list]``; a higher score ranks a document higher. NumPy
        in, NumPy out; a tensor in, a tensor out, on its device.
    labels : array_like or torch.Tensor
        The documents' relevance grades, integers 0..30, in the shape of ``scores``.
    g : sequence of float, optional
        User threshold probabilities g_1..g_c (default uniform over grades 1..c).
    k : int, optional
        Cutoff: only ranks 1..k count; a normaliser (recall base, ideal list) is kept as it is, as
        in trec_eval's cut measures.
    mask : array_like of bool, optional
        True marks a real document, False padding. Padding ranks after every real document and never
        counts; its scores and labels are never read. Default: every position is real.
    weights : array_like, optional
        Per document, >= 0, in the shape of ``scores``: a document of weight w counts w times at its
        grade, in the grade counts, in its own terms and (times the other's weight) in its pairs:
        the inverse-propensity estimate of the measure from documents each observed with probability
        1/w (docs: Simulating clicks). With a last axis of c, one weight per document and level
        1..c: the document counts w_a at each threshold a up to its label (graded events, each level
        observed with its own probability). Padding's weights are never read. Default: every
        document weighs 1.
    grade_counts : array_like, optional
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
    return XGAP.evaluate(scores, labels, weights=weights, k=k, mask=mask, grade_counts=grade_counts, ties=ties,
                         empty_value=empty_value, reduction=reduction, g=g)


XGAP = register(MeasureInfo("xGAP", KernelForm(xgap_kernel), (G,), function=xgap, reference="Ferrante, Ferro et al., eq. 5"))


def egap(
    scores: ArrayLike,
    labels: ArrayLike,
    *,
    g: ArrayLike | None = None,
    k: int | None = None,
    mask: ArrayLike | None = None,
    weights: ArrayLike | None = None,
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
    scores : array_like or torch.Tensor
        ``[list]`` (one query) or ``[batch, list]``; a higher score ranks a document higher. NumPy
        in, NumPy out; a tensor in, a tensor out, on its device.
    labels : array_like or torch.Tensor
        The documents' relevance grades, integers 0..30, in the shape of ``scores``.
    g : sequence of float, optional
        User threshold probabilities g_1..g_c (default uniform over grades 1..c).
    k : int, optional
        Cutoff: only ranks 1..k count; a normaliser (recall base, ideal list) is kept as it is, as
        in trec_eval's cut measures.
    mask : array_like of bool, optional
        True marks a real document, False padding. Padding ranks after every real document and never
        counts; its scores and labels are never read. Default: every position is real.
    weights : array_like, optional
        Per document, >= 0, in the shape of ``scores``: a document of weight w counts w times at its
        grade, in the grade counts, in its own terms and (times the other's weight) in its pairs:
        the inverse-propensity estimate of the measure from documents each observed with probability
        1/w (docs: Simulating clicks). With a last axis of c, one weight per document and level
        1..c: the document counts w_a at each threshold a up to its label (graded events, each level
        observed with its own probability). Padding's weights are never read. Default: every
        document weighs 1.
    grade_counts : array_like, optional
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
    return EGAP.evaluate(scores, labels, weights=weights, k=k, mask=mask, grade_counts=grade_counts, ties=ties,
                         empty_value=empty_value, reduction=reduction, g=g)


EGAP = register(MeasureInfo("eGAP", KernelForm(egap_kernel), (G,), function=egap, reference="Ferrante, Ferro et al., eq. 6"))


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
    scores : array_like or torch.Tensor
        ``[list]`` (one query) or ``[batch, list]``; a higher score ranks a document higher. NumPy
        in, NumPy out; a tensor in, a tensor out, on its device.
    labels : array_like or torch.Tensor
        The documents' relevance grades, integers 0..30, in the shape of ``scores``.
    k : int, optional
        Cutoff: only ranks 1..k count; a normaliser (recall base, ideal list) is kept as it is, as
        in trec_eval's cut measures.
    mask : array_like of bool, optional
        True marks a real document, False padding. Padding ranks after every real document and never
        counts; its scores and labels are never read. Default: every position is real.
    grade_counts : array_like, optional
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


VG = register(MeasureInfo("vG", KernelForm(kishida_kernel, takes_weights=False), function=generalized_ap,
                          reference="Kishida's generalized average precision; Kishida 2005, eq. 42"))


def erap(
    scores: ArrayLike,
    labels: ArrayLike,
    *,
    p: ArrayLike,
    k: int | None = None,
    mask: ArrayLike | None = None,
    weights: ArrayLike | None = None,
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
    scores : array_like or torch.Tensor
        ``[list]`` (one query) or ``[batch, list]``; a higher score ranks a document higher. NumPy
        in, NumPy out; a tensor in, a tensor out, on its device.
    labels : array_like or torch.Tensor
        The documents' relevance grades, integers 0..30, in the shape of ``scores``.
    p : sequence of float
        Probability of relevance of each grade 0..c.
    k : int, optional
        Cutoff: only ranks 1..k count; a normaliser (recall base, ideal list) is kept as it is, as
        in trec_eval's cut measures.
    mask : array_like of bool, optional
        True marks a real document, False padding. Padding ranks after every real document and never
        counts; its scores and labels are never read. Default: every position is real.
    weights : array_like, optional
        Per document, >= 0, in the shape of ``scores``: a document of weight w counts w times at its
        grade, in the grade counts, in its own terms and (times the other's weight) in its pairs:
        the inverse-propensity estimate of the measure from documents each observed with probability
        1/w (docs: Simulating clicks). With a last axis of c, one weight per document and level
        1..c: the document counts w_a at each threshold a up to its label (graded events, each level
        observed with its own probability). Padding's weights are never read. Default: every
        document weighs 1.
    grade_counts : array_like, optional
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
    return ERAP.evaluate(scores, labels, weights=weights, k=k, mask=mask, grade_counts=grade_counts, ties=ties,
                         empty_value=empty_value, reduction=reduction, p=p)


ERAP = register(MeasureInfo("eRAP", KernelForm(erap_kernel), (RELEVANCE_P,), function=erap,
                            reference="Ferrante, Ferro, Pontarollo, eq. 2"))
