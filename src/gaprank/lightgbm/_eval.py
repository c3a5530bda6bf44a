"""Ranking measures as LightGBM eval functions (``feval`` of ``lgb.train``, ``eval_metric`` of ``LGBMRanker``):
:class:`gaprank.boosting.RankingEval` in LightGBM's two calling conventions."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .._typing import ArrayLike
from ..boosting import RankingEval as _EngineNeutralEval
from ..metrics import Conventions
from ._folds import check_whole_queries


class LightGBMEval(_EngineNeutralEval):
    """:class:`gaprank.boosting.RankingEval` callable as LightGBM's ``feval`` and ``eval_metric``; see
    :func:`ranking_feval` (``gaprank.xgboost.XGBoostMetric`` is its XGBoost twin)."""

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
        values = self.evaluate(preds, labels, sizes).values()
        return [(name, value, True) for name, value in zip(self.names, values, strict=True)]


def ranking_feval(
    measures: Sequence[str] = ("GAP", "eGAP", "xGAP", "nDCG@10", "MAP", "P@10"),
    *,
    g: ArrayLike | None = None,
    conventions: str | Conventions | None = None,
) -> LightGBMEval:
    """Ranking measures for LightGBM: ``lgb.train(feval=...)`` and ``LGBMRanker.fit(eval_metric=...)``.

    Each measure is a :func:`gaprank.metrics.parse_measure` name ("GAP", "nDCG@10", "P(rel=2)@5", ...);
    its value is the mean over the data set's queries of the :mod:`gaprank.metrics` function, as everywhere
    in gaprank. Named ``conventions`` reproduce an evaluation tool's numbers ("letor3": LETOR 3.0's Eval-Score
    tool -- NDCG discount 1/max(1, log2 n), queries shorter than k score 0 at k, no relevant document scores 0;
    ties in row order), and a measure they change is reported as ``"nDCG@10[letor3]"``. ``g`` goes to
    GAP/xGAP/eGAP. Every value is reported as higher-is-better, so LightGBM's early stopping works on any of
    them.

    Parameters
    ----------
    measures, g, conventions
        As in :class:`gaprank.boosting.RankingEval`.

    Returns
    -------
    LightGBMEval
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
    return LightGBMEval(list(measures), g=g, conventions=conventions)
