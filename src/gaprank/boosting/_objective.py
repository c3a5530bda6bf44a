r"""LambdaMART, engine-neutral: the gradients and hessians of any measure's LambdaRank cost for flat rows
grouped by query, on gaprank's swap-delta engine (LightGBM and XGBoost adapt it to their conventions).

Per query and per pair with :math:`l_i > l_j`, :math:`\rho_{ij} = 1 / (1 + e^{\sigma (s_i - s_j)})` and

.. math::

    g_i = \frac{\partial C}{\partial s_i} = -\sum_{j: l_i > l_j} \lambda_{ij} + \sum_{j: l_j > l_i} \lambda_{ji},
    \qquad \lambda_{ij} = \sigma |\Delta M_{ij}| \rho_{ij}, \qquad
    h_i = \sum_{j \ne i} \sigma^2 |\Delta M_{ij}| \rho_{ij} (1 - \rho_{ij})

the gradient and (diagonal) hessian of :math:`C = \sum |\Delta M_{ij}| \log(1 + e^{-\sigma (s_i - s_j)})`
with :math:`\Delta M` held fixed (Burges 2010, "From RankNet to LambdaRank to LambdaMART", sec. 7;
docs: The maths, "LambdaRank and LambdaMART"). Boosters minimise, so these are handed over as they are. The arithmetic is
:class:`gaprank._engine.pairs.PairwiseEngine`, the engine of :func:`gaprank.lambdarank_loss`.

For the AP family (kernel measures) and the discounted-gain family the arithmetic is the compiled kernel of
:mod:`gaprank._engine.compiled` (numba; one pass per query: sort, the O(Nc) tables, the pairs), read off the
same factor plan and equal to the torch engine to float64 rounding; measures with factors of their own
(ERR, Q, RR, Rprec, Success) keep the torch engine described below.

Per data set (cached, so once per training run): the rankable queries are cut into length buckets by
a cost model (:func:`gaprank._grouped.pair_cost_cut`) and laid end to end on one axis of
slots (:class:`gaprank._engine.slots.SlotLayout`); the factor plan (the kernels or IDCGs, which
depend only on grade counts) and the pair engine, with every buffer and view they use, are built
once. Per round: one sort per bucket, then the swap-delta factors and the pair blocks, where each
elementwise step is one tensor operation for all buckets (per cache-sized chunk of pairs).
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from .._engine import compiled
from .._engine.backends import compiled_plan, lambda_backend
from .._engine.factors import FactorPlan, plan_pair_factors
from .._engine.pairs import PairwiseEngine
from .._inputs import GaprankInputError, check_positive_int
from .._typing import ArrayLike
from ..metrics import rank_lists
from ._layout import LayoutCache, QueryLayout, check_flat_scores
from ._settings import LambdaMARTSettings

# Pairs per chunk: small enough that a chunk's scratch buffers (about 28 bytes per pair in float32)
# stay near the cores' caches across the dozen elementwise passes, large enough that the fixed
# operations per chunk stay few (the measurements behind the choice: docs/benchmarks.md).
CACHE_BLOCK_ELEMENTS = 1 << 18


@dataclass
class _TorchRounds:
    """The tensor engine's part of a data set: its factor plan and pair engine, fixed across rounds, and the
    buffers every round refills."""

    plan: FactorPlan  # the swap-delta factors of all rankable queries
    engine: PairwiseEngine
    scores: torch.Tensor  # [rows + 1] float64: this round's scores, -inf in the sentinel row
    row_scores: torch.Tensor  # [S]: the scores of each slot's row (padding: the sentinel)
    order: torch.Tensor  # [S] int64: rank slot -> row slot (within its list, then in the whole layout)
    grades: torch.Tensor  # [S] int64: ranked
    destination: torch.Tensor  # [S] int64: the row ranked at each slot
    sorts: list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]]  # per bucket: row scores, ranked scores, order
    derivatives: torch.Tensor  # [2, rows]: grad and hess; 0 at the rows of unrankable queries
    real_rows: torch.Tensor  # [m] int64: the rows ranked at the real slots
    real_sums: torch.Tensor  # [2, m]: their grad and hess
    slot_mass: torch.Tensor | None  # [C, S]: each slot's document's grade mass (weighted documents), else None

    @classmethod
    def build(cls, layout: QueryLayout, plan: FactorPlan, engine: PairwiseEngine, dtype: torch.dtype,
              slot_mass: torch.Tensor | None) -> _TorchRounds:
        slots = layout.slots
        row_scores = torch.empty(slots.num_slots, dtype=torch.float64)
        order = torch.empty(slots.num_slots, dtype=torch.int64)
        # sorting writes straight into the engine's score buffer
        sorts = [(slots.view(row_scores, b), slots.view(engine.scores, b), slots.view(order, b)) for b in slots.blocks]
        return cls(plan, engine, torch.full((layout.num_rows + 1,), -math.inf, dtype=torch.float64),
                   row_scores, order, torch.empty_like(order), torch.empty_like(order), sorts,
                   torch.zeros(2, layout.num_rows, dtype=dtype), torch.empty(slots.real.numel(), dtype=torch.int64),
                   torch.empty(2, slots.real.numel(), dtype=dtype), slot_mass)


@dataclass
class _PreparedData:
    """What stays fixed across rounds for one data set: its layout and the part of the backend that computes its
    rounds, the compiled kernel's plan or the tensor engine's rounds (at most one; neither when no pair of any
    query changes the measure: every gradient and hessian is then 0)."""

    layout: QueryLayout
    kernel_plan: compiled.CompiledPlan | None = None
    torch_rounds: _TorchRounds | None = None
    position_terms: dict[bytes, np.ndarray] = dataclasses.field(default_factory=dict)  # g per position, by positions


class LambdaMARTObjective:
    """The LambdaRank gradients and hessians of a measure for flat rows grouped by query, engine-neutral.

    ``settings``: a :class:`LambdaMARTSettings`, or its fields as a measure string and keywords
    (``LambdaMARTObjective("nDCG@10", truncation_level=30)``). :meth:`gradients` is what every booster's
    adapter calls (:mod:`gaprank.lightgbm`, :mod:`gaprank.xgboost`). Per data set (cached, so once per
    training run) the rankable queries are laid out and their factor plan and pair engine built; per call,
    one sort per length bucket and the pair arithmetic.

    ``level_weights`` (``[rows, c]``, with ``row_weights="measure"``): each document's weight in the measure at each
    level (graded events, each level by its own estimate), held by the objective rather than the data set, which
    must then have no weights: a LightGBM data set holds one weight per row, an XGBoost one with query groups one
    per query. Another array may be set on the attribute between rounds (propensities learned with the model).
    """

    def __init__(self, settings: LambdaMARTSettings | str = "gap", *, level_weights: ArrayLike | None = None,
                 block_elements: int = CACHE_BLOCK_ELEMENTS, **fields: Any) -> None:
        if fields and isinstance(settings, LambdaMARTSettings):
            raise GaprankInputError("give either a LambdaMARTSettings or its fields, not both")
        self.settings = settings if isinstance(settings, LambdaMARTSettings) else LambdaMARTSettings(settings, **fields)
        self.level_weights: np.ndarray | None = None
        if level_weights is not None:
            if self.settings.row_weights != "measure":
                raise GaprankInputError("level_weights weigh documents in the measure: they need "
                                        "row_weights='measure'")
            weights = np.asarray(level_weights, dtype=np.float64)
            if weights.ndim != 2:
                raise GaprankInputError(f"level_weights must be [rows, levels]; got shape {weights.shape}")
            self.level_weights = weights
        self.measure = self.settings.parsed_measure
        # the measure's own settings (g among them), checked once, and the grade scale they fix, if any
        self._values, self._scale, self._scale_source = self.measure.settings()
        self.label_gain = (None if self.settings.label_gain is None else
                           torch.tensor(self.settings.label_gain, dtype=torch.float64))
        self.block_elements = check_positive_int(block_elements, "block_elements")
        self._backend = lambda_backend(self.settings.backend, self.measure, torch.device("cpu"))
        self._prepared = LayoutCache(self._prepare)

    def __repr__(self) -> str:
        shown = ", ".join(f"{f.name}={getattr(self.settings, f.name)!r}" for f in dataclasses.fields(self.settings))
        return f"{type(self).__name__}({shown})"

    @classmethod
    def of(cls, objective: LambdaMARTObjective | LambdaMARTSettings | str, fields: dict[str, Any]) -> LambdaMARTObjective:
        """What an adapter wraps: ``objective`` itself, or the objective its settings or measure string (with
        ``fields``) make: the one rule by which every objective class of gaprank's adapters is made."""
        if isinstance(objective, LambdaMARTObjective):
            if fields:
                raise GaprankInputError(f"give either a LambdaMARTObjective or settings, not both (got "
                                        f"{', '.join(sorted(fields))})")
            return objective
        return cls(objective, **fields)  # (which refuses anything but a measure string or settings)

    def _prepare(self, labels: ArrayLike, group: ArrayLike | None, weights: np.ndarray | None = None) -> _PreparedData:
        """Lay out the rankable queries and build their factor plan and pair engine (once per data set); ``weights``:
        the rows' weights in the measure (``row_weights="measure"``)."""
        layout = QueryLayout.build(labels, group, only_rankable=True, rows=self.settings.truncation_level,
                                   weights=weights)
        if self.label_gain is not None and layout.max_label >= self.label_gain.numel():
            raise GaprankInputError(f"label {layout.max_label} has no gain: label_gain has {self.label_gain.numel()} "
                                    f"entries (labels 0..{self.label_gain.numel() - 1})")
        if self._scale is not None and layout.max_label > self._scale:
            raise GaprankInputError(f"label {layout.max_label} is above the grade scale 0..{self._scale} "
                                    f"set by {self._scale_source}")
        # unset settings that depend on the data (a uniform g) take the whole data set's grade scale
        num_grades = layout.max_label if self._scale is None else self._scale
        params = self.measure.info.fill(self._values, num_grades, torch.device("cpu"))
        dtype = getattr(torch, self.settings.precision)
        if layout.slots.num_slots:
            # no scores to rank by: each list keeps its input order, padding last (what a stable sort of zeros gave)
            lists = [rank_lists(torch.zeros(b.mask.shape, dtype=torch.float64), b.labels, mask=b.mask,
                                num_grades=num_grades, by_score=False, weights=b.weights) for b in layout.buckets]
            settings = self.settings
            level_weights = weights is not None and weights.ndim == 2
            if level_weights and settings.backend == "compiled":
                raise GaprankInputError("backend='compiled' cannot serve weights per level (a grade mass per document): "
                                        "use backend='auto' or 'torch'")
            if self._backend == "compiled" and not level_weights:
                slots = layout.slots
                kernel_plan = compiled_plan(self.measure, lists, params, slots, sizes=slots.sizes.numpy(),
                                            rows=layout.slot_rows[slots.real].numpy(),
                                            labels=layout.slot_labels[slots.real].numpy(), sigma=settings.sigma,
                                            truncation=settings.truncation_level, norm=settings.norm,
                                            ideal_cutoff=settings.truncation_level, gains=self.label_gain,
                                            weights=(None if layout.slot_weights is None
                                                     else layout.slot_weights[slots.real].numpy()))
                if kernel_plan is not None:
                    return _PreparedData(layout, kernel_plan=kernel_plan)
            plan = plan_pair_factors(self.measure, lists, params, layout=layout.slots,
                                     ideal_cutoff=settings.truncation_level, gains=self.label_gain)
            if plan is not None:
                engine = PairwiseEngine(layout.slots, sigma=settings.sigma, truncation=settings.truncation_level,
                                        norm=settings.norm, with_hessian=True, with_cost=False, dtype=dtype,
                                        block_elements=self.block_elements)
                slot_mass = None  # the lists keep the slots' order (by_score=False): one mass per slot's document
                if weights is not None:
                    slot_mass = torch.cat([ranked.grade_mass().reshape(-1, num_grades + 1) for ranked in lists]).T
                return _PreparedData(layout, torch_rounds=_TorchRounds.build(layout, plan, engine, dtype,
                                                                             None if slot_mass is None
                                                                             else slot_mass.contiguous()))
        return _PreparedData(layout)

    def gradients(self, preds: ArrayLike, labels: ArrayLike, group: ArrayLike | None,
                  weight: ArrayLike | None = None, position: ArrayLike | None = None) -> tuple[np.ndarray, np.ndarray]:
        """``(grad, hess)``, float64 arrays with one entry per row, for flat rows grouped by query.

        Queries with fewer than two different labels (weighted in the measure: fewer than two documents) get 0 and
        0. ``weight`` (one per row), when
        given, multiplies both, as LightGBM's own lambdarank does; with ``row_weights="measure"`` it is each
        document's weight in the measure instead (and must be given), one per row or one per row and level
        (``[rows, c]``: graded events; the torch backend). ``position`` (one integer >= 0 per row, where it was
        shown): with ``position_term``, the lambdas are those of ``preds`` plus the learned term of each row's
        position, which then takes its step (the term is kept per data set and positions, across calls).
        """
        weight = self._weight(weight, np.asarray(labels).size)
        if not self.settings.position_term:
            return self._gradients(preds, labels, group, weight)
        positions = _checked_positions(position, np.asarray(labels).size)
        data = self._data(labels, group, weight)
        key = hashlib.sha256(positions.tobytes()).digest()
        term = data.position_terms.setdefault(key, np.zeros(int(positions.max()) + 1 if positions.size else 1))
        grad, hess = self._gradients(np.asarray(preds, dtype=np.float64) + term[positions], labels, group, weight)
        settings = self.settings
        count = np.bincount(positions, minlength=term.size)
        first = -np.bincount(positions, weights=grad, minlength=term.size) - settings.position_regularization * count * term
        second = -np.bincount(positions, weights=hess, minlength=term.size) - settings.position_regularization * count
        term += settings.position_learning_rate * first / (np.abs(second) + 0.001)
        return grad, hess

    def position_term(self, labels: ArrayLike, group: ArrayLike | None, position: ArrayLike,
                      weight: ArrayLike | None = None) -> np.ndarray:
        """The learned term per position (index = position) for this data set and these positions; zeros before the
        first call."""
        positions = _checked_positions(position, np.asarray(labels).size)
        data = self._data(labels, group, self._weight(weight, positions.size))
        term = data.position_terms.get(hashlib.sha256(positions.tobytes()).digest())
        return np.zeros(int(positions.max()) + 1) if term is None else term.copy()

    def _weight(self, weight: ArrayLike | None, rows: int) -> ArrayLike | None:
        """The documents' weights: the data set's, or the objective's ``level_weights`` where it holds them."""
        if self.level_weights is None:
            return weight
        if weight is not None:
            raise GaprankInputError("the objective has level_weights and the data set has weights too: give the "
                                    "documents' weights in one place")
        if self.level_weights.shape[0] != rows:
            raise GaprankInputError(f"level_weights has {self.level_weights.shape[0]} rows; the data set has {rows}")
        return self.level_weights

    def _data(self, labels: ArrayLike, group: ArrayLike | None, weight: ArrayLike | None) -> _PreparedData:
        if self.settings.row_weights == "measure":
            return self._prepared.get(labels, group, _checked_row_weights(weight, np.asarray(labels).size))
        return self._prepared.get(labels, group)

    def _gradients(self, preds: ArrayLike, labels: ArrayLike, group: ArrayLike | None,
                   weight: ArrayLike | None = None) -> tuple[np.ndarray, np.ndarray]:
        data = self._data(labels, group, weight)
        scale = None if self.settings.row_weights == "measure" else weight
        # No autograd here: inference mode spares every tensor operation its autograd bookkeeping.
        scores = check_flat_scores(preds, data.layout.num_rows)
        if data.kernel_plan is not None:
            grad_np, hess_np = np.zeros(scores.size), np.zeros(scores.size)
            compiled.lambdamart_gradients(data.kernel_plan, scores, grad_np, hess_np)
            return _weighted(grad_np, hess_np, scale)
        rounds = data.torch_rounds
        if rounds is None:  # no pair changes the measure
            return _weighted(np.zeros(scores.size), np.zeros(scores.size), scale)
        with torch.inference_mode():
            layout = data.layout
            rounds.scores[:-1] = torch.from_numpy(scores)
            torch.index_select(rounds.scores, 0, layout.slot_rows, out=rounds.row_scores)
            for row_scores, ranked_scores, order in rounds.sorts:
                # Rank each query: scores descending, ties in row order, padding (-inf) last.
                torch.sort(row_scores, dim=-1, descending=True, stable=True, out=(ranked_scores, order))
            order = rounds.order.add_(layout.slots.list_start)  # within its list -> in the whole layout
            torch.index_select(layout.slot_labels, 0, order, out=rounds.grades)
            torch.index_select(layout.slot_rows, 0, order, out=rounds.destination)
            mass = None if rounds.slot_mass is None else torch.index_select(rounds.slot_mass, 1, order)
            factors = rounds.plan.factors(rounds.grades, mass)
            _, sums = rounds.engine.run(rounds.engine.scores, rounds.grades, factors)
            real = layout.slots.real
            rounds.derivatives.index_copy_(1, torch.index_select(rounds.destination, 0, real, out=rounds.real_rows),
                                           torch.index_select(sums, 1, real, out=rounds.real_sums))
            grad_np, hess_np = rounds.derivatives.numpy().astype(np.float64)
        return _weighted(grad_np, hess_np, scale)


