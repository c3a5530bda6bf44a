r"""LambdaMART for the graded-AP family: LightGBM custom objectives on gaprank's swap-delta engine.

Per query and per pair with :math:`l_i > l_j`, :math:`\rho_{ij} = 1 / (1 + e^{\sigma (s_i - s_j)})` and

.. math::

    g_i = \frac{\partial C}{\partial s_i} = -\sum_{j: l_i > l_j} \lambda_{ij} + \sum_{j: l_j > l_i} \lambda_{ji},
    \qquad \lambda_{ij} = \sigma |\Delta M_{ij}| \rho_{ij}, \qquad
    h_i = \sum_{j \ne i} \sigma^2 |\Delta M_{ij}| \rho_{ij} (1 - \rho_{ij})

the gradient and (diagonal) hessian of :math:`C = \sum |\Delta M_{ij}| \log(1 + e^{-\sigma (s_i - s_j)})`
with :math:`\Delta M` held fixed (Burges 2010, "From RankNet to LambdaRank to LambdaMART", sec. 7;
FORMULAS.md "LambdaRank"). LightGBM minimises, so these are handed over as they are. The arithmetic is
:func:`gaprank.losses._pairwise.pairwise_logistic_batches`, the engine of :func:`gaprank.lambdarank_loss`.

Per data set (cached, so once per training run): the rankable queries are cut into length buckets by
a cost model (:func:`gaprank.lightgbm._layout.bucket_bounds`), and each bucket gets its factor plan
(the kernel or IDCG, which depend only on grade counts). Per round: one sort per bucket, the
swap-delta factors, and the pair blocks of all buckets in cache-sized chunks, each elementwise step
one tensor operation per chunk.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from .._inputs import GaprankInputError, check_choice, check_positive_int, check_sigma
from ..losses._pairwise import PairWorkspace, RankedBatch, pairwise_logistic_batches
from ..metrics._ranking import RankedLists, default_g, rank_lists, resolve_g
from ..metrics._swap import METRICS, FactorPlan, plan_pair_factors
from ._layout import Bucket, LayoutCache, QueryLayout, check_flat_scores

_GAP_FAMILY = ("gap", "xgap", "egap")
PRECISIONS = ("float32", "float64")
# Pairs per chunk: small enough that a chunk's scratch buffers stay near the cores' caches across the
# dozen elementwise passes, large enough that OHSUMED's and MQ2008's pairs fit one chunk. 2^18 to 2^20
# ran alike on those two; on the MSLR-sized set 2^19 and 2^20 beat 2^18 and 2^17 (362, 353, 381 and
# 455 ms per call); 2^15 and 2^16 were slower on OHSUMED and MQ2008 (benchmarks/bench_lightgbm.py's data).
CACHE_BLOCK_ELEMENTS = 1 << 19


def _check_label_gain(label_gain: Any, metric: str) -> torch.Tensor | None:
    if label_gain is None:
        return None
    if metric != "ndcg":
        raise GaprankInputError(f"label_gain applies to metric='ndcg' only, not {metric!r} (the AP family uses g)")
    gains = np.asarray(label_gain, dtype=np.float64)
    if gains.ndim != 1 or gains.size == 0 or not np.isfinite(gains).all():
        raise GaprankInputError(f"label_gain must be a non-empty 1-D list of finite gains, one per label; got {label_gain!r}")
    return torch.from_numpy(gains.copy())


@dataclass
class _PreparedBucket:
    """A bucket with what stays fixed across rounds: its lists' grade counts and factor plan."""

    bucket: Bucket
    lists: RankedLists  # grade counts, list sizes; grades are filled in per round
    plan: FactorPlan


@dataclass
class _PreparedData:
    layout: QueryLayout
    buckets: list[_PreparedBucket]
    workspace: PairWorkspace  # the pair blocks' scratch buffers, reused every round


