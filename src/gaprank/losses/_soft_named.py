"""The smooth losses by name: ``soft_gap_loss`` / ``SoftGAPLoss`` and their siblings, each :func:`soft_metric_loss`
of one measure (what ``gaprank.losses`` offers beside the measure string)."""

from __future__ import annotations

from typing import Literal

import torch

from .._typing import ArrayLike
from ._soft import Smoothing, _SoftMetricLoss, check_smoothing, soft_metric_loss


def soft_gap_loss(
    scores: torch.Tensor,
    labels: ArrayLike,
    *,
    g: ArrayLike | None = None,
    sigma: float = 1.0,
    smoothing: Smoothing = "softrank",
    mask: torch.Tensor | None = None,
    grade_counts: ArrayLike | None = None,
    reduction: Literal["mean", "sum", "none"] = "mean",
    max_grade: int | None = None,
    validate: bool = True,
) -> torch.Tensor:
    r"""GAP loss: ``gap(ideal) - SoftGAP`` per query; :func:`soft_metric_loss` with
    ``measure='gap'`` (Robertson et al. 2010, sec. 5).

    Parameters
    ----------
    scores : torch.Tensor
        Floating-point scores, ``[list]`` (one query) or ``[batch, list]``; the loss is
        differentiated with respect to them.
    labels : array_like or torch.Tensor
        The documents' relevance grades, integers 0..30, in the shape of ``scores``.
    g : array_like, optional
        GAP's user model g_1..g_c for gap, xgap and egap (non-negative, summing to 1); default
        uniform over grades 1..c.
    sigma : float, default 1.0
        The smoothing's scale, in units of the scores; as it goes to 0 with distinct scores the
        value goes to the measure. "softrank" and "expected": the standard deviation of each score
        in SoftRank's Gaussian model (Taylor et al.'s sigma_s); "approx" and "approx_interpolated":
        the sigmoid's temperature (Rax's temperature, 1/alpha of allRank's approxNDCGLoss);
        "neuralsort", "neuralsort_sinkhorn" and "softsort": the softmax temperature of the relaxed
        permutation (allRank's temperature tau); "fast_soft_rank": the regularisation strength
        epsilon of the projection onto the permutahedron (torchsort's regularization_strength).
    smoothing : str, default "softrank"
        How the ranks are smoothed, one of ``gaprank.losses.SMOOTHINGS`` (docs: Choosing a smooth
        loss). "softrank": SoftRank's ratio of expectations, the GAP paper's SoftGAP (Robertson et
        al. 2010, sec. 5); "expected": the expectation of the measure under the same Gaussian model
        (the AP family; float64); "approx": approximate ranks 1 + sum_m sigmoid((s_m - s_n)/sigma)
        with the discount at the soft rank, Qin, Liu and Li's ApproxNDCG (2010), as Rax, allRank and
        TF-Ranking compute it; "approx_interpolated": the same ranks with the discount interpolated
        between the integer ranks around them (gaprank's form: with a cutoff k, a slope from rank k
        to k + 1); "neuralsort" and "softsort": the relaxed sorting permutations of Grover et al.
        (2019) and Prillo and Eisenschlos (2020); "neuralsort_sinkhorn": NeuralSort's made doubly
        stochastic by Sinkhorn scaling, NeuralNDCG (Pobrotyn and Bialobrzeski 2021) as allRank
        computes it (at most 50 scalings, tolerance 1e-6; O(n^2) memory a scaling);
        "fast_soft_rank": the soft ranks of Blondel et al. (2020), by projection onto the
        permutahedron, O(n log n) time and O(n) memory. All but the first two take the AP family
        through the threshold identity (AP, GAP, xGAP, eGAP; vG and eRAP are refused) and the
        discounted-gain family at soft positions; none takes ERR, Q, RR, Rprec or Success (their
        value is not a sum over documents of a function of the document's rank).
    mask : torch.Tensor of bool, optional
        True marks a real document, False padding; padding gets exactly 0 gradient whatever its
        scores hold. Default: every position is real.
    grade_counts : array_like, optional
        R(0)..R(c) per query when the list does not hold every judged document (the recall base and
        the ideal list); default counted from the labels.
    reduction : {"mean", "sum", "none"}, default "mean"
        "mean" over all the batch's queries (those without two different labels count as 0), "sum",
        or "none": one value per query.
    max_grade : int, optional
        The top grade c of the data set's grade scale 0..c. Default: the largest label of the batch,
        which then also sets a default uniform ``g``; pass it so that every batch is scored on the
        same scale.
    validate : bool, default True
        Check the inputs (finite scores, integer labels within the scale). False is for trusted
        inputs on a GPU: nothing is read back from the device, and the grade scale must be fixed
        (``max_grade`` or a setting of the measure).

    Returns
    -------
    value : torch.Tensor
        The loss to minimise: a scalar for reduction "mean" or "sum", ``[batch]`` for "none" (a
        scalar for one 1-D query); 0 at a perfect, confident ranking.

    Examples
    --------
    >>> import torch
    >>> from gaprank.losses import soft_gap_loss
    >>> float(soft_gap_loss(torch.tensor([2.0, 1.0]), torch.tensor([1, 0]), sigma=1e-3))
    0.0
    """
    smoothing = check_smoothing(smoothing)
    return soft_metric_loss(scores, labels, measure='gap', g=g, sigma=sigma, smoothing=smoothing, mask=mask,
                            grade_counts=grade_counts, reduction=reduction, max_grade=max_grade, validate=validate)


