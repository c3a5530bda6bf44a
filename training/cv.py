"""PyTorch rankers across the five LETOR folds: train on train, choose the epoch and the learning rate on
vali, evaluate once on test.

    python -m training.cv --config configs/ohsumed/soft_gap.yaml [--folds 1,2] [--force] [--quick]

The ranker (``model``: linear or an MLP) scores each document from its features; the objective
(``loss``) is one of gaprank's: smooth metrics (``kind: soft``, measure gap / xgap / egap / ap / ndcg; SoftRank's
by default, another smoothing of the ranks with ``smoothing: approx | neuralsort | softsort | fast_soft_rank``),
the exact expectation E[M] (``kind: soft`` with ``smoothing: expected``), LambdaRank with |Delta M| weights
(``kind: lambdarank``), RankNet or ListNet. Adam takes one step per batch of ``training.batch_size``
queries; queries are batched with others of similar length (sorted by length, cut into batches, batch
order shuffled each epoch with the seed), which keeps padding, and so the O(N^2)-per-query losses, cheap.

For every learning rate in ``training.learning_rates`` the model restarts from the same seeded
initialisation; after each epoch the validation fold is scored with ``evaluation.selection`` (LETOR
conventions) and the best (learning rate, epoch) is kept; a learning rate stops after ``patience``
epochs without improvement. The test fold is scored once, with that model. Same seed, same thread
count, same data: the same numbers on CPU.

Progress: on a terminal, a bar over the folds and one over each learning rate's epochs; when standard
error is a file (a log), one line per fold instead.

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
from gaprank.data import RankingSplit, load_fold, load_split
from gaprank.losses import SMOOTHINGS
from gaprank.losses import build as build_loss

from ._distributed import ALONE, Ranks, balanced_shares, broadcast, global_sum, join, lost, peer_gone
from ._runner import fold_script_main, quick_variant, run_folds, show_progress, use_threads
from ._sections import DataConfig, EvaluationConfig


class TrainingDiverged(GaprankInputError):
    """The loss became NaN or infinite: the configured learning rate is too large for this objective."""


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
    kind: Literal["soft", "lambdarank", "ranknet", "listnet"]
    measure: str | None = None  # a measure string with the loss kind's form (gap, ndcg, nDCG@10, AP(rel=2), ...)
    g: list[float] | None = None  # GAP/xGAP/eGAP user model; default: uniform over the grades
    # score noise (soft: softrank, expected), the smoothing's temperature or regularisation (soft with another smoothing) or
    # logistic steepness (lambdarank, ranknet)
    sigma: float = 1.0
    truncation_level: int | None = None  # lambdarank: only pairs whose upper document is in the current top k
    # kind soft: gaprank.soft_metric_loss's smoothing (softrank when unset)
    smoothing: str | None = None

    def __post_init__(self) -> None:
        # One spelling per loss, so that a config and its twin are the same run (same record, reused): SoftRank is
        # kind soft with smoothing unset.
        if self.smoothing is None:
            return
        if self.kind != "soft":
            raise GaprankInputError(f"loss.smoothing is only for loss.kind 'soft'; got kind {self.kind!r}")
        if self.smoothing not in SMOOTHINGS:
            raise GaprankInputError(f"loss.smoothing must be one of {', '.join(map(repr, SMOOTHINGS))}; "
                                    f"got {self.smoothing!r}")
        if self.smoothing == "softrank":
            self.smoothing = None

    def validate(self) -> None:
        self.build()  # gaprank checks the kind, the measure and every setting against its registry

    def build(self) -> torch.nn.Module:
        """``loss(scores, labels, mask)`` to minimise (mean over the batch's queries): gaprank's loss module for
        this kind, measure and settings (:func:`gaprank.losses.build`)."""
        # the settings this config sets: a field at its default is left to the module, whose default is the same
        # (so ListNet, which takes no sigma, is not handed the default one)
        settings = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)
                    if f.name not in ("kind", "measure") and getattr(self, f.name) != f.default}
        try:
            return build_loss(self.kind, self.measure, **settings)
        except GaprankInputError as exc:
            raise GaprankInputError(f"loss: {exc}") from None


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
    device: Literal["cpu", "cuda"] = "cpu"  # under torchrun: gloo between CPU ranks, NCCL between GPUs

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
        if self.device == "cuda" and not torch.cuda.is_available():
            raise GaprankInputError("training.device is 'cuda' but torch sees no GPU on this machine")


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


class QueryBatches:
    """The training queries sorted by length (stable) and cut into global batches of ``batch_size``,
    each padded to its own longest query only when it is built: the split is held once, flat, as a
    ``[rows, F]`` tensor of the training dtype (never a whole-split padded tensor).

    With ``ranks`` of a distributed run, :meth:`share` is this rank's part of a global batch (balanced by
    documents, :func:`training._distributed.balanced_shares`).
    """

    def __init__(self, split: RankingSplit, batch_size: int, dtype: torch.dtype, *, device: str = "cpu",
                 ranks: Ranks = ALONE) -> None:
        sizes = split.group_sizes
        if ranks.world_size > sizes.size:
            raise GaprankInputError(f"{ranks.world_size} processes but only {sizes.size} training queries: "
                                    "start at most as many processes as there are queries")
        self.features = torch.as_tensor(split.features, dtype=dtype).to(device)
        self.labels = torch.as_tensor(split.labels, dtype=torch.int64).to(device)
        self.sizes, self.grouped = sizes, split.grouped
        self.device, self.ranks = device, ranks
        self.plan = self.grouped.batches(batch_size)
        # every rank's queries of every batch: this rank trains on its own, the record reports them all
        self._by_rank = [[queries[positions] for positions in balanced_shares(sizes[queries], ranks.world_size)]
                         for queries in self.plan]

    def __len__(self) -> int:
        return len(self.plan)

    def __iter__(self):
        return (self.build(queries) for queries in self.plan)

    def __getitem__(self, index: int) -> _Batch:
        """Global batch ``index``, built."""
        return self.build(self.plan[index])

    def share(self, index: int) -> tuple[_Batch, int]:
        """This rank's part of global batch ``index`` and the global batch's query count."""
        return self.build(self._by_rank[index][self.ranks.rank]), len(self.plan[index])

    def rank_totals(self) -> list[dict[str, int]]:
        """Each rank's share of the training queries and documents over an epoch."""
        totals = []
        for rank in range(self.ranks.world_size):
            chosen = np.concatenate([shares[rank] for shares in self._by_rank])
            totals.append({"rank": rank, "queries": int(chosen.size), "documents": int(self.sizes[chosen].sum())})
        return totals

    def build(self, queries: np.ndarray) -> _Batch:
        """Queries ``queries`` (in that order) padded to the longest: zero features and labels beyond a
        query's end, masked out."""
        bucket = self.grouped.padded(queries)
        mask, rows = torch.as_tensor(bucket.mask).to(self.device), torch.as_tensor(bucket.rows).to(self.device)
        features = self.features[rows].masked_fill(~mask[..., None], 0.0)
        return _Batch(features, self.labels[rows].masked_fill(~mask, 0), mask)


