"""ListNet (Cao et al., ICML 2007), top-one probabilities."""

from __future__ import annotations

from typing import Literal

import torch

from .._inputs import as_batch
from .._typing import ArrayLike
from ..metrics import rank_lists
from ._common import check_loss_settings, check_scores_tensor, reduce_loss


def listnet_loss(scores: torch.Tensor, labels: ArrayLike, *, mask: torch.Tensor | None = None,
                 reduction: Literal["mean", "sum", "none"] = "mean") -> torch.Tensor:
    r"""ListNet with top-one probabilities: :math:`\mathrm{KL}(\mathrm{softmax}(l) \,\|\, \mathrm{softmax}(s))`
    over each query's real documents,

    .. math::

        L = \sum_n t_n (\log t_n - \log p_n), \quad t = \mathrm{softmax}(l), \; p = \mathrm{softmax}(s),

    i.e. Cao et al.'s cross entropy minus the target's entropy (the same gradient, and 0 at the optimum).
    Queries without two different labels give 0 loss and 0 gradient.

    Parameters
    ----------
    scores : torch.Tensor
        Floating-point scores, ``[list]`` (one query) or ``[batch, list]``; the loss is
        differentiated with respect to them.
    labels : array_like or torch.Tensor
        The documents' relevance grades, integers 0..30, in the shape of ``scores``.
    mask : torch.Tensor of bool, optional
        True marks a real document, False padding; padding gets exactly 0 gradient whatever its
        scores hold. Default: every position is real.
    reduction : {"mean", "sum", "none"}, default "mean"
        "mean" over all the batch's queries (those without two different labels count as 0), "sum",
        or "none": one value per query.

    Returns
    -------
    value : torch.Tensor
        The loss to minimise: a scalar for reduction "mean" or "sum", ``[batch]`` for "none" (a
        scalar for one 1-D query); 0 at a perfect, confident ranking.

    Examples
    --------
    >>> import torch
    >>> from gaprank.losses import listnet_loss
    >>> round(listnet_loss(torch.tensor([1.0, 0.0]), torch.tensor([1, 0])).item(), 6)   # scores = labels
    0.0
    """
    check_scores_tensor(scores)
    ranked = rank_lists(scores.detach(), labels, mask=mask)
    s, m = as_batch(scores, mask)
    doc_labels = ranked.document_grades()
    keep = ranked.rankable()
    neg_inf = torch.tensor(float("-inf"), dtype=s.dtype, device=s.device)
    log_p = torch.log_softmax(torch.where(m, s, neg_inf).masked_fill(~keep[:, None], 0.0), -1)
    log_t = torch.log_softmax(torch.where(m, doc_labels.to(s.dtype), neg_inf).masked_fill(~keep[:, None], 0.0), -1)
    terms = torch.where(m & keep[:, None], log_t.exp() * (log_t - log_p), torch.zeros_like(s))
    return reduce_loss(terms.sum(-1), reduction, ranked.spec.squeeze)


class ListNetLoss(torch.nn.Module):
    """ListNet (top-one probabilities); see :func:`listnet_loss`."""

    def __init__(self, reduction: Literal["mean", "sum", "none"] = "mean") -> None:
        super().__init__()
        check_loss_settings(None, reduction=reduction)
        self.reduction = reduction

    def forward(self, scores: torch.Tensor, labels, mask: torch.Tensor | None = None) -> torch.Tensor:
        return listnet_loss(scores, labels, mask=mask, reduction=self.reduction)

    def extra_repr(self) -> str:
        return f"reduction={self.reduction!r}"
