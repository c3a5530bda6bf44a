"""Multi-process training with PyTorch's own engine: ``torchrun`` starts the processes and
:mod:`torch.distributed` connects them (gloo on CPU, NCCL on GPU); this module only says who this process
is, splits a global batch of queries between the ranks and turns a lost peer into a clear error.

    torchrun --nproc_per_node 2 -m training.cv --config configs/ohsumed/lambdarank_gap.yaml

Every rank holds the whole model and the same seeded state; each trains on its share of every global
batch (balanced by documents), and DistributedDataParallel averages the gradients. Rank 0 scores
validation and test, decides, and writes; the others follow. Across machines, torchrun's own rendezvous
(``--nnodes``, ``--rdzv-backend c10d --rdzv-endpoint HOST:PORT``) starts the same program.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from gaprank import GaprankInputError

from .config import available_cores


class RankLost(RuntimeError):
    """Another process of a distributed run stopped (it died, was killed, or lost its connection)."""


@dataclass(frozen=True)
class Ranks:
    """This process's place in the run: ``world_size`` processes, this one ``rank`` (0 decides and writes)."""

    world_size: int = 1
    rank: int = 0

    @property
    def distributed(self) -> bool:
        return self.world_size > 1

    @property
    def leader(self) -> bool:
        return self.rank == 0


ALONE = Ranks()  # a single process


def launched_rank() -> int:
    """The rank torchrun gave this process (0 when not launched by it)."""
    return int(os.environ.get("RANK", "0") or 0)


def join(device: str, num_threads: int) -> Ranks:
    """Join the process group torchrun's environment describes (``WORLD_SIZE`` > 1), or run alone.

    On CPU the ranks of one machine share its cores: ``LOCAL_WORLD_SIZE`` x ``num_threads`` above the
    cores would oversubscribe them (tens of times slower), so it is refused.
    """
    world_size = int(os.environ.get("WORLD_SIZE", "1") or 1)
    if world_size <= 1:
        return ALONE
    import torch.distributed as dist

    if device == "cpu":
        local = int(os.environ.get("LOCAL_WORLD_SIZE", world_size))
        cores = available_cores()
        if local * num_threads > cores:
            raise GaprankInputError(f"{local} processes x training.num_threads {num_threads} > {cores} cores: set "
                                    f"training.num_threads to {max(1, cores // local)} or start fewer processes")
    if not dist.is_initialized():
        if device == "cuda":
            torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
        dist.init_process_group("nccl" if device == "cuda" else "gloo")
    return Ranks(dist.get_world_size(), dist.get_rank())


def balanced_shares(sizes: np.ndarray, world_size: int) -> list[np.ndarray]:
    """Split one batch's queries (``sizes``: documents of each) between ``world_size`` ranks so that their
    documents are as even as the queries allow: largest first, each to the rank with the fewest documents
    so far (ties: the lower rank). Each share lists positions in the batch, in batch order; a share may be
    empty when the batch has fewer queries than ranks."""
    loads = np.zeros(world_size, dtype=np.int64)
    owner = np.empty(len(sizes), dtype=np.int64)
    for position in np.argsort(-np.asarray(sizes), kind="stable"):
        rank = int(np.argmin(loads))
        owner[position] = rank
        loads[rank] += sizes[position]
    return [np.flatnonzero(owner == rank) for rank in range(world_size)]


def broadcast(value: Any, ranks: Ranks) -> Any:
    """Rank 0's ``value`` on every rank (``value`` itself when alone)."""
    if not ranks.distributed:
        return value
    import torch.distributed as dist

    box = [value]
    dist.broadcast_object_list(box, src=0)
    return box[0]


def global_sum(value: torch.Tensor, ranks: Ranks) -> torch.Tensor:
    """The sum of a scalar over the ranks."""
    if not ranks.distributed:
        return value
    import torch.distributed as dist

    total = value.detach().clone()
    dist.all_reduce(total)
    return total


def lost(exc: BaseException, ranks: Ranks, where: str) -> RankLost:
    """The error to raise when a collective failed because another rank went away."""
    first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return RankLost(f"{where}: a process of the {ranks.world_size}-process run stopped ({first_line}); "
                    "folds finished before it are kept, run the same command again to train the rest")


_PEER_GONE = ("connection", "closed", "reset by peer", "broken pipe", "timed out", "timeout", "gloo", "nccl")


def peer_gone(exc: BaseException, ranks: Ranks) -> bool:
    """Whether ``exc`` is a collective failing because another rank went away (gloo and NCCL raise a
    RuntimeError or DistBackendError naming the connection), not an error of this rank's own work."""
    if not ranks.distributed or not isinstance(exc, RuntimeError):
        return False
    import torch.distributed as dist

    backend_error = getattr(dist, "DistBackendError", None)
    return (backend_error is not None and isinstance(exc, backend_error)) or any(
        word in str(exc).lower() for word in _PEER_GONE)
