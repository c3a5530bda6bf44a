"""The built-in discounted-gain measures (nDCG, P, RBP, SR, eRRBP, R, DCG): each a metric function, written out, and
its registry entry beside it, a gain, a discount and a normaliser (:mod:`._formulas`)."""

from __future__ import annotations

from typing import Literal

from .._typing import ArrayLike, MetricValue
from ._forms import GainDiscountForm
from ._formulas import (
    binary_gain,
    cutoff_norm,
    flat_discount,
    geometric_discount,
    graded_discount,
    graded_gain,
    ideal_dcg,
    ideal_within_list,
    linear_gain,
    recall_norm,
    reciprocal_discount,
    relevance_gain,
)
from ._measure_params import DISCOUNT, GAIN, REL, RELEVANCE_P, SHORT_LIST, persistence
from ._registry import MeasureInfo, register


def ndcg(
    scores: ArrayLike,
    labels: ArrayLike,
    *,
    gain: str = "exp2",
    discount: str = "log2p1",
    short_list: str = "pad",
    k: int | None = None,
    mask: ArrayLike | None = None,
    weights: ArrayLike | None = None,
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
    scores : array_like or torch.Tensor
        ``[list]`` (one query) or ``[batch, list]``; a higher score ranks a document higher. NumPy
        in, NumPy out; a tensor in, a tensor out, on its device.
    labels : array_like or torch.Tensor
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
    >>> from gaprank.metrics import ndcg
    >>> round(float(ndcg(np.array([3.0, 2.0, 1.0]), np.array([1, 2, 0]), k=2)), 4)
    0.7967
    """
    return NDCG.evaluate(scores, labels, weights=weights, k=k, mask=mask, grade_counts=grade_counts, ties=ties,
                         empty_value=empty_value, reduction=reduction, gain=gain, discount=discount,
                         short_list=short_list)


NDCG = register(MeasureInfo("nDCG", GainDiscountForm(graded_gain, graded_discount, ideal_dcg), (GAIN, DISCOUNT, SHORT_LIST),
                            function=ndcg, reference="Järvelin and Kekäläinen 2002; SoftNDCG: Taylor et al., WSDM 2008"))


def precision(
    scores: ArrayLike,
    labels: ArrayLike,
    *,
    k: int,
    threshold: int = 1,
    short_list: str = "pad",
    mask: ArrayLike | None = None,
    weights: ArrayLike | None = None,
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
    short_list : str, default 'pad'
        A list shorter than k: 'pad' (missing ranks count as non-relevant) or 'zero' (the query
        scores 0, as LETOR 3.0's tool).
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
    >>> from gaprank.metrics import precision
    >>> round(float(precision(np.array([3.0, 2.0, 1.0]), np.array([1, 0, 2]), k=2)), 4)
    0.5
    """
    return P.evaluate(scores, labels, weights=weights, k=k, mask=mask, grade_counts=grade_counts, ties=ties,
                      empty_value=empty_value, reduction=reduction, threshold=threshold, short_list=short_list)


P = register(MeasureInfo("P", GainDiscountForm(binary_gain, flat_discount, cutoff_norm), (REL, SHORT_LIST), needs_cutoff=True,
                         function=precision, reference="precision at k"))


def rbp(
    scores: ArrayLike,
    labels: ArrayLike,
    *,
    persistence: float = 0.8,
    threshold: int = 1,
    k: int | None = None,
    mask: ArrayLike | None = None,
    weights: ArrayLike | None = None,
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
    scores : array_like or torch.Tensor
        ``[list]`` (one query) or ``[batch, list]``; a higher score ranks a document higher. NumPy
        in, NumPy out; a tensor in, a tensor out, on its device.
    labels : array_like or torch.Tensor
        The documents' relevance grades, integers 0..30, in the shape of ``scores``.
    persistence : float, default 0.8
        Persistence.
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
    >>> from gaprank.metrics import rbp
    >>> round(float(rbp(np.array([3.0, 2.0, 1.0]), np.array([1, 0, 2]), persistence=0.5)), 4)
    0.625
    """
    return RBP.evaluate(scores, labels, weights=weights, k=k, mask=mask, grade_counts=grade_counts, ties=ties,
                        empty_value=empty_value, reduction=reduction, persistence=persistence, threshold=threshold)


RBP = register(MeasureInfo("RBP", GainDiscountForm(binary_gain, geometric_discount), (persistence("p"), REL), function=rbp,
                           reference="Moffat and Zobel 2008"))


def sliding_ratio(
    scores: ArrayLike,
    labels: ArrayLike,
    *,
    k: int | None = None,
    mask: ArrayLike | None = None,
    weights: ArrayLike | None = None,
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
    >>> from gaprank.metrics import sliding_ratio
    >>> round(float(sliding_ratio(np.array([5.0, 4, 3, 2, 1]), np.array([3, 2, 0, 0, 0]), grade_counts=[3, 1, 1, 1])), 4)
    0.9231
    """
    return SR.evaluate(scores, labels, weights=weights, k=k, mask=mask, grade_counts=grade_counts, ties=ties,
                       empty_value=empty_value, reduction=reduction)


SR = register(MeasureInfo("SR", GainDiscountForm(linear_gain, reciprocal_discount, ideal_within_list), function=sliding_ratio,
                          reference="Sagara's modified sliding ratio; Kishida 2005, eq. 27"))


def errbp(
    scores: ArrayLike,
    labels: ArrayLike,
    *,
    p: ArrayLike,
    persistence: float = 0.8,
    k: int | None = None,
    mask: ArrayLike | None = None,
    weights: ArrayLike | None = None,
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
    scores : array_like or torch.Tensor
        ``[list]`` (one query) or ``[batch, list]``; a higher score ranks a document higher. NumPy
        in, NumPy out; a tensor in, a tensor out, on its device.
    labels : array_like or torch.Tensor
        The documents' relevance grades, integers 0..30, in the shape of ``scores``.
    p : sequence of float
        Probability of relevance of each grade 0..c.
    persistence : float, default 0.8
        Persistence.
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
    >>> from gaprank.metrics import errbp
    >>> round(float(errbp(np.array([3.0, 2.0, 1.0]), np.array([1, 2, 0]), p=[0.0, 0.5, 1.0], persistence=0.5)), 4)
    0.5
    """
    return ERRBP.evaluate(scores, labels, weights=weights, k=k, mask=mask, grade_counts=grade_counts, ties=ties,
                          empty_value=empty_value, reduction=reduction, p=p, persistence=persistence)


ERRBP = register(MeasureInfo("eRRBP", GainDiscountForm(relevance_gain, geometric_discount), (RELEVANCE_P, persistence("q")),
                             function=errbp, reference="Ferrante, Ferro, Pontarollo, eq. 1"))


def recall(
    scores: ArrayLike,
    labels: ArrayLike,
    *,
    k: int,
    threshold: int = 1,
    mask: ArrayLike | None = None,
    weights: ArrayLike | None = None,
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
    >>> from gaprank.metrics import recall
    >>> round(float(recall(np.array([3.0, 2.0, 1.0]), np.array([1, 0, 2]), k=2)), 4)
    0.5
    """
    return R.evaluate(scores, labels, weights=weights, k=k, mask=mask, grade_counts=grade_counts, ties=ties,
                      empty_value=empty_value, reduction=reduction, threshold=threshold)


R = register(MeasureInfo("R", GainDiscountForm(binary_gain, flat_discount, recall_norm), (REL,), needs_cutoff=True,
                         function=recall, reference="recall at k; trec_eval recall_k"))


def dcg(
    scores: ArrayLike,
    labels: ArrayLike,
    *,
    gain: str = "exp2",
    discount: str = "log2p1",
    k: int | None = None,
    mask: ArrayLike | None = None,
    weights: ArrayLike | None = None,
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
    scores : array_like or torch.Tensor
        ``[list]`` (one query) or ``[batch, list]``; a higher score ranks a document higher. NumPy
        in, NumPy out; a tensor in, a tensor out, on its device.
    labels : array_like or torch.Tensor
        The documents' relevance grades, integers 0..30, in the shape of ``scores``.
    gain : str, default 'exp2'
        'exp2' (2^l - 1) or 'linear' (the grade).
    discount : str, default 'log2p1'
        'log2p1' (1/log2(r+1)) or 'jk' (1/max(1, log2 r), LETOR).
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
    >>> from gaprank.metrics import dcg
    >>> round(float(dcg(np.array([3.0, 2.0, 1.0]), np.array([1, 2, 0]), k=2)), 4)
    2.8928
    """
    return DCG.evaluate(scores, labels, weights=weights, k=k, mask=mask, grade_counts=grade_counts, ties=ties,
                        empty_value=empty_value, reduction=reduction, gain=gain, discount=discount)



# The registry entries: each names its form, parameters, reference and metric function.


DCG = register(MeasureInfo("DCG", GainDiscountForm(graded_gain, graded_discount), (GAIN, DISCOUNT), function=dcg,
                           reference="Järvelin and Kekäläinen 2002"))
