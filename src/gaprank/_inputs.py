"""Input conversion and validation shared by every public function.

Everything public accepts NumPy arrays or torch tensors of shape ``[list]`` (one query) or
``[batch, list]``. Internally we work on torch tensors on the scores' device; results go back
in the caller's array type (see :class:`OutputSpec`).
"""

from __future__ import annotations

import contextlib
import math
import numbers
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal, overload

import numpy as np
import torch

from ._typing import ArrayLike, MetricValue

REDUCTIONS = ("none", "mean", "sum")
TIE_RULES = ("stable", "pessimistic", "optimistic")

# The largest grade any input may hold. Every measure works on tables one column per grade (counts R(k),
# kernels K[t, u], one-hot grades), so cost would otherwise grow with the largest label's value, and
# nDCG's gain 2^l - 1 must stay finite and exact. 30 is also where LightGBM's and XGBoost's ranking
# objectives stop (their default label_gain tables hold grades 0..30).
MAX_GRADE = 30
"""The highest grade a label may have: grades are integers 0..30 (2^30 - 1 is exact in float64, and LightGBM's and
XGBoost's label_gain tables stop there)."""
# The largest cutoff or count any argument takes: larger than any list, and it fits every index type a
# kernel uses (a bigger one was 0 for the metric but overflowed in the objectives).
MAX_COUNT = 2**31 - 1
GRADE_SCALE_HINT = (f"gaprank supports grades 0..{MAX_GRADE}: every measure keeps one table column per grade, "
                    "and nDCG's gain 2^l - 1 must stay finite; map a larger scale onto 0..30 first")


class GaprankInputError(ValueError):
    """Raised for input that would otherwise give a silently wrong number."""


@dataclass(frozen=True)
class OutputSpec:
    """How to hand a per-query result back: array type, 1-D squeeze, device and dtype."""

    is_numpy: bool
    squeeze: bool
    device: torch.device
    dtype: torch.dtype


def checked_tensor(x: ArrayLike, name: str, device: torch.device | None = None) -> torch.Tensor:
    """``x`` as a tensor (moved to ``device`` when given); a one-line error naming ``name`` when it is not numeric."""
    if isinstance(x, torch.Tensor):
        t = x
    else:
        try:
            arr = np.asarray(x)
        except Exception as exc:  # pragma: no cover - numpy raises many types here
            raise GaprankInputError(f"{name} could not be converted to an array: {exc}") from exc
        if arr.dtype == object or arr.dtype.kind in "USV":
            raise GaprankInputError(f"{name} must be numeric, got dtype {arr.dtype}")
        t = torch.from_numpy(np.ascontiguousarray(arr))
    if device is not None and t.device != device:
        t = t.to(device)
    return t


# Settings tensors (GAP's g, gain tables) copied to a device, by device and value: each copy from the host
# waits for the device, so a training loop makes each copy once.
_ON_DEVICE: OrderedDict[tuple, torch.Tensor] = OrderedDict()
ON_DEVICE_KEPT = 256
_HOLDERS: list[list[torch.Tensor]] = []  # open holding_device_copies() collections


@contextlib.contextmanager
def holding_device_copies() -> Iterator[list[torch.Tensor]]:
    """A list of every tensor :func:`on_device` hands out while the block runs. Whatever must outlive the cache's
    eviction of them (a CUDA graph captured meanwhile reads them by address) keeps that list."""
    held: list[torch.Tensor] = []
    _HOLDERS.append(held)
    try:
        yield held
    finally:
        _HOLDERS.remove(held)


