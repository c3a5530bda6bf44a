"""What every loss shares: input checks on the differentiable side, the per-query mask of queries
that have something to rank, the reduction, and attaching a hand-written gradient."""

from __future__ import annotations

from typing import Any

import torch

from .._autograd import first_derivatives_only
from .._engine.backends import check_backend, lambda_backend
from .._inputs import (
    REDUCTIONS,
    GaprankInputError,
    check_choice,
    check_max_grade,
    check_positive_int,
    check_sigma,
)
from ..metrics import Measure


def check_scores_tensor(scores) -> None:
    if not isinstance(scores, torch.Tensor) or not scores.is_floating_point():
        raise GaprankInputError(
            "losses need scores as a floating-point torch tensor (they are differentiated); "
            f"got {type(scores).__name__}{'' if not isinstance(scores, torch.Tensor) else ' of dtype ' + str(scores.dtype)}"
        )


def check_loss_settings(measure: Measure | None, **settings: Any) -> None:
    """Check a loss module's settings when it is made (the ones given; ``measure`` parsed, or None for a loss
    without one), so a bad value is refused where it is written rather than at the first batch. The functions
    check the same values on every call."""
    if settings.get("g") is not None and measure is not None:
        measure = measure.with_params(g=settings["g"])  # g taken by the measure, not set twice
        measure.settings()  # ... and well formed
    if "sigma" in settings:
        check_sigma(settings["sigma"])
    if settings.get("truncation_level") is not None:
        check_positive_int(settings["truncation_level"], "truncation_level")
    if "reduction" in settings:
        check_choice(settings["reduction"], "reduction", REDUCTIONS)
    if "validate" in settings and not isinstance(settings["validate"], bool):
        raise GaprankInputError(f"validate must be True or False; got {settings['validate']!r}")
    if settings.get("max_grade") is not None:
        max_grade = check_max_grade(settings["max_grade"])
        if measure is not None:
            _, scale, source = measure.settings()
            if scale is not None and scale != max_grade:
                raise GaprankInputError(f"max_grade={max_grade} disagrees with the grade scale 0..{scale} set by "
                                        f"{source}")
    if "backend" in settings and check_backend(settings["backend"]) == "compiled":
        lambda_backend("compiled", measure, torch.device("cpu"))  # refused where the kernel cannot serve on the CPU


def refuse_function_transforms(scores: torch.Tensor, what: str,
                                why: str = "its gradient comes from gaprank's pair engine, not from autograd's graph"
                                ) -> None:
    """A clear error, before anything reads the data, when ``scores`` come through a torch.func transform
    (grad, vmap, jacrev): a loss whose gradient is computed outside autograd's graph (gaprank's pair engine, the
    compiled rank laws) cannot be traced."""
    if torch.compiler.is_compiling():  # dynamo traces no transform here, and cannot trace the check
        return
    wrapped = getattr(getattr(torch._C, "_functorch", None), "is_functorch_wrapped_tensor", None)
    if wrapped is not None and wrapped(scores):
        raise RuntimeError(f"{what} does not support torch.func transforms (grad, vmap, jacrev, ...): {why}; use "
                           "torch.autograd (loss.backward() or torch.autograd.grad)")


def reduce_loss(values: torch.Tensor, reduction: str, squeeze: bool) -> torch.Tensor:
    """``"none"``: per query ``[B]`` (a scalar for one 1-D query); ``"mean"`` over the batch's queries
    (all of them, including those that contribute 0); ``"sum"``."""
    check_choice(reduction, "reduction", REDUCTIONS)
    if reduction == "mean":
        return values.mean()
    if reduction == "sum":
        return values.sum()
    return values[0] if squeeze else values


class _WithGradient(torch.autograd.Function):
    """Return precomputed per-query values whose gradient w.r.t. ``scores`` is the given tensor."""

    @staticmethod
    def forward(ctx, scores, values, grad):  # noqa: D102 - autograd protocol
        ctx.save_for_backward(grad)
        return values.clone()

    @staticmethod
    @first_derivatives_only('this loss (LambdaRank, RankNet: gradients from the pair engine)')
    def backward(ctx, grad_values):  # noqa: D102
        (grad,) = ctx.saved_tensors
        return grad * grad_values[:, None], None, None


def with_gradient(scores: torch.Tensor, values: torch.Tensor, grad: torch.Tensor) -> torch.Tensor:
    """``values`` ([B], no graph) that backpropagate ``grad`` ([B, N]) into ``scores`` ([B, N])."""
    return _WithGradient.apply(scores, values.detach(), grad.detach())
