"""The parameters the losses share, each written once: ``python tools/docstrings.py`` writes them into the
docstrings of :data:`DOCUMENTED` (a test runs its ``--check``), so the source and ``help()`` show the same text."""

from __future__ import annotations

Entry = tuple[str, str]  # (type, description)

# every loss
LOSS: dict[str, Entry] = {
    'scores': ('torch.Tensor',
        'Floating-point scores, ``[list]`` (one query) or ``[batch, list]``; the loss is differentiated with '
        'respect to them.'),
    'labels': ('array_like or torch.Tensor',
        "The documents' relevance grades, integers 0..30, in the shape of ``scores``."),
    'mask': ('torch.Tensor of bool, optional',
        'True marks a real document, False padding; padding gets exactly 0 gradient whatever its scores hold.'
        ' Default: every position is real.'),
    'grade_counts': ('array_like, optional',
        'R(0)..R(c) per query when the list does not hold every judged document (the recall base and the '
        'ideal list); default counted from the labels.'),
    'reduction': ('{"mean", "sum", "none"}, default "mean"',
        '"mean" over all the batch\'s queries (those without two different labels count as 0), "sum", or '
        '"none": one value per query.'),
    'max_grade': ('int, optional',
        "The top grade c of the data set's grade scale 0..c. Default: the largest label of the batch, which "
        'then also sets a default uniform ``g``; pass it so that every batch is scored on the same scale.'),
}

# the smooth losses: soft_metric, soft_metric_loss
SMOOTH: dict[str, Entry] = {
    'measure': ('str',
        "A measure string of gaprank's registry ('gap', 'GAP(g=[0.2,0.8])', 'AP(rel=2)', 'nDCG@10', ...) "
        'whose form this loss can use; an unsuitable one is refused with the list of those that fit.'),
    'g': ('array_like, optional',
        "GAP's user model g_1..g_c for gap, xgap and egap (non-negative, summing to 1), the same as ``g`` in "
        'the string (give one of the two); default uniform over grades 1..c.'),
    'sigma': ('float, default 1.0',
        "The smoothing's scale, in units of the scores; as it goes to 0 with distinct scores the value goes "
        'to the measure. "softrank" and "expected": the standard deviation of each score in SoftRank\'s '
        'Gaussian model (Taylor et al.\'s sigma_s); "approx" and "approx_interpolated": the sigmoid\'s '
        'temperature (Rax\'s temperature, 1/alpha of allRank\'s approxNDCGLoss); "neuralsort", '
        '"neuralsort_sinkhorn" and "softsort": the softmax temperature of the relaxed permutation (allRank\'s '
        'temperature tau); "fast_soft_rank": the regularisation strength epsilon of the projection onto the '
        'permutahedron (torchsort\'s regularization_strength).'),
    'smoothing': ('str, default "softrank"',
        'How the ranks are smoothed, one of ``gaprank.losses.SMOOTHINGS`` (docs: Choosing a smooth loss). '
        '"softrank": SoftRank\'s ratio of '
        'expectations, the GAP paper\'s SoftGAP (Robertson et al. 2010, sec. 5); "expected": the expectation '
        'of the measure under the same Gaussian model (the AP family; float64); "approx": approximate ranks 1'
        ' + sum_m sigmoid((s_m - s_n)/sigma) with the discount at the soft rank, Qin, Liu and Li\'s ApproxNDCG '
        '(2010), as Rax, allRank and TF-Ranking compute it; "approx_interpolated": the same ranks with the '
        'discount interpolated between the integer ranks around them (gaprank\'s form: with a cutoff k, a '
        'slope from rank k to k + 1); "neuralsort" and "softsort": the relaxed sorting permutations of Grover '
        'et al. (2019) and Prillo and Eisenschlos (2020); "neuralsort_sinkhorn": NeuralSort\'s made doubly '
        'stochastic by Sinkhorn scaling, NeuralNDCG (Pobrotyn and Bialobrzeski 2021) as allRank computes it '
        '(at most 50 scalings, tolerance 1e-6; O(n^2) memory a scaling); "fast_soft_rank": the soft ranks of '
        'Blondel et al. (2020), by projection onto the permutahedron, O(n log n) time and O(n) memory. All but '
        'the first two take the AP family through the threshold identity (AP, GAP, xGAP, eGAP; vG and eRAP '
        'are refused) and the discounted-gain family at soft positions; none takes ERR, Q, RR, Rprec or '
        "Success (their value is not a sum over documents of a function of the document's rank)."),
    'validate': ('bool, default True',
        'Check the inputs (finite scores, integer labels within the scale). False is for trusted inputs on a '
        'GPU: nothing is read back from the device, and the grade scale must be fixed (``max_grade`` or a '
        'setting of the measure).'),
}