def length_batches(split: RankingSplit, batch_size: int, dtype: torch.dtype) -> QueryBatches:
    """The split's queries in length-sorted batches of ``batch_size`` (iterate to build them)."""
    return QueryBatches(split, batch_size, dtype)


PREDICT_ROWS = 1 << 16  # rows scored at a time: an MLP's hidden layer over all of a web-scale split would
# take more memory than its features


def predict(model: torch.nn.Module, features: torch.Tensor) -> np.ndarray:
    """Flat scores of the rows of ``features`` ``[rows, F]``, in row order."""
    model.eval()
    with torch.no_grad():
        return np.concatenate([model(features[first:first + PREDICT_ROWS]).double().cpu().numpy()
                               for first in range(0, max(len(features), 1), PREDICT_ROWS)])


def _step_loss(model: torch.nn.Module, loss_fn: Callable, train: QueryBatches, index: int) -> torch.Tensor:
    """This rank's part of the mean loss over global batch ``index``'s queries, scaled so that DDP's
    average of the ranks' gradients is the gradient of that mean (alone: the batch's mean loss)."""
    batch, global_queries = train.share(index)
    queries = batch.features.shape[0]
    if queries == 0:  # fewer queries than ranks: take part in the gradient exchange with a zero
        return model(batch.features).sum() * 0.0
    scale = queries * train.ranks.world_size / global_queries
    scores = model(batch.features)
    if not bool(torch.isfinite(scores[batch.mask]).all()):
        # diverged weights: a NaN loss, which every rank then sees in the global sum and stops on
        return scores.sum() * float("nan")
    loss = loss_fn(scores, batch.labels, batch.mask)
    return loss * scale if scale != 1 else loss


