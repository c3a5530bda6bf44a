"""The settings of a LambdaMART objective, declared once.

:class:`LambdaMARTSettings` is the one frozen object behind every factory
(:func:`gaprank.lightgbm.lambdarank_objective`, :func:`gaprank.lightgbm.sklearn_objective`,
:func:`gaprank.xgboost.objective`) and the ``objective`` section of the training configs; the factories take
its fields as keywords (a test compares their signatures with the fields).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from .._engine.backends import check_backend
from .._inputs import GaprankInputError, check_choice, check_positive_int, check_sigma
from ..metrics import GainDiscountForm, Measure, objective_measure

PRECISIONS = ("float32", "float64")
ROW_WEIGHTS = ("scale", "measure")


@dataclass(frozen=True)
class LambdaMARTSettings:
    """What a LambdaMART objective is: the measure whose swap deltas weigh the pairs and how the pairs are
    weighed. Checked when built.

    Parameters
    ----------
    measure : str, default 'gap'
        The measure string whose swap deltas weigh the pairs: 'gap', 'egap', 'xgap', 'ap', 'ndcg',
        'nDCG@10', 'AP(rel=2)', 'RBP(p=0.8)', 'P@5', 'ERR', 'Q', 'vG', 'eRAP(p=[0,0.5,1])', ... (any
        registered measure with swap deltas). Without a cutoff of its own, a measure normalised by
        the ideal ranking (nDCG) takes the ideal at ``truncation_level``, as LightGBM does.
    g : sequence of float, optional
        GAP's user model g_1..g_c for gap, xgap and egap, the same as ``g`` in the string (give one of
        the two); default uniform over the data set's grades.
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
        Which engine computes the gradients: "compiled" (the numba kernel, float64, for the AP family and
        the discounted-gain measures), "torch" (the tensor engine: any measure with swap deltas), or "auto":
        the compiled kernel wherever it serves, else the tensor engine. "compiled" where it cannot serve is
        refused.
    row_weights : {"scale", "measure"}, default "scale"
        What the data set's weights (one per row) do: "scale" multiplies each row's gradient and hessian by its
        weight, as LightGBM's own lambdarank does; "measure" makes each document count w times at its grade in
        the measure whose swap deltas weigh the pairs (the metrics' ``weights=``; with w = 1/propensity, the
        inverse-propensity estimate from clicks), which then needs the weights. Measures that take no weights
        (ERR, Q, RR, Rprec, Success, vG) refuse "measure".
    position_term : bool, default False
        Learn an additive term per displayed position with the model, score = f(x) + g(position), as LightGBM does
        for its own lambdarank (Unbiased LambdaMART's position bias in score space): each round's lambdas are those
        of the adjusted scores, and g takes a Newton step, g_p += position_learning_rate * D1 / (abs(D2) + 0.001),
        with D1 = -(sum of the gradients at p) - position_regularization * count_p * g_p and D2 = -(sum of the
        hessians at p) - position_regularization * count_p. Only f is the model: a prediction has no g. The rows'
        positions come from the data set (LightGBM's ``position``; XGBoost: each query's rows in the order they
        were shown).
    position_regularization : float, default 0.0
        The L2 regularisation of the position term (LightGBM's ``lambdarank_position_bias_regularization``).
    position_learning_rate : float, default 0.1
        The step of the position term's Newton update (LightGBM takes the booster's learning rate).

    Examples
    --------
    >>> from gaprank.boosting import LambdaMARTSettings
    >>> LambdaMARTSettings("nDCG@10", truncation_level=30).parsed_measure.k
    10
    """

    measure: str = "gap"
    g: list[float] | None = None
    sigma: float = 1.0
    truncation_level: int | None = None
    norm: bool = False
    label_gain: list[float] | None = None
    precision: Literal["float32", "float64"] = "float32"
    backend: Literal["auto", "compiled", "torch"] = "auto"
    row_weights: Literal["scale", "measure"] = "scale"
    position_term: bool = False
    position_regularization: float = 0.0
    position_learning_rate: float = 0.1

    def __post_init__(self) -> None:
        measure = objective_measure(self.measure).with_params(g=self.g)
        object.__setattr__(self, "_measure", measure)  # parsed once; not a field
        measure.settings()  # g and the string's own parameters, checked
        check_sigma(self.sigma)
        check_positive_int(self.truncation_level, "truncation_level")
        if not isinstance(self.norm, (bool, np.bool_)):
            raise GaprankInputError(f"norm must be True or False; got {self.norm!r}")
        check_choice(self.precision, "precision", PRECISIONS)
        check_backend(self.backend)
        check_choice(self.row_weights, "row_weights", ROW_WEIGHTS)
        if not isinstance(self.position_term, (bool, np.bool_)):
            raise GaprankInputError(f"position_term must be True or False; got {self.position_term!r}")
        for name in ("position_regularization", "position_learning_rate"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not np.isfinite(value) or value < 0:
                raise GaprankInputError(f"{name} must be a finite number >= 0; got {value!r}")
        if self.row_weights == "measure" and not measure.info.form.takes_weights:
            raise GaprankInputError(f"row_weights='measure': {measure.info.name} does not take weights (its form "
                                    "weighs no document)")
        if self.label_gain is not None:
            if not (isinstance(measure.info.form, GainDiscountForm) and "gain" in measure.info.parameters):
                # a gain per label replaces nDCG's gain table, not a kernel's or a relevance rule
                raise GaprankInputError(f"label_gain applies to measure='ndcg' only, not {self.measure!r} "
                                        "(the AP family uses g)")
            gains = np.asarray(self.label_gain, dtype=np.float64)
            if gains.ndim != 1 or gains.size == 0 or not np.isfinite(gains).all():
                raise GaprankInputError("label_gain must be a non-empty 1-D list of finite gains, one per label; "
                                        f"got {self.label_gain!r}")

    @property
    def parsed_measure(self) -> Measure:
        """The measure string parsed, with ``g`` joined to its own parameters."""
        return self._measure  # type: ignore[attr-defined]

    def replace(self, **changes: Any) -> LambdaMARTSettings:
        """A copy with some settings changed (checked again)."""
        return dataclasses.replace(self, **changes)
