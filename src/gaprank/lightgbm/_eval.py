"""Ranking measures as LightGBM eval functions (``feval`` of ``lgb.train``, ``eval_metric`` of ``LGBMRanker``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from .._inputs import GaprankInputError
from .._padding import LengthBucket, check_group_sizes, length_buckets, per_query_by_bucket
from .._typing import ArrayLike
from ..metrics import Conventions, Measure, get_conventions, parse_measure, resolve_g
from ._folds import check_whole_queries
from ._layout import LayoutCache, check_flat_labels, check_flat_scores


@dataclass
class _BucketedLabels:
    """A data set's labels and its length buckets (each padded to its own longest query), built once."""

    labels: np.ndarray
    buckets: list[LengthBucket]
    group_sizes: np.ndarray

    @classmethod
    def build(cls, labels: ArrayLike, group: ArrayLike | None) -> _BucketedLabels:
        y = check_flat_labels(labels)
        sizes = check_group_sizes(group, y.size)
        return cls(y, length_buckets(sizes), sizes)


class RankingEval:
    """Mean of each measure over the queries of a LightGBM data set; see :func:`ranking_feval`."""

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
        self.conventions = get_conventions(conventions)
        self._layouts = LayoutCache(_BucketedLabels.build)

    def __repr__(self) -> str:
        return (f"ranking_feval({[m.name for m in self.measures]}, g={self.g}, "
                f"conventions={self.conventions.name!r})")

    def per_query(self, preds: ArrayLike, labels: ArrayLike, group: ArrayLike | None) -> dict[str, np.ndarray]:
        """``{name: value of each query}``, queries in the order of ``group``."""
        layout = self._layouts.get(labels, group)
        scores = check_flat_scores(preds, layout.labels.size)
        # a measure whose scale defaults to the largest label takes the whole set's, not a bucket's
        top = int(layout.labels.max())
        options = {m.name: {**self.conventions.keywords(m.function), **m.whole_set_keywords(top, self.g)}
                   for m in self.measures}

        def evaluate(bucket: LengthBucket) -> dict[str, Any]:
            s, y = bucket.take(scores), bucket.take(layout.labels)
            return {m.name: m(s, y, mask=bucket.mask, reduction="none", **options[m.name]) for m in self.measures}

        return per_query_by_bucket(layout.buckets, layout.group_sizes.size, evaluate)

    def evaluate(self, preds: ArrayLike, labels: ArrayLike, group: ArrayLike | None) -> dict[str, float]:
        """``{name: mean over queries}`` for flat predictions and labels grouped by ``group`` sizes."""
        return {name: float(np.mean(values)) for name, values in self.per_query(preds, labels, group).items()}

    def __call__(self, first: Any, second: Any, weight: ArrayLike | None = None,
                 group: ArrayLike | None = None) -> list[tuple[str, float, bool]]:
        """``lgb.train`` calls ``(preds, eval_data)``; ``LGBMRanker`` calls ``(y_true, y_pred, weight, group)``."""
        import lightgbm

        labels: Any
        sizes: Any
        if isinstance(second, lightgbm.Dataset):
            check_whole_queries(second)
            preds, labels, sizes = first, second.get_label(), second.get_group()
        else:
            labels, preds, sizes = first, second, group
        return [(name, value, True) for name, value in self.evaluate(preds, labels, sizes).items()]


def ranking_feval(
    measures: Sequence[str] = ("GAP", "eGAP", "xGAP", "nDCG@10", "MAP", "P@10"),
    *,
    g: ArrayLike | None = None,
    conventions: str | Conventions = "letor3",
) -> RankingEval:
    """Ranking measures for LightGBM: ``lgb.train(feval=...)`` and ``LGBMRanker.fit(eval_metric=...)``.

    Each measure is a :func:`gaprank.metrics.parse_measure` name ("GAP", "nDCG@10", "P(rel=2)@5", ...);
    its value is the mean over the data set's queries of the :mod:`gaprank.metrics` function, with the
    named ``conventions`` ("letor3": LETOR 3.0's Eval-Score tool -- NDCG gain 2^l - 1 and discount
    1/max(1, log2 n), queries shorter than k score 0 at k, no relevant document scores 0; ties in row
    order). ``g`` goes to GAP/xGAP/eGAP. Every value is reported as higher-is-better, so LightGBM's
    early stopping works on any of them.

    Parameters
    ----------
    measures : sequence of str
        Measure strings (:func:`gaprank.metrics.parse_measure`), e.g. ``["GAP", "nDCG@10", "P(rel=2)@5"]``.
    g : array-like, optional
        GAP's user model for GAP, xGAP and eGAP.
    conventions : {"letor3", "letor4"} or Conventions
        How nDCG, P@k and short lists are scored (LETOR 3.0's or 4.0's evaluation tool).

    Returns
    -------
    RankingEval
        Callable as ``feval(preds, eval_data)`` (``lgb.train``) and ``eval_metric(y_true, y_pred, weight,
        group)`` (``LGBMRanker``), returning ``[(name, value, True), ...]``; ``evaluate`` and ``per_query``
        give the values directly.

    Examples
    --------
    >>> import lightgbm as lgb, numpy as np
    >>> from gaprank.lightgbm import lambdarank_objective, ranking_feval
    >>> rng = np.random.default_rng(0)
    >>> X, y = rng.normal(size=(60, 3)), rng.integers(0, 3, 60)
    >>> train = lgb.Dataset(X, y, group=[20, 20, 20])
    >>> history = {}
    >>> booster = lgb.train({"objective": lambdarank_objective("gap"), "verbosity": -1, "min_data_in_leaf": 5},
    ...                     train, num_boost_round=3, valid_sets=[train], valid_names=["train"],
    ...                     feval=ranking_feval(["GAP", "nDCG@10"]), callbacks=[lgb.record_evaluation(history)])
    >>> sorted(history["train"])
    ['GAP', 'nDCG@10']
    """
    return RankingEval(list(measures), g=g, conventions=conventions)