def on_device(value: torch.Tensor, device: torch.device) -> torch.Tensor:
    """``value``, a small tensor of settings, on ``device``. A host tensor's copy to another device is made
    once per value and device and then reused (never modify the result in place)."""
    if value.device == device or value.device.type != "cpu" or device.type == "cpu":
        copy = value.to(device)
    else:
        key = (device, value.dtype, tuple(value.shape), value.numpy().tobytes())
        cached = _ON_DEVICE.get(key)
        if cached is None:
            copy = _ON_DEVICE[key] = value.to(device)
            if len(_ON_DEVICE) > ON_DEVICE_KEPT:
                _ON_DEVICE.popitem(last=False)
        else:
            copy = cached
            _ON_DEVICE.move_to_end(key)
    for held in _HOLDERS:
        held.append(copy)
    return copy


def check_choice(value: str, name: str, choices: tuple[str, ...]) -> str:
    if value not in choices:
        raise GaprankInputError(f"{name} must be one of {', '.join(map(repr, choices))}; got {value!r}")
    return value


@overload
def check_positive_int(k: Any, name: str = ..., *, allow_none: Literal[False]) -> int: ...


@overload
def check_positive_int(k: Any, name: str = ..., allow_none: bool = ...) -> int | None: ...


def check_positive_int(k: Any, name: str = "k", allow_none: bool = True) -> int | None:
    """A positive integer of at most :data:`MAX_COUNT` (a cutoff, a count; None when allowed)."""
    if k is None and allow_none:
        return None
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 1 <= k <= MAX_COUNT:
        raise GaprankInputError(f"{name} must be a positive integer of at most {MAX_COUNT}"
                                f"{' or None' if allow_none else ''}; got {k!r}")
    return int(k)