def soft_xgap_loss(
    scores: torch.Tensor,
    labels: ArrayLike,
    *,
    g: ArrayLike | None = None,
    sigma: float = 1.0,
    smoothing: Smoothing = "softrank",
    mask: torch.Tensor | None = None,
    grade_counts: ArrayLike | None = None,
    reduction: Literal["mean", "sum", "none"] = "mean",
    max_grade: int | None = None,
    validate: bool = True,
) -> torch.Tensor:
    r"""xGAP loss: ``xgap(ideal) - SoftxGAP`` per query; :func:`soft_metric_loss` with
    ``measure='xgap'`` (kernel of Ferrante et al., eq. 5).

    Parameters
    ----------
    scores : torch.Tensor
        Floating-point scores, ``[list]`` (one query) or ``[batch, list]``; the loss is
        differentiated with respect to them.
    labels : array_like or torch.Tensor
        The documents' relevance grades, integers 0..30, in the shape of ``scores``.
    g : array_like, optional
        GAP's user model g_1..g_c for gap, xgap and egap (non-negative, summing to 1); default
        uniform over grades 1..c.
    sigma : float, default 1.0
        The smoothing's scale, in units of the scores; as it goes to 0 with distinct scores the
        value goes to the measure. "softrank" and "expected": the standard deviation of each score
        in SoftRank's Gaussian model (Taylor et al.'s sigma_s); "approx" and "approx_interpolated":
        the sigmoid's temperature (Rax's temperature, 1/alpha of allRank's approxNDCGLoss);
        "neuralsort", "neuralsort_sinkhorn" and "softsort": the softmax temperature of the relaxed
        permutation (allRank's temperature tau); "fast_soft_rank": the regularisation strength
        epsilon of the projection onto the permutahedron (torchsort's regularization_strength).
    smoothing : str, default "softrank"
        How the ranks are smoothed, one of ``gaprank.losses.SMOOTHINGS`` (docs: Choosing a smooth
        loss). "softrank": SoftRank's ratio of expectations, the GAP paper's SoftGAP (Robertson et
        al. 2010, sec. 5); "expected": the expectation of the measure under the same Gaussian model
        (the AP family; float64); "approx": approximate ranks 1 + sum_m sigmoid((s_m - s_n)/sigma)
        with the discount at the soft rank, Qin, Liu and Li's ApproxNDCG (2010), as Rax, allRank and
        TF-Ranking compute it; "approx_interpolated": the same ranks with the discount interpolated
        between the integer ranks around them (gaprank's form: with a cutoff k, a slope from rank k
        to k + 1); "neuralsort" and "softsort": the relaxed sorting permutations of Grover et al.
        (2019) and Prillo and Eisenschlos (2020); "neuralsort_sinkhorn": NeuralSort's made doubly
        stochastic by Sinkhorn scaling, NeuralNDCG (Pobrotyn and Bialobrzeski 2021) as allRank
        computes it (at most 50 scalings, tolerance 1e-6; O(n^2) memory a scaling);
        "fast_soft_rank": the soft ranks of Blondel et al. (2020), by projection onto the
        permutahedron, O(n log n) time and O(n) memory. All but the first two take the AP family
        through the threshold identity (AP, GAP, xGAP, eGAP; vG and eRAP are refused) and the
        discounted-gain family at soft positions; none takes ERR, Q, RR, Rprec or Success (their
        value is not a sum over documents of a function of the document's rank).
    mask : torch.Tensor of bool, optional
        True marks a real document, False padding; padding gets exactly 0 gradient whatever its
        scores hold. Default: every position is real.
    grade_counts : array_like, optional
        R(0)..R(c) per query when the list does not hold every judged document (the recall base and
        the ideal list); default counted from the labels.
    reduction : {"mean", "sum", "none"}, default "mean"
        "mean" over all the batch's queries (those without two different labels count as 0), "sum",
        or "none": one value per query.
    max_grade : int, optional
        The top grade c of the data set's grade scale 0..c. Default: the largest label of the batch,
        which then also sets a default uniform ``g``; pass it so that every batch is scored on the
        same scale.
    validate : bool, default True
        Check the inputs (finite scores, integer labels within the scale). False is for trusted
        inputs on a GPU: nothing is read back from the device, and the grade scale must be fixed
        (``max_grade`` or a setting of the measure).

    Returns
    -------
    value : torch.Tensor
        The loss to minimise: a scalar for reduction "mean" or "sum", ``[batch]`` for "none" (a
        scalar for one 1-D query); 0 at a perfect, confident ranking.

    Examples
    --------
    >>> import torch
    >>> from gaprank.losses import soft_xgap_loss
    >>> float(soft_xgap_loss(torch.tensor([2.0, 1.0]), torch.tensor([1, 0]), sigma=1e-3))
    0.0
    """
    smoothing = check_smoothing(smoothing)
    return soft_metric_loss(scores, labels, measure='xgap', g=g, sigma=sigma, smoothing=smoothing, mask=mask,
                            grade_counts=grade_counts, reduction=reduction, max_grade=max_grade, validate=validate)


