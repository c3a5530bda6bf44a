r"""XGBoost adapters: the engine-neutral LambdaMART of :mod:`gaprank.boosting` in XGBoost's conventions.

The pair arithmetic is :class:`gaprank.boosting.LambdaMARTObjective` (one engine for both boosters).
What differs is XGBoost's side: the query groups come from the DMatrix (``group_ptr``, set by ``qid=``
or ``group=``), sample weights are one per query, and XGBoost's own lambdarank objectives report a
hessian of :math:`2\,\sigma^2 |\Delta M_{ij}| \rho_{ij}(1 - \rho_{ij})` per pair, twice LightGBM's; the
objective here does the same, so a learning rate means what it means for ``rank:ndcg``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import numpy as np

from .._grouped import GroupedLists
from .._inputs import GaprankInputError
from .._padding import group_positions
from .._typing import ArrayLike
from ..boosting import LambdaMARTObjective, LambdaMARTSettings, RankingEval
from ..metrics import Conventions
from . import _dmatrix

# XGBoost's lambdarank hessian per pair is 2 rho (1 - rho) |dM| (LightGBM's: rho (1 - rho) |dM|).
HESSIAN_SCALE = 2.0


def query_sizes(dmatrix: Any) -> np.ndarray:
    """Documents per query of a DMatrix, from its ``group_ptr``; a DMatrix without groups is an error
    (a ranking objective on one list of all rows would be silently wrong)."""
    return _sizes_from_pointer(_dmatrix.group_pointer(dmatrix), dmatrix.num_row())


def _sizes_from_pointer(group_pointer: np.ndarray, num_rows: int) -> np.ndarray:
    """The query sizes a ``group_ptr`` gives (:meth:`GroupedLists.from_pointer`), checked to cover ``num_rows``."""
    if group_pointer.size < 2:
        raise GaprankInputError("the DMatrix has no query groups: build it with qid= (one query id per row, rows "
                                "of a query together) or call set_group(sizes)")
    try:
        return GroupedLists.from_pointer(group_pointer, num_rows).group_sizes
    except GaprankInputError as exc:
        raise GaprankInputError(f"the DMatrix's group_ptr: {exc}") from None


def _query_weights(dmatrix: Any, sizes: np.ndarray) -> np.ndarray | None:
    """Per-row weights from XGBoost's per-query weights, normalised to mean 1 over queries as XGBoost does."""
    weights = _dmatrix.weights(dmatrix).astype(np.float64)
    if weights.size == 0:
        return None
    if weights.size != sizes.size:
        raise GaprankInputError(f"for ranking XGBoost takes one weight per query ({sizes.size}); the DMatrix has "
                                f"{weights.size} weights")
    if not np.isfinite(weights).all() or (weights < 0).any() or weights.sum() <= 0:
        raise GaprankInputError("query weights must be finite, non-negative and not all zero")
    return np.repeat(weights * (weights.size / weights.sum()), sizes)


