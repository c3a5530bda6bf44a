"""The built-in measures of a whole ranked list (ERR, Q, RR, Rprec, Success): each a metric function, written out,
and its registry entry beside it, a value and its swap factors (:mod:`._formulas`)."""

from __future__ import annotations

from typing import Literal

from .._typing import ArrayLike, MetricValue
from ._forms import ListForm
from ._formulas import (
    err_swap_factors,
    err_value,
    q_swap_factors,
    q_value,
    rprec_swap_factors,
    rprec_value,
    rr_swap_factors,
    rr_value,
    success_swap_factors,
    success_value,
)
from ._measure_params import BETA, ERR_MAX_GRADE, REL
from ._registry import MeasureInfo, register


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
    scores : array_like or torch.Tensor
        ``[list]`` (one query) or ``[batch, list]``; a higher score ranks a document higher. NumPy
        in, NumPy out; a tensor in, a tensor out, on its device.
    labels : array_like or torch.Tensor
        The documents' relevance grades, integers 0..30, in the shape of ``scores``.
    max_grade : int, optional
        The top grade g_max of ERR's relevance probabilities (default: the largest label).
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
    >>> from gaprank.metrics import err
    >>> round(float(err(np.array([3.0, 2.0, 1.0]), np.array([1, 2, 0]), max_grade=2)), 4)
    0.5312
    """
    return ERR.evaluate(scores, labels, k=k, mask=mask, grade_counts=grade_counts, ties=ties,
                        empty_value=empty_value, reduction=reduction, max_grade=max_grade)


ERR = register(MeasureInfo("ERR", ListForm(err_value, err_swap_factors), (ERR_MAX_GRADE,), function=err,
                           reference="Chapelle, Metzler, Zhang and Grinspan, CIKM 2009"))


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
    scores : array_like or torch.Tensor
        ``[list]`` (one query) or ``[batch, list]``; a higher score ranks a document higher. NumPy
        in, NumPy out; a tensor in, a tensor out, on its device.
    labels : array_like or torch.Tensor
        The documents' relevance grades, integers 0..30, in the shape of ``scores``.
    beta : float, default 1.0
        Sakai's beta.
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
    >>> from gaprank.metrics import q_measure
    >>> round(float(q_measure(np.array([5.0, 4, 3, 2, 1]), np.array([3, 2, 0, 0, 0]), grade_counts=[3, 1, 1, 1])), 4)
    0.6667
    """
    return Q.evaluate(scores, labels, k=None, mask=mask, grade_counts=grade_counts, ties=ties,
                      empty_value=empty_value, reduction=reduction, beta=beta)


Q = register(MeasureInfo("Q", ListForm(q_value, q_swap_factors), (BETA,), takes_cutoff=False, function=q_measure,
                         reference="Sakai; Kishida 2005, eq. 35"))


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
    >>> from gaprank.metrics import reciprocal_rank
    >>> round(float(reciprocal_rank(np.array([3.0, 2.0, 1.0]), np.array([0, 0, 1]))), 4)
    0.3333
    """
    return RR.evaluate(scores, labels, k=k, mask=mask, grade_counts=grade_counts, ties=ties,
                       empty_value=empty_value, reduction=reduction, threshold=threshold)


RR = register(MeasureInfo("RR", ListForm(rr_value, rr_swap_factors), (REL,), aliases=("MRR",), function=reciprocal_rank,
                          reference="reciprocal rank; trec_eval recip_rank"))


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
    scores : array_like or torch.Tensor
        ``[list]`` (one query) or ``[batch, list]``; a higher score ranks a document higher. NumPy
        in, NumPy out; a tensor in, a tensor out, on its device.
    labels : array_like or torch.Tensor
        The documents' relevance grades, integers 0..30, in the shape of ``scores``.
    threshold : int, default 1
        Smallest grade counted as relevant.
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
    >>> from gaprank.metrics import r_precision
    >>> round(float(r_precision(np.array([3.0, 2.0, 1.0]), np.array([1, 0, 2]))), 4)
    0.5
    """
    return RPREC.evaluate(scores, labels, k=None, mask=mask, grade_counts=grade_counts, ties=ties,
                          empty_value=empty_value, reduction=reduction, threshold=threshold)


RPREC = register(MeasureInfo("Rprec", ListForm(rprec_value, rprec_swap_factors), (REL,), takes_cutoff=False,
                             function=r_precision, reference="R-precision; trec_eval Rprec"))


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
    scores : array_like or torch.Tensor
        ``[list]`` (one query) or ``[batch, list]``; a higher score ranks a document higher. NumPy
        in, NumPy out; a tensor in, a tensor out, on its device.
    labels : array_like or torch.Tensor
        The documents' relevance grades, integers 0..30, in the shape of ``scores``.
    k : int
        Cutoff: only ranks 1..k count; a normaliser (recall base, ideal list) is kept as it is, as
        in trec_eval's cut measures.
    threshold : int, default 1
        Smallest grade counted as relevant.
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
    >>> from gaprank.metrics import success
    >>> round(float(success(np.array([3.0, 2.0, 1.0]), np.array([0, 0, 1]), k=2)), 4)
    0.0
    """
    return SUCCESS.evaluate(scores, labels, k=k, mask=mask, grade_counts=grade_counts, ties=ties,
                            empty_value=empty_value, reduction=reduction, threshold=threshold)


SUCCESS = register(MeasureInfo("Success", ListForm(success_value, success_swap_factors), (REL,), needs_cutoff=True,
                               function=success, reference="success at k; trec_eval success_k"))