def soft_egap_loss(
    scores: torch.Tensor,
    labels: ArrayLike,
    *,
    g: ArrayLike | None = None,
    sigma: float = 1.0,
    smoothing: Smoothing = "softrank",
    mask: torch.Tensor | None = None,
    grade_counts: ArrayLike | None = None,
    reduction: Literal["mean", "sum", "none"] = "mean",
    max_grade: int | None = None,
    validate: bool = True,
) -> torch.Tensor:
    r"""eGAP loss: ``egap(ideal) - SofteGAP`` per query; :func:`soft_metric_loss` with
    ``measure='egap'`` (kernel of Ferrante et al., eq. 6).

    Parameters
    ----------
    scores : torch.Tensor
        Floating-point scores, ``[list]`` (one query) or ``[batch, list]``; the loss is
        differentiated with respect to them.
    labels : array_like or torch.Tensor
        The documents' relevance grades, integers 0..30, in the shape of ``scores``.
    g : array_like, optional
        GAP's user model g_1..g_c for gap, xgap and egap (non-negative, summing to 1); default
        uniform over grades 1..c.
    sigma : float, default 1.0
        The smoothing's scale, in units of the scores; as it goes to 0 with distinct scores the
        value goes to the measure. "softrank" and "expected": the standard deviation of each score
        in SoftRank's Gaussian model (Taylor et al.'s sigma_s); "approx" and "approx_interpolated":
        the sigmoid's temperature (Rax's temperature, 1/alpha of allRank's approxNDCGLoss);
        "neuralsort", "neuralsort_sinkhorn" and "softsort": the softmax temperature of the relaxed
        permutation (allRank's temperature tau); "fast_soft_rank": the regularisation strength
        epsilon of the projection onto the permutahedron (torchsort's regularization_strength).
    smoothing : str, default "softrank"
        How the ranks are smoothed, one of ``gaprank.losses.SMOOTHINGS`` (docs: Choosing a smooth
        loss). "softrank": SoftRank's ratio of expectations, the GAP paper's SoftGAP (Robertson et
        al. 2010, sec. 5); "expected": the expectation of the measure under the same Gaussian model
        (the AP family; float64); "approx": approximate ranks 1 + sum_m sigmoid((s_m - s_n)/sigma)
        with the discount at the soft rank, Qin, Liu and Li's ApproxNDCG (2010), as Rax, allRank and
        TF-Ranking compute it; "approx_interpolated": the same ranks with the discount interpolated
        between the integer ranks around them (gaprank's form: with a cutoff k, a slope from rank k
        to k + 1); "neuralsort" and "softsort": the relaxed sorting permutations of Grover et al.
        (2019) and Prillo and Eisenschlos (2020); "neuralsort_sinkhorn": NeuralSort's made doubly
        stochastic by Sinkhorn scaling, NeuralNDCG (Pobrotyn and Bialobrzeski 2021) as allRank
        computes it (at most 50 scalings, tolerance 1e-6; O(n^2) memory a scaling);
        "fast_soft_rank": the soft ranks of Blondel et al. (2020), by projection onto the
        permutahedron, O(n log n) time and O(n) memory. All but the first two take the AP family
        through the threshold identity (AP, GAP, xGAP, eGAP; vG and eRAP are refused) and the
        discounted-gain family at soft positions; none takes ERR, Q, RR, Rprec or Success (their
        value is not a sum over documents of a function of the document's rank).
    mask : torch.Tensor of bool, optional
        True marks a real document, False padding; padding gets exactly 0 gradient whatever its
        scores hold. Default: every position is real.
    grade_counts : array_like, optional
        R(0)..R(c) per query when the list does not hold every judged document (the recall base and
        the ideal list); default counted from the labels.
    reduction : {"mean", "sum", "none"}, default "mean"
        "mean" over all the batch's queries (those without two different labels count as 0), "sum",
        or "none": one value per query.
    max_grade : int, optional
        The top grade c of the data set's grade scale 0..c. Default: the largest label of the batch,
        which then also sets a default uniform ``g``; pass it so that every batch is scored on the
        same scale.
    validate : bool, default True
        Check the inputs (finite scores, integer labels within the scale). False is for trusted
        inputs on a GPU: nothing is read back from the device, and the grade scale must be fixed
        (``max_grade`` or a setting of the measure).

    Returns
    -------
    value : torch.Tensor
        The loss to minimise: a scalar for reduction "mean" or "sum", ``[batch]`` for "none" (a
        scalar for one 1-D query); 0 at a perfect, confident ranking.

    Examples
    --------
    >>> import torch
    >>> from gaprank.losses import soft_egap_loss
    >>> float(soft_egap_loss(torch.tensor([2.0, 1.0]), torch.tensor([1, 0]), sigma=1e-3))
    0.0
    """
    smoothing = check_smoothing(smoothing)
    return soft_metric_loss(scores, labels, measure='egap', g=g, sigma=sigma, smoothing=smoothing, mask=mask,
                            grade_counts=grade_counts, reduction=reduction, max_grade=max_grade, validate=validate)