class LambdaRankObjective:
    """LightGBM custom objective: the LambdaRank gradients and hessians of a ranking metric.

    Build it with :func:`lambdarank_objective` (``lgb.train``) or :func:`sklearn_objective`
    (``LGBMRanker``); :meth:`gradients` is the plain-array form both call.
    """

    def __init__(
        self,
        metric: str = "gap",
        *,
        g: Any = None,
        sigma: float = 1.0,
        truncation_level: int | None = None,
        norm: bool = False,
        label_gain: Any = None,
        precision: str = "float32",
        block_elements: int = CACHE_BLOCK_ELEMENTS,
    ) -> None:
        check_choice(metric, "metric", METRICS)
        self.metric = metric
        self.sigma = check_sigma(sigma)
        self.truncation_level = check_positive_int(truncation_level)
        if not isinstance(norm, (bool, np.bool_)):
            raise GaprankInputError(f"norm must be True or False; got {norm!r}")
        self.norm = bool(norm)
        if g is not None and metric not in _GAP_FAMILY:
            raise GaprankInputError(f"g applies to gap, xgap and egap, not {metric!r}")
        self.g = None if g is None else resolve_g(g, torch.device("cpu"))
        self.label_gain = _check_label_gain(label_gain, metric)
        self.block_elements = check_positive_int(block_elements)
        check_choice(precision, "precision", PRECISIONS)
        self.precision = precision
        self._prepared = LayoutCache(self._prepare)

    def __repr__(self) -> str:
        g = None if self.g is None else self.g.tolist()
        return (f"{type(self).__name__}(metric={self.metric!r}, g={g}, sigma={self.sigma}, "
                f"truncation_level={self.truncation_level}, norm={self.norm}, precision={self.precision!r})")

    def _scale_g(self, layout: QueryLayout) -> torch.Tensor | None:
        """g for the whole data set: the user's, or uniform over grades 1..(largest label)."""
        if self.metric not in _GAP_FAMILY:
            return None
        if self.g is None:
            return default_g(layout.max_label, torch.device("cpu"))
        if layout.max_label > self.g.numel():
            raise GaprankInputError(f"label {layout.max_label} is above the grade scale 0..{self.g.numel()} "
                                    f"set by g (c = {self.g.numel()} grades)")
        return self.g

    def _prepare(self, labels: Any, group: Any) -> _PreparedData:
        """Bucket the rankable queries and build each bucket's factor plan (once per data set)."""
        layout = QueryLayout.build(labels, group, only_rankable=True, rows=self.truncation_level)
        if self.label_gain is not None and layout.max_label >= self.label_gain.numel():
            raise GaprankInputError(f"label {layout.max_label} has no gain: label_gain has {self.label_gain.numel()} "
                                    f"entries (labels 0..{self.label_gain.numel() - 1})")
        g = self._scale_g(layout)
        num_grades = layout.max_label if g is None else g.numel()
        prepared = []
        for bucket in layout.buckets:
            lists = rank_lists(torch.zeros(bucket.mask.shape, dtype=torch.float64), bucket.labels, mask=bucket.mask,
                               num_grades=num_grades)
            plan = plan_pair_factors(self.metric, lists, g, ideal_cutoff=self.truncation_level, gains=self.label_gain)
            if plan is not None:  # None: no grade above 0, so no pair to move (not in a rankable bucket)
                prepared.append(_PreparedBucket(bucket, lists, plan))
        return _PreparedData(layout, prepared, PairWorkspace())

    def gradients(self, preds: Any, labels: Any, group: Any, weight: Any = None) -> tuple[np.ndarray, np.ndarray]:
        """``(grad, hess)``, float64 arrays with one entry per row, for flat rows grouped by query.

        Queries with fewer than two different labels get 0 and 0. ``weight`` (one per row), when
        given, multiplies both, as LightGBM's own lambdarank does.
        """
        # No autograd here: inference mode spares every tensor operation its autograd bookkeeping.
        with torch.inference_mode():
            prepared = self._prepared.get(labels, group)
            layout = prepared.layout
            # -inf in the sentinel slot that bucket padding points to: padding ranks last
            scores = torch.from_numpy(np.append(check_flat_scores(preds, layout.num_rows), -math.inf))
            dtype = getattr(torch, self.precision)
            batches, orders = [], []
            for part in prepared.buckets:
                bucket = part.bucket
                # Rank each query: scores descending, ties in row order, padding (-inf) last.
                ranked_scores, order = torch.sort(scores[bucket.rows], dim=-1, descending=True, stable=True)
                grades = bucket.labels.gather(1, order)
                factors = part.plan.factors(dataclasses.replace(part.lists, grades=grades))
                batches.append(RankedBatch(ranked_scores, grades, bucket.mask, factors))
                orders.append(order)
            all_terms = pairwise_logistic_batches(batches, sigma=self.sigma, truncation=self.truncation_level,
                                                  norm=self.norm, with_hessian=True, with_cost=False,
                                                  block_elements=self.block_elements, dtype=dtype,
                                                  workspace=prepared.workspace)
            derivatives = torch.zeros(2, layout.num_rows, dtype=dtype)  # grad, hess; 0 for unrankable queries
            for part, order, terms in zip(prepared.buckets, orders, all_terms):
                bucket = part.bucket
                # rank slot (q, r) holds row rows[q, order[q, r]]; padding slots are left out
                destination = bucket.rows.gather(1, order).view(-1)[bucket.slots]
                derivatives[:, destination] = terms.stacked.view(2, -1)[:, bucket.slots]
            grad_np, hess_np = derivatives.to(torch.float64).numpy()
        if weight is not None:
            w = np.asarray(weight, dtype=np.float64)
            if w.shape != grad_np.shape or not np.isfinite(w).all() or (w < 0).any():
                raise GaprankInputError(f"weight must hold one finite non-negative number per row ({grad_np.size}); "
                                        f"got shape {w.shape}")
            grad_np, hess_np = grad_np * w, hess_np * w
        return grad_np, hess_np

    def __call__(self, preds: np.ndarray, train_data: Any) -> tuple[np.ndarray, np.ndarray]:
        """``lgb.train`` form: ``(preds, train_data) -> (grad, hess)``."""
        return self.gradients(preds, train_data.get_label(), train_data.get_group(), train_data.get_weight())