def _train_one_rate(config: CVConfig, train: QueryBatches, vali: RankingSplit | None, learning_rate: float,
                    num_features: int, dtype: torch.dtype, progress: bool) -> dict[str, Any]:
    tr, ev, ranks = config.training, config.evaluation, train.ranks
    torch.manual_seed(tr.seed)
    model = config.model.build(num_features).to(dtype).to(tr.device)
    stepped: torch.nn.Module = model
    if ranks.distributed:
        stepped = torch.nn.parallel.DistributedDataParallel(model)
    optimizer = torch.optim.Adam(model.parameters(), lr=learning_rate, weight_decay=tr.weight_decay)
    loss_fn = config.loss.build()
    selection = ev.scorer([ev.selection])
    shuffle = torch.Generator().manual_seed(tr.seed)
    vali_features = torch.as_tensor(vali.features, dtype=dtype).to(tr.device) if vali is not None else None
    history, losses = [], []
    best = (-np.inf, 0, copy.deepcopy(model.state_dict()))
    bar = tqdm(range(1, tr.epochs + 1), desc=f"  lr {learning_rate:g}", unit="epoch", leave=False,
               file=sys.stderr, disable=not (ranks.leader and show_progress(progress)))
    for epoch in bar:
        stepped.train()
        total = 0.0
        for index in torch.randperm(len(train), generator=shuffle).tolist():
            optimizer.zero_grad()
            loss = _step_loss(stepped, loss_fn, train, index)
            value = global_sum(loss.detach() / ranks.world_size, ranks).item()
            if not np.isfinite(value):
                raise TrainingDiverged(f"{config.name}: loss became {value} at epoch {epoch} "
                                       f"(learning rate {learning_rate:g}); try a smaller learning rate")
            loss.backward()
            optimizer.step()
            total += value
        scored = None
        if vali is not None and vali_features is not None:  # rank 0 scores vali; every rank takes its decision
            vali_scores = predict(model, vali_features)
            if not np.isfinite(vali_scores).all():
                raise TrainingDiverged(f"{config.name}: the model's vali scores became NaN or infinite at epoch {epoch} "
                                       f"(learning rate {learning_rate:g}); try a smaller learning rate")
            scored = selection.evaluate(vali_scores, vali.labels, vali.group_sizes)[ev.selection]
        value = broadcast(scored, ranks)
        history.append(value)
        losses.append(total / len(train))
        bar.set_postfix({ev.selection: f"{value:.4f}"})
        if value > best[0]:
            best = (value, epoch, copy.deepcopy(model.state_dict()))
        elif tr.patience is not None and epoch - best[1] >= tr.patience:
            break
    model.load_state_dict(best[2])
    return {"value": best[0], "epoch": best[1], "model": model, "vali": history, "train_loss": losses}


def _fit(config: CVConfig, fold_number: int, progress: bool, ranks: Ranks = ALONE
         ) -> tuple[Any, dict[float, dict[str, Any]], float, torch.dtype, QueryBatches]:
    """Every learning rate trained on the fold's train set and scored on its vali set (test untouched):
    the fold, ``{learning_rate: run}``, the training seconds, the dtype and the training batches."""
    tr = config.training
    use_threads(tr.num_threads)
    dtype = torch.float64 if tr.dtype == "float64" else torch.float32
    # features read as the training dtype: a web-scale set is held once, at half the memory in float32
    where = {"variant": config.data.variant, "data_dir": config.data.data_dir, "dtype": tr.dtype}
    if ranks.leader:
        fold = load_fold(config.data.dataset, fold_number, **where)
        train_split, vali = fold.train, fold.vali
    else:  # the other ranks neither score vali nor test: they read the training split alone
        fold, vali = None, None
        train_split = load_split(config.data.dataset, "train", fold=fold_number, **where)
    train = QueryBatches(train_split, tr.batch_size, dtype, device=tr.device, ranks=ranks)
    start = time.perf_counter()
    runs = {}
    for lr in tr.learning_rates:
        try:
            runs[lr] = _train_one_rate(config, train, vali, lr, train_split.num_features, dtype, progress)
        except RuntimeError as exc:
            if peer_gone(exc, ranks):
                raise lost(exc, ranks, f"{config.name} Fold{fold_number} (rank {ranks.rank})") from None
            raise
    return fold, runs, time.perf_counter() - start, dtype, train


