r"""Exact ranking metrics, vectorised over a batch of queries.

Every function has the signature ``metric(scores, labels, *, <measure options>, mask=None,
grade_counts=None, ties="stable", empty_value=0.0, reduction="mean")``:

``scores``, ``labels``
    NumPy arrays or torch tensors, ``[list]`` (one query) or ``[batch, list]``. Higher score = better
    rank. Labels are non-negative integer grades 0..c. The result has the scores' array type and device.
``mask``
    Boolean, True = a real document. Padding is ranked last and never counts.
``grade_counts``
    R(0)..R(c) per query, shape ``[c+1]`` or ``[batch, c+1]``: the judged recall base when the list does
    not hold every judged document (default: counted from the labels). The ideal ranking of nDCG and of
    Kishida's measures is built from it.
``ties``
    ``"stable"`` (input order, as LETOR's evaluation tool), ``"pessimistic"`` (lower grades first within
    a tie), ``"optimistic"``.
``empty_value``
    Value of a query whose measure is undefined because its normaliser is zero (no relevant document).
    Measures without a normaliser (P@k, RBP, ERR, eRRBP) are always defined.
``reduction``
    ``"none"`` (one value per query), ``"mean"`` or ``"sum"`` over the queries.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch

from .._inputs import (
    GaprankInputError,
    _as_tensor,
    check_choice,
    check_positive_int,
    check_probability,
    finalize,
)
from .._typing import ArrayLike, MetricValue
from ._kernels import (
    Kernel,
    ap_kernel,
    egap_kernel,
    erap_kernel,
    gap_kernel,
    kishida_kernel,
    pivot_sum,
    xgap_kernel,
)
from ._ranking import RankedLists, default_g, rank_lists, resolve_g

GAINS = ("exp2", "linear")
DISCOUNTS = ("log2p1", "jk")
SHORT_LIST_RULES = ("pad", "zero")

def _ap_family(
    scores: ArrayLike,
    labels: ArrayLike,
    build: Callable[[RankedLists, torch.Tensor], Kernel],
    *,
    g: ArrayLike | None,
    k: int | None,
    mask: ArrayLike | None,
    grade_counts: ArrayLike | None,
    ties: str,
    empty_value: float,
    reduction: str,
) -> Any:
    k = check_positive_int(k)
    device = scores.device if isinstance(scores, torch.Tensor) else torch.device("cpu")
    g_t = resolve_g(g, device)
    ranked = rank_lists(
        scores,
        labels,
        mask=mask,
        grade_counts=grade_counts,
        ties=ties,
        num_grades=None if g_t is None else g_t.numel(),
        scale_source=f"g (c = {0 if g_t is None else g_t.numel()} grades)",
    )
    if g_t is None:
        g_t = default_g(ranked.num_grades, ranked.grades.device)
        if ranked.num_grades == 0:  # no positive grade anywhere: every query is undefined
            return finalize(ranked.counts.new_zeros(ranked.batch), ranked.counts.new_zeros(ranked.batch).bool(),
                            ranked.spec, empty_value=empty_value, reduction=reduction)
    kernel = build(ranked, g_t)
    values = pivot_sum(ranked.grades, ranked.valid, kernel, k)
    return finalize(values, kernel.defined, ranked.spec, empty_value=empty_value, reduction=reduction)


def kernel_metric(build: Callable[[RankedLists, torch.Tensor], Kernel], name: str) -> Callable[..., Any]:
    """The exact metric of an AP-family kernel: ``build(ranked, g) -> Kernel`` becomes a function with the
    signature every metric has (``scores, labels, *, g=None, k=None, mask=None, grade_counts=None,
    ties="stable", empty_value=0.0, reduction="mean"``), evaluated by the one pivot-sum engine.

    Parameters
    ----------
    build : callable
        ``build(ranked, g) -> Kernel``: the kernel of each query (``g`` is the resolved user model,
        uniform when the caller gives none).
    name : str
        The function's ``__name__``.

    Returns
    -------
    callable
        The metric.

    Examples
    --------
    >>> import numpy as np
    >>> from gaprank.metrics import gap
    >>> from gaprank.metrics._functional import kernel_metric
    >>> from gaprank.metrics._kernels import gap_kernel
    >>> same = kernel_metric(gap_kernel, "same_as_gap")
    >>> bool(same(np.array([3.0, 2.0, 1.0]), np.array([1, 2, 0])) == gap(np.array([3.0, 2.0, 1.0]), np.array([1, 2, 0])))
    True
    """

    def metric(scores: ArrayLike, labels: ArrayLike, *, g: ArrayLike | None = None, k: int | None = None,
               mask: ArrayLike | None = None, grade_counts: ArrayLike | None = None, ties: str = "stable",
               empty_value: float = 0.0, reduction: str = "mean") -> MetricValue:
        return _ap_family(scores, labels, build, g=g, k=k, mask=mask, grade_counts=grade_counts, ties=ties,
                          empty_value=empty_value, reduction=reduction)

    metric.__name__ = metric.__qualname__ = name
    metric.__doc__ = f"The kernel measure {name} (see :func:`kernel_metric`)."
    return metric


def gap(
    scores: ArrayLike,
    labels: ArrayLike,
    *,
    g: ArrayLike | None = None,
    k: int | None = None,
    mask: ArrayLike | None = None,
    grade_counts: ArrayLike | None = None,
    ties: str = "stable",
    empty_value: float = 0.0,
    reduction: str = "mean",
) -> MetricValue:
    r"""Graded Average Precision (Robertson, Kanoulas and Yilmaz, SIGIR 2010, sec. 2.2).

    .. math::

        \mathrm{GAP} = \frac{\sum_n \frac{1}{n} \sum_{m \le n} G(\min(r_m, r_n))}{\sum_k R(k)\, G(k)},
        \qquad G(a) = g_1 + \dots + g_a

    (Ferrante et al., eq. 4). ``g`` holds the user threshold probabilities g_1..g_c (non-negative,
    summing to 1; default uniform over grades 1..c, c = the largest label of the input). With one
    g_t = 1, GAP is binary AP at threshold t. ``k`` truncates the sum over pivots at rank k, keeping
    the normaliser (like trec_eval's ``map_cut``). Undefined (``empty_value``) when the normaliser is 0.

    Examples
    --------
    >>> import numpy as np
    >>> from gaprank.metrics import gap
    >>> round(float(gap(np.array([3.0, 2.0, 1.0]), np.array([1, 2, 0]), g=[0.5, 0.5])), 4)
    0.8333
    """
    return _ap_family(scores, labels, gap_kernel, g=g, k=k, mask=mask, grade_counts=grade_counts, ties=ties,
                      empty_value=empty_value, reduction=reduction)


def xgap(
    scores: ArrayLike,
    labels: ArrayLike,
    *,
    g: ArrayLike | None = None,
    k: int | None = None,
    mask: ArrayLike | None = None,
    grade_counts: ArrayLike | None = None,
    ties: str = "stable",
    empty_value: float = 0.0,
    reduction: str = "mean",
) -> MetricValue:
    r"""Extended Graded Average Precision (Ferrante, Ferro et al., eq. 5).

    .. math::

        \mathrm{xGAP} = \sum_n 1[r_n > 0]\, \frac{w(r_n)}{n} \sum_{m \le n} G(\min(r_m, r_n)),
        \qquad w(a) = \frac{\sum_{k \le a} g_k / RB(k)}{G(a)}

    with RB(k) the number of judged documents of grade >= k. The ideal ranking scores
    ``sum_{k <= tau} g_k`` (below 1 when the top grades are absent), as the paper defines.
    Undefined when the query has no relevant document.

    Examples
    --------
    >>> import numpy as np
    >>> from gaprank.metrics import xgap
    >>> round(float(xgap(np.array([3.0, 2.0, 1.0]), np.array([1, 2, 0]), g=[0.5, 0.5])), 4)
    0.8125
    """
    return _ap_family(scores, labels, xgap_kernel, g=g, k=k, mask=mask, grade_counts=grade_counts, ties=ties,
                      empty_value=empty_value, reduction=reduction)


def egap(
    scores: ArrayLike,
    labels: ArrayLike,
    *,
    g: ArrayLike | None = None,
    k: int | None = None,
    mask: ArrayLike | None = None,
    grade_counts: ArrayLike | None = None,
    ties: str = "stable",
    empty_value: float = 0.0,
    reduction: str = "mean",
) -> MetricValue:
    r"""Expected Graded Average Precision (Ferrante, Ferro et al., eq. 6).

    .. math::

        \mathrm{eGAP} = E[AP(K)] = \sum_{k \le \tau} g_k\, AP(k)

    where AP(k) is binary AP with grades >= k relevant and tau the highest grade with a judged
    document. Undefined when the query has no relevant document.

    Examples
    --------
    >>> import numpy as np
    >>> from gaprank.metrics import egap
    >>> round(float(egap(np.array([3.0, 2.0, 1.0]), np.array([1, 2, 0]), g=[0.5, 0.5])), 4)
    0.75
    """
    return _ap_family(scores, labels, egap_kernel, g=g, k=k, mask=mask, grade_counts=grade_counts, ties=ties,
                      empty_value=empty_value, reduction=reduction)


def average_precision(
    scores: ArrayLike,
    labels: ArrayLike,
    *,
    threshold: int = 1,
    k: int | None = None,
    mask: ArrayLike | None = None,
    grade_counts: ArrayLike | None = None,
    ties: str = "stable",
    empty_value: float = 0.0,
    reduction: str = "mean",
) -> MetricValue:
    r"""Binary average precision with grades >= ``threshold`` relevant.

    .. math::

        AP = \frac{1}{RB} \sum_n 1[r_n \ge \theta]\, \frac{1}{n} \sum_{m \le n} 1[r_m \ge \theta]

    RB = the number of judged relevant documents (``grade_counts``, default: in the list).
    ``k`` truncates at rank k with the same RB (trec_eval ``map_cut``). Undefined when RB = 0.

    Examples
    --------
    >>> import numpy as np
    >>> from gaprank.metrics import average_precision
    >>> float(average_precision(np.array([3.0, 2.0, 1.0]), np.array([1, 0, 1])))
    0.8333333333333333
    """
    threshold = check_positive_int(threshold, "threshold", allow_none=False)
    return _ap_family(scores, labels, lambda ranked, g: ap_kernel(ranked, threshold), g=None, k=k, mask=mask,
                      grade_counts=grade_counts, ties=ties, empty_value=empty_value, reduction=reduction)


def generalized_ap(
    scores: ArrayLike,
    labels: ArrayLike,
    *,
    k: int | None = None,
    mask: ArrayLike | None = None,
    grade_counts: ArrayLike | None = None,
    ties: str = "stable",
    empty_value: float = 0.0,
    reduction: str = "mean",
) -> MetricValue:
    r"""Kishida's generalized average precision v_G (Kishida 2005, eq. 42).

    .. math::

        v_G = \frac{\sum_i 1[x_i > 0]\, \frac{1}{i} \sum_{k \le i} x_k}
                   {\sum_i 1[y_i > 0]\, \frac{1}{i} \sum_{k \le i} y_k}

    x = grades in ranked order, y = the ideal list (all judged grades, descending).

    Examples
    --------
    >>> import numpy as np
    >>> from gaprank.metrics import generalized_ap
    >>> round(float(generalized_ap(np.array([5.0, 4, 3, 2, 1]), np.array([3, 2, 0, 0, 0]),
    ...                            grade_counts=[3, 1, 1, 1])), 3)  # Kishida's Table 5, pattern a
    0.733
    """
    return _ap_family(scores, labels, lambda ranked, g: kishida_kernel(ranked), g=None, k=k, mask=mask,
                      grade_counts=grade_counts, ties=ties, empty_value=empty_value, reduction=reduction)


def _check_relevance_probabilities(p: ArrayLike, device: torch.device) -> torch.Tensor:
    pt = _as_tensor(p, "p", device).to(torch.float64)
    if pt.ndim != 1 or pt.numel() < 2:
        raise GaprankInputError("p must list the probability that a document of each grade 0..c is relevant, at least "
                                f"p_0 and p_1 (e.g. p=[0, 0.5, 1] for grades 0..2); got {pt.tolist()}")
    if not bool(torch.isfinite(pt).all()) or bool((pt < 0).any()) or bool((pt > 1).any()):
        raise GaprankInputError(f"p must hold probabilities in [0, 1]; got {pt.tolist()}")
    return pt


def erap(
    scores: ArrayLike,
    labels: ArrayLike,
    *,
    p: ArrayLike,
    k: int | None = None,
    mask: ArrayLike | None = None,
    grade_counts: ArrayLike | None = None,
    ties: str = "stable",
    empty_value: float = 0.0,
    reduction: str = "mean",
) -> MetricValue:
    r"""Expected random average precision, eRAP (Ferrante, Ferro, Pontarollo, eq. 2).

    .. math::

        \mathrm{eRAP} = \frac{1}{\widehat{RB}} \sum_n \frac{1}{n}
            \Big(1 + \sum_{m<n} p_{r_m}\Big) p_{r_n}, \qquad \widehat{RB} = \sum_k R(k)\, p_k

    ``p[k]`` is the probability that a document of grade k is relevant, k = 0..c.
    Undefined when the expected recall base is 0.

    Examples
    --------
    >>> import numpy as np
    >>> from gaprank.metrics import erap
    >>> round(float(erap(np.array([3.0, 2.0, 1.0]), np.array([1, 2, 0]), p=[0.0, 0.5, 1.0])), 4)
    0.8333
    """
    device = scores.device if isinstance(scores, torch.Tensor) else torch.device("cpu")
    pt = _check_relevance_probabilities(p, device)
    k = check_positive_int(k)
    ranked = rank_lists(scores, labels, mask=mask, grade_counts=grade_counts, ties=ties,
                        num_grades=pt.numel() - 1, scale_source=f"p (grades 0..{pt.numel() - 1})")
    kernel = erap_kernel(ranked, pt.to(ranked.grades.device))
    values = pivot_sum(ranked.grades, ranked.valid, kernel, k)
    return finalize(values, kernel.defined, ranked.spec, empty_value=empty_value, reduction=reduction)


# ---------------------------------------------------------------------------------------------
# Position-discounted measures


def rank_discount(positions: torch.Tensor, discount: str) -> torch.Tensor:
    if discount == "log2p1":
        return 1.0 / torch.log2(positions + 1.0)
    return 1.0 / torch.clamp(torch.log2(positions), min=1.0)


def gain_table(num_grades: int, gain: str, device: torch.device) -> torch.Tensor:
    grades = torch.arange(num_grades + 1, dtype=torch.float64, device=device)
    return torch.pow(2.0, grades) - 1.0 if gain == "exp2" else grades


def ideal_dcg(ranked: RankedLists, gains: torch.Tensor, discount: str, k: int | None) -> torch.Tensor:
    """DCG@k of the ideal ranking built from R(k), shape [B]."""
    ideal = ranked.ideal_grades()
    values = gains[ideal] * rank_discount(ranked.positions(ideal.shape[1]), discount)
    return (values if k is None else values[:, :k]).sum(-1)


def _discounted_sum(ranked: RankedLists, per_grade: torch.Tensor, weights: torch.Tensor, k: int | None) -> torch.Tensor:
    """sum over ranks n <= k of per_grade[r_n] * weights[n] (padding excluded)."""
    values = per_grade[ranked.grades] * weights * ranked.valid
    return (values if k is None else values[:, :k]).sum(-1)


def _zero_short_lists(values, defined, ranked: RankedLists, k, short_list):
    """LETOR tools' rule: a query with fewer than k documents scores 0 at cutoff k."""
    if short_list == "zero" and k is not None:
        short = ranked.n_docs < k
        values = torch.where(short, torch.zeros_like(values), values)
        defined = None if defined is None else (defined | short)
    return values, defined


def ndcg(
    scores: ArrayLike,
    labels: ArrayLike,
    *,
    k: int | None = None,
    gain: str = "exp2",
    discount: str = "log2p1",
    short_list: str = "pad",
    mask: ArrayLike | None = None,
    grade_counts: ArrayLike | None = None,
    ties: str = "stable",
    empty_value: float = 0.0,
    reduction: str = "mean",
) -> MetricValue:
    r"""Normalised discounted cumulative gain at cutoff k (Järvelin and Kekäläinen 2002).

    .. math::

        \mathrm{nDCG@k} = \frac{\sum_{n \le k} \mathrm{gain}(r_n) D(n)}{\sum_{i \le k} \mathrm{gain}(y_i) D(i)}

    ``gain="exp2"``: 2^l - 1; ``"linear"``: l. ``discount="log2p1"``: 1/log2(n+1) (Burges et al.);
    ``"jk"``: 1/max(1, log2 n) (Järvelin-Kekäläinen, LETOR's tool). The ideal list y comes from
    ``grade_counts``. ``short_list``: for a query with fewer than k documents, ``"pad"`` counts the
    missing ranks as non-relevant, ``"zero"`` scores it 0 (the LETOR 3.0/4.0 tools). Undefined when the
    ideal DCG is 0.

    Examples
    --------
    >>> import numpy as np
    >>> from gaprank.metrics import ndcg
    >>> round(float(ndcg(np.array([3.0, 2.0, 1.0]), np.array([1, 2, 0]), k=2)), 4)
    0.7967
    """
    k = check_positive_int(k)
    check_choice(gain, "gain", GAINS)
    check_choice(discount, "discount", DISCOUNTS)
    check_choice(short_list, "short_list", SHORT_LIST_RULES)
    ranked = rank_lists(scores, labels, mask=mask, grade_counts=grade_counts, ties=ties)
    gains = gain_table(ranked.num_grades, gain, ranked.grades.device)
    dcg = _discounted_sum(ranked, gains, rank_discount(ranked.positions(), discount), k)
    idcg = ideal_dcg(ranked, gains, discount, k)
    values = dcg / torch.where(idcg > 0, idcg, torch.ones_like(idcg))
    values, defined = _zero_short_lists(values, idcg > 0, ranked, k, short_list)
    return finalize(values, defined, ranked.spec, empty_value=empty_value, reduction=reduction)


def precision(
    scores: ArrayLike,
    labels: ArrayLike,
    *,
    k: int,
    threshold: int = 1,
    short_list: str = "pad",
    mask: ArrayLike | None = None,
    grade_counts: ArrayLike | None = None,
    ties: str = "stable",
    empty_value: float = 0.0,
    reduction: str = "mean",
) -> MetricValue:
    r"""Precision at cutoff k: :math:`P@k = \frac{1}{k} \sum_{n \le k} 1[r_n \ge \theta]`.

    Always divides by k. ``short_list="zero"`` gives 0 to a query with fewer than k documents
    (LETOR 3.0's tool); ``"pad"`` counts the missing ranks as non-relevant (trec_eval, LETOR 4.0).
    Always defined (0 for a query without relevant documents).

    Examples
    --------
    >>> import numpy as np
    >>> from gaprank.metrics import precision
    >>> float(precision(np.array([3.0, 2.0, 1.0]), np.array([1, 0, 2]), k=2))
    0.5
    """
    k = check_positive_int(k, allow_none=False)
    threshold = check_positive_int(threshold, "threshold", allow_none=False)
    check_choice(short_list, "short_list", SHORT_LIST_RULES)
    ranked = rank_lists(scores, labels, mask=mask, grade_counts=grade_counts, ties=ties)
    relevant = (torch.arange(ranked.num_grades + 1, device=ranked.grades.device) >= threshold).to(torch.float64)
    values = _discounted_sum(ranked, relevant, ranked.positions().new_ones(ranked.list_size), k) / k
    values, defined = _zero_short_lists(values, None, ranked, k, short_list)
    return finalize(values, defined, ranked.spec, empty_value=empty_value, reduction=reduction)


def rbp(
    scores: ArrayLike,
    labels: ArrayLike,
    *,
    persistence: float = 0.8,
    threshold: int = 1,
    k: int | None = None,
    mask: ArrayLike | None = None,
    grade_counts: ArrayLike | None = None,
    ties: str = "stable",
    empty_value: float = 0.0,
    reduction: str = "mean",
) -> MetricValue:
    r"""Rank-biased precision (Moffat and Zobel 2008), binary relevance at ``threshold``.

    .. math::

        \mathrm{RBP} = (1 - q) \sum_n q^{n-1}\, 1[r_n \ge \theta]

    with persistence q in (0, 1). Always defined. ``k`` truncates the sum (no residual).

    Examples
    --------
    >>> import numpy as np
    >>> from gaprank.metrics import rbp
    >>> round(float(rbp(np.array([3.0, 2.0, 1.0]), np.array([1, 0, 2]), persistence=0.5)), 4)
    0.625
    """
    q = check_probability(persistence, "persistence", open_interval=True)
    threshold = check_positive_int(threshold, "threshold", allow_none=False)
    k = check_positive_int(k)
    ranked = rank_lists(scores, labels, mask=mask, grade_counts=grade_counts, ties=ties)
    relevant = (torch.arange(ranked.num_grades + 1, device=ranked.grades.device) >= threshold).to(torch.float64)
    weights = (1 - q) * torch.pow(q, ranked.positions() - 1)
    values = _discounted_sum(ranked, relevant, weights, k)
    return finalize(values, None, ranked.spec, empty_value=empty_value, reduction=reduction)


def errbp(
    scores: ArrayLike,
    labels: ArrayLike,
    *,
    p: ArrayLike,
    persistence: float = 0.8,
    k: int | None = None,
    mask: ArrayLike | None = None,
    grade_counts: ArrayLike | None = None,
    ties: str = "stable",
    empty_value: float = 0.0,
    reduction: str = "mean",
) -> MetricValue:
    r"""Expected random rank-biased precision, eRRBP (Ferrante, Ferro, Pontarollo, eq. 1).

    .. math::

        \mathrm{eRRBP} = (1 - q) \sum_n q^{n-1}\, p_{r_n}

    ``p[k]`` is the probability that a document of grade k is relevant, k = 0..c. Always defined.

    Examples
    --------
    >>> import numpy as np
    >>> from gaprank.metrics import errbp
    >>> round(float(errbp(np.array([3.0, 2.0, 1.0]), np.array([1, 2, 0]), p=[0.0, 0.5, 1.0], persistence=0.5)), 4)
    0.5
    """
    q = check_probability(persistence, "persistence", open_interval=True)
    k = check_positive_int(k)
    device = scores.device if isinstance(scores, torch.Tensor) else torch.device("cpu")
    pt = _check_relevance_probabilities(p, device)
    ranked = rank_lists(scores, labels, mask=mask, grade_counts=grade_counts, ties=ties,
                        num_grades=pt.numel() - 1, scale_source=f"p (grades 0..{pt.numel() - 1})")
    weights = (1 - q) * torch.pow(q, ranked.positions() - 1)
    values = _discounted_sum(ranked, pt.to(ranked.grades.device), weights, k)
    return finalize(values, None, ranked.spec, empty_value=empty_value, reduction=reduction)


def err(
    scores: ArrayLike,
    labels: ArrayLike,
    *,
    max_grade: int | None = None,
    k: int | None = None,
    mask: ArrayLike | None = None,
    grade_counts: ArrayLike | None = None,
    ties: str = "stable",
    empty_value: float = 0.0,
    reduction: str = "mean",
) -> MetricValue:
    r"""Expected reciprocal rank (Chapelle, Metzler, Zhang and Grinspan, CIKM 2009).

    .. math::

        \mathrm{ERR} = \sum_n \frac{1}{n} R_n \prod_{i<n} (1 - R_i),
        \qquad R = \frac{2^{r} - 1}{2^{g_{max}}}

    ``max_grade`` (g_max) defaults to the largest label of the input; pass it explicitly to compare
    numbers across batches. Always defined.

    Examples
    --------
    >>> import numpy as np
    >>> from gaprank.metrics import err
    >>> round(float(err(np.array([3.0, 2.0, 1.0]), np.array([1, 2, 0]), max_grade=2)), 4)
    0.5312
    """
    k = check_positive_int(k)
    if max_grade is not None:
        max_grade = check_positive_int(max_grade, "max_grade", allow_none=False)
    ranked = rank_lists(scores, labels, mask=mask, grade_counts=grade_counts, ties=ties, num_grades=max_grade,
                        scale_source=f"max_grade={max_grade}")
    top = max(ranked.num_grades, 1)
    grades = torch.arange(ranked.num_grades + 1, dtype=torch.float64, device=ranked.grades.device)
    stop = ((torch.pow(2.0, grades) - 1.0) / 2.0**top)[ranked.grades] * ranked.valid  # [B, N]
    reach = torch.cumprod(torch.cat([stop.new_ones(ranked.batch, 1), 1.0 - stop[:, :-1]], -1), -1)
    values = stop * reach / ranked.positions()
    values = (values if k is None else values[:, :k]).sum(-1)
    return finalize(values, None, ranked.spec, empty_value=empty_value, reduction=reduction)


def _ideal_prefix(ranked: RankedLists, per_position: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]) -> torch.Tensor:
    """Cumulative sums along the ideal list, zero-padded to at least the list size: [B, max(N, L)]."""
    ideal = ranked.ideal_grades().to(torch.float64)
    length = max(ideal.shape[1], ranked.list_size)
    ideal = torch.nn.functional.pad(ideal, (0, length - ideal.shape[1]))
    return torch.cumsum(per_position(ideal, ranked.positions(length)), -1)