def soft_ap_loss(
    scores: torch.Tensor,
    labels: ArrayLike,
    *,
    g: ArrayLike | None = None,
    sigma: float = 1.0,
    smoothing: Smoothing = "softrank",
    mask: torch.Tensor | None = None,
    grade_counts: ArrayLike | None = None,
    reduction: Literal["mean", "sum", "none"] = "mean",
    max_grade: int | None = None,
    validate: bool = True,
) -> torch.Tensor:
    r"""AP loss: ``ap(ideal) - SoftAP`` per query; :func:`soft_metric_loss` with
    ``measure='ap'`` (binary AP, labels >= 1 relevant).

    Parameters
    ----------
    scores : torch.Tensor
        Floating-point scores, ``[list]`` (one query) or ``[batch, list]``; the loss is
        differentiated with respect to them.
    labels : array_like or torch.Tensor
        The documents' relevance grades, integers 0..30, in the shape of ``scores``.
    g : array_like, optional
        GAP's user model g_1..g_c for gap, xgap and egap (non-negative, summing to 1); default
        uniform over grades 1..c.
    sigma : float, default 1.0
        The smoothing's scale, in units of the scores; as it goes to 0 with distinct scores the
        value goes to the measure. "softrank" and "expected": the standard deviation of each score
        in SoftRank's Gaussian model (Taylor et al.'s sigma_s); "approx" and "approx_interpolated":
        the sigmoid's temperature (Rax's temperature, 1/alpha of allRank's approxNDCGLoss);
        "neuralsort", "neuralsort_sinkhorn" and "softsort": the softmax temperature of the relaxed
        permutation (allRank's temperature tau); "fast_soft_rank": the regularisation strength
        epsilon of the projection onto the permutahedron (torchsort's regularization_strength).
    smoothing : str, default "softrank"
        How the ranks are smoothed, one of ``gaprank.losses.SMOOTHINGS`` (docs: Choosing a smooth
        loss). "softrank": SoftRank's ratio of expectations, the GAP paper's SoftGAP (Robertson et
        al. 2010, sec. 5); "expected": the expectation of the measure under the same Gaussian model
        (the AP family; float64); "approx": approximate ranks 1 + sum_m sigmoid((s_m - s_n)/sigma)
        with the discount at the soft rank, Qin, Liu and Li's ApproxNDCG (2010), as Rax, allRank and
        TF-Ranking compute it; "approx_interpolated": the same ranks with the discount interpolated
        between the integer ranks around them (gaprank's form: with a cutoff k, a slope from rank k
        to k + 1); "neuralsort" and "softsort": the relaxed sorting permutations of Grover et al.
        (2019) and Prillo and Eisenschlos (2020); "neuralsort_sinkhorn": NeuralSort's made doubly
        stochastic by Sinkhorn scaling, NeuralNDCG (Pobrotyn and Bialobrzeski 2021) as allRank
        computes it (at most 50 scalings, tolerance 1e-6; O(n^2) memory a scaling);
        "fast_soft_rank": the soft ranks of Blondel et al. (2020), by projection onto the
        permutahedron, O(n log n) time and O(n) memory. All but the first two take the AP family
        through the threshold identity (AP, GAP, xGAP, eGAP; vG and eRAP are refused) and the
        discounted-gain family at soft positions; none takes ERR, Q, RR, Rprec or Success (their
        value is not a sum over documents of a function of the document's rank).
    mask : torch.Tensor of bool, optional
        True marks a real document, False padding; padding gets exactly 0 gradient whatever its
        scores hold. Default: every position is real.
    grade_counts : array_like, optional
        R(0)..R(c) per query when the list does not hold every judged document (the recall base and
        the ideal list); default counted from the labels.
    reduction : {"mean", "sum", "none"}, default "mean"
        "mean" over all the batch's queries (those without two different labels count as 0), "sum",
        or "none": one value per query.
    max_grade : int, optional
        The top grade c of the data set's grade scale 0..c. Default: the largest label of the batch,
        which then also sets a default uniform ``g``; pass it so that every batch is scored on the
        same scale.
    validate : bool, default True
        Check the inputs (finite scores, integer labels within the scale). False is for trusted
        inputs on a GPU: nothing is read back from the device, and the grade scale must be fixed
        (``max_grade`` or a setting of the measure).

    Returns
    -------
    value : torch.Tensor
        The loss to minimise: a scalar for reduction "mean" or "sum", ``[batch]`` for "none" (a
        scalar for one 1-D query); 0 at a perfect, confident ranking.

    Examples
    --------
    >>> import torch
    >>> from gaprank.losses import soft_ap_loss
    >>> float(soft_ap_loss(torch.tensor([2.0, 1.0]), torch.tensor([1, 0]), sigma=1e-3))
    0.0
    """
    smoothing = check_smoothing(smoothing)
    return soft_metric_loss(scores, labels, measure='ap', g=g, sigma=sigma, smoothing=smoothing, mask=mask,
                            grade_counts=grade_counts, reduction=reduction, max_grade=max_grade, validate=validate)


