"""Which backend computes LambdaRank's and LambdaMART's lambdas, chosen in one place by one rule, and the
compiled backend's plan, built here for every caller.

Two backends compute the same |Delta M|-weighted pairwise costs, gradients and hessians:

* ``"compiled"``: the numba kernel of :mod:`.compiled`, one pass per query in float64, for the measures whose
  swap deltas come from a kernel (the AP family) or from gains and discounts (nDCG, P@k, RBP, ...), on the CPU;
* ``"torch"``: the tensor engine of :mod:`.pairs` (any measure with swap deltas, any device).

Both weigh documents (``weights=``) for the measures whose forms take weights; weights per document and level only
the torch backend.

``backend="auto"`` (the default of every loss and objective) takes the compiled kernel wherever it serves and
the tensor engine elsewhere; ``"compiled"`` where it cannot serve is refused in one line, never replaced.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
import torch

from .. import _compiled_setup as compiled_setup
from .._inputs import GaprankInputError
from ..metrics import GainDiscountForm, KernelForm, Measure, RankedLists
from . import compiled
from .factors import GainDiscountInputs, KernelInputs, plan_inputs
from .slots import SlotLayout

Backend = Literal["auto", "compiled", "torch"]
BACKENDS: tuple[str, ...] = ("auto", "compiled", "torch")


def runs_compiled(device: torch.device) -> bool:
    """Whether compiled kernels take work on ``device``: the CPU, with numba importable."""
    return device.type == "cpu" and compiled_setup.available()


def check_backend(backend: Any) -> str:
    """``backend`` checked: one of :data:`BACKENDS`."""
    if backend not in BACKENDS:
        raise GaprankInputError(f"backend must be one of {', '.join(map(repr, BACKENDS))}; got {backend!r}")
    return str(backend)


def lambda_backend(backend: str, measure: Measure | None, device: torch.device, *,
                   level_weights: bool = False) -> Literal["compiled", "torch"]:
    """The backend that computes the lambdas of ``measure`` (None: RankNet, no measure) for scores on
    ``device``, with weights per document and level when ``level_weights``: the one rule every loss and objective
    follows."""
    backend = check_backend(backend)
    form_serves = measure is not None and isinstance(measure.info.form, (KernelForm, GainDiscountForm))
    serves = form_serves and runs_compiled(device) and not level_weights
    if backend == "auto":
        return "compiled" if serves else "torch"
    if backend == "compiled" and not serves:
        why = ("RankNet has no measure: it runs on the torch backend" if measure is None else
               f"{measure.info.name}'s swap deltas have factors of their own, which only the torch backend computes"
               if not form_serves else
               "weights per level (a grade mass per document) are the torch backend's" if level_weights else
               f"scores on {device.type} (the compiled kernel runs on the CPU)" if device.type != "cpu" else
               "numba is not importable")
        raise GaprankInputError(f"backend='compiled' cannot serve this call: {why}; use backend='auto' or 'torch'")
    return "compiled" if backend == "compiled" else "torch"


def compiled_plan(measure: Measure, lists: Sequence[RankedLists], params: dict[str, Any], layout: SlotLayout, *,
                  sizes: np.ndarray, rows: np.ndarray, labels: np.ndarray, sigma: float, truncation: int | None,
                  norm: bool, ideal_cutoff: int | None, gains: torch.Tensor | None = None,
                  warm_start: bool = True, weights: np.ndarray | None = None) -> compiled.CompiledPlan | None:
    """The compiled kernel's plan of ``measure`` (its ``params`` filled): the score-independent inputs of the
    ``lists`` laid out on ``layout`` (their grade counts and positions), for queries of ``sizes`` documents whose
    rows into the scores and labels come query after query in ``rows`` and ``labels``. A discounted-gain
    measure's discount is taken per rank from the layout's slots. ``weights``: each row's weight, as ``labels`` (the
    ``lists`` weighted alike). None when no pair can change the measure."""
    inputs = plan_inputs(measure, lists, params, layout, ideal_cutoff=ideal_cutoff, gains=gains)
    if inputs is None:
        return None
    assert isinstance(inputs, (KernelInputs, GainDiscountInputs)), f"{measure.name} is not the compiled kernel's"
    discounts = None
    if isinstance(inputs, GainDiscountInputs):  # the same discount at a rank in every list: one per rank
        positions = layout.position[layout.real].numpy()
        longest = max(int(sizes.max()) if sizes.size else 1, int(positions.max()) + 1 if positions.size else 1)
        discounts = np.zeros(longest)
        discounts[positions] = inputs.discounts[layout.real].numpy()
    return compiled.build_plan(inputs, sizes=sizes, rows=rows, labels=labels, discounts=discounts, sigma=sigma,
                               truncation=truncation, norm=norm, warm_start=warm_start, weights=weights)