class XGBoostObjective:
    """``obj`` for ``xgboost.train``: ``(predt, dtrain) -> (grad, hess)``; see :func:`objective`.

    ``objective``: a :class:`~gaprank.boosting.LambdaMARTObjective`, or what makes one (a measure string or a
    :class:`~gaprank.boosting.LambdaMARTSettings`, with its fields as keywords, ``level_weights`` among them).

    A DMatrix with query groups holds one weight per query, so the documents' weights in the measure
    (``row_weights="measure"``) come with the objective: ``level_weights`` (``[rows, c]``: one weight per document
    and grade level, as :class:`gaprank.lightgbm.LambdaRankObjective` takes them), read in place of the DMatrix's
    weights, which must then be unset."""

    # the last group_ptr and number of rows read, and their query sizes: the same every round of a training
    # (a class default, so that an objective pickled before it existed still runs)
    _groups: tuple[np.ndarray, int, np.ndarray] | None = None

    def __init__(self, objective: LambdaMARTObjective | LambdaMARTSettings | str = "gap", **fields: Any) -> None:
        if isinstance(objective, LambdaMARTObjective) and "level_weights" in fields:
            raise GaprankInputError("level_weights go with settings (XGBoostObjective(settings, level_weights=W)), or "
                                    "on the LambdaMARTObjective given (its level_weights)")
        self.objective = LambdaMARTObjective.of(objective, fields)

    @property
    def settings(self) -> LambdaMARTSettings:
        """The wrapped objective's settings."""
        return self.objective.settings

    @property
    def level_weights(self) -> np.ndarray | None:
        """The documents' weights in the measure per level (``[rows, c]``), or None."""
        return self.objective.level_weights

    @level_weights.setter
    def level_weights(self, weights: np.ndarray | None) -> None:
        if weights is not None:
            if self.objective.settings.row_weights != "measure":
                raise GaprankInputError("level_weights weigh documents in the measure: they need "
                                        "row_weights='measure'")
            weights = np.asarray(weights, dtype=np.float64)
            if weights.ndim != 2:
                raise GaprankInputError(f"level_weights must be [rows, levels]; got shape {weights.shape}")
        self.objective.level_weights = weights

    def __getstate__(self) -> dict:
        # copies and pickles start without the last data set's groups, as the objective's layout cache does
        return {key: value for key, value in self.__dict__.items() if key != "_groups"}

    def __call__(self, predt: np.ndarray, dtrain: Any) -> tuple[np.ndarray, np.ndarray]:
        pointer, num_rows, groups = _dmatrix.group_pointer(dtrain), dtrain.num_row(), self._groups
        if groups is None or groups[1] != num_rows or not np.array_equal(groups[0], pointer):
            groups = self._groups = (pointer, num_rows, _sizes_from_pointer(pointer, num_rows))
        sizes = groups[2]
        if self.objective.settings.row_weights == "measure" and self.objective.level_weights is None:
            raise GaprankInputError("row_weights='measure' needs the documents' weights, and a DMatrix with query "
                                    "groups holds one per query: give them to the objective (level_weights)")
        # the position term's positions: each query's rows in the order they were shown (XGBoost's own convention)
        positions = group_positions(sizes)[1] if self.objective.settings.position_term else None
        grad, hess = self.objective.gradients(predt, _dmatrix.labels(dtrain), sizes, _query_weights(dtrain, sizes),
                                              positions)
        hess *= HESSIAN_SCALE  # a fresh array of gradients'
        return grad, hess

    def __repr__(self) -> str:
        return f"gaprank.xgboost.objective({self.objective!r})"


class XGBoostMetric:
    """``custom_metric`` for ``xgboost.train``: ``(predt, dmatrix) -> [(name, value), ...]``; see :func:`metric`."""

    def __init__(self, evaluator: RankingEval) -> None:
        self.evaluator = evaluator

    def __call__(self, predt: np.ndarray, dmatrix: Any) -> list[tuple[str, float]]:
        values = self.evaluator.evaluate(predt, _dmatrix.labels(dmatrix), query_sizes(dmatrix))
        return list(zip(self.evaluator.names, values.values(), strict=True))