def vali_score(config: CVConfig, fold_number: int) -> float:
    """The best vali value of ``evaluation.selection`` over the learning rates and epochs of one fold (what
    tuning maximises). Only train and vali are used: the test split is never read."""
    _, runs, _, _, _ = _fit(config, fold_number, progress=False)
    return max(run["value"] for run in runs.values())


def run_fold(config: CVConfig, fold_number: int, *, progress: bool = True,
             ranks: Ranks = ALONE) -> dict[str, Any] | None:
    """Train and evaluate one fold; returns the fold record (what folds/FoldK.json holds), or None on a
    rank other than 0 of a distributed run (it trains its shares; rank 0 scores and records)."""
    tr, ev = config.training, config.evaluation
    fold, runs, seconds, dtype, train = _fit(config, fold_number, progress, ranks)
    if not ranks.leader:
        return None
    chosen = max(tr.learning_rates, key=lambda lr: runs[lr]["value"])  # ties: the first listed
    best = runs[chosen]
    test = fold.test
    test_scores = predict(best["model"], torch.as_tensor(test.features, dtype=dtype).to(tr.device))
    per_query = ev.scorer().per_query(test_scores, test.labels, test.group_sizes)
    return {
        "fold": f"Fold{fold_number}",
        "selected": {"epoch": best["epoch"], "learning_rate": chosen, f"vali {ev.selection}": round(best["value"], 6)},
        "seconds": round(seconds, 3),
        "world_size": ranks.world_size,
        "rank_shares": train.rank_totals(),
        "vali": {f"{lr:g}": {ev.selection: r["vali"], "train_loss": r["train_loss"]} for lr, r in runs.items()},
        "test": {name: float(values.mean()) for name, values in per_query.items()},
        "per_query": {name: dict(zip(test.query_ids, map(float, values), strict=True)) for name, values in per_query.items()},
    }


def run(config: CVConfig, *, folds: list[int] | None = None, force: bool = False,
        progress: bool = True) -> dict[str, Any]:
    """Every fold of ``config`` (or ``folds``); see the module doc for what is written.

    Under ``torchrun`` with several processes, rank 0 runs the five-fold loop (which folds to train,
    reuse of finished ones, every file written) and tells the others each fold to train with it; they
    return an empty result.
    """
    ev = config.evaluation
    ranks = join(config.training.device, config.training.num_threads)
    if not ranks.leader:
        while (number := broadcast(None, ranks)) is not None:
            run_fold(config, number, progress=False, ranks=ranks)
        return {"table": "", "trained_now": [], "follower": True}

    def leader_fold(number: int) -> dict[str, Any]:
        broadcast(number, ranks)
        record = run_fold(config, number, progress=progress, ranks=ranks)
        assert record is not None
        return record

    result = run_folds(config, run_fold=leader_fold, folds=folds, measures=ev.measures, conventions=ev.conventions,
                       g=ev.g, versions={"torch": torch.__version__, "gaprank": gaprank.__version__},
                       force=force, progress=progress)
    broadcast(None, ranks)  # the others stop waiting for a fold
    return result


def main(argv: list[str] | None = None) -> int:
    return fold_script_main(argv, prog="python -m training.cv", doc=__doc__, example="configs/ohsumed/soft_gap.yaml",
                            config_class=CVConfig, run=run, quick=quick, quick_help="fold 1, 2 epochs, first learning rate (CI)")


if __name__ == "__main__":
    raise SystemExit(main())
