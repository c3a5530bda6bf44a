"""Swap deltas as a public function: the signed change of a measure for every swap of two documents."""

from __future__ import annotations

import torch

from .._engine.factors import pair_factors, rank_for_measure, symmetric_deltas, to_document_space
from .._inputs import GaprankInputError, check_positive_int
from .._typing import ArrayLike
from ..metrics import Measure, objective_measure


def swap_deltas(
    scores: ArrayLike,
    labels: ArrayLike,
    *,
    measure: str | Measure,
    g: ArrayLike | None = None,
    mask: ArrayLike | None = None,
    weights: ArrayLike | None = None,
    grade_counts: ArrayLike | None = None,
    k: int | None = None,
) -> torch.Tensor:
    r"""Signed change of ``measure`` when documents i and j swap places, for every pair: ``[B, N, N]``.

    The ranking is the one the scores induce (higher first, ties in input order). The result is in
    document-index space (entry [b, i, j] is about documents i and j of query b), symmetric, and zero
    for equal labels and for padding. ``measure`` is any measure string with swap deltas ("gap", "AP(rel=2)",
    "nDCG@10", "P@5", "RBP(p=0.8)", "ERR", "Q", "vG", "eRAP(p=[0,0.5,1])", ...); ``k`` (or the string's
    ``@k``) gives the delta of the measure at cutoff k. AP-family deltas use the swap deltas of the docs'
    page The maths (O(c) per pair); the discounted-gain family (nDCG, P@k, RBP, ...)
    :math:`\Delta = (\mathrm{gain}(y) - \mathrm{gain}(x)) (D(a) - D(b)) / Z`; ERR and Q their own
    forms, constant per pair. With ``weights``, the deltas of the weighted measure (the metrics' ``weights=``).

    Parameters
    ----------
    scores : torch.Tensor
        Floating-point scores, ``[list]`` (one query) or ``[batch, list]``; the loss is
        differentiated with respect to them.
    labels : array_like or torch.Tensor
        The documents' relevance grades, integers 0..30, in the shape of ``scores``.
    measure : str or Measure
        A measure string of gaprank's registry ('gap', 'GAP(g=[0.2,0.8])', 'AP(rel=2)', 'nDCG@10', ...), or one
        already parsed (``parse_measure``), whose form this loss can use; an unsuitable one is refused with the
        list of those that fit.
    g : array_like, optional
        GAP's user model g_1..g_c for gap, xgap and egap (non-negative, summing to 1), the same as
        ``g`` in the string (give one of the two); default uniform over grades 1..c.
    mask : torch.Tensor of bool, optional
        True marks a real document, False padding; padding gets exactly 0 gradient whatever its
        scores hold. Default: every position is real.
    weights : array_like, optional
        Per document, >= 0, in the shape of ``scores``: the deltas of the weighted measure, a document counting
        w times at its grade (the metrics' ``weights=``, the inverse-propensity estimate). Not taken by ERR, Q,
        RR, Rprec, Success or vG. Default: every document weighs 1.
    grade_counts : array_like, optional
        R(0)..R(c) per query when the list does not hold every judged document (the recall base and
        the ideal list); default counted from the labels.
    k : int, optional
        The deltas of the measure at cutoff k (only ranks 1..k count); default the whole list.

    Returns
    -------
    value : torch.Tensor
        ``[batch, list, list]`` (``[list, list]`` for one query): entry [b, i, j] is the signed
        change of the measure when documents i and j swap places; symmetric, 0 for equal labels and
        padding.

    Examples
    --------
    >>> import torch
    >>> from gaprank.losses import swap_deltas
    >>> d = swap_deltas(torch.tensor([3.0, 2.0, 1.0]), torch.tensor([0, 1, 0]), measure="ap")
    >>> d[0, 1].item()   # moving the relevant document from rank 2 to rank 1: AP 0.5 -> 1
    0.5
    """
    k = check_positive_int(k)
    parsed = objective_measure(measure).with_params(g=g)
    if k is not None and parsed.k is not None and k != parsed.k:
        raise GaprankInputError(f"measure {parsed.name!r} sets cutoff {parsed.k}; k={k} disagrees")
    ranked, params = rank_for_measure(scores, labels, parsed, mask=mask, grade_counts=grade_counts, weights=weights)
    factors = pair_factors(parsed, ranked, params, k=k)
    if factors is None:
        rank_space = ranked.counts.new_zeros(ranked.batch, ranked.list_size, ranked.list_size)
    else:
        rank_space = symmetric_deltas(factors, ranked.list_size)
    out = to_document_space(rank_space, ranked.order).to(ranked.spec.dtype)
    return out[0] if ranked.spec.squeeze else out