def objective(
    measure: str = "gap",
    *,
    g: list[float] | None = None,
    sigma: float = 1.0,
    truncation_level: int | None = None,
    norm: bool = False,
    label_gain: list[float] | None = None,
    precision: Literal["float32", "float64"] = "float32",
    backend: Literal["auto", "compiled", "torch"] = "auto",
    row_weights: Literal["scale", "measure"] = "scale",
    position_term: bool = False,
    position_regularization: float = 0.0,
    position_learning_rate: float = 0.1,
) -> XGBoostObjective:
    r"""LambdaMART objective for ``xgboost.train(params, dtrain, obj=...)``: LambdaRank gradients weighted
    by :math:`|\Delta M|`, the exact swap delta of ``measure`` in the ranking the current scores induce.

    Per pair :math:`l_i > l_j` of a query, :math:`\rho_{ij} = 1/(1 + e^{\sigma(s_i - s_j)})`; document i
    receives :math:`-\sigma|\Delta M_{ij}|\rho_{ij}` and j the opposite, both a hessian of
    :math:`2\sigma^2|\Delta M_{ij}|\rho_{ij}(1-\rho_{ij})` (XGBoost's scale, twice LightGBM's). The
    rules are those of :func:`gaprank.lightgbm.lambdarank_objective`: ``truncation_level`` k keeps the
    pairs whose higher-ranked document is in the current top k; ``norm`` divides :math:`|\Delta M|` by
    :math:`0.01 + |s_i - s_j|` and scales a query's gradients by :math:`\log_2(1 + S)/S`. With
    ``measure="ndcg", truncation_level=32, norm=True`` this is XGBoost's native ``rank:ndcg`` with its
    defaults (``lambdarank_pair_method="topk"``, ``lambdarank_num_pair_per_sample=32``, normalisation on).

    Groups come from the DMatrix (``qid=`` or ``set_group``); labels must be integer grades
    0..30; weights, when set, are one per query (normalised to mean 1, as XGBoost does). A DMatrix with query
    groups holds no weight per row, so the documents' weights in the measure (``row_weights="measure"``) come
    with the objective: ``XGBoostObjective(settings, level_weights=W)``, and the DMatrix then has none.

    Parameters
    ----------
    measure : str, default 'gap'
        The measure string whose swap deltas weigh the pairs: 'gap', 'egap', 'xgap', 'ap', 'ndcg',
        'nDCG@10', 'AP(rel=2)', 'RBP(p=0.8)', 'P@5', 'ERR', 'Q', 'vG', 'eRAP(p=[0,0.5,1])', ... (any
        registered measure with swap deltas). Without a cutoff of its own, a measure normalised by
        the ideal ranking (nDCG) takes the ideal at ``truncation_level``, as LightGBM does.
    g : sequence of float, optional
        GAP's user model g_1..g_c for gap, xgap and egap, the same as ``g`` in the string (give one
        of the two); default uniform over the data set's grades.
    sigma : float, default 1.0
        The logistic's steepness (LightGBM's ``sigmoid``).
    truncation_level : int, optional
        Only pairs whose higher-ranked document is in the current top k; default every pair.
    norm : bool, default False
        LightGBM's ``lambdarank_norm``: divide |dM| by 0.01 + |s_i - s_j| and scale each query's
        lambdas by log2(1 + S)/S, S their sum.
    label_gain : sequence of float, optional
        A gain per label replacing nDCG's 2^l - 1 (LightGBM's ``label_gain``); for nDCG only.
    precision : {"float32", "float64"}, default "float32"
        The type of the torch pair engine's per-pair arithmetic (swap deltas and score differences
        are formed in float64 and rounded once). The compiled kernel, which serves the kernel (AP
        family) and discounted-gain measures on the CPU, always computes in float64.
    backend : {"auto", "compiled", "torch"}, default "auto"
        Which engine computes the gradients: "compiled" (the numba kernel, float64, for the AP
        family and the discounted-gain measures), "torch" (the tensor engine: any measure with swap
        deltas), or "auto": the compiled kernel wherever it serves, else the tensor engine.
        "compiled" where it cannot serve is refused.
    row_weights : {"scale", "measure"}, default "scale"
        What the data set's weights (one per row) do: "scale" multiplies each row's gradient and
        hessian by its weight, as LightGBM's own lambdarank does; "measure" makes each document
        count w times at its grade in the measure whose swap deltas weigh the pairs (the metrics'
        ``weights=``; with w = 1/propensity, the inverse-propensity estimate from clicks), which
        then needs the weights. Measures that take no weights (ERR, Q, RR, Rprec, Success, vG)
        refuse "measure".
    position_term : bool, default False
        Learn an additive term per displayed position with the model, score = f(x) + g(position), as
        LightGBM does for its own lambdarank (Unbiased LambdaMART's position bias in score space):
        each round's lambdas are those of the adjusted scores, and g takes a Newton step, g_p +=
        position_learning_rate * D1 / (abs(D2) + 0.001), with D1 = -(sum of the gradients at p) -
        position_regularization * count_p * g_p and D2 = -(sum of the hessians at p) -
        position_regularization * count_p. Only f is the model: a prediction has no g. The rows'
        positions come from the data set (LightGBM's ``position``; XGBoost: each query's rows in the
        order they were shown).
    position_regularization : float, default 0.0
        The L2 regularisation of the position term (LightGBM's
        ``lambdarank_position_bias_regularization``).
    position_learning_rate : float, default 0.1
        The step of the position term's Newton update (LightGBM takes the booster's learning rate).

    Returns
    -------
    value : XGBoostObjective
        A callable ``(predt, dtrain) -> (grad, hess)``.

    Examples
    --------
    >>> import numpy as np, xgboost as xgb
    >>> import gaprank.xgboost
    >>> rng = np.random.default_rng(0)
    >>> X, y = rng.normal(size=(60, 3)), rng.integers(0, 3, 60)
    >>> dtrain = xgb.DMatrix(X, label=y, qid=np.repeat([1, 2, 3], 20))
    >>> booster = xgb.train({"nthread": 1}, dtrain, num_boost_round=5,
    ...                     obj=gaprank.xgboost.objective("gap", g=[0.5, 0.5]))
    >>> booster.predict(dtrain).shape
    (60,)
    """
    settings = LambdaMARTSettings(measure, g=g, sigma=sigma, truncation_level=truncation_level, norm=norm,
                                  label_gain=label_gain, precision=precision, backend=backend, row_weights=row_weights,
                                  position_term=position_term, position_regularization=position_regularization,
                                  position_learning_rate=position_learning_rate)
    return XGBoostObjective(LambdaMARTObjective(settings))


