"""LambdaMART in LightGBM: the engine-neutral objective of :mod:`gaprank.boosting` in ``lgb.train``'s and
``LGBMRanker``'s conventions.

``lgb.train`` calls an objective as ``(preds, train_data)``, ``LGBMRanker`` as ``(y_true, y_pred, weight,
group)``; both come to :meth:`gaprank.boosting.LambdaMARTObjective.gradients`. A ``train_data`` that is a
subset of a data set must hold whole queries (``lgb.cv`` splits rows with a callable objective).
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np

from .._typing import ArrayLike
from ..boosting import LambdaMARTObjective, LambdaMARTSettings
from ._folds import check_whole_queries


class LambdaRankObjective(LambdaMARTObjective):
    """LightGBM custom objective: the LambdaRank gradients and hessians of a ranking measure.

    Build it with :func:`lambdarank_objective` (``lgb.train``) or :func:`sklearn_objective`
    (``LGBMRanker``); :meth:`gradients` is the plain-array form both call.

    A LightGBM data set holds one weight per row. Weights per row and level (``[rows, c]``: graded events, each
    level weighed in the measure; ``row_weights="measure"``) come with the objective instead:
    ``LambdaRankObjective(settings, level_weights=W)`` reads them in place of the data set's, which must then
    have none, and refuses a data set of another number of rows.
    """

    def __call__(self, preds: np.ndarray, train_data: Any) -> tuple[np.ndarray, np.ndarray]:
        """``lgb.train`` form: ``(preds, train_data) -> (grad, hess)``."""
        check_whole_queries(train_data)
        return self.gradients(preds, train_data.get_label(), train_data.get_group(), train_data.get_weight(),
                              train_data.get_position() if self.settings.position_term else None)


class SklearnObjective:
    """``LGBMRanker`` form: ``(y_true, y_pred, weight, group) -> (grad, hess)``.

    LightGBM 4 passes the sample weights as third argument and the query sizes as fourth (LightGBM 3
    passed ``(y_true, y_pred, group)``); it picks the form by counting parameters, so all four are named.
    ``objective``: a :class:`~gaprank.boosting.LambdaMARTObjective`, or what makes one (a measure string or
    a :class:`~gaprank.boosting.LambdaMARTSettings`, with its fields as keywords), as for
    :class:`LambdaRankObjective`.
    """

    def __init__(self, objective: LambdaMARTObjective | LambdaMARTSettings | str = "gap", **fields: Any) -> None:
        self.objective = LambdaMARTObjective.of(objective, fields)

    def __call__(self, y_true: np.ndarray, y_pred: np.ndarray, weight: ArrayLike | None,
                 group: ArrayLike | None) -> tuple[np.ndarray, np.ndarray]:
        return self.objective.gradients(y_pred, y_true, group, weight)

    def __repr__(self) -> str:
        return f"sklearn_objective({self.objective!r})"


def lambdarank_objective(
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
) -> LambdaRankObjective:
    r"""LambdaMART objective for ``lgb.train``: LambdaRank gradients weighted by :math:`|\Delta M|`.

    ``measure``: any measure string with swap deltas: "gap", "egap", "xgap" (with threshold probabilities
    ``g``, default uniform over the data set's grades), "ap" (relevant = label >= 1), "AP(rel=2)", "ndcg"
    (gain ``label_gain``, default :math:`2^l - 1`; without a cutoff of its own, ideal DCG at
    ``truncation_level`` and discounts :math:`1/\log_2(1 + n)` at every rank), "nDCG@10", "P@5",
    "RBP(p=0.8)", "ERR", "Q", "vG", "eRAP(p=[0,0.5,1])", ...
    :math:`\Delta M_{ij}` is the exact change of the measure when documents i and j swap places in the
    ranking the current scores induce (ties in row order), in O(c) per pair for the AP family and O(1)
    for the others (docs: The maths, "Swap deltas in O(c) per pair").

    ``truncation_level`` k keeps the pairs whose higher-ranked document is in the current top k
    (None: all pairs); ``norm`` divides :math:`|\Delta M|` by :math:`0.01 + |s_i - s_j|` and scales
    each query's gradients by :math:`\log_2(1 + S)/S` (S: its lambda sum). With ``measure="ndcg",
    truncation_level=30, norm=True`` this is LightGBM's own ``objective="lambdarank"`` (its defaults
    ``lambdarank_truncation_level=30``, ``lambdarank_norm=true``, ``sigmoid=1``).

    On the CPU the AP family and the discounted-gain measures run on the compiled kernel, in float64
    (``precision`` then changes nothing); the measures with factors of their own (ERR, Q, RR, Rprec, Success)
    run on the tensor engine, whose per-pair arithmetic ``precision`` sets. LightGBM keeps gradients and
    hessians in float32 either way.

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
    value : LambdaRankObjective
        A callable ``(preds, train_data) -> (grad, hess)`` for ``lgb.train(params={"objective":
        ...})``.

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
    return LambdaRankObjective(LambdaMARTSettings(measure, g=g, sigma=sigma, truncation_level=truncation_level, norm=norm,
                                                  label_gain=label_gain, precision=precision, backend=backend,
                                                  row_weights=row_weights, position_term=position_term,
                                                  position_regularization=position_regularization,
                                                  position_learning_rate=position_learning_rate))


def sklearn_objective(
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
) -> SklearnObjective:
    r"""The objective of :func:`lambdarank_objective` for ``lightgbm.LGBMRanker(objective=...)``.

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
    value : SklearnObjective
        A callable ``(y_true, y_pred, weight, group) -> (grad, hess)`` for
        ``LGBMRanker(objective=...)``.

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
    settings = LambdaMARTSettings(measure, g=g, sigma=sigma, truncation_level=truncation_level, norm=norm,
                                  label_gain=label_gain, precision=precision, backend=backend, row_weights=row_weights,
                                  position_term=position_term, position_regularization=position_regularization,
                                  position_learning_rate=position_learning_rate)
    return SklearnObjective(LambdaRankObjective(settings))
