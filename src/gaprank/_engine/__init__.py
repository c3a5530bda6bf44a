"""The engine behind LambdaRank, RankNet and LambdaMART (private).

* :mod:`.slots`: lists of several widths laid end to end on one axis of slots (a ``[B, N]`` batch is one
  block; LightGBM's length buckets are several);
* :mod:`.buckets`: where to cut queries sorted by length into buckets (a cost model, solved exactly);
* :mod:`.factors`: the swap-delta factors of a measure on a slot layout (docs: The maths, "Swap deltas
  in O(c) per pair"), and the plans that keep what does not depend on the ranking;
* :mod:`.pairs`: the pair engine, the |Delta M|-weighted pairwise logistic cost with its gradient and
  hessian, shared by :mod:`gaprank.losses` and :mod:`gaprank.lightgbm`;
* :mod:`.batches`: the pair engine on ``[B, N]`` batches with its layout, plans and buffers kept per batch
  shape (the PyTorch losses' modules);
* :mod:`.compiled`: the same gradients and hessians for LambdaMART in one compiled pass per query (numba),
  for kernel and discounted-gain measures.

Layering: :mod:`gaprank.metrics` (exact metrics, kernels, the registry) <- the engine <- losses, LightGBM.
"""
