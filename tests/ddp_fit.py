"""Helper of test_distributed.py (not a test): train Fold1 of a training.cv config alone or under torchrun and,
on rank 0, save for every learning rate the selected epoch, the vali and train-loss curves, the selected
model's parameters and its test scores to OUT.npz."""

from __future__ import annotations

import sys

import numpy as np
import torch

from training._distributed import join
from training.config import load_config
from training.cv import CVConfig, _fit, predict


def main(config_path: str, out: str) -> None:
    config = load_config(config_path, CVConfig)
    ranks = join(config.training.device, config.training.num_threads)
    fold, runs, _, dtype, _ = _fit(config, 1, False, ranks)
    if ranks.leader:
        _save(fold, runs, dtype, out)
    if ranks.distributed:  # leave together: a rank that exits while the other still holds the group aborts
        import torch.distributed as dist

        dist.barrier()
        dist.destroy_process_group()


def _save(fold, runs, dtype, out: str) -> None:
    saved = {}
    for number, (rate, run) in enumerate(runs.items()):
        parameters = torch.cat([p.detach().reshape(-1) for p in run["model"].parameters()])
        scores = predict(run["model"], torch.as_tensor(fold.test.features, dtype=dtype))
        saved |= {f"{number}_rate": np.array(rate), f"{number}_epoch": np.array(run["epoch"]),
                  f"{number}_vali": np.array(run["vali"]), f"{number}_train_loss": np.array(run["train_loss"]),
                  f"{number}_parameters": parameters.numpy(), f"{number}_scores": np.asarray(scores)}
    np.savez(out, group_sizes=fold.test.group_sizes, labels=fold.test.labels, **saved)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
