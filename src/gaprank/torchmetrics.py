"""GAP, xGAP and eGAP as torchmetrics retrieval metrics: ``RetrievalGAP``, ``RetrievalXGAP``, ``RetrievalEGAP``.

They take what torchmetrics' retrieval metrics take (``update(preds, target, indexes)``, flat tensors, one
query id per document) with graded targets, and keep their state as torchmetrics does (every document,
synchronised across processes by torchmetrics). ``compute()`` groups the documents by query, pads the
queries in a few buckets of similar length and evaluates each bucket with one call of gaprank's batched
metric: no Python loop over queries:

```python
from gaprank.torchmetrics import RetrievalGAP

metric = RetrievalGAP(g=[0.5, 0.5], top_k=10)
metric.update(preds, target, indexes=indexes)   # per batch
metric.compute()
```

Tied scores keep their order of arrival (gaprank's ``ties="stable"``). A query whose measure is undefined
(no document of a grade the measure counts) follows ``empty_target_action``, as in torchmetrics. With
``top_k`` the measure divides by every relevant document of the query, as trec_eval's cut measures do;
``normalize_by="retrieved"`` divides by the relevant documents retrieved instead, as torchmetrics'
``RetrievalMAP`` does, so that ``RetrievalGAP(g=[1], normalize_by="retrieved")`` gives ``RetrievalMAP``'s
values on binary targets.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from ._extras import missing_extra

try:
    from torchmetrics.retrieval.base import RetrievalMetric, _retrieval_aggregate
    from torchmetrics.utilities.data import dim_zero_cat
except ImportError as _exc:
    raise missing_extra("torchmetrics", "torchmetrics", "gaprank.torchmetrics") from _exc

from ._grouped import GroupedLists, MeasureCall
from ._inputs import MAX_GRADE, GaprankInputError, check_integer_grades, check_positive_int
from ._padding import group_positions
from ._typing import ArrayLike
from .metrics import parse_measure, resolve_g

__all__ = ["RetrievalGAP", "RetrievalXGAP", "RetrievalEGAP"]

EMPTY_TARGET_ACTIONS = ("error", "skip", "neg", "pos")
NORMALIZE_BY = ("all", "retrieved")
INTEGER_DTYPES = (torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8)


class _GradedRetrievalMetric(RetrievalMetric):
    """A gaprank measure of the user-model family as a torchmetrics retrieval metric; see the module doc."""

    measure_name = ""
    higher_is_better = True
    is_differentiable = False
    full_state_update = False

    def __init__(self, g: ArrayLike | None = None, top_k: int | None = None, empty_target_action: str = "neg",
                 ignore_index: int | None = None, aggregation: Any = "mean", normalize_by: str = "all",
                 **kwargs: Any) -> None:
        if empty_target_action not in EMPTY_TARGET_ACTIONS:
            raise GaprankInputError(f"empty_target_action must be one of {', '.join(EMPTY_TARGET_ACTIONS)}; "
                                    f"got {empty_target_action!r}")
        if normalize_by not in NORMALIZE_BY:
            raise GaprankInputError(f"normalize_by must be one of {', '.join(NORMALIZE_BY)}; got {normalize_by!r}")
        self.normalize_by = normalize_by
        super().__init__(empty_target_action=empty_target_action, ignore_index=ignore_index, aggregation=aggregation,
                         **kwargs)
        self.allow_non_binary_target = True  # graded targets
        self.top_k = check_positive_int(top_k, "top_k", allow_none=True)
        checked = resolve_g(g, torch.device("cpu"))
        self.g = None if checked is None else checked.tolist()
        self._measure = parse_measure(self.measure_name if self.top_k is None else f"{self.measure_name}@{self.top_k}"
                                      ).with_params(g=self.g)
        # normalize_by="retrieved": the retrieved documents alone
        self._uncut = parse_measure(self.measure_name).with_params(g=self.g)

    def update(self, preds: torch.Tensor, target: torch.Tensor, indexes: torch.Tensor) -> None:
        """Add a batch of documents: scores, graded targets (integers 0..30, in an integer or a float tensor;
        a bool tensor is read as grades 0 and 1) and the integer id of each document's query."""
        for name, value in (("preds", preds), ("target", target), ("indexes", indexes)):
            if not isinstance(value, torch.Tensor):
                raise GaprankInputError(f"{name} must be a tensor; got {type(value).__name__}")
        if indexes.dtype not in INTEGER_DTYPES:
            raise GaprankInputError(f"indexes must be an integer tensor (the query of each document); got {indexes.dtype}")
        if target.dtype == torch.bool:
            target = target.long()  # binary relevance, as torchmetrics takes it
        if not (target.is_floating_point() or target.dtype in INTEGER_DTYPES):
            raise GaprankInputError(f"target must hold integer grades, in an integer or a float tensor; got {target.dtype}")
        if not preds.is_floating_point():
            raise GaprankInputError(f"preds must be a float tensor; got {preds.dtype}")
        if target.shape != preds.shape or indexes.shape != preds.shape:
            raise GaprankInputError(f"indexes, preds and target must have the same shape; got "
                                    f"{tuple(indexes.shape)}, {tuple(preds.shape)}, {tuple(target.shape)}")
        grades = target if self.ignore_index is None else target[target != self.ignore_index]
        check_integer_grades(grades, f"target must hold integer grades 0..{MAX_GRADE}")
        if not bool(torch.isfinite(preds).all()):
            raise GaprankInputError("preds must be finite")
        super().update(preds, target.long(), indexes.long())

    def compute(self) -> torch.Tensor:
        """The measure of every query, aggregated; queries padded in buckets, one batched call each."""
        preds = dim_zero_cat(self.preds)
        # documents of one query together, queries by id, a query's documents in arrival order
        grouped = GroupedLists.from_query_ids(dim_zero_cat(self.indexes).cpu().numpy())
        scores = grouped.flat(preds.detach().double().cpu().numpy())
        grades = grouped.flat(dim_zero_cat(self.target).cpu().numpy())
        values = torch.as_tensor(self._per_query(scores, grades, grouped.group_sizes))
        undefined = torch.isnan(values)
        if bool(undefined.any()):
            if self.empty_target_action == "error":
                raise GaprankInputError(f"{type(self).__name__}: a query has no relevant document "
                                        "(empty_target_action='error')")
            if self.empty_target_action == "skip":
                values = values[~undefined]
            else:
                values = values.masked_fill(undefined, 1.0 if self.empty_target_action == "pos" else 0.0)
        if not values.numel():
            return torch.tensor(0.0, dtype=preds.dtype, device=preds.device)
        return _retrieval_aggregate(values, self.aggregation).to(dtype=preds.dtype, device=preds.device)

    def _per_query(self, scores: np.ndarray, grades: np.ndarray, sizes: np.ndarray) -> np.ndarray:
        """The measure of each query (documents grouped by query, ``sizes`` of them each), NaN where it is
        undefined on the query's documents (no document of a grade the measure counts)."""
        # settings that default from the data (a uniform g) from every document, not one bucket's
        top = int(grades.max(initial=0))
        keywords = self._measure.whole_set_keywords(top)
        _, scale, scale_source = self._measure.settings()
        if scale is not None and top > scale:  # checked here: documents not retrieved are masked below
            raise GaprankInputError(f"label {top} is above the grade scale 0..{scale} set by {scale_source}")
        grouped = GroupedLists(sizes)
        options = {"empty_value": float("nan"), **keywords}
        if self.normalize_by == "all":
            return grouped.evaluate([MeasureCall("value", self._measure, options)], scores, grades)["value"]
        per_query = grouped.evaluate([MeasureCall("value", self._uncut, options, mask=self._retrieved(scores, sizes)),
                                      MeasureCall("all", self._uncut, options)], scores, grades)
        # a query with relevant documents, none of them retrieved, scores 0 (torchmetrics' rule)
        return np.where(np.isnan(per_query["all"]), np.nan, np.nan_to_num(per_query["value"], nan=0.0))

    def _retrieved(self, scores: np.ndarray, sizes: np.ndarray) -> np.ndarray:
        """Which documents torchmetrics' RetrievalMAP counts as retrieved: scored above 0 and ranked within
        ``top_k`` of their query (ties in order of arrival). They are a prefix of each query's ranking."""
        query, _ = group_positions(sizes)
        by_score = np.lexsort((-scores, query))  # stable: tied scores keep their order of arrival
        starts = np.cumsum(sizes) - sizes
        rank = np.empty(scores.size, dtype=np.int64)
        rank[by_score] = np.arange(scores.size) - starts[query[by_score]]
        retrieved = scores > 0
        return retrieved if self.top_k is None else retrieved & (rank < self.top_k)

    def _metric(self, preds: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        """One query's value (torchmetrics' per-query hook; :meth:`compute` never calls it)."""
        value = self._per_query(preds.detach().double().cpu().numpy(), target.cpu().numpy(),
                                np.array([preds.numel()]))
        return torch.as_tensor(value[0], dtype=preds.dtype, device=preds.device)


# the torchmetrics metrics' parameters, written once: tools/docstrings.py writes them into each class's docstring
_PARAMETERS: dict[str, tuple[str, str]] = {
    'g': ('sequence of float, optional',
        'User threshold probabilities g_1..g_c (default uniform over grades 1..c, c the largest target seen '
        'when computing: pass ``g`` to compare values across runs).'),
    'top_k': ('int, optional',
        "Only ranks 1..k count (divided by every relevant document of the query, as trec_eval's cut measures "
        'are, unless ``normalize_by="retrieved"``).'),
    'empty_target_action': ('{"neg", "pos", "skip", "error"}',
        'A query whose measure is undefined (no relevant document) counts 0 ("neg"), 1 ("pos"), is left out '
        '("skip", 0 when every query is) or raises ("error").'),
    'ignore_index': ('int, optional',
        'Documents whose target equals it are dropped.'),
    'aggregation': ('{"mean", "median", "min", "max"} or callable',
        'How the per-query values are aggregated.'),
    'normalize_by': ('{"all", "retrieved"}',
        'Which relevant documents the measure divides by. ``"all"`` (default): every relevant document of the'
        ' query, retrieved or not (trec_eval\'s ``map_cut``). ``"retrieved"``: only those retrieved, that is '
        "ranked within ``top_k`` and scored above 0, as torchmetrics' ``RetrievalMAP`` counts them; the value"
        ' is then the measure of the retrieved documents alone, and a query with relevant documents but none '
        "retrieved scores 0. With ``g=[1]`` and binary targets this gives ``RetrievalMAP``'s values."),
    '**kwargs': ('',
        "torchmetrics' ``Metric`` keywords (``dist_sync_on_step``, ``process_group``, ...)."),
}


class RetrievalGAP(_GradedRetrievalMetric):
    r"""Graded Average Precision (:func:`gaprank.gap`) as a torchmetrics retrieval metric.

    Parameters
    ----------
    g : sequence of float, optional
        User threshold probabilities g_1..g_c (default uniform over grades 1..c, c the largest
        target seen when computing: pass ``g`` to compare values across runs).
    top_k : int, optional
        Only ranks 1..k count (divided by every relevant document of the query, as trec_eval's cut
        measures are, unless ``normalize_by="retrieved"``).
    empty_target_action : {"neg", "pos", "skip", "error"}
        A query whose measure is undefined (no relevant document) counts 0 ("neg"), 1 ("pos"), is
        left out ("skip", 0 when every query is) or raises ("error").
    ignore_index : int, optional
        Documents whose target equals it are dropped.
    aggregation : {"mean", "median", "min", "max"} or callable
        How the per-query values are aggregated.
    normalize_by : {"all", "retrieved"}
        Which relevant documents the measure divides by. ``"all"`` (default): every relevant
        document of the query, retrieved or not (trec_eval's ``map_cut``). ``"retrieved"``: only
        those retrieved, that is ranked within ``top_k`` and scored above 0, as torchmetrics'
        ``RetrievalMAP`` counts them; the value is then the measure of the retrieved documents
        alone, and a query with relevant documents but none retrieved scores 0. With ``g=[1]`` and
        binary targets this gives ``RetrievalMAP``'s values.
    **kwargs
        torchmetrics' ``Metric`` keywords (``dist_sync_on_step``, ``process_group``, ...).

    Examples
    --------
    >>> import torch
    >>> from gaprank.torchmetrics import RetrievalGAP
    >>> metric = RetrievalGAP(g=[0.5, 0.5])
    >>> metric.update(torch.tensor([0.9, 0.5, 0.1, 0.8, 0.3]), torch.tensor([1, 0, 2, 2, 1]),
    ...               indexes=torch.tensor([0, 0, 0, 1, 1]))
    >>> round(float(metric.compute()), 4)
    0.8333
    """

    measure_name = "GAP"


class RetrievalXGAP(_GradedRetrievalMetric):
    r"""Extended Graded Average Precision (:func:`gaprank.xgap`) as a torchmetrics retrieval metric.

    Parameters
    ----------
    g : sequence of float, optional
        User threshold probabilities g_1..g_c (default uniform over grades 1..c, c the largest
        target seen when computing: pass ``g`` to compare values across runs).
    top_k : int, optional
        Only ranks 1..k count (divided by every relevant document of the query, as trec_eval's cut
        measures are, unless ``normalize_by="retrieved"``).
    empty_target_action : {"neg", "pos", "skip", "error"}
        A query whose measure is undefined (no relevant document) counts 0 ("neg"), 1 ("pos"), is
        left out ("skip", 0 when every query is) or raises ("error").
    ignore_index : int, optional
        Documents whose target equals it are dropped.
    aggregation : {"mean", "median", "min", "max"} or callable
        How the per-query values are aggregated.
    normalize_by : {"all", "retrieved"}
        Which relevant documents the measure divides by. ``"all"`` (default): every relevant
        document of the query, retrieved or not (trec_eval's ``map_cut``). ``"retrieved"``: only
        those retrieved, that is ranked within ``top_k`` and scored above 0, as torchmetrics'
        ``RetrievalMAP`` counts them; the value is then the measure of the retrieved documents
        alone, and a query with relevant documents but none retrieved scores 0. With ``g=[1]`` and
        binary targets this gives ``RetrievalMAP``'s values.
    **kwargs
        torchmetrics' ``Metric`` keywords (``dist_sync_on_step``, ``process_group``, ...).

    Examples
    --------
    >>> import torch
    >>> from gaprank.torchmetrics import RetrievalXGAP
    >>> metric = RetrievalXGAP(g=[0.5, 0.5])
    >>> metric.update(torch.tensor([0.9, 0.5, 0.1, 0.8, 0.3]), torch.tensor([1, 0, 2, 2, 1]),
    ...               indexes=torch.tensor([0, 0, 0, 1, 1]))
    >>> round(float(metric.compute()), 4)
    0.8125
    """

    measure_name = "xGAP"


class RetrievalEGAP(_GradedRetrievalMetric):
    r"""Expected Graded Average Precision (:func:`gaprank.egap`) as a torchmetrics retrieval metric.

    Parameters
    ----------
    g : sequence of float, optional
        User threshold probabilities g_1..g_c (default uniform over grades 1..c, c the largest
        target seen when computing: pass ``g`` to compare values across runs).
    top_k : int, optional
        Only ranks 1..k count (divided by every relevant document of the query, as trec_eval's cut
        measures are, unless ``normalize_by="retrieved"``).
    empty_target_action : {"neg", "pos", "skip", "error"}
        A query whose measure is undefined (no relevant document) counts 0 ("neg"), 1 ("pos"), is
        left out ("skip", 0 when every query is) or raises ("error").
    ignore_index : int, optional
        Documents whose target equals it are dropped.
    aggregation : {"mean", "median", "min", "max"} or callable
        How the per-query values are aggregated.
    normalize_by : {"all", "retrieved"}
        Which relevant documents the measure divides by. ``"all"`` (default): every relevant
        document of the query, retrieved or not (trec_eval's ``map_cut``). ``"retrieved"``: only
        those retrieved, that is ranked within ``top_k`` and scored above 0, as torchmetrics'
        ``RetrievalMAP`` counts them; the value is then the measure of the retrieved documents
        alone, and a query with relevant documents but none retrieved scores 0. With ``g=[1]`` and
        binary targets this gives ``RetrievalMAP``'s values.
    **kwargs
        torchmetrics' ``Metric`` keywords (``dist_sync_on_step``, ``process_group``, ...).

    Examples
    --------
    >>> import torch
    >>> from gaprank.torchmetrics import RetrievalEGAP
    >>> metric = RetrievalEGAP(g=[0.5, 0.5])
    >>> metric.update(torch.tensor([0.9, 0.5, 0.1, 0.8, 0.3]), torch.tensor([1, 0, 2, 2, 1]),
    ...               indexes=torch.tensor([0, 0, 0, 1, 1]))
    >>> round(float(metric.compute()), 4)
    0.7917
    """

    measure_name = "eGAP"