def soft_ndcg_loss(
    scores: torch.Tensor,
    labels: ArrayLike,
    *,
    sigma: float = 1.0,
    smoothing: Smoothing = "softrank",
    mask: torch.Tensor | None = None,
    grade_counts: ArrayLike | None = None,
    reduction: Literal["mean", "sum", "none"] = "mean",
    max_grade: int | None = None,
    validate: bool = True,
) -> torch.Tensor:
    r"""SoftNDCG loss: ``1 - SoftNDCG`` per query (Taylor et al. 2008); :func:`soft_metric_loss` with
    ``measure="ndcg"``.

    Parameters
    ----------
    scores : torch.Tensor
        Floating-point scores, ``[list]`` (one query) or ``[batch, list]``; the loss is
        differentiated with respect to them.
    labels : array_like or torch.Tensor
        The documents' relevance grades, integers 0..30, in the shape of ``scores``.
    sigma : float, default 1.0
        The smoothing's scale, in units of the scores; as it goes to 0 with distinct scores the
        value goes to the measure. "softrank" and "expected": the standard deviation of each score
        in SoftRank's Gaussian model (Taylor et al.'s sigma_s); "approx" and "approx_interpolated":
        the sigmoid's temperature (Rax's temperature, 1/alpha of allRank's approxNDCGLoss);
        "neuralsort", "neuralsort_sinkhorn" and "softsort": the softmax temperature of the relaxed
        permutation (allRank's temperature tau); "fast_soft_rank": the regularisation strength
        epsilon of the projection onto the permutahedron (torchsort's regularization_strength).
    smoothing : str, default "softrank"
        How the ranks are smoothed, one of ``gaprank.losses.SMOOTHINGS`` (docs: Choosing a smooth
        loss). "softrank": SoftRank's ratio of expectations, the GAP paper's SoftGAP (Robertson et
        al. 2010, sec. 5); "expected": the expectation of the measure under the same Gaussian model
        (the AP family; float64); "approx": approximate ranks 1 + sum_m sigmoid((s_m - s_n)/sigma)
        with the discount at the soft rank, Qin, Liu and Li's ApproxNDCG (2010), as Rax, allRank and
        TF-Ranking compute it; "approx_interpolated": the same ranks with the discount interpolated
        between the integer ranks around them (gaprank's form: with a cutoff k, a slope from rank k
        to k + 1); "neuralsort" and "softsort": the relaxed sorting permutations of Grover et al.
        (2019) and Prillo and Eisenschlos (2020); "neuralsort_sinkhorn": NeuralSort's made doubly
        stochastic by Sinkhorn scaling, NeuralNDCG (Pobrotyn and Bialobrzeski 2021) as allRank
        computes it (at most 50 scalings, tolerance 1e-6; O(n^2) memory a scaling);
        "fast_soft_rank": the soft ranks of Blondel et al. (2020), by projection onto the
        permutahedron, O(n log n) time and O(n) memory. All but the first two take the AP family
        through the threshold identity (AP, GAP, xGAP, eGAP; vG and eRAP are refused) and the
        discounted-gain family at soft positions; none takes ERR, Q, RR, Rprec or Success (their
        value is not a sum over documents of a function of the document's rank).
    mask : torch.Tensor of bool, optional
        True marks a real document, False padding; padding gets exactly 0 gradient whatever its
        scores hold. Default: every position is real.
    grade_counts : array_like, optional
        R(0)..R(c) per query when the list does not hold every judged document (the recall base and
        the ideal list); default counted from the labels.
    reduction : {"mean", "sum", "none"}, default "mean"
        "mean" over all the batch's queries (those without two different labels count as 0), "sum",
        or "none": one value per query.
    max_grade : int, optional
        The top grade c of the data set's grade scale 0..c. Default: the largest label of the batch,
        which then also sets a default uniform ``g``; pass it so that every batch is scored on the
        same scale.
    validate : bool, default True
        Check the inputs (finite scores, integer labels within the scale). False is for trusted
        inputs on a GPU: nothing is read back from the device, and the grade scale must be fixed
        (``max_grade`` or a setting of the measure).

    Returns
    -------
    value : torch.Tensor
        The loss to minimise: a scalar for reduction "mean" or "sum", ``[batch]`` for "none" (a
        scalar for one 1-D query); 0 at a perfect, confident ranking.

    Examples
    --------
    >>> import torch
    >>> from gaprank.losses import soft_ndcg_loss
    >>> float(soft_ndcg_loss(torch.tensor([2.0, 1.0]), torch.tensor([1, 0]), sigma=1e-3))
    0.0
    """
    smoothing = check_smoothing(smoothing)
    return soft_metric_loss(scores, labels, measure="ndcg", sigma=sigma, smoothing=smoothing, mask=mask,
                            grade_counts=grade_counts, reduction=reduction, max_grade=max_grade, validate=validate)


