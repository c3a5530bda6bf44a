"""The extension API: what a measure author needs to add a measure to gaprank's registry.

A measure is one :class:`MeasureInfo` entry: its name, parameters (:class:`ParamInfo`), reference and *form*,
the implementation gaprank computes it with:

* :class:`KernelForm` (the AP family): a :class:`Kernel` per list, built from the lists' grade counts; the
  metric is :func:`pivot_sum` over the ranked grades, and the ideal ranking's value is :func:`ideal_sum`;
* :class:`GainDiscountForm` (nDCG, DCG, P@k, RBP, ...): a gain per grade and a discount per rank;
* :class:`ListForm` (ERR, Q, ...): its own value and, optionally, its own swap-delta factors.

:func:`register` makes the entry a metric function, a measure string, a LambdaRank loss, a LightGBM and XGBoost
objective and, as its form allows, a smooth loss; :func:`gaprank.testing.check_measure` checks everything built
on it against one brute-force oracle. :func:`rank_lists` and :class:`RankedLists` are the ranked input every form
reads, :func:`grade_indicators` the one-hot grades, :func:`resolve_g` GAP's user model checked and filled.
The page "Adding a measure" of the docs walks through one measure of each form.
"""

from .metrics import (
    GainDiscountForm,
    Kernel,
    KernelForm,
    ListForm,
    Measure,
    MeasureInfo,
    ParamInfo,
    RankedLists,
    find_measure,
    g_not_taken,
    grade_indicators,
    ideal_sum,
    measures,
    objective_measure,
    objective_names,
    parse_measure,
    pivot_sum,
    rank_lists,
    register,
    resolve_g,
    unregister,
    user_model_measures,
)

__all__ = [
    "MeasureInfo",
    "ParamInfo",
    "KernelForm",
    "GainDiscountForm",
    "ListForm",
    "Kernel",
    "RankedLists",
    "rank_lists",
    "grade_indicators",
    "pivot_sum",
    "ideal_sum",
    "resolve_g",
    "g_not_taken",
    "register",
    "unregister",
    "measures",
    "find_measure",
    "user_model_measures",
    "objective_names",
    "objective_measure",
    "parse_measure",
    "Measure",
]