def metric(measures: Sequence[str] | str, *, g: ArrayLike | None = None,
           conventions: str | Conventions | None = None) -> XGBoostMetric:
    """gaprank's measures as ``custom_metric`` of ``xgboost.train``: the mean of each over the DMatrix's queries.

    Names as in :func:`gaprank.metrics.parse_measure` ("GAP", "eGAP", "xGAP", "NDCG@10", "MAP",
    "P@10", ...), each the value of its metric function; named ``conventions`` (LETOR 3.0 or 4.0 rules for
    short lists and queries without relevant documents) change that, and a measure they change is reported as
    ``"NDCG@10[letor3]"``. XGBoost's early stopping watches the last value returned: list the measure to select
    on last, and pass ``maximize=True``.

    Parameters
    ----------
    measures : sequence of str
        The measures to report, in order.
    g : array_like, optional
        GAP's user model for GAP, xGAP and eGAP.
    conventions : {"letor3", "letor4", "trec"} or Conventions, optional
        The evaluation tool whose conventions nDCG and P@k follow; default none (each measure as its string
        says).

    Returns
    -------
    XGBoostMetric
        A callable ``(predt, dmatrix) -> [(name, value), ...]``.

    Examples
    --------
    >>> import numpy as np, xgboost as xgb
    >>> import gaprank.xgboost
    >>> dvali = xgb.DMatrix(np.eye(4), label=[2, 0, 1, 0], qid=[1, 1, 2, 2])
    >>> predt = np.array([0.9, 0.1, 0.2, 0.8])
    >>> gaprank.xgboost.metric(["GAP", "NDCG@10"], g=[0.5, 0.5])(predt, dvali)
    [('GAP', 0.75), ('NDCG@10', 0.8154648767857288)]
    >>> gaprank.xgboost.metric(["GAP", "NDCG@10"], g=[0.5, 0.5], conventions="letor3")(predt, dvali)
    [('GAP', 0.75), ('NDCG@10[letor3]', 0.0)]
    """
    return XGBoostMetric(RankingEval(measures, g=g, conventions=conventions))
