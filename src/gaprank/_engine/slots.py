"""Ranked lists of several lengths packed on one flat axis of slots.

The swap-delta factors and the pair blocks work on rank space. A batch ``[B, N]`` is one block of
slots; LightGBM's length buckets are several blocks, each ``[B_i, W_i]`` (its lists padded to
``W_i``), laid end to end. Everything that is per slot (grades, scores, factor rows, gradient sums)
is then one flat tensor ``[..., S]``, so an elementwise step is one tensor operation for all
blocks; only the steps that read along a list (sorting, prefix sums, the pair blocks) go block by
block, through views.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch


@dataclass(frozen=True)
class SlotBlock:
    """``batch`` lists of ``width`` slots each, at flat slots ``offset .. stop - 1`` (list-major)."""

    offset: int
    batch: int
    width: int
    first_query: int

    @property
    def stop(self) -> int:
        return self.offset + self.batch * self.width

    @property
    def queries(self) -> slice:
        return slice(self.first_query, self.first_query + self.batch)


class SlotLayout:
    """Blocks of padded lists, end to end; in each list the real documents fill the first slots.

    Parameters
    ----------
    shapes : sequence of (lists, width)
        One entry per block, in order.
    sizes : 1-D int tensor
        Real documents of each list, blocks in order (``sum of lists`` entries, each <= its width).
    """

    def __init__(self, shapes: Sequence[tuple[int, int]], sizes: torch.Tensor) -> None:
        sizes = torch.as_tensor(sizes, dtype=torch.int64)
        device = sizes.device
        blocks, offset, first = [], 0, 0
        for batch, width in shapes:
            blocks.append(SlotBlock(offset, int(batch), int(width), first))
            offset += int(batch) * int(width)
            first += int(batch)
        self.blocks = tuple(blocks)
        self.num_slots = offset
        self.num_queries = first
        # made on the device (a copy from a host list would wait for it)
        int64: dict[str, Any] = {"dtype": torch.int64, "device": device}
        widths = torch.cat([torch.full((b.batch,), b.width, **int64) for b in blocks] or [torch.empty(0, **int64)])
        self.widths = widths  # [Q]
        starts = torch.cat([torch.arange(b.batch, **int64) * b.width + b.offset for b in blocks]
                           or [torch.empty(0, **int64)])
        self.query = torch.repeat_interleave(torch.arange(first, device=device), widths, output_size=offset)  # [S]
        self.first_slot = starts  # [Q]
        self.list_start = starts[self.query]  # [S]: the first slot of each slot's list
        self.position = torch.arange(offset, device=device) - self.list_start  # [S] 0-based rank
        self.version = -1
        self.resize(sizes)

    def resize(self, sizes: torch.Tensor) -> None:
        """Take new real-document counts for the same lists (the next batch of a layout kept for its shape).
        ``version`` counts the calls, so that what was built from ``valid`` can tell it is out of date."""
        if sizes.numel() != self.num_queries:
            raise ValueError(f"{sizes.numel()} list sizes for {self.num_queries} lists")
        if sizes.device.type == "cpu" and bool((sizes > self.widths).any()):  # elsewhere a read would synchronise
            raise ValueError("a list has more documents than its block's width")
        self.valid = self.position < sizes[self.query]  # [S]
        self.sizes = sizes
        self.last_slot = self.first_slot + (sizes - 1).clamp_min(0)  # [Q]: the last real document (first if none)
        self.__dict__.pop("real", None)
        self.version += 1

    @functools.cached_property
    def real(self) -> torch.Tensor:
        """The slots of real documents (made on first use: their number is read back from the device)."""
        return torch.nonzero(self.valid).flatten()

    @classmethod
    def single(cls, sizes: torch.Tensor, width: int) -> SlotLayout:
        """One block: ``B = len(sizes)`` lists of ``width`` slots (a ``[B, N]`` batch)."""
        return cls([(sizes.numel(), width)], sizes)

    def view(self, flat: torch.Tensor, block: SlotBlock) -> torch.Tensor:
        """``[..., S]`` -> the block's ``[..., B, W]`` (a view)."""
        return flat[..., block.offset:block.stop].unflatten(-1, (block.batch, block.width))

    def list_major(self, flat: torch.Tensor, block: SlotBlock) -> torch.Tensor:
        """``[F, S]`` -> the block's ``[B, F, W]`` (a strided view, as batched matrix products take it)."""
        return self.view(flat, block).transpose(0, 1)
