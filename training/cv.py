"""PyTorch rankers across the five LETOR folds: train on train, choose the epoch and the learning rate on
vali, evaluate once on test.

    python -m training.cv --config configs/ohsumed/softgap.yaml [--folds 1,2] [--force] [--quick]

The ranker (``model``: linear or an MLP) scores each document from its features; the objective
(``loss``) is one of gaprank's: SoftRank-style smooth metrics (``kind: soft``, metric gap / xgap / egap /
ap / ndcg), the exact expectation E[M] (``kind: exact``), LambdaRank with |Delta M| weights
(``kind: lambdarank``), RankNet or ListNet. Adam takes one step per batch of ``training.batch_size``
queries; queries are batched with others of similar length (sorted by length, cut into batches, batch
order shuffled each epoch with the seed), which keeps padding, and so the O(N^2)-per-query losses, cheap.

For every learning rate in ``training.learning_rates`` the model restarts from the same seeded
initialisation; after each epoch the validation fold is scored with ``evaluation.selection`` (LETOR
conventions) and the best (learning rate, epoch) is kept; a learning rate stops after ``patience``
epochs without improvement. The test fold is scored once, with that model. Same seed, same thread
count, same data: the same numbers on CPU.

Writes what :mod:`training.lambdamart` writes (``folds/FoldK.json``, ``summary.json``,
``per_query.tsv``, ``table.md``, ``log.jsonl``) under ``output_dir``; ``--quick`` (fold 1, 2 epochs, the
first learning rate) writes under ``<output_dir>-quick`` instead.
"""

from __future__ import annotations

import copy
import dataclasses
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import torch
from tqdm import tqdm

import gaprank
from gaprank import GaprankInputError
from gaprank.data import RankingSplit, load_fold
from gaprank.metrics import objective_info, objective_names, user_model_measures

from ._runner import fold_script_main, quick_variant, run_folds, show_progress
from ._sections import DataConfig, EvaluationConfig


class TrainingDiverged(GaprankInputError):
    """The loss became NaN or infinite: the configured learning rate is too large for this objective."""
# The loss kinds driven by a measure, and the registry mode each needs of it.
METRIC_LOSSES = {"soft": "soft", "exact": "exact", "lambdarank": "swap_deltas"}


@dataclass
class ModelConfig:
    kind: Literal["linear", "mlp"] = "linear"
    hidden: list[int] = field(default_factory=lambda: [32])  # MLP hidden layer widths
    activation: Literal["relu", "tanh"] = "relu"
    dropout: float = 0.0

    def validate(self) -> None:
        if self.kind == "mlp" and (not self.hidden or any(h < 1 for h in self.hidden)):
            raise GaprankInputError(f"model.hidden must be a non-empty list of positive widths; got {self.hidden}")
        if not 0.0 <= self.dropout < 1.0:
            raise GaprankInputError(f"model.dropout must be in [0, 1); got {self.dropout}")

    def build(self, num_features: int) -> torch.nn.Module:
        """A module mapping ``[..., num_features]`` to ``[...]`` scores."""
        if self.kind == "linear":
            return torch.nn.Sequential(torch.nn.Linear(num_features, 1), torch.nn.Flatten(-2))
        layers: list[torch.nn.Module] = []
        width = num_features
        for hidden in self.hidden:
            layers += [torch.nn.Linear(width, hidden), torch.nn.ReLU() if self.activation == "relu" else torch.nn.Tanh()]
            if self.dropout:
                layers.append(torch.nn.Dropout(self.dropout))
            width = hidden
        return torch.nn.Sequential(*layers, torch.nn.Linear(width, 1), torch.nn.Flatten(-2))


