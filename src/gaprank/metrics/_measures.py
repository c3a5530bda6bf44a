"""The built-in measures, registered in this order: the AP family, the discounted-gain measures, the measures of a
whole list (each module holds a metric function, written out, and its registry entry beside it).

Each metric function calls its entry's :meth:`~gaprank.metrics.MeasureInfo.evaluate`; each entry names its form
and the formulas it is made of (:mod:`._kernels`, :mod:`._formulas`), its parameters, its reference and its
function. The functions' signatures are :func:`~gaprank.metrics._registry.metric_signature` of their entries (a
test compares them), so they cannot drift from the registry.
"""

from __future__ import annotations

from ._ap_family import (  # noqa: F401 - registered on import; the metric functions and entries re-exported
    AP,
    EGAP,
    ERAP,
    GAP,
    VG,
    XGAP,
    average_precision,
    egap,
    erap,
    gap,
    generalized_ap,
    xgap,
)
from ._gain_discount import (  # noqa: F401 - registered on import; the metric functions and entries re-exported
    DCG,
    ERRBP,
    NDCG,
    RBP,
    SR,
    P,
    R,
    dcg,
    errbp,
    ndcg,
    precision,
    rbp,
    recall,
    sliding_ratio,
)
from ._list_measures import (  # noqa: F401 - registered on import; the metric functions and entries re-exported
    ERR,
    RPREC,
    RR,
    SUCCESS,
    Q,
    err,
    q_measure,
    r_precision,
    reciprocal_rank,
    success,
)
from ._registry import seal_built_ins

seal_built_ins()  # the entries above are gaprank's own: unregister refuses them