def check_max_grade(value: Any, name: str = "max_grade") -> int:
    """The top grade of a scale 0..c: an integer from 1 to :data:`MAX_GRADE`."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not 1 <= value <= MAX_GRADE:
        raise GaprankInputError(f"{name} must be an integer from 1 to {MAX_GRADE}; got {value!r} ({GRADE_SCALE_HINT})")
    return int(value)


def check_sigma(sigma: Any, name: str = "sigma") -> float:
    """A positive finite standard deviation: a real number (not a bool, not a string)."""
    if isinstance(sigma, (bool, np.bool_, str, bytes)) or not isinstance(sigma, numbers.Real):
        raise GaprankInputError(f"{name} must be a positive number; got {sigma!r}")
    value = float(sigma)
    if not (math.isfinite(value) and value > 0):
        raise GaprankInputError(f"{name} must be a positive finite number; got {sigma!r}")
    return value


def check_probability(value: Any, name: str, *, open_interval: bool = False) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError) as exc:
        raise GaprankInputError(f"{name} must be a number; got {value!r}") from exc
    lo_ok = v > 0 if open_interval else v >= 0
    hi_ok = v < 1 if open_interval else v <= 1
    if not (math.isfinite(v) and lo_ok and hi_ok):
        interval = "(0, 1)" if open_interval else "[0, 1]"
        raise GaprankInputError(f"{name} must lie in {interval}; got {value!r}")
    return v


def batch_mask(mask: ArrayLike | None, shape: tuple[int, ...], device: torch.device) -> torch.Tensor:
    """The one mask normaliser: ``mask`` for scores of ``shape`` (``[list]`` or ``[batch, list]``) as a
    ``[batch, list]`` bool tensor on ``device``, all True when None (every position a real document)."""
    rows = (1, shape[0]) if len(shape) == 1 else tuple(shape)
    if mask is None:
        return torch.ones(rows, dtype=torch.bool, device=device)
    m = checked_tensor(mask, "mask", device)
    if m.dtype != torch.bool:
        raise GaprankInputError(f"mask must be boolean (True = a real document); got dtype {m.dtype}")
    if tuple(m.shape) != tuple(shape):
        raise GaprankInputError(f"mask shape {tuple(m.shape)} does not match scores shape {tuple(shape)}")
    return m.reshape(rows)


def batch_weights(weights: ArrayLike | None, shape: tuple[int, ...], mask: torch.Tensor, device: torch.device,
                  *, validate: bool = True) -> torch.Tensor | None:
    """The one weights normaliser: ``weights`` for scores of ``shape`` as a ``[batch, list]`` float64 tensor on
    ``device`` (one per document), or ``[batch, list, levels]`` when given in the scores' shape plus a last axis
    (one per document and level 1..c), 0 at padding (``mask`` ``[batch, list]``, whose weights are never read);
    None stays None (every document weighs 1). Real weights must be finite; they may be negative (an affine
    estimate's evidence against a document, :func:`gaprank.clicks.click_training_set`). ``validate=False`` checks
    only the dtype and shape (nothing read back from the device)."""
    if weights is None:
        return None
    w = checked_tensor(weights, "weights", device)
    if w.dtype == torch.bool or w.is_complex():
        raise GaprankInputError(f"weights must be real numbers; got dtype {w.dtype}")
    per_level = w.ndim == len(shape) + 1
    if tuple(w.shape[:len(shape)]) != tuple(shape) or w.ndim not in (len(shape), len(shape) + 1) or (
            per_level and w.shape[-1] < 1):
        raise GaprankInputError(f"weights shape {tuple(w.shape)} does not match scores shape {tuple(shape)} (one "
                                "weight per document, or one per document and level 1..c on a last axis)")
    w = w.reshape(*mask.shape, *w.shape[len(shape):]).to(torch.float64)
    real = mask[..., None] if per_level else mask
    if validate:
        bad = ~torch.isfinite(w) & real
        if bool(bad.any()):
            b, n = (int(i) for i in torch.nonzero(bad)[0][:2])
            value = w[b, n][~torch.isfinite(w[b, n])][0] if per_level else w[b, n]
            raise GaprankInputError(f"weights must be finite; got {value.item()} at query {b}, position {n}")
    return torch.where(real, w, torch.zeros((), dtype=torch.float64, device=device))


def per_level(weights: ArrayLike | None, scores_ndim: int) -> bool:
    """Whether ``weights`` are given per document and level (a last axis beyond the scores')."""
    if weights is None:
        return False
    return (weights.ndim if isinstance(weights, torch.Tensor) else np.ndim(weights)) == scores_ndim + 1


def as_batch(scores: torch.Tensor, mask: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
    """``[B, N]`` views of scores (keeping the graph) and mask; padding scores replaced by 0 so that
    whatever they held (even NaN) never reaches a value or a gradient."""
    s = scores.reshape(1, -1) if scores.ndim == 1 else scores
    m = batch_mask(mask, tuple(scores.shape), s.device)
    return s.masked_fill(~m, 0.0), m


def prepare_scores_labels(
    scores: ArrayLike, labels: ArrayLike, mask: ArrayLike | None = None, *, validate: bool = True
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, OutputSpec]:
    """Validate and convert ``scores``, ``labels`` and ``mask`` to 2-D torch tensors.

    Returns float64 scores, int64 labels (0 at padding), a boolean mask and the output spec.
    Padding positions (mask False) are never read: their scores and labels may hold anything.
    ``validate=False`` checks only what needs no value read back from the device (types and shapes):
    the caller vouches that real scores are finite and real labels are integer grades 0..MAX_GRADE.
    """
    is_numpy = not isinstance(scores, torch.Tensor)
    s = checked_tensor(scores, "scores")
    device = s.device
    if s.dtype == torch.bool or s.is_complex():
        raise GaprankInputError(f"scores must be real numbers, got dtype {s.dtype}")
    if s.ndim not in (1, 2):
        raise GaprankInputError(f"scores must be 1-D [list] or 2-D [batch, list]; got shape {tuple(s.shape)}")
    squeeze = s.ndim == 1
    if s.shape[-1] == 0 or (s.ndim == 2 and s.shape[0] == 0):
        raise GaprankInputError(f"scores is empty (shape {tuple(s.shape)}): a ranked list needs at least one document")
    out_dtype = s.dtype if s.is_floating_point() else torch.float64
    s2 = s.reshape(1, -1) if squeeze else s
    s2 = s2.to(torch.float64)

    y = checked_tensor(labels, "labels", device)
    if tuple(y.shape) != tuple(s.shape):
        raise GaprankInputError(f"labels shape {tuple(y.shape)} does not match scores shape {tuple(s.shape)}")
    y2 = y.reshape(1, -1) if squeeze else y

    m2 = batch_mask(mask, tuple(s.shape), device)
    spec = OutputSpec(is_numpy, squeeze, device, out_dtype)
    if not validate:
        _check_label_dtype(y2)
        return s2, torch.where(m2, y2, torch.zeros((), dtype=y2.dtype, device=device)).to(torch.int64), m2, spec

    bad = ~torch.isfinite(s2) & m2
    if bool(bad.any()):
        b, n = (int(i) for i in torch.nonzero(bad)[0])
        raise GaprankInputError(
            f"scores contain NaN or infinite values (first at query {b}, position {n}: {s2[b, n].item()})"
        )

    return s2, check_labels(y2, m2), m2, spec


def _check_label_dtype(y: torch.Tensor) -> None:
    if y.dtype == torch.bool or y.is_complex():
        raise GaprankInputError(f"labels must be non-negative integers, got dtype {y.dtype}")


def check_labels(y: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Labels must be non-negative integers at real positions; returns int64 with 0 at padding."""
    _check_label_dtype(y)
    if y.is_floating_point():
        real = y[mask]
        if not bool(torch.isfinite(real).all()):
            raise GaprankInputError("labels contain NaN or infinite values")
        if not bool((real == torch.round(real)).all()):
            bad = real[real != torch.round(real)][0].item()
            raise GaprankInputError(f"labels must be integer grades; got {bad}")
        if bool((real > MAX_GRADE).any()):  # before the int64 cast, which would wrap huge values
            raise GaprankInputError(f"label {real.max().item():g} is above {MAX_GRADE}: {GRADE_SCALE_HINT}")
    yi = torch.where(mask, y, torch.zeros((), dtype=y.dtype, device=y.device)).to(torch.int64)
    if bool((yi < 0).any()):
        raise GaprankInputError(f"labels must be non-negative grades; got {int(yi.min())}")
    if bool((yi > MAX_GRADE).any()):
        raise GaprankInputError(f"label {int(yi.max())} is above {MAX_GRADE}: {GRADE_SCALE_HINT}")
    return yi


def check_integer_grades(values: torch.Tensor, requirement: str) -> torch.Tensor:
    """``values`` (any real dtype) as int64 grades 0..MAX_GRADE; otherwise the one-line error
    ``"{requirement}; got {the first bad value}"`` (NaN and infinities included). For integrations whose
    messages name their own argument (torchmetrics' target, sentence-transformers' labels)."""
    as_float = values.double()
    bad = (as_float != torch.round(as_float)) | (as_float < 0) | (as_float > MAX_GRADE)
    if bool(bad.any()):
        raise GaprankInputError(f"{requirement}; got {values[bad][0].item()!r}")
    return as_float.long()


def finalize(
    values: torch.Tensor,
    defined: torch.Tensor | None,
    spec: OutputSpec,
    *,
    empty_value: float,
    reduction: str,
) -> MetricValue:
    """Apply the undefined-query policy and the reduction; return in the caller's array type."""
    check_choice(reduction, "reduction", REDUCTIONS)
    if defined is not None:
        values = torch.where(defined, values, torch.as_tensor(float(empty_value), dtype=values.dtype, device=values.device))
    if reduction == "mean":
        values = values.mean(dim=-1)
    elif reduction == "sum":
        values = values.sum(dim=-1)
    elif spec.squeeze:
        values = values[0]
    if spec.is_numpy:
        out = values.detach().cpu().numpy().astype(np.float64)
        return np.float64(out) if out.ndim == 0 else out
    return values.to(spec.dtype)