@dataclass
class LossConfig:
    kind: Literal["soft", "exact", "lambdarank", "ranknet", "listnet"]
    metric: str | None = None  # a measure of gaprank's registry with the loss kind's mode (gap, ndcg, ...)
    g: list[float] | None = None  # GAP/xGAP/eGAP user model; default: uniform over the grades
    sigma: float = 1.0  # score noise (soft, exact) or logistic steepness (lambdarank, ranknet)
    k: int | None = None  # lambdarank: only pairs whose upper document is in the current top k

    def validate(self) -> None:
        mode = METRIC_LOSSES.get(self.kind)
        if mode is not None and self.metric is None:
            raise GaprankInputError(f"loss.metric is required for loss.kind {self.kind!r} "
                                    f"({', '.join(objective_names(mode=mode))})")
        if mode is None and self.metric is not None:
            raise GaprankInputError(f"loss.kind {self.kind!r} takes no metric; got metric {self.metric!r}")
        if mode is not None:
            if self.kind == "exact" and self.metric not in objective_names(mode="exact"):
                raise GaprankInputError(f"loss.kind 'exact' is for the AP family {objective_names(mode='exact')}; "
                                        f"got {self.metric!r}")
            try:
                info = objective_info(self.metric, mode=mode)
            except GaprankInputError as exc:
                raise GaprankInputError(f"loss.{exc}") from None
            if self.g is not None and not info.uses_g:
                takes_g = [i.key for i in user_model_measures()]
                raise GaprankInputError(f"loss.g is only for {', '.join(takes_g)}; got metric {self.metric!r}")
        if self.k is not None and self.kind != "lambdarank":
            raise GaprankInputError("loss.k (truncation) is only for loss.kind 'lambdarank'")
        if not self.sigma > 0:
            raise GaprankInputError(f"loss.sigma must be > 0; got {self.sigma}")
        scores = torch.tensor([[0.3, 0.1, 0.2]], requires_grad=True)
        self.build()(scores, torch.tensor([[2, 0, 1]]), torch.ones(1, 3, dtype=torch.bool))  # gaprank's own checks

    def build(self) -> Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]:
        """``loss(scores, labels, mask)`` to minimise (mean over the batch's queries)."""
        metric, g, sigma = self.metric, self.g, self.sigma
        if self.kind in ("soft", "exact"):
            mode = "paper" if self.kind == "soft" else "exact"
            options = {"g": g} if objective_info(metric, mode="soft").uses_g else {}
            return lambda s, y, m: gaprank.soft_metric_loss(s, y, metric=metric, sigma=sigma, mode=mode, mask=m,
                                                            **options)
        if self.kind == "lambdarank":
            return lambda s, y, m: gaprank.lambdarank_loss(s, y, metric=metric, g=g, sigma=sigma, k=self.k, mask=m)
        if self.kind == "ranknet":
            return lambda s, y, m: gaprank.ranknet_loss(s, y, sigma=sigma, mask=m)
        return lambda s, y, m: gaprank.listnet_loss(s, y, mask=m)


@dataclass
class TrainingConfig:
    epochs: int = 100
    batch_size: int = 8  # queries per Adam step
    learning_rates: list[float] = field(default_factory=lambda: [1e-3])  # each tried; chosen on vali
    weight_decay: float = 0.0
    patience: int | None = 20  # stop a learning rate after this many epochs without a better vali score
    seed: int = 1
    dtype: Literal["float32", "float64"] = "float32"
    num_threads: int = 2

    def validate(self) -> None:
        for name in ("epochs", "batch_size", "num_threads"):
            if getattr(self, name) < 1:
                raise GaprankInputError(f"training.{name} must be >= 1; got {getattr(self, name)}")
        if not self.learning_rates or any(not lr > 0 for lr in self.learning_rates):
            raise GaprankInputError(f"training.learning_rates must be positive numbers; got {self.learning_rates}")
        if self.weight_decay < 0:
            raise GaprankInputError(f"training.weight_decay must be >= 0; got {self.weight_decay}")
        if self.patience is not None and self.patience < 1:
            raise GaprankInputError(f"training.patience must be >= 1 or null; got {self.patience}")
        if not 0 <= self.seed < 2**63:
            raise GaprankInputError(f"training.seed must be in 0..2^63-1; got {self.seed}")


@dataclass
class CVConfig:
    name: str
    data: DataConfig
    output_dir: str
    loss: LossConfig
    model: ModelConfig = field(default_factory=ModelConfig)
    training: TrainingConfig = field(default_factory=TrainingConfig)
    evaluation: EvaluationConfig = field(default_factory=EvaluationConfig)


def quick(config: CVConfig) -> CVConfig:
    """CI's smoke version: fold 1 (the first configured), 2 epochs, the first learning rate."""
    return quick_variant(config, training=dataclasses.replace(
        config.training, epochs=min(config.training.epochs, 2), learning_rates=config.training.learning_rates[:1]))


@dataclass
class _Batch:
    features: torch.Tensor  # [b, n, F]
    labels: torch.Tensor  # [b, n]
    mask: torch.Tensor  # [b, n]


def length_batches(split: RankingSplit, batch_size: int, dtype: torch.dtype) -> list[_Batch]:
    """The split's queries sorted by length (stable) and cut into batches of ``batch_size``, each padded
    to its own longest query."""
    sizes = split.group_sizes
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    order = np.argsort(sizes, kind="stable")
    batches = []
    for first in range(0, order.size, batch_size):
        chosen = order[first:first + batch_size]
        rows = np.concatenate([np.arange(starts[q], starts[q] + sizes[q]) for q in chosen])
        part = RankingSplit(split.features[rows], split.labels[rows], split.qids[rows], split.docids[rows])
        padded = part.to_padded(dtype=dtype)
        batches.append(_Batch(padded.features, padded.labels, padded.mask))
    return batches


def predict(model: torch.nn.Module, features: torch.Tensor) -> np.ndarray:
    """Flat scores of the rows of ``features`` ``[rows, F]``, in row order."""
    model.eval()
    with torch.no_grad():
        return model(features).double().numpy()