def q_measure(
    scores: ArrayLike,
    labels: ArrayLike,
    *,
    beta: float = 1.0,
    mask: ArrayLike | None = None,
    grade_counts: ArrayLike | None = None,
    ties: str = "stable",
    empty_value: float = 0.0,
    reduction: str = "mean",
) -> MetricValue:
    r"""Sakai's Q-measure with gain = grade (Kishida 2005, eq. 35 for beta = 1).

    .. math::

        v_Q = \frac{1}{R} \sum_i 1[x_i > 0]\,
              \frac{\sum_{k \le i} 1[x_k > 0] + \beta \sum_{k \le i} x_k}{i + \beta \sum_{k \le i} y_k}

    R = number of judged relevant documents, y = the ideal list. Undefined when R = 0.

    Examples
    --------
    >>> import numpy as np
    >>> from gaprank.metrics import q_measure
    >>> round(float(q_measure(np.array([5.0, 4, 3, 2, 1]), np.array([3, 2, 0, 0, 0]),
    ...                       grade_counts=[3, 1, 1, 1])), 3)  # Kishida's Table 5, pattern a
    0.667
    """
    try:
        beta = float(beta)
    except (TypeError, ValueError) as exc:
        raise GaprankInputError(f"beta must be a number; got {beta!r}") from exc
    if not (math.isfinite(beta) and beta >= 0):
        raise GaprankInputError(f"beta must be finite and >= 0; got {beta!r}")
    ranked = rank_lists(scores, labels, mask=mask, grade_counts=grade_counts, ties=ties)
    x = (ranked.grades * ranked.valid).to(torch.float64)
    relevant = (x > 0).to(torch.float64)
    ideal_gain = _ideal_prefix(ranked, lambda y, pos: y)[:, : ranked.list_size]
    ratio = (torch.cumsum(relevant, -1) + beta * torch.cumsum(x, -1)) / (ranked.positions() + beta * ideal_gain)
    num_relevant = ranked.recall_base[:, 1] if ranked.num_grades else x.new_zeros(ranked.batch)
    values = (relevant * ratio).sum(-1) / torch.clamp(num_relevant, min=1.0)
    return finalize(values, num_relevant > 0, ranked.spec, empty_value=empty_value, reduction=reduction)