class SklearnObjective:
    """``LGBMRanker`` form: ``(y_true, y_pred, weight, group) -> (grad, hess)``.

    LightGBM 4 passes the sample weights as third argument and the query sizes as fourth (LightGBM 3
    passed ``(y_true, y_pred, group)``); it picks the form by counting parameters, so all four are named.
    """

    def __init__(self, objective: LambdaRankObjective) -> None:
        self.objective = objective

    def __call__(self, y_true: np.ndarray, y_pred: np.ndarray, weight: Any, group: Any) -> tuple[np.ndarray, np.ndarray]:
        return self.objective.gradients(y_pred, y_true, group, weight)

    def __repr__(self) -> str:
        return f"sklearn_objective({self.objective!r})"


def lambdarank_objective(
    metric: str = "gap",
    *,
    g: Any = None,
    sigma: float = 1.0,
    truncation_level: int | None = None,
    norm: bool = False,
    label_gain: Any = None,
    precision: str = "float32",
) -> LambdaRankObjective:
    r"""LambdaMART objective for ``lgb.train``: LambdaRank gradients weighted by :math:`|\Delta M|`.

    ``metric``: "gap", "egap", "xgap" (with threshold probabilities ``g``, default uniform over the
    data set's grades), "ap" (relevant = label >= 1) or "ndcg" (gain ``label_gain``, default
    :math:`2^l - 1`; ideal DCG at ``truncation_level``, discounts :math:`1/\log_2(1 + n)` at every rank).
    :math:`\Delta M_{ij}` is the exact change of the metric when documents i and j swap places in the
    ranking the current scores induce (ties in row order), in O(c) per pair (FORMULAS.md result 2).

    ``truncation_level`` k keeps the pairs whose higher-ranked document is in the current top k
    (None: all pairs); ``norm`` divides :math:`|\Delta M|` by :math:`0.01 + |s_i - s_j|` and scales
    each query's gradients by :math:`\log_2(1 + S)/S` (S: its lambda sum). With ``metric="ndcg",
    truncation_level=30, norm=True`` this is LightGBM's own ``objective="lambdarank"`` (its defaults
    ``lambdarank_truncation_level=30``, ``lambdarank_norm=true``, ``sigmoid=1``).

    ``precision`` is the floating type of the per-pair arithmetic (rho, lambdas, hessians and their
    sums): "float32" (default) or "float64". LightGBM keeps gradients and hessians in float32 (its
    Python API rounds a custom objective's output to float32; its own lambdarank sums in float32).
    float32 moves each gradient by at most about 1e-6 of the largest one (tested), and makes the pair
    arithmetic about three times faster. :math:`\Delta M` and the score differences are formed in
    float64 and rounded once; "float64" gives the numbers of :func:`gaprank.lambdarank_loss`.

    Returns a callable ``(preds, train_data) -> (grad, hess)``: ``lgb.train({"objective": obj}, data)``.
    Pairs are processed as dense blocks over queries bucketed by length (no Python loop over pairs or
    queries); a query of N documents needs O(N) memory beyond a bounded block of pairs.

    Examples
    --------
    >>> import lightgbm as lgb, numpy as np
    >>> from gaprank.lightgbm import lambdarank_objective
    >>> rng = np.random.default_rng(0)
    >>> X, y = rng.normal(size=(60, 3)), rng.integers(0, 3, 60)
    >>> train = lgb.Dataset(X, y, group=[20, 20, 20])
    >>> params = {"objective": lambdarank_objective("gap", g=[0.5, 0.5]), "verbosity": -1, "min_data_in_leaf": 5}
    >>> booster = lgb.train(params, train, num_boost_round=5)
    >>> booster.predict(X).shape
    (60,)
    """
    return LambdaRankObjective(metric, g=g, sigma=sigma, truncation_level=truncation_level, norm=norm,
                               label_gain=label_gain, precision=precision)


def sklearn_objective(
    metric: str = "gap",
    *,
    g: Any = None,
    sigma: float = 1.0,
    truncation_level: int | None = None,
    norm: bool = False,
    label_gain: Any = None,
    precision: str = "float32",
) -> SklearnObjective:
    """The objective of :func:`lambdarank_objective` for ``lightgbm.LGBMRanker(objective=...)``.

    Examples
    --------
    >>> import lightgbm as lgb, numpy as np
    >>> from gaprank.lightgbm import sklearn_objective
    >>> rng = np.random.default_rng(0)
    >>> X, y = rng.normal(size=(60, 3)), rng.integers(0, 3, 60)
    >>> ranker = lgb.LGBMRanker(objective=sklearn_objective("egap"), n_estimators=5, min_child_samples=5, verbosity=-1)
    >>> ranker.fit(X, y, group=[20, 20, 20]).predict(X).shape
    (60,)
    """
    return SklearnObjective(lambdarank_objective(metric, g=g, sigma=sigma, truncation_level=truncation_level,
                                                 norm=norm, label_gain=label_gain, precision=precision))
