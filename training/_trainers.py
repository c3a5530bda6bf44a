"""The training scripts a comparison or a tuning study can drive, and how a run names one of them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from gaprank import GaprankInputError
from gaprank.metrics import objective_measure

from . import cv, lambdamart
from ._runner import REPO, same_run_config
from .config import load_config, with_params


@dataclass(frozen=True)
class Trainer:
    """One training script, as the comparison and the tuner use it."""

    config_class: type
    run: Callable[..., dict[str, Any]]  # run(config, *, folds, force, progress) -> summary
    quick: Callable[[Any], Any]  # the --quick form of a config
    vali_score: Callable[[Any, int], float]  # best vali value of the selection measure on one fold
    seed_path: str  # where the seed lives in the config (initialisation, batch order, bagging)
    threads_path: str  # where the number of CPU threads lives

    def same_run(self, held: Any, config: Any) -> bool:
        """Whether a run config held with a result (fold record, tuning study) stands for ``config``, the CPU
        thread count aside: the held count is how the run ran (``threads_per_trial``, ``num_threads: auto`` on
        another machine), not what it is, so a study continues, and its best parameters are used, under
        another count. (A fold record is reused only at its own count: :func:`same_run_config`.)"""
        section, name = self.threads_path.split(".")
        count = held.get(section, {}).get(name) if isinstance(held, dict) and isinstance(held.get(section), dict) else None
        return same_run_config(held, config if not isinstance(count, int) else with_params(config, {self.threads_path: count}))


TRAINERS = {
    "cv": Trainer(cv.CVConfig, cv.run, cv.quick, cv.vali_score, "training.seed", "training.num_threads"),
    "lambdamart": Trainer(lambdamart.LambdaMARTConfig, lambdamart.run, lambdamart.quick, lambdamart.vali_score,
                          "booster.seed", "booster.num_threads"),
}
# A trial or run whose loss became NaN or infinite.
DIVERGED = (cv.TrainingDiverged,)


@dataclass
class RunEntry:
    name: str  # shown in the table, e.g. "SoftGAP"
    learner: str  # runs of one learner are compared with each other, e.g. "SoftRank", "LambdaMART"
    config: str  # the run's own config file, relative to the repository root
    trainer: Literal["cv", "lambdamart"] = "cv"
    optimises: str | None = None  # the objective's measure, a name of gaprank's registry (gap, ndcg, ...)
    seeds: list[int] | None = None  # a comparison's seeds for this run only (default: the comparison's)

    def validate(self) -> None:
        if self.optimises is not None:
            try:
                objective_measure(self.optimises, objective_kind="swap_deltas")
            except GaprankInputError as exc:
                raise GaprankInputError(f"optimises: {exc}") from None
        if self.seeds is not None:
            check_seeds(self.seeds, "seeds")

    def load(self, *, quick: bool = False) -> Any:
        """The run's own config (its ``--quick`` form when asked)."""
        trainer = TRAINERS[self.trainer]
        path = Path(self.config)
        config = load_config(path if path.is_absolute() else REPO / path, trainer.config_class)
        return trainer.quick(config) if quick else config


def check_seeds(seeds: list[int], where: str) -> None:
    """Distinct seeds that every engine accepts (LightGBM's is a 32-bit int)."""
    if not seeds or len(set(seeds)) != len(seeds) or any(not 0 <= s < 2**31 for s in seeds):
        raise GaprankInputError(f"{where} must be a non-empty list of distinct integers in 0..2^31-1; got {seeds}")

