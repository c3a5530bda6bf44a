"""What every LambdaMART engine shares: the trained booster's summary and the early-stopping rule."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass
class Trained:
    """A booster early-stopped on vali, whatever the engine."""

    predict: Any  # features -> scores at the best iteration
    best_iteration: int
    rounds_trained: int
    vali_curve: list[float]  # the selection measure on vali after each round
    seconds: float
    importance_gain: list[float]


def select_like_early_stopping(curve: list[float], patience: int) -> int:
    """The round (1-based) early stopping would have kept: the first best value, stopping once ``patience``
    rounds pass without a better one."""
    best, best_round = -np.inf, 0
    for round_number, value in enumerate(curve, start=1):
        if value > best:
            best, best_round = value, round_number
        elif round_number - best_round >= patience:
            break
    return best_round
