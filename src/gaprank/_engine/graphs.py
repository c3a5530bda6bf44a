"""A kept batch shape's lambdas replayed as one CUDA graph (private).

On a GPU, a LambdaRank or RankNet step on a batch of a few hundred documents is a few hundred small kernels, and its time
goes to launching them and to the Python that issues them, not to arithmetic. When nothing is read back from the
device (``validate=False``), which kernels a call issues depends only on the batch's shape and the loss's
settings. So the batch is padded (as masked documents) to a width of a coarse grid (:func:`graph_width`), which
makes the shapes of a training run's batches come back; once a padded shape and the settings have come
:data:`CAPTURE_AFTER` times to one holder while it keeps the shape, that call also captures the kernels in a CUDA
graph, and later calls copy their inputs into the graph's and replay it: the same kernels, one launch. Padding
changes no value (a masked document takes part in no pair), though a sum over a wider row may round differently.

Capturing waits once for the device (``torch.cuda.graph`` synchronises and empties the allocator's cache); a
replay never does. A graph keeps its own memory pool, about one eager step's working memory, for as long as its
shape is kept.
"""

from __future__ import annotations

import os
import sys
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from .._inputs import holding_device_copies

CAPTURE_AFTER = 2  # eager calls of one padded shape and settings, the last of which captures them
GRAPHED_SHAPES = 32  # the shapes a holder keeps once its steps are graphed (a run's batch widths on the grid)
GRAPHS_PER_SHAPE = 4  # graphs a shape keeps, the last settings used (a setting that changes every step is captured again)

Outputs = tuple[torch.Tensor, ...]


