"""A loss module's lambdas replayed as one CUDA graph per batch shape (private).

On a GPU, a LambdaRank or RankNet step on a batch of a few hundred documents is a few hundred small kernels, and its time
goes to launching them and to the Python that issues them, not to arithmetic. When nothing is read back from the
device (``validate=False``), which kernels a call issues depends only on the batch's shape and the loss's
settings. So the batch is padded (as masked documents) to a width of a coarse grid (:func:`graph_width`), which
makes the shapes of a training run's batches come back; once a padded shape and the settings have come
:data:`CAPTURE_AFTER` times to one module's :class:`CudaGraphs` while it keeps the shape, that call also captures the
kernels in a CUDA graph, and later calls copy their inputs into the graph's and replay it: the same kernels, one
launch. Padding
changes no value (a masked document takes part in no pair), though a sum over a wider row may round differently.

Capturing waits once for the device (``torch.cuda.graph`` synchronises and empties the allocator's cache); a
replay never does. A graph keeps its own memory pool, about one eager step's working memory, for as long as its
shape is kept.
"""

from __future__ import annotations

import os
import sys
import threading
import warnings
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from .._inputs import holding_device_copies
from .batches import BatchPairs

CAPTURE_AFTER = 2  # eager calls of one padded shape and settings, the last of which captures them
GRAPHED_SHAPES = 32  # the padded shapes a module keeps graphs for (a run's batch widths on the grid)
GRAPHS_PER_SHAPE = 2  # graphs a shape keeps, the last two settings used (one that changes every step is captured again)

Outputs = tuple[torch.Tensor, ...]
Step = Callable[[torch.Tensor, torch.Tensor, torch.Tensor, BatchPairs], Outputs]


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


@dataclass
class _GraphedShape:
    """One padded shape: the buffers its steps run on (which its graphs' kernels write), its eager calls per
    settings, and its graphs per settings (None: capture refused)."""

    buffers: BatchPairs = field(default_factory=lambda: BatchPairs(kept=1))
    calls: OrderedDict[tuple, int] = field(default_factory=OrderedDict)
    graphs: OrderedDict[tuple, GraphedCall | None] = field(default_factory=OrderedDict)


class CudaGraphs:
    """A loss module's steps on a GPU, replayed as CUDA graphs: the graphs of its last :data:`GRAPHED_SHAPES` padded
    batch shapes, each shape's last :data:`GRAPHS_PER_SHAPE`, and the buffers they run on.

    A shape is keyed by (thread, B, padded N, device, dtype): two threads never share one. What is kept is working
    memory, not state: a copy or a pickle starts empty."""

    def __init__(self) -> None:
        self._shapes: OrderedDict[tuple, _GraphedShape] = OrderedDict()
        self._table = threading.Lock()  # as BatchPairs': threads share the table, never a shape

    def __getstate__(self) -> dict[str, Any]:
        return {}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__()  # type: ignore[misc]

    @staticmethod
    def serve(scores: torch.Tensor, labels: Any, mask: Any, replayable: bool) -> bool:
        """Whether a step goes through the graphs: one that reads nothing back from the device (``replayable``),
        on inputs :func:`graphable`, outside torch.compile (no CUDA graph of ours inside the caller's compiled
        code)."""
        return replayable and not torch.compiler.is_compiling() and graphable(scores, labels, mask)

    def __call__(self, step: Step, settings: tuple, scores: torch.Tensor, labels: torch.Tensor,
                 mask: torch.Tensor | None) -> Outputs:
        """``step(scores, labels, mask, buffers)``: a batch's ``(cost [B], grad [B, N])`` on the padded shape's
        ``buffers``; ``settings``: everything else that decides which kernels it issues or what they read (compared
        exactly: :func:`exact_key`).

        The batch is padded to a width of the graphs' grid; once that shape and ``settings`` have come
        :data:`CAPTURE_AFTER` times while the shape is kept, that call also captures ``step`` in a CUDA graph, and
        later ones replay it."""
        batch, width = (1, scores.shape[0]) if scores.ndim == 1 else scores.shape
        shape_key = (threading.get_ident(), batch, graph_width(width), scores.device, scores.dtype)
        key = (exact_key(settings), labels.dtype, torch.bool if mask is None else mask.dtype)  # padded: a mask
        with self._table:
            shape = self._shapes.get(shape_key)
            if shape is None:
                shape = self._shapes[shape_key] = _GraphedShape()
                while len(self._shapes) > GRAPHED_SHAPES:  # the least recently used go, with their graphs
                    self._shapes.popitem(last=False)
            else:
                self._shapes.move_to_end(shape_key)
        graphed = shape.graphs.get(key)
        if graphed is not None:
            shape.graphs.move_to_end(key)
            cost, grad = graphed(scores, labels, mask)
            return cost, grad[:, :width]

        def on_buffers(scores: torch.Tensor, labels: torch.Tensor, mask: torch.Tensor) -> Outputs:
            return step(scores, labels, mask, shape.buffers)

        inputs = padded(scores, labels, mask)
        cost, grad = on_buffers(*inputs)
        if key not in shape.graphs:
            shape.calls[key] = shape.calls.pop(key, 0) + 1
            if shape.calls[key] >= CAPTURE_AFTER:
                # the settings too: a device tensor among them is keyed by identity, which it keeps while held
                shape.graphs[key] = capture(on_buffers, inputs, (shape.buffers, settings))
            for cap, kept_keys in ((GRAPHS_PER_SHAPE, shape.graphs), (4 * GRAPHS_PER_SHAPE, shape.calls)):
                while len(kept_keys) > cap:  # settings that keep changing: the oldest go
                    kept_keys.popitem(last=False)
        return cost, grad[:, :width]
