"""Ranking measures over flat rows grouped by query, engine-neutral (LightGBM's ``feval``, XGBoost's
``custom_metric`` and PyTorch training all report through it)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from .._grouped import GroupedLists, MeasureCall
from .._inputs import GaprankInputError
from .._padding import check_group_sizes
from .._typing import ArrayLike
from ..metrics import Conventions, Measure, get_conventions, parse_measure, resolve_g
from ._layout import LayoutCache, check_flat_labels, check_flat_scores


@dataclass
class _GroupedLabels:
    """A data set's labels and its queries as grouped lists (length buckets built once, on first use)."""

    labels: np.ndarray
    grouped: GroupedLists

    @classmethod
    def build(cls, labels: ArrayLike, group: ArrayLike | None) -> _GroupedLabels:
        y = check_flat_labels(labels)
        sizes = check_group_sizes(group, y.size)
        return cls(y, GroupedLists(sizes))


class RankingEval:
    """The mean of each measure over the queries of a data set of flat rows grouped by query, evaluated in
    length buckets with the named conventions: what every booster's eval adapter and PyTorch training
    report.

    Parameters
    ----------
    measures : sequence of str
        Measure strings (:func:`gaprank.metrics.parse_measure`), e.g. ``["GAP", "nDCG@10", "P(rel=2)@5"]``.
    g : array-like, optional
        GAP's user model for GAP, xGAP and eGAP.
    conventions : {"letor3", "letor4"} or Conventions
        How nDCG, P@k and short lists are scored.

    Examples
    --------
    >>> import numpy as np
    >>> from gaprank.boosting import RankingEval
    >>> RankingEval(["GAP", "nDCG@2"], g=[0.5, 0.5]).evaluate(np.array([0.9, 0.1, 0.2, 0.8]), np.array([2, 0, 1, 0]), [2, 2])
    {'GAP': 0.75, 'nDCG@2': 1.0}
    """

    def __init__(self, measures: Sequence[str], *, g: ArrayLike | None = None, conventions: str | Conventions = "letor3") -> None:
        if isinstance(measures, str):
            measures = [measures]
        if len(measures) == 0:
            raise GaprankInputError("ranking_feval needs at least one measure, e.g. ['GAP', 'nDCG@10']")
        self.measures: list[Measure] = [parse_measure(m) for m in measures]
        names = [m.name for m in self.measures]
        if len(set(names)) != len(names):
            raise GaprankInputError(f"measure names must be unique (LightGBM keys results by name); got {names}")
        checked = resolve_g(g, torch.device("cpu"))
        self.g = None if checked is None else checked.tolist()
        # g joins the measures that take it and whose strings set none
        self.measures = [m.with_defaults(g=self.g) for m in self.measures]
        self.conventions = get_conventions(conventions)
        self._layouts = LayoutCache(_GroupedLabels.build)

    def __repr__(self) -> str:
        return (f"{type(self).__name__}({[m.name for m in self.measures]}, g={self.g}, "
                f"conventions={self.conventions.name!r})")

    def per_query(self, preds: ArrayLike, labels: ArrayLike, group: ArrayLike | None) -> dict[str, np.ndarray]:
        """``{name: value of each query}``, queries in the order of ``group``."""
        layout = self._layouts.get(labels, group)
        scores = check_flat_scores(preds, layout.labels.size)
        # a measure whose scale defaults to the largest label takes the whole set's, not a bucket's
        top = int(layout.labels.max())
        calls = [MeasureCall(m.name, m, {**self.conventions.keywords(m), **m.whole_set_keywords(top)})
                 for m in self.measures]
        return layout.grouped.evaluate(calls, scores, layout.labels)

    def evaluate(self, preds: ArrayLike, labels: ArrayLike, group: ArrayLike | None) -> dict[str, float]:
        """``{name: mean over queries}`` for flat predictions and labels grouped by ``group`` sizes."""
        return {name: float(np.mean(values)) for name, values in self.per_query(preds, labels, group).items()}