def graph_width(width: int) -> int:
    """``width`` rounded up to the grid of graphed batch widths: multiples of 32 up to 256, of 64 up to 1024,
    then of 128 (at most 31, 63 and 127 padding documents: a quarter more from 129 documents on, an eighth more
    from 513 on).

    >>> [graph_width(n) for n in (1, 32, 33, 200, 1000, 1251)]
    [32, 32, 64, 224, 1024, 1280]
    """
    step = 32 if width <= 256 else 64 if width <= 1024 else 128
    return max(step, -(-width // step) * step)


def exact_key(value: Any) -> Any:
    """A hashable key of a setting that tells any two different values apart (a tensor's or an array's printed
    form rounds): host tensors and arrays by their bytes, a tensor on a device by identity (read in place, as
    the graph reads it; a graph keeps the settings it was captured with, so their identities are not reused),
    sequences and mappings item by item."""
    if isinstance(value, torch.Tensor):
        if value.device.type != "cpu":
            return ("device tensor", id(value), value.device, value.dtype, tuple(value.shape))
        value = value.detach().numpy()
    if isinstance(value, np.ndarray):
        return ("array", value.dtype.str, value.shape, np.ascontiguousarray(value).tobytes())
    if isinstance(value, dict):
        return ("dict", tuple((key, exact_key(item)) for key, item in sorted(value.items())))
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, tuple(exact_key(item) for item in value))
    return (type(value).__name__, value)


def graphable(scores: torch.Tensor, labels: Any, mask: Any) -> bool:
    """Whether a step on these inputs may be captured or replayed: a non-empty ``[B, N]`` or ``[N]`` batch
    whose labels (and mask, if any) are tensors of the scores' shape, every tensor on one CUDA device, no
    capture of the caller's own under way (the step is then part of it)."""
    if scores.device.type != "cuda" or scores.ndim not in (1, 2) or scores.numel() == 0:
        return False
    for x in (labels, mask):
        if x is not None and not (isinstance(x, torch.Tensor) and x.device == scores.device
                                  and x.shape == scores.shape):
            return False
    return not torch.cuda.is_current_stream_capturing()


def padded(scores: torch.Tensor, labels: torch.Tensor, mask: torch.Tensor | None
           ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``[B, W]`` scores, labels and mask, W = :func:`graph_width` of N: the batch (a ``[N]`` list is one row)
    with masked documents of score 0 and label 0 after its own."""
    batch = scores.reshape(1, -1) if scores.ndim == 1 else scores
    rows, width = batch.shape
    wide = graph_width(width)
    if mask is None:
        mask = torch.ones(rows, width, dtype=torch.bool, device=batch.device)
    inputs = (batch, labels.reshape(rows, width), mask.reshape(rows, width))
    if wide == width:
        return inputs
    out = tuple(torch.cat([x, x.new_zeros(rows, wide - width)], 1) for x in inputs)
    return out[0], out[1], out[2]


class GraphedCall:
    """``fn(scores, labels, mask)`` (``[B, W]`` each) captured in a CUDA graph on static copies of them.

    ``fn`` must return a tuple of tensors and read nothing back from the device; it is captured, not run, so the
    caller keeps the result of the eager call that preceded the capture. The graph reads and writes memory by
    address, so it keeps what it uses: ``buffers`` (the kept layout, plans and engines its kernels write) and the
    settings tensors copied to the device that ``fn`` took."""

    def __init__(self, fn: Callable[..., Outputs], inputs: tuple[torch.Tensor, torch.Tensor, torch.Tensor],
                 buffers: Any = None) -> None:
        self.static = tuple(x.detach().clone() for x in inputs)
        self.buffers = buffers
        self.graph = torch.cuda.CUDAGraph()
        with holding_device_copies() as self.settings, torch.cuda.device(inputs[0].device), \
                torch.cuda.graph(self.graph, capture_error_mode="thread_local"):
            self.outputs = fn(*self.static)

    def __call__(self, scores: torch.Tensor, labels: torch.Tensor, mask: torch.Tensor | None) -> Outputs:
        """The outputs for an unpadded batch of this graph's padded shape (copied into the graph's inputs, the
        padding masked)."""
        rows, wide = self.static[0].shape
        width = scores.numel() // rows
        static_scores, static_labels, static_mask = self.static
        static_scores[:, :width].copy_(scores.reshape(rows, width))
        static_labels[:, :width].copy_(labels.reshape(rows, width))
        if mask is None:
            static_mask[:, :width].fill_(True)
        else:
            static_mask[:, :width].copy_(mask.reshape(rows, width))
        if wide != width:  # as :func:`padded` pads
            for static in self.static:
                static[:, width:].zero_()
        self.graph.replay()
        return tuple(out.clone() for out in self.outputs)  # the graph's own are overwritten by its next replay


def capture(fn: Callable[..., Outputs], inputs: tuple[torch.Tensor, torch.Tensor, torch.Tensor],
            buffers: Any = None) -> GraphedCall | None:
    """A :class:`GraphedCall` of ``fn`` on ``inputs`` (keeping ``buffers``); None, with a warning, when CUDA
    refuses the capture (the calls then stay eager: the same numbers, without the graph's speed)."""
    try:
        return GraphedCall(fn, inputs, buffers)
    except RuntimeError as error:  # an operation CUDA cannot capture
        warnings.warn(f"gaprank could not capture this loss's kernels in a CUDA graph, so it runs them one by one "
                      f"(the same numbers, more launches): {str(error).splitlines()[0]}", RuntimeWarning,
                      stacklevel=_callers_level())
        return None


def _callers_level() -> int:
    """The ``stacklevel`` (for a warning raised in the function that calls this) of the first frame outside
    gaprank and torch: the user's line that called the loss, through ``nn.Module.__call__``."""
    inside = (os.path.dirname(os.path.dirname(os.path.abspath(__file__))), os.path.dirname(torch.__file__))
    level, frame = 1, sys._getframe(1)
    while frame.f_back is not None and os.path.abspath(frame.f_code.co_filename).startswith(inside):
        frame, level = frame.f_back, level + 1
    return level