def _checked_positions(position: ArrayLike | None, rows: int) -> np.ndarray:
    """The rows' displayed positions for the position term: one integer >= 0 per row, required."""
    if position is None:
        raise GaprankInputError("position_term needs each row's position (LightGBM: Dataset(position=...)); the data "
                                "set has none")
    values = np.asarray(position)
    if values.shape != (rows,) or not np.issubdtype(values.dtype, np.number) or not np.isfinite(values).all() or (
            values < 0).any() or (values != np.round(values)).any():
        raise GaprankInputError(f"position must hold one integer >= 0 per row ({rows}); got shape {values.shape}")
    return values.astype(np.int64)


def _checked_row_weights(weight: ArrayLike | None, rows: int) -> np.ndarray:
    """The data set's weights when they enter the measure, required."""
    if weight is None:
        raise GaprankInputError("row_weights='measure' needs the data set's weights (one per row: each document's "
                                "weight in the measure, e.g. 1/propensity); the data set has none")
    return _checked_weights(weight, rows, in_measure=True)


def _weighted(grad: np.ndarray, hess: np.ndarray, weight: ArrayLike | None) -> tuple[np.ndarray, np.ndarray]:
    """``weight`` (one per row), when given, multiplies both, as LightGBM's own lambdarank does."""
    if weight is None:
        return grad, hess
    w = _checked_weights(weight, grad.size, in_measure=False)
    return grad * w, hess * w


def _checked_weights(weight: ArrayLike, rows: int, *, in_measure: bool) -> np.ndarray:
    """Finite weights, one per row. In the measure (``in_measure``) also one per row and level, and negative ones
    too (an affine estimate's evidence against a document); as the scale of grad and hess, >= 0."""
    w = np.asarray(weight, dtype=np.float64)
    shaped = w.shape[:1] == (rows,) and w.ndim in ((1, 2) if in_measure else (1,))
    negative = not in_measure and (w < 0).any()
    if not shaped or not np.isfinite(w).all() or negative:
        problem = (f"shape {w.shape}" if not shaped else "a non-finite value" if not np.isfinite(w).all() else
                   f"negative weight {w[w < 0][0]:g}")
        what = (f"one finite number per row ({rows}), or one per row and level" if in_measure else
                f"one finite non-negative number per row ({rows})")
        raise GaprankInputError(f"weight must hold {what}; got {problem}")
    return w
