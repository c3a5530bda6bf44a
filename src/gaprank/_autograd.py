"""Hand-written backward passes: ones that refuse to be differentiated again, and calls that torch.compile
must not trace.

``torch.autograd.function.once_differentiable`` only raises on double backward when the incoming
gradient itself requires grad; when it is a constant (a loss that is linear in the function's output,
as SoftNDCG's DCG is in the rank laws) the second pass silently treats the returned gradient as constant
and gives wrong Hessian-vector products. This decorator refuses ``create_graph=True`` outright.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import torch


class FirstDerivativesOnly(NotImplementedError):
    """A gradient was asked with ``create_graph=True`` (double backward) from a first-order-only backward."""


def first_derivatives_only(what: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorate an ``autograd.Function.backward``: run it without a graph, and raise
    :class:`FirstDerivativesOnly` naming ``what`` when a graph of the gradient is asked for."""

    def decorate(backward: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(backward)
        def wrapped(ctx: Any, *grads: Any) -> Any:
            if torch.is_grad_enabled():  # autograd enables grad mode in backward only under create_graph=True
                raise FirstDerivativesOnly(
                    f"{what} supports first derivatives only: its backward pass is hand-written, so "
                    "create_graph=True (double backward, Hessian-vector products) is not available")
            return backward(ctx, *grads)

        return wrapped

    return decorate


def opaque_to_compile(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` as an opaque call under torch.compile (a graph break around it): for the numpy and numba kernels,
    which dynamo cannot trace. ``torch.compiler.disable(fn)``, made at the first call under compile: the
    decorator imports ``torch._dynamo``, which would otherwise be part of every ``import gaprank`` (and every CLI
    start) and, made at an eager call, of every eager process's first kernel call."""
    disabled: list[Callable[..., Any]] = []

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        if not torch.compiler.is_compiling():  # eager: the kernel itself
            return fn(*args, **kwargs)
        if not disabled:
            disabled.append(torch.compiler.disable(fn))
        return disabled[0](*args, **kwargs)

    return call