def _train_one_rate(config: CVConfig, train: list[_Batch], vali: RankingSplit, learning_rate: float,
                    num_features: int, dtype: torch.dtype, progress: bool) -> dict[str, Any]:
    tr, ev = config.training, config.evaluation
    torch.manual_seed(tr.seed)
    model = config.model.build(num_features).to(dtype)
    optimizer = torch.optim.Adam(model.parameters(), lr=learning_rate, weight_decay=tr.weight_decay)
    loss_fn = config.loss.build()
    selection = ev.scorer([ev.selection])
    shuffle = torch.Generator().manual_seed(tr.seed)
    vali_features = torch.as_tensor(vali.features, dtype=dtype)  # converted once, scored every epoch
    history, losses = [], []
    best = (-np.inf, 0, copy.deepcopy(model.state_dict()))
    bar = tqdm(range(1, tr.epochs + 1), desc=f"  lr {learning_rate:g}", unit="epoch", leave=False,
               file=sys.stderr, disable=not show_progress(progress))
    for epoch in bar:
        model.train()
        total = 0.0
        for index in torch.randperm(len(train), generator=shuffle).tolist():
            batch = train[index]
            optimizer.zero_grad()
            loss = loss_fn(model(batch.features), batch.labels, batch.mask)
            if not torch.isfinite(loss):
                raise TrainingDiverged(f"{config.name}: loss became {loss.item()} at epoch {epoch} "
                                         f"(learning rate {learning_rate:g}); try a smaller learning rate")
            loss.backward()
            optimizer.step()
            total += loss.item()
        value = selection.evaluate(predict(model, vali_features), vali.labels, vali.group_sizes)[ev.selection]
        history.append(value)
        losses.append(total / len(train))
        bar.set_postfix({ev.selection: f"{value:.4f}"})
        if value > best[0]:
            best = (value, epoch, copy.deepcopy(model.state_dict()))
        elif tr.patience is not None and epoch - best[1] >= tr.patience:
            break
    model.load_state_dict(best[2])
    return {"value": best[0], "epoch": best[1], "model": model, "vali": history, "train_loss": losses}


def _fit(config: CVConfig, fold_number: int, progress: bool) -> tuple[Any, dict[float, dict[str, Any]], float, torch.dtype]:
    """Every learning rate trained on the fold's train set and scored on its vali set (test untouched):
    the fold, ``{learning_rate: run}``, the training seconds and the dtype."""
    tr = config.training
    torch.set_num_threads(tr.num_threads)
    dtype = torch.float64 if tr.dtype == "float64" else torch.float32
    fold = load_fold(config.data.dataset, fold_number, variant=config.data.variant, data_dir=config.data.data_dir)
    train = length_batches(fold.train, tr.batch_size, dtype)
    start = time.perf_counter()
    runs = {lr: _train_one_rate(config, train, fold.vali, lr, fold.train.num_features, dtype, progress)
            for lr in tr.learning_rates}
    return fold, runs, time.perf_counter() - start, dtype


def vali_score(config: CVConfig, fold_number: int) -> float:
    """The best vali value of ``evaluation.selection`` over the learning rates and epochs of one fold (what
    tuning maximises). Only train and vali are used: the test split is never read."""
    _, runs, _, _ = _fit(config, fold_number, progress=False)
    return max(run["value"] for run in runs.values())


def run_fold(config: CVConfig, fold_number: int, *, progress: bool = True) -> dict[str, Any]:
    """Train and evaluate one fold; returns the fold record (what folds/FoldK.json holds)."""
    tr, ev = config.training, config.evaluation
    fold, runs, seconds, dtype = _fit(config, fold_number, progress)
    chosen = max(tr.learning_rates, key=lambda lr: runs[lr]["value"])  # ties: the first listed
    best = runs[chosen]
    test = fold.test
    test_scores = predict(best["model"], torch.as_tensor(test.features, dtype=dtype))
    per_query = ev.scorer().per_query(test_scores, test.labels, test.group_sizes)
    return {
        "fold": f"Fold{fold_number}",
        "selected": {"epoch": best["epoch"], "learning_rate": chosen, f"vali {ev.selection}": round(best["value"], 6)},
        "seconds": round(seconds, 3),
        "vali": {f"{lr:g}": {ev.selection: r["vali"], "train_loss": r["train_loss"]} for lr, r in runs.items()},
        "test": {name: float(values.mean()) for name, values in per_query.items()},
        "per_query": {name: dict(zip(test.query_ids, map(float, values), strict=True)) for name, values in per_query.items()},
    }


def run(config: CVConfig, *, folds: list[int] | None = None, force: bool = False,
        progress: bool = True) -> dict[str, Any]:
    """Every fold of ``config`` (or ``folds``); see the module doc for what is written."""
    ev = config.evaluation
    return run_folds(config, run_fold=lambda number: run_fold(config, number, progress=progress),
                     folds=folds, measures=ev.measures, conventions=ev.conventions,
                     g=ev.g, versions={"torch": torch.__version__, "gaprank": gaprank.__version__},
                     force=force, progress=progress)


def main(argv: list[str] | None = None) -> int:
    return fold_script_main(argv, prog="python -m training.cv", doc=__doc__, example="configs/ohsumed/soft_gap.yaml",
                            config_class=CVConfig, run=run, quick=quick, quick_help="fold 1, 2 epochs, first learning rate (CI)")


if __name__ == "__main__":
    raise SystemExit(main())
