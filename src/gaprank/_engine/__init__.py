"""The engine behind LambdaRank, RankNet, LambdaMART and the soft ranks (private).

* :mod:`.backends`: which of the two backends computes the lambdas (``backend="auto" | "compiled" |
  "torch"``, one rule) and the compiled backend's plan;
* :mod:`.slots`: lists of several widths laid end to end on one axis of slots (a ``[B, N]`` batch is one
  block; LambdaMART's length buckets are several);
* :mod:`.buckets`: where to cut queries sorted by length into buckets (a cost model, solved exactly);
* :mod:`.factors`: the swap-delta factors of a measure on a slot layout (docs: The maths, "Swap deltas
  in O(c) per pair"), and the plans that keep what does not depend on the ranking;
* :mod:`.pairs`: the tensor backend, the |Delta M|-weighted pairwise logistic cost with its gradient and
  hessian (any measure with swap deltas, any device);
* :mod:`.batches`: the tensor backend on ``[B, N]`` batches with its layout, plans and buffers kept per batch
  shape (the PyTorch losses' modules);
* :mod:`.compiled`: the compiled backend, the same costs, gradients and hessians in one compiled pass per
  query (numba, CPU), for kernel and discounted-gain measures;
* :mod:`.norm`: LightGBM's ``lambdarank_norm`` constant, read by both backends;
* :mod:`.rank_laws`: SoftRank's pair probabilities and rank laws with their adjoint (the soft losses'
  SoftNDCG and :mod:`gaprank.distributions`), on the compiled kernels of :mod:`.soft_compiled` on the CPU;
* :mod:`.soft_rank`: fast soft ranks by projection onto the permutahedron (the ``fast_soft_rank`` smoothing).

Layering: :mod:`gaprank.metrics` (exact metrics, kernels, the registry) <- the engine <- :mod:`gaprank.losses`,
:mod:`gaprank.boosting` (LambdaMART, with its LightGBM and XGBoost adapters), :mod:`gaprank.distributions`.
The names below are what the packages above the engine import.
"""

from .rank_laws import RankLawBuffers, expected_score_rank_values, pair_block, pairwise_matrix, rank_recursion
from .soft_rank import fast_soft_ranks

__all__ = ["RankLawBuffers", "expected_score_rank_values", "pair_block", "pairwise_matrix", "rank_recursion",
           "fast_soft_ranks"]
