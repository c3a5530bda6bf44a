"""The parameters the losses share, written once and put into each public loss's docstring."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .._docstrings import with_parameters

SCORES = ("scores, labels", "torch.Tensor (float), array-like",
          "Scores ``[list]`` (one query) or ``[batch, list]``, differentiated; labels are integer grades "
          "0..30 of the same shape.")
SHARED: dict[str, tuple[str, str]] = {
    "metric": ("str", "The measure, by its objective name in gaprank's registry: 'gap', 'xgap', 'egap', 'ap' or "
                      "'ndcg' (and any measure registered with the mode the loss needs)."),
    "g": ("array-like, optional", "GAP's user model g_1..g_c for gap, xgap and egap (non-negative, summing to 1); "
                                  "default uniform over grades 1..c."),
    "mode": ('{"paper", "exact"}', '"paper": SoftRank\'s ratio of expectations (Robertson et al. 2010, sec. 5); '
                                   '"exact": the expectation of the measure under the Gaussian score model (the AP '
                                   'family; float64).'),
    "k": ("int, optional", "Only pairs whose upper document is in the current top k (LightGBM's truncation rule); "
                           "default every pair."),
    "mask": ("torch.Tensor of bool, optional", "True marks a real document, False padding; padding gets exactly 0 "
                                               "gradient whatever its scores hold. Default: every position is real."),
    "grade_counts": ("array-like, optional", "R(0)..R(c) per query when the list does not hold every judged "
                                             "document (the recall base and the ideal list); default counted from "
                                             "the labels."),
    "reduction": ('{"mean", "sum", "none"}', '"mean" over all the batch\'s queries (those without two different '
                                              'labels count as 0), "sum", or "none": one value per query.'),
}
SIGMA_SMOOTH = ("float", "The standard deviation of each score in SoftRank's Gaussian model (Taylor et al.'s "
                         "sigma_s); as it goes to 0 with distinct scores the value goes to the measure.")
SIGMA_LOGISTIC = ("float", "The logistic's steepness: rho_ij = 1 / (1 + exp(sigma (s_i - s_j))).")
LOSS = ("torch.Tensor", "The loss to minimise: a scalar for reduction \"mean\" or \"sum\", ``[batch]`` for \"none\" "
                        "(a scalar for one 1-D query); 0 at a perfect, confident ranking.")
VALUE = ("torch.Tensor", "The smooth value per query, ``[batch]`` (a scalar for one 1-D query), in the scores' dtype; "
                         "0 where the measure is undefined.")
CUTOFF_DELTAS = ("int, optional", "The deltas of the measure at cutoff k (only ranks 1..k count); default the whole list.")
DELTAS = ("torch.Tensor", "``[batch, list, list]`` (``[list, list]`` for one query): entry [b, i, j] is the signed "
                          "change of the measure when documents i and j swap places; symmetric, 0 for equal labels "
                          "and padding.")


def document_loss(function: Callable[..., Any], *, sigma: tuple[str, str] | None = None,
                  returns: tuple[str, str] = LOSS, own: dict[str, tuple[str, str]] | None = None) -> None:
    """Give a loss's docstring its Parameters and Returns (unless it has them); ``own`` overrides the
    shared texts for this function."""
    own = {**({} if sigma is None else {"sigma": sigma}), **(own or {})}
    with_parameters(function, own, shared=SHARED, first=SCORES, returns=returns)
