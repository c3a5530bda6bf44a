"""Evaluation as published LETOR numbers are computed (Eval-Score-3.0.pl / Eval-Score-4.0.pl).

Both tools rank by score, ties in file order; NDCG@k uses gain 2^l - 1, discount 1/max(1, log2 rank)
and the ideal ranking of the query's own labels, a query whose ideal DCG is 0 scoring 0; MAP and P@k
count labels >= 1 as relevant, a query with no relevant document scoring 0; means are over all queries.
They differ on queries with fewer than k documents:

* ``letor3``: both NDCG@k and P@k are 0 (the tool leaves them unset and averages over all queries);
* ``letor4``: P@k counts the missing ranks as non-relevant (divides by k); NDCG@k is still 0.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._grouped import GroupedLists, MeasureCall
from .._inputs import GaprankInputError
from .._padding import check_group_sizes
from .._typing import ArrayLike
from . import _measures as F
from ._names import Measure, parse_measure
from ._registry import MeasureInfo, user_model_measures
from ._registry import measures as registry_entries


@dataclass(frozen=True)
class Conventions:
    """Named evaluation conventions; every field is a keyword of the metric functions."""

    name: str
    ndcg_gain: str = "exp2"
    ndcg_discount: str = "jk"
    ndcg_short_list: str = "zero"
    precision_short_list: str = "zero"
    ties: str = "stable"
    empty_value: float = 0.0

    def describe(self) -> dict[str, Any]:
        return dict(self.__dict__)

    def keywords(self, measure: MeasureInfo | Measure | Callable[..., Any]) -> dict[str, Any]:
        """The keywords these conventions give a measure (its entry, a parsed measure string or its metric
        function), decided by the parameters the registry declares for it: every measure takes ``ties`` and
        ``empty_value``; one with ``gain`` or ``discount`` takes nDCG's; ``short_list`` follows nDCG's rule for
        a graded measure (one with a ``gain``) and P@k's for a binary one."""
        info = _entry_of(measure)
        own = {param.keyword for param in info.params}
        common: dict[str, Any] = {"ties": self.ties, "empty_value": self.empty_value}
        if "gain" in own:
            common["gain"] = self.ndcg_gain
        if "discount" in own:
            common["discount"] = self.ndcg_discount
        if "short_list" in own:
            common["short_list"] = self.ndcg_short_list if "gain" in own else self.precision_short_list
        return common


def _entry_of(measure: MeasureInfo | Measure | Callable[..., Any]) -> MeasureInfo:
    """The registry entry of a measure given as its entry, a parsed measure string or its metric function."""
    if isinstance(measure, MeasureInfo):
        return measure
    if isinstance(measure, Measure):
        return measure.info
    for info in registry_entries():
        if info.function is measure:
            return info
    raise GaprankInputError(f"{getattr(measure, '__name__', measure)!r} is not the metric function of a registered "
                            "measure")


CONVENTIONS = {
    "letor3": Conventions("letor3"),
    "letor4": Conventions("letor4", precision_short_list="pad"),
    # trec_eval's and ir_measures': nDCG's gain is the grade itself, discount 1/log2(r+1), a short list is
    # scored over the ranks it has; P@k divides by k
    "trec": Conventions("trec", ndcg_gain="linear", ndcg_discount="log2p1", ndcg_short_list="pad",
                        precision_short_list="pad"),
}


def get_conventions(name: str | Conventions) -> Conventions:
    """The named evaluation conventions ("letor3", "letor4", "trec"); a :class:`Conventions` passes through.

    Parameters
    ----------
    name : str or Conventions
        "letor3" or "letor4" (LETOR's tools), "trec" (trec_eval's and ir_measures'), or conventions already
        built.

    Returns
    -------
    Conventions
    """
    if isinstance(name, Conventions):
        return name
    if name not in CONVENTIONS:
        raise GaprankInputError(f"conventions must be one of {sorted(CONVENTIONS)}; got {name!r}")
    return CONVENTIONS[name]


def letor_measure_names(max_cutoff: int = 10) -> list[str]:
    """The measures :func:`evaluate_letor` reports: NDCG@1..k, P@1..k, MAP and the user-model measures.

    Parameters
    ----------
    max_cutoff : int
        The largest k of NDCG@k and P@k.

    Returns
    -------
    list of str
        The names :func:`evaluate_letor` returns, in its order.
    """
    return ([f"NDCG@{k}" for k in range(1, max_cutoff + 1)] + [f"P@{k}" for k in range(1, max_cutoff + 1)]
            + ["MAP"] + [info.name for info in user_model_measures()])


def evaluate_letor(
    scores: ArrayLike,
    labels: ArrayLike,
    group_sizes: Any,
    *,
    g: ArrayLike | None = None,
    conventions: str | Conventions = "letor3",
    max_cutoff: int = 10,
) -> dict[str, np.ndarray]:
    """Per-query NDCG@1..k, P@1..k, MAP (LETOR conventions) and GAP, xGAP, eGAP for flat inputs.

    ``scores``, ``labels``: one entry per document, grouped by query in file order; ``group_sizes``:
    documents per query. Returns ``{measure: values [queries]}`` in the order of the groups.

    Parameters
    ----------
    scores, labels : array_like
        One entry per document, grouped by query in file order.
    group_sizes : array_like
        Documents per query.
    g : array_like, optional
        GAP's user model for GAP, xGAP and eGAP.
    conventions : {"letor3", "letor4"} or Conventions
        The evaluation tool whose conventions nDCG and P@k follow.
    max_cutoff : int
        The largest k of NDCG@k and P@k.

    Returns
    -------
    dict of str to numpy.ndarray
        ``{measure: value of each query}``, queries in the order of the groups.

    Examples
    --------
    >>> import numpy as np
    >>> from gaprank.metrics import evaluate_letor
    >>> out = evaluate_letor(np.array([0.5, 0.5, 0.1]), np.array([0, 2, 1]), [3], g=[0.5, 0.5])
    >>> float(out["P@1"][0]), float(out["MAP"][0])   # the tie keeps file order: label 0 first
    (0.0, 0.5833333333333333)
    """
    conv = get_conventions(conventions)
    scores = np.asarray(scores, dtype=np.float64)
    labels = np.asarray(labels)
    if scores.ndim != 1 or labels.shape != scores.shape:
        raise GaprankInputError(f"scores and labels must be 1-D of the same length; got {scores.shape} and {labels.shape}")
    sizes = check_group_sizes(group_sizes, scores.size, what="group_sizes")
    # GAP's default g is uniform over the whole set's grades, not a bucket's
    top = int(labels.max())
    ndcg, precision, average_precision = conv.keywords(F.NDCG), conv.keywords(F.P), conv.keywords(F.AP)
    calls = ([MeasureCall(f"NDCG@{k}", F.ndcg, {"k": k, **ndcg}) for k in range(1, max_cutoff + 1)]
             + [MeasureCall(f"P@{k}", F.precision, {"k": k, **precision}) for k in range(1, max_cutoff + 1)]
             + [MeasureCall("MAP", F.average_precision, average_precision)]
             # GAP, xGAP, eGAP beside LETOR's own measures
             + [MeasureCall(m.info.name, m, {**m.whole_set_keywords(top), **conv.keywords(m.info)})
                for m in (parse_measure(info.name).with_params(g=g) for info in user_model_measures())])
    return GroupedLists(sizes).evaluate(calls, scores, labels)