class SoftGAPLoss(_SoftMetricLoss):
    """``1 - SoftGAP`` (Robertson et al. 2010, sec. 5); ``smoothing="expected"`` for ``1 - E[GAP]``, or any other
    smoothing of :func:`soft_metric_loss` (``"fast_soft_rank"``: O(n log n)).
    See :func:`soft_metric_loss`.

    Examples
    --------
    >>> import torch
    >>> from gaprank.losses import SoftGAPLoss
    >>> loss = SoftGAPLoss(g=[0.5, 0.5], sigma=0.5)
    >>> scores = torch.randn(8, 30, requires_grad=True)
    >>> loss(scores, torch.randint(0, 3, (8, 30))).backward()
    """

    measure = "gap"


class SoftXGAPLoss(_SoftMetricLoss):
    """``xGAP(ideal) - SoftxGAP`` with xGAP's kernel; see :func:`soft_metric_loss`."""

    measure = "xgap"


class SoftEGAPLoss(_SoftMetricLoss):
    """``eGAP(ideal) - SofteGAP`` with eGAP's kernel; see :func:`soft_metric_loss`."""

    measure = "egap"


class SoftAPLoss(_SoftMetricLoss):
    """``1 - SoftAP`` (binary AP, labels >= 1 relevant); see :func:`soft_metric_loss`."""

    measure = "ap"

    def __init__(self, sigma: float = 1.0, smoothing: Smoothing = "softrank",
                 reduction: Literal["mean", "sum", "none"] = "mean", max_grade: int | None = None,
                 validate: bool = True) -> None:
        super().__init__(None, sigma, check_smoothing(smoothing), reduction, max_grade, validate)


class SoftNDCGLoss(_SoftMetricLoss):
    """``1 - SoftNDCG`` from SoftRank's rank distributions (Taylor et al. 2008), or nDCG at soft positions with
    another ``smoothing`` (``"approx"`` is ApproxNDCG); see :func:`soft_metric_loss`."""

    measure = "ndcg"

    def __init__(self, sigma: float = 1.0, smoothing: Smoothing = "softrank",
                 reduction: Literal["mean", "sum", "none"] = "mean", max_grade: int | None = None,
                 validate: bool = True) -> None:
        super().__init__(None, sigma, check_smoothing(smoothing), reduction, max_grade, validate)
