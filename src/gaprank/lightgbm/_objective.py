r"""LambdaMART for the graded-AP family: LightGBM custom objectives on gaprank's swap-delta engine.

Per query and per pair with :math:`l_i > l_j`, :math:`\rho_{ij} = 1 / (1 + e^{\sigma (s_i - s_j)})` and

.. math::

    g_i = \frac{\partial C}{\partial s_i} = -\sum_{j: l_i > l_j} \lambda_{ij} + \sum_{j: l_j > l_i} \lambda_{ji},
    \qquad \lambda_{ij} = \sigma |\Delta M_{ij}| \rho_{ij}, \qquad
    h_i = \sum_{j \ne i} \sigma^2 |\Delta M_{ij}| \rho_{ij} (1 - \rho_{ij})

the gradient and (diagonal) hessian of :math:`C = \sum |\Delta M_{ij}| \log(1 + e^{-\sigma (s_i - s_j)})`
with :math:`\Delta M` held fixed (Burges 2010, "From RankNet to LambdaRank to LambdaMART", sec. 7;
docs: The maths, "LambdaRank and LambdaMART"). LightGBM minimises, so these are handed over as they are. The arithmetic is
:class:`gaprank._engine.pairs.PairwiseEngine`, the engine of :func:`gaprank.lambdarank_loss`.

Per data set (cached, so once per training run): the rankable queries are cut into length buckets by
a cost model (:func:`gaprank._engine.buckets.bucket_bounds`) and laid end to end on one axis of
slots (:class:`gaprank._engine.slots.SlotLayout`); the factor plan (the kernels or IDCGs, which
depend only on grade counts) and the pair engine, with every buffer and view they use, are built
once. Per round: one sort per bucket, then the swap-delta factors and the pair blocks, where each
elementwise step is one tensor operation for all buckets (per cache-sized chunk of pairs).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from .._engine.factors import FactorPlan, plan_pair_factors
from .._engine.pairs import PairwiseEngine
from .._inputs import GaprankInputError, check_choice, check_positive_int, check_sigma
from .._typing import ArrayLike
from ..metrics import GainDiscountForm, Measure, objective_measure, rank_lists
from ._folds import check_whole_queries
from ._layout import LayoutCache, QueryLayout, check_flat_scores

PRECISIONS = ("float32", "float64")
# Pairs per chunk: small enough that a chunk's scratch buffers (about 28 bytes per pair in float32)
# stay near the cores' caches across the dozen elementwise passes, large enough that the fixed
# operations per chunk stay few (the measurements behind the choice: docs/benchmarks.md).
CACHE_BLOCK_ELEMENTS = 1 << 18


def _check_label_gain(label_gain: ArrayLike | None, measure: Measure) -> torch.Tensor | None:
    if label_gain is None:
        return None
    if not (isinstance(measure.info.form, GainDiscountForm) and "gain" in measure.info.parameters):
        # a gain per label replaces the gain table of nDCG (and DCG), not a kernel's or a relevance rule
        raise GaprankInputError(f"label_gain applies to metric='ndcg' only, not {measure.name!r} (the AP family uses g)")
    gains = np.asarray(label_gain, dtype=np.float64)
    if gains.ndim != 1 or gains.size == 0 or not np.isfinite(gains).all():
        raise GaprankInputError(f"label_gain must be a non-empty 1-D list of finite gains, one per label; got {label_gain!r}")
    return torch.from_numpy(gains.copy())


@dataclass
class _PreparedData:
    """What stays fixed across rounds for one data set, and the buffers every round refills."""

    layout: QueryLayout
    plan: FactorPlan | None  # the swap-delta factors of all rankable queries (None: there are none)
    engine: PairwiseEngine | None
    scores: torch.Tensor  # [rows + 1] float64: this round's scores, -inf in the sentinel row
    row_scores: torch.Tensor  # [S]: the scores of each slot's row (padding: the sentinel)
    order: torch.Tensor  # [S] int64: rank slot -> row slot (within its list, then in the whole layout)
    grades: torch.Tensor  # [S] int64: ranked
    destination: torch.Tensor  # [S] int64: the row ranked at each slot
    sorts: list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]]  # per bucket: row scores, ranked scores, order
    derivatives: torch.Tensor  # [2, rows]: grad and hess; 0 at the rows of unrankable queries
    real_rows: torch.Tensor  # [m] int64: the rows ranked at the real slots
    real_sums: torch.Tensor  # [2, m]: their grad and hess

    @classmethod
    def build(cls, layout: QueryLayout, plan: FactorPlan | None, engine: PairwiseEngine | None,
              dtype: torch.dtype) -> _PreparedData:
        slots = layout.slots
        row_scores = torch.empty(slots.num_slots, dtype=torch.float64)
        order = torch.empty(slots.num_slots, dtype=torch.int64)
        # sorting writes straight into the engine's score buffer
        ranked = engine.scores if engine is not None else torch.empty(0, dtype=torch.float64)
        sorts = [(slots.view(row_scores, b), slots.view(ranked, b), slots.view(order, b)) for b in slots.blocks]
        return cls(layout, plan, engine, torch.full((layout.num_rows + 1,), -math.inf, dtype=torch.float64),
                   row_scores, order, torch.empty_like(order), torch.empty_like(order), sorts,
                   torch.zeros(2, layout.num_rows, dtype=dtype), torch.empty(slots.real.numel(), dtype=torch.int64),
                   torch.empty(2, slots.real.numel(), dtype=dtype))


class LambdaRankObjective:
    """LightGBM custom objective: the LambdaRank gradients and hessians of a ranking metric.

    Build it with :func:`lambdarank_objective` (``lgb.train``) or :func:`sklearn_objective`
    (``LGBMRanker``); :meth:`gradients` is the plain-array form both call.
    """

    def __init__(
        self,
        metric: str = "gap",
        *,
        g: ArrayLike | None = None,
        sigma: float = 1.0,
        truncation_level: int | None = None,
        norm: bool = False,
        label_gain: ArrayLike | None = None,
        precision: str = "float32",
        block_elements: int = CACHE_BLOCK_ELEMENTS,
    ) -> None:
        self.measure = objective_measure(metric)
        self.metric = self.measure.name
        self.sigma = check_sigma(sigma)
        self.truncation_level = check_positive_int(truncation_level)
        if not isinstance(norm, (bool, np.bool_)):
            raise GaprankInputError(f"norm must be True or False; got {norm!r}")
        self.norm = bool(norm)
        # the measure's settings, checked once; the grade scale they fix, if any
        self._settings, self._scale, self._scale_source = self.measure.settings(g)
        self.g = self._settings.get("g")
        self.label_gain = _check_label_gain(label_gain, self.measure)
        self.block_elements = check_positive_int(block_elements)
        check_choice(precision, "precision", PRECISIONS)
        self.precision = precision
        self._prepared = LayoutCache(self._prepare)

    def __repr__(self) -> str:
        g = None if self.g is None else self.g.tolist()
        return (f"{type(self).__name__}(metric={self.metric!r}, g={g}, sigma={self.sigma}, "
                f"truncation_level={self.truncation_level}, norm={self.norm}, precision={self.precision!r})")

    def _prepare(self, labels: ArrayLike, group: ArrayLike | None) -> _PreparedData:
        """Lay out the rankable queries and build their factor plan and pair engine (once per data set)."""
        layout = QueryLayout.build(labels, group, only_rankable=True, rows=self.truncation_level)
        if self.label_gain is not None and layout.max_label >= self.label_gain.numel():
            raise GaprankInputError(f"label {layout.max_label} has no gain: label_gain has {self.label_gain.numel()} "
                                    f"entries (labels 0..{self.label_gain.numel() - 1})")
        if self._scale is not None and layout.max_label > self._scale:
            raise GaprankInputError(f"label {layout.max_label} is above the grade scale 0..{self._scale} "
                                    f"set by {self._scale_source}")
        # unset settings that depend on the data (a uniform g) take the whole data set's grade scale
        num_grades = layout.max_label if self._scale is None else self._scale
        params = self.measure.info.fill(self._settings, num_grades, torch.device("cpu"))
        dtype = getattr(torch, self.precision)
        plan = engine = None
        if layout.slots.num_slots:
            lists = [rank_lists(torch.zeros(b.mask.shape, dtype=torch.float64), b.labels, mask=b.mask,
                                num_grades=num_grades) for b in layout.buckets]
            plan = plan_pair_factors(self.measure, lists, params, layout=layout.slots,
                                     ideal_cutoff=self.truncation_level, gains=self.label_gain)
            engine = PairwiseEngine(layout.slots, sigma=self.sigma, truncation=self.truncation_level, norm=self.norm,
                                    with_hessian=True, with_cost=False, dtype=dtype, block_elements=self.block_elements)
        return _PreparedData.build(layout, plan, engine, dtype)

    def gradients(self, preds: ArrayLike, labels: ArrayLike, group: ArrayLike | None,
                  weight: ArrayLike | None = None) -> tuple[np.ndarray, np.ndarray]:
        """``(grad, hess)``, float64 arrays with one entry per row, for flat rows grouped by query.

        Queries with fewer than two different labels get 0 and 0. ``weight`` (one per row), when
        given, multiplies both, as LightGBM's own lambdarank does.
        """
        # No autograd here: inference mode spares every tensor operation its autograd bookkeeping.
        with torch.inference_mode():
            data = self._prepared.get(labels, group)
            layout = data.layout
            scores = check_flat_scores(preds, layout.num_rows)
            if data.plan is not None:
                data.scores[:-1] = torch.from_numpy(scores)
                torch.index_select(data.scores, 0, layout.slot_rows, out=data.row_scores)
                for row_scores, ranked_scores, order in data.sorts:
                    # Rank each query: scores descending, ties in row order, padding (-inf) last.
                    torch.sort(row_scores, dim=-1, descending=True, stable=True, out=(ranked_scores, order))
                order = data.order.add_(layout.slots.list_start)  # within its list -> in the whole layout
                torch.index_select(layout.slot_labels, 0, order, out=data.grades)
                torch.index_select(layout.slot_rows, 0, order, out=data.destination)
                factors = data.plan.factors(data.grades)
                assert data.engine is not None, "a data set with a factor plan has a pair engine"
                _, sums = data.engine.run(data.engine.scores, data.grades, factors)
                real = layout.slots.real
                data.derivatives.index_copy_(1, torch.index_select(data.destination, 0, real, out=data.real_rows),
                                             torch.index_select(sums, 1, real, out=data.real_sums))
            grad_np, hess_np = data.derivatives.numpy().astype(np.float64)
        if weight is not None:
            w = np.asarray(weight, dtype=np.float64)
            if w.shape != grad_np.shape or not np.isfinite(w).all() or (w < 0).any():
                problem = (f"shape {w.shape}" if w.shape != grad_np.shape else
                           "a non-finite value" if not np.isfinite(w).all() else f"negative weight {w[w < 0][0]:g}")
                raise GaprankInputError(f"weight must hold one finite non-negative number per row ({grad_np.size}); "
                                        f"got {problem}")
            grad_np, hess_np = grad_np * w, hess_np * w
        return grad_np, hess_np

    def __call__(self, preds: np.ndarray, train_data: Any) -> tuple[np.ndarray, np.ndarray]:
        """``lgb.train`` form: ``(preds, train_data) -> (grad, hess)``."""
        check_whole_queries(train_data)
        return self.gradients(preds, train_data.get_label(), train_data.get_group(), train_data.get_weight())


class SklearnObjective:
    """``LGBMRanker`` form: ``(y_true, y_pred, weight, group) -> (grad, hess)``.

    LightGBM 4 passes the sample weights as third argument and the query sizes as fourth (LightGBM 3
    passed ``(y_true, y_pred, group)``); it picks the form by counting parameters, so all four are named.
    """

    def __init__(self, objective: LambdaRankObjective) -> None:
        self.objective = objective

    def __call__(self, y_true: np.ndarray, y_pred: np.ndarray, weight: ArrayLike | None,
                 group: ArrayLike | None) -> tuple[np.ndarray, np.ndarray]:
        return self.objective.gradients(y_pred, y_true, group, weight)

    def __repr__(self) -> str:
        return f"sklearn_objective({self.objective!r})"


def lambdarank_objective(
    metric: str = "gap",
    *,
    g: ArrayLike | None = None,
    sigma: float = 1.0,
    truncation_level: int | None = None,
    norm: bool = False,
    label_gain: ArrayLike | None = None,
    precision: str = "float32",
) -> LambdaRankObjective:
    r"""LambdaMART objective for ``lgb.train``: LambdaRank gradients weighted by :math:`|\Delta M|`.

    ``metric``: any measure string with swap deltas: "gap", "egap", "xgap" (with threshold probabilities
    ``g``, default uniform over the data set's grades), "ap" (relevant = label >= 1), "AP(rel=2)", "ndcg"
    (gain ``label_gain``, default :math:`2^l - 1`; without a cutoff of its own, ideal DCG at
    ``truncation_level`` and discounts :math:`1/\log_2(1 + n)` at every rank), "nDCG@10", "P@5",
    "RBP(p=0.8)", "ERR", "Q", "vG", "eRAP(p=[0,0.5,1])", ...
    :math:`\Delta M_{ij}` is the exact change of the metric when documents i and j swap places in the
    ranking the current scores induce (ties in row order), in O(c) per pair (docs: The maths, "Swap deltas in O(c) per pair").

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

    Parameters
    ----------
    metric : str
        The measure string whose swap deltas weigh the pairs: 'gap', 'egap', 'xgap', 'ap', 'ndcg', 'nDCG@10',
        'AP(rel=2)', 'RBP(p=0.8)', 'ERR', ... (any registered measure with swap deltas).
    g : array-like, optional
        GAP's user model g_1..g_c for gap, xgap and egap; default uniform over the data set's grades.
    sigma : float
        The logistic's steepness (LightGBM's ``sigmoid``).
    truncation_level : int, optional
        Only pairs whose higher-ranked document is in the current top k; default every pair.
    norm : bool
        LightGBM's ``lambdarank_norm``.
    label_gain : array-like, optional
        nDCG's gain of each label (default 2^l - 1); for metric 'ndcg' only.
    precision : {"float32", "float64"}
        The type of the per-pair arithmetic (swap deltas and score differences are formed in float64).

    Returns
    -------
    LambdaRankObjective
        A callable ``(preds, train_data) -> (grad, hess)`` for ``lgb.train(params={"objective": ...})``.

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
    g: ArrayLike | None = None,
    sigma: float = 1.0,
    truncation_level: int | None = None,
    norm: bool = False,
    label_gain: ArrayLike | None = None,
    precision: str = "float32",
) -> SklearnObjective:
    """The objective of :func:`lambdarank_objective` for ``lightgbm.LGBMRanker(objective=...)``.

    Parameters
    ----------
    metric, g, sigma, truncation_level, norm, label_gain, precision
        As in :func:`lambdarank_objective`.

    Returns
    -------
    SklearnObjective
        A callable ``(y_true, y_pred, weight, group) -> (grad, hess)`` for ``LGBMRanker(objective=...)``.

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