def sliding_ratio(
    scores: ArrayLike,
    labels: ArrayLike,
    *,
    k: int | None = None,
    mask: ArrayLike | None = None,
    grade_counts: ArrayLike | None = None,
    ties: str = "stable",
    empty_value: float = 0.0,
    reduction: str = "mean",
) -> MetricValue:
    r"""Sagara's modified sliding ratio (Kishida 2005, eq. 27).

    .. math::

        v_{S'} = \frac{\sum_{i \le n} x_i / i}{\sum_{i \le n} y_i / i}

    n = the list length (or ``k``), y = the ideal list truncated at n. Undefined when the ideal sum is 0.

    Examples
    --------
    >>> import numpy as np
    >>> from gaprank.metrics import sliding_ratio
    >>> round(float(sliding_ratio(np.array([5.0, 4, 3, 2, 1]), np.array([3, 2, 0, 0, 0]),
    ...                           grade_counts=[3, 1, 1, 1])), 3)  # Kishida's Table 5, pattern a
    0.923
    """
    k = check_positive_int(k)
    ranked = rank_lists(scores, labels, mask=mask, grade_counts=grade_counts, ties=ties)
    grades = torch.arange(ranked.num_grades + 1, dtype=torch.float64, device=ranked.grades.device)
    numerator = _discounted_sum(ranked, grades, 1.0 / ranked.positions(), k)
    ideal = _ideal_prefix(ranked, lambda y, pos: y / pos)
    cutoff = ranked.n_docs if k is None else torch.clamp(ranked.n_docs, max=k)
    denominator = ideal.gather(-1, (cutoff - 1).clamp(min=0)[:, None]).squeeze(-1) * (cutoff > 0)
    values = numerator / torch.where(denominator > 0, denominator, torch.ones_like(denominator))
    return finalize(values, denominator > 0, ranked.spec, empty_value=empty_value, reduction=reduction)
