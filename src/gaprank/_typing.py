"""Type aliases of the public signatures: what an array argument may be, and what a metric returns."""

from __future__ import annotations

from typing import TypeAlias

import numpy as np
import numpy.typing as npt
import torch

# Scores, labels, masks, grade counts, g, group sizes: a NumPy array (or anything np.asarray takes: a list,
# a scalar) or a torch tensor. The result follows the scores' kind.
ArrayLike: TypeAlias = torch.Tensor | npt.ArrayLike
# A metric's value: a float for reduction "mean" / "sum" on NumPy input, an array per query for
# reduction "none", a tensor (on the scores' device) for tensor input.
MetricValue: TypeAlias = float | np.floating | np.ndarray | torch.Tensor
