"""Learning-to-rank objectives for PyTorch: smooth metrics (SoftRank, approximate ranks, NeuralSort, SoftSort, fast
soft ranks: ``SMOOTHINGS``), their exact expectation, LambdaRank with |Delta metric| weights, RankNet and ListNet.

Every loss is a function ``f(scores, labels, *, mask=None, ..., reduction="mean")`` returning a value
to minimise, with an ``nn.Module`` twin that holds the hyperparameters only. :func:`build` makes the module of a
loss kind for a measure string and settings, checked against the registry (what a training config asks for).
"""

from ._build import build
from ._deltas import swap_deltas
from ._listnet import ListNetLoss, listnet_loss
from ._pairwise import LambdaRankLoss, RankNetLoss, lambdarank_loss, ranknet_loss
from ._soft import SMOOTHINGS, SoftMetricLoss, soft_metric, soft_metric_loss
from ._soft_named import (
    SoftAPLoss,
    SoftEGAPLoss,
    SoftGAPLoss,
    SoftNDCGLoss,
    SoftXGAPLoss,
    soft_ap_loss,
    soft_egap_loss,
    soft_gap_loss,
    soft_ndcg_loss,
    soft_xgap_loss,
)

__all__ = [
    "SMOOTHINGS",
    "swap_deltas",
    "soft_metric",
    "soft_metric_loss",
    "soft_gap_loss",
    "soft_xgap_loss",
    "soft_egap_loss",
    "soft_ap_loss",
    "soft_ndcg_loss",
    "lambdarank_loss",
    "ranknet_loss",
    "listnet_loss",
    "SoftGAPLoss",
    "SoftXGAPLoss",
    "SoftEGAPLoss",
    "SoftAPLoss",
    "SoftNDCGLoss",
    "LambdaRankLoss",
    "RankNetLoss",
    "ListNetLoss",
    "SoftMetricLoss",
    "build",
]