# the named smooth losses (soft_gap_loss, ...): g without a measure string
NAMED_SMOOTH: dict[str, Entry] = {
    'g': ('array_like, optional',
        "GAP's user model g_1..g_c for gap, xgap and egap (non-negative, summing to 1); default uniform over "
        'grades 1..c.'),
}

# LambdaRank and RankNet
PAIRWISE: dict[str, Entry] = {
    'weights': ('array_like or torch.Tensor, optional',
        'Per document, >= 0, in the shape of ``scores`` (or with a last axis of c: per document and level 1..c): '
        'the swap deltas are those of the weighted measure, a document counting w times at its grade (the '
        'metrics\' ``weights=``; with w = 1/propensity, the inverse-propensity estimate from clicks; docs: '
        'Simulating clicks). Weights per level run on the torch backend. Not taken by ERR, Q, RR, Rprec, Success '
        'or vG. Default: every document weighs 1.'),
    'sigma': ('float, default 1.0',
        "The logistic's steepness: rho_ij = 1 / (1 + exp(sigma (s_i - s_j)))."),
    'measure': ('str, default "gap"',
        "A measure string of gaprank's registry ('gap', 'GAP(g=[0.2,0.8])', 'AP(rel=2)', 'nDCG@10', ...) "
        'whose form this loss can use; an unsuitable one is refused with the list of those that fit.'),
    'g': ('array_like, optional',
        "GAP's user model g_1..g_c for gap, xgap and egap (non-negative, summing to 1), the same as ``g`` in "
        'the string (give one of the two); default uniform over grades 1..c.'),
    'truncation_level': ('int, optional',
        "Only pairs whose upper document is in the current top k (LightGBM's truncation rule); default every "
        'pair.'),
    'validate': ('bool, default True',
        'Check the inputs (finite scores, integer labels within the scale). False is for trusted inputs on a '
        'GPU: nothing is read back from the device, and the grade scale must be fixed (``max_grade`` or a '
        'setting of the measure).'),
    'backend': ('{"auto", "compiled", "torch"}, default "auto"',
        'Which engine computes the lambdas: "compiled" (the numba kernel, float64, on the CPU, for the AP '
        'family and the discounted-gain measures), "torch" (the tensor engine: any measure with swap deltas, '
        'any device), or "auto": the compiled kernel wherever it serves, else the tensor engine. "compiled" '
        'where it cannot serve is refused.'),
}

# RankNet's own: no measure, so no grade scale and no compiled kernel
RANKNET: dict[str, Entry] = {
    'validate': ('bool, default True',
        'Check the inputs (finite scores, integer labels). False is for trusted inputs on a GPU: nothing is '
        'read back from the device (RankNet needs no grade scale).'),
    'backend': ('{"auto", "compiled", "torch"}, default "auto"',
        'RankNet runs on the tensor engine ("auto" and "torch" alike); "compiled" is refused in one line (the'
        " compiled kernel weighs pairs by a measure's swap deltas)."),
}

_SOFT = {**LOSS, **SMOOTH}
_NAMED = {**_SOFT, **NAMED_SMOOTH}
DOCUMENTED: dict[str, dict[str, Entry]] = {
    "gaprank.losses._soft:soft_metric": {**_SOFT, "sigma": ("float", SMOOTH["sigma"][1])},
    "gaprank.losses._soft:soft_metric_loss": _SOFT,
    **{f"gaprank.losses._soft_named:soft_{name}_loss": _NAMED for name in ("gap", "xgap", "egap", "ap", "ndcg")},
    "gaprank.losses._pairwise:lambdarank_loss": {**LOSS, **PAIRWISE},
    "gaprank.losses._pairwise:ranknet_loss": {**LOSS, **PAIRWISE, **RANKNET},
    "gaprank.losses._listnet:listnet_loss": LOSS,
}
