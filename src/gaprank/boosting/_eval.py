"""Ranking measures over flat rows grouped by query, engine-neutral (LightGBM's ``feval``, XGBoost's
``custom_metric`` and PyTorch training all report through it)."""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

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
    length buckets: what every booster's eval adapter and PyTorch training report.

    A measure string means what the metric function of its name computes (``"nDCG@10"`` is :func:`gaprank.ndcg`
    at k = 10), as everywhere in gaprank. Named ``conventions`` (an evaluation tool's rules: LETOR's short lists
    scored 0, its discount) change that, so the boosters' adapters report a measure they change under its string
    and the conventions' name (:attr:`names`: ``"nDCG@10[letor3]"``).

    Parameters
    ----------
    measures : sequence of str
        Measure strings (:func:`gaprank.metrics.parse_measure`), e.g. ``["GAP", "nDCG@10", "P(rel=2)@5"]``.
    g : array_like, optional
        GAP's user model for GAP, xGAP and eGAP.
    conventions : {"letor3", "letor4", "trec"} or Conventions, optional
        An evaluation tool's rules for nDCG, P@k and short lists (:data:`gaprank.metrics.CONVENTIONS`), to
        reproduce its published numbers; default none: each measure as its string says.

    Attributes
    ----------
    names : list of str
        The name each measure is reported under by the LightGBM and XGBoost adapters: its string, followed by
        the conventions' name in brackets where they change its value (no space: XGBoost splits its eval log
        at spaces).

    Examples
    --------
    >>> import numpy as np
    >>> from gaprank.boosting import RankingEval
    >>> scores, labels = np.array([0.9, 0.1, 0.2, 0.8]), np.array([2, 0, 1, 0])
    >>> RankingEval(["GAP", "nDCG@10"], g=[0.5, 0.5]).evaluate(scores, labels, [2, 2])
    {'GAP': 0.75, 'nDCG@10': 0.8154648767857288}
    >>> RankingEval(["GAP", "nDCG@10"], g=[0.5, 0.5], conventions="letor3").names  # queries shorter than 10 score 0
    ['GAP', 'nDCG@10[letor3]']
    """

    def __init__(self, measures: Sequence[str], *, g: ArrayLike | None = None,
                 conventions: str | Conventions | None = None) -> None:
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
        self.conventions = None if conventions is None else get_conventions(conventions)
        self.names = [m.name if not self._changed(m) else f"{m.name}[{self.conventions.name}]"  # type: ignore[union-attr]
                      for m in self.measures]
        self._layouts = LayoutCache(_GroupedLabels.build)

    def __repr__(self) -> str:
        conventions = None if self.conventions is None else self.conventions.name
        return f"{type(self).__name__}({[m.name for m in self.measures]}, g={self.g}, conventions={conventions!r})"

    def _keywords(self, measure: Measure) -> dict[str, Any]:
        """The keywords the conventions give ``measure`` (none without conventions); its string's own win."""
        return {} if self.conventions is None else self.conventions.keywords(measure)

    def _changed(self, measure: Measure) -> bool:
        """Whether the conventions change a value of ``measure``: a keyword they give that its string does not
        set, other than the metric function's default."""
        defaults = inspect.signature(measure.info.function).parameters
        return any(key not in measure.kwargs and (key not in defaults or defaults[key].default != value)
                   for key, value in self._keywords(measure).items())

    def per_query(self, preds: ArrayLike, labels: ArrayLike, group: ArrayLike | None) -> dict[str, np.ndarray]:
        """``{name: value of each query}``, queries in the order of ``group``."""
        layout = self._layouts.get(labels, group)
        scores = check_flat_scores(preds, layout.labels.size)
        # a measure whose scale defaults to the largest label takes the whole set's, not a bucket's
        top = int(layout.labels.max())
        calls = [MeasureCall(m.name, m, {**self._keywords(m), **m.whole_set_keywords(top)}) for m in self.measures]
        return layout.grouped.evaluate(calls, scores, layout.labels)

    def evaluate(self, preds: ArrayLike, labels: ArrayLike, group: ArrayLike | None) -> dict[str, float]:
        """``{measure string: mean over queries}`` for flat predictions and labels grouped by ``group`` sizes."""
        return {name: float(np.mean(values)) for name, values in self.per_query(preds, labels, group).items()}
