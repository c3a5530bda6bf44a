"""Learning GAP from simulated clicks, carts and purchases: debiased learners against naive ones and the skylines.

    python -m training.compare --config configs/mq2008/clicks.yaml [--quick] [--force] [--out DIR]

(``training.compare`` hands a config of ``kind: clicks`` to this module; ``python -m training.clicks`` is the same.)

The offline protocol (Joachims et al. 2017; Ai et al. 2018), per fold and seed:

1. A logging ranker: LightGBM's native lambdarank, ``logger.rounds`` rounds on a ``logger.share`` of the training
   queries (drawn with the seed) with their true grades.
2. Sessions over the training queries (:func:`gaprank.clicks.simulate_clicks`): the logger's top ``logger.shown``
   documents, examined by the position-based model at each ``eta``, with or without trust bias, graded events
   (click, cart, purchase) from the true grades. A share ``randomised_share`` of the sessions shows the top ranks
   in a random order (result randomisation: where the estimated propensities come from). The learners see the
   log's counts per shown document, position and event, never the true grades; the 10^4- and 10^5-session logs
   are the first sessions of the 10^6-session one.
3. The learners (``methods``), each LambdaMART in LightGBM (``booster``) but the two PyTorch rows, early stopping on
   the validation split's true-grade ``selection`` measure:

   * ``logger``: the logging ranker itself;
   * ``naive GAP`` / ``naive nDCG``: gaprank's GAP / nDCG objective on the events as they come (every propensity 1);
   * ``IPW GAP`` / ``IPW nDCG``: the same with the true propensities (inverse-propensity weights per level,
     :func:`gaprank.clicks.click_training_set`);
   * ``IPW GAP (estimated)``: with the propensities estimated from the randomised sessions
     (:func:`gaprank.clicks.estimate_propensities`);
   * ``IPW GAP (EM)``: with the propensities estimated by EM from all the sessions, one curve per event level
     (:func:`gaprank.clicks.em_propensities`; the randomised sessions are what links the positions);
   * ``IPW GAP (joint)``: with the propensities estimated with the ranker as it learns, each round on its scores
     from the sessions' pairs (Unbiased LambdaMART's estimator, :class:`gaprank.clicks.JointPropensities`, its
     default regularisation; one try);
   * ``affine GAP``: clicks corrected for trust bias by the true model's slopes and offsets
     (:meth:`gaprank.clicks.ClickModel.affine`, :func:`gaprank.clicks.click_training_set`'s ``offsets``); carts
     and purchases by the true propensities (their probability is not affine in a document's own value, so they
     keep part of the trust bias);
   * ``affine GAP (estimated)``: the same with the slopes and offsets estimated from the randomised sessions
     (:func:`gaprank.clicks.estimate_affine`, with 2 or 3 relevance classes chosen on validation, two tries); carts
     and purchases by each rank's slope plus offset over rank 1's;
   * ``GAP position term``: gaprank's GAP objective learning score = f(x) + g(position) on the peers' rows below
     (its label rule chosen on validation, three tries);
   * ``LightGBM position term`` and ``XGBoost lambdarank_unbiased``: the peers' own debiasing, on one row per shown
     document (its position: where it was shown most often) labelled from its events by a rule; each peer's label
     rule and its own knob (LightGBM's position-bias regularisation, XGBoost's bias norm) are chosen on the
     validation split's true grades, six and nine tries against one for gaprank's learners;
   * ``naive GAP (MLP)`` and ``DLA GAP (MLP)``: a PyTorch ranker (``network``: one hidden layer, Adam on batches of
     sessions, each a list of its shown documents) trained on the GAP LambdaRank loss of the events as they come,
     or with dual learning (:class:`gaprank.clicks.DualLearningLoss`: the propensities per event level learned from
     the sessions with the ranker, the GAP loss weighted by their inverses); the naive network is the DLA row's
     like-for-like baseline;
   * ``skyline, shown``: the GAP objective on the true grades of the documents the log shows;
   * ``skyline, all``: on the true grades of every training document.

4. Test: the true grades of the test split, with the data set's conventions (``conventions``).

Headline: the share of the naive-to-shown-skyline NDCG@10 gap that ``headline_method`` (named in the config before
the run; default the estimated-propensity GAP learner, the one a user without the click model can run) closes at
the ``headline`` condition, pooled over folds and seeds (ratio of sums), with a 95% bootstrap interval over the
(fold, seed) cells and a paired t-test against the naive learner; the table gives every learner's share.

Each cell (condition, fold, seed) is written atomically to ``<output_dir>/cells/`` with what produced it (its part of
the config, gaprank's version, the fold's data fingerprint) and reused when all of that is unchanged; ``--force``
trains again. Writes ``table.md``, ``summary.json`` (configuration, seeds, per-cell means, the headline) and
``plots/sessions.png``. ``--quick``: fold 1, one seed, one condition, 10^4 sessions, few rounds, under
``<output_dir>-quick``.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import functools
import hashlib
import inspect
import json
import shlex
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

import gaprank
from gaprank import GaprankInputError
from gaprank.clicks import (
    ClickCounts,
    ClickModel,
    click_training_set,
    em_propensities,
    estimate_propensities,
    simulate_clicks,
)
from gaprank.data import fold_fingerprint, load_fold, write_atomic, write_json_atomic
from gaprank.metrics import evaluate_letor

from ._runner import checkout_commit, locked, machine_description, output_root
from .config import ConfigError, load_config, output_path, to_dict

METHODS = ("logger", "naive GAP", "naive nDCG", "IPW GAP", "IPW nDCG", "IPW GAP (estimated)", "IPW GAP (EM)",
           "IPW GAP (joint)", "affine GAP", "affine GAP (estimated)", "GAP position term", "LightGBM position term",
           "XGBoost lambdarank_unbiased", "naive GAP (MLP)", "DLA GAP (MLP)", "skyline, shown", "skyline, all")
# the peers' own knobs, each tried on the validation split's true grades (their best there is reported): how the
# events became labels, and LightGBM's position-bias regularisation or XGBoost's bias norm
LABEL_RULES = ("highest event", "mean event", "mean event, scaled in its query")
LIGHTGBM_REGULARISATION = (0.0, 0.5)
XGBOOST_BIAS_NORM = (0.5, 1.0, 2.0)
PEERS = ("LightGBM position term", "XGBoost lambdarank_unbiased")
NETWORK_METHODS = ("naive GAP (MLP)", "DLA GAP (MLP)")  # PyTorch rankers on the sessions (config ``network``)
AFFINE_CLASSES = (2, 3)  # the estimated affine correction's relevance classes, each tried on the validation split


@dataclass
class LoggerConfig:
    share: float = 0.05  # of the training queries, with their true grades
    rounds: int = 20
    shown: int = 10


@dataclass
class BoosterConfig:
    num_boost_round: int = 500
    early_stopping_rounds: int = 30
    learning_rate: float = 0.05
    num_leaves: int = 31
    min_data_in_leaf: int = 20
    num_threads: int = 2
    truncation_level: int = 30  # the objectives' (LightGBM's rule), with norm
    selection: str = "NDCG@10"  # early stopping on the validation split's true grades


@dataclass
class NetworkConfig:
    """The PyTorch rows' ranker and its training: a network of one hidden layer on the features, Adam on batches of
    sessions drawn with the seed, early stopping on the validation split's true-grade ``booster.selection``."""

    hidden: int = 64
    steps: int = 2000  # at most
    batch: int = 256  # sessions a step
    learning_rate: float = 0.01
    position_learning_rate: float = 0.05  # DLA's position model
    evaluate_every: int = 100  # steps between validation checks
    patience: int = 5  # checks without a better validation value before stopping


@dataclass
class Condition:
    eta: float = 1.0
    trust_bias: bool = False
    randomised_share: float = 0.05
    sessions: int = 1_000_000

    @property
    def key(self) -> str:
        return f"eta{self.eta:g}-trust{int(self.trust_bias)}-random{self.randomised_share:g}"


@dataclass
class ClicksConfig:
    name: str
    kind: str
    dataset: str
    output_dir: str
    folds: list[int] = field(default_factory=lambda: [1, 2, 3, 4, 5])
    seeds: list[int] = field(default_factory=lambda: [1, 2, 3, 4, 5])
    etas: list[float] = field(default_factory=lambda: [0.5, 1.0, 2.0])
    sessions: list[int] = field(default_factory=lambda: [10_000, 100_000, 1_000_000])
    trust_bias: list[bool] = field(default_factory=lambda: [False, True])
    randomised_share: list[float] = field(default_factory=lambda: [0.05, 1.0])
    methods: list[str] = field(default_factory=lambda: list(METHODS))
    measures: list[str] = field(default_factory=lambda: ["NDCG@10", "GAP", "MAP", "P@10"])
    g: list[float] = field(default_factory=lambda: [0.5, 0.5])  # GAP's user model on the true grades
    conventions: str = "letor4"
    headline: Condition = field(default_factory=Condition)
    # the learner the headline reports, named before the run (not the best on the test cells): the debiased GAP
    # learner a user without the click model can run
    headline_method: str = "IPW GAP (estimated)"
    logger: LoggerConfig = field(default_factory=LoggerConfig)
    booster: BoosterConfig = field(default_factory=BoosterConfig)
    network: NetworkConfig = field(default_factory=NetworkConfig)  # the MLP rows' (part of their code's hash)

    def __post_init__(self) -> None:
        if self.kind != "clicks":
            raise ConfigError(f"kind must be 'clicks'; got {self.kind!r}")
        unknown = [m for m in self.methods if m not in METHODS]
        if unknown:
            raise ConfigError(f"methods: {unknown[0]!r} is not one of {', '.join(METHODS)}")
        if self.headline_method not in METHODS:
            raise ConfigError(f"headline_method: {self.headline_method!r} is not one of {', '.join(METHODS)}")
        if not 0 < self.logger.share <= 1:
            raise ConfigError(f"logger.share must be in (0, 1]; got {self.logger.share}")
        if any(not 0 <= s <= 1 for s in self.randomised_share):
            raise ConfigError(f"randomised_share must hold shares in [0, 1]; got {self.randomised_share}")
        if any(s < 1 for s in self.sessions):
            raise ConfigError(f"sessions must be positive; got {self.sessions}")

    def conditions(self) -> list[Condition]:
        """Every (eta, trust bias, randomised share) at the largest session count (the smaller are its prefixes),
        the headline's first, then the others with its trust bias and randomised share."""
        every = [Condition(eta, trust, share, max(self.sessions)) for trust in self.trust_bias
                 for share in self.randomised_share for eta in self.etas]
        first = [c for c in every if (c.eta, c.trust_bias, c.randomised_share) == (
            self.headline.eta, self.headline.trust_bias, self.headline.randomised_share)]
        return first + [c for c in every if c not in first]


def trust_model(eta: float, trust_bias: bool, shown: int) -> ClickModel:
    """The position-based model at ``eta``; with trust bias, Agarwal et al.'s (2019) noise clicks of 0.65 / rank
    and a ceiling that falls with the rank."""
    if not trust_bias:
        return ClickModel(eta=eta)
    ranks = np.arange(1, shown + 1)
    return ClickModel(eta=eta, epsilon_plus=list(1.0 - (np.minimum(ranks, 20) - 1) / 100.0),
                      epsilon_minus=list(0.65 / ranks))


def _fit(cell: Cell, train: tuple[np.ndarray, np.ndarray, np.ndarray], objective: Any, *,
         position: np.ndarray | None = None, params: dict[str, Any] | None = None) -> Any:
    """LightGBM on ``train`` (features, labels, query sizes) with ``objective`` (and ``params``), early stopping on
    the validation split's true-grade ``selection`` measure; ``position``: each row's, for a position term."""
    import lightgbm as lgb

    from gaprank.lightgbm import ranking_feval

    booster = cell.booster
    features, labels, sizes = train
    every = {"objective": objective, "learning_rate": booster.learning_rate, "num_leaves": booster.num_leaves,
             "min_data_in_leaf": booster.min_data_in_leaf, "num_threads": booster.num_threads, "seed": cell.seed,
             "verbosity": -1, "metric": "None", "deterministic": True, "force_row_wise": True, **(params or {})}
    data = lgb.Dataset(features, labels.astype(np.float64), group=sizes, position=position, free_raw_data=False)
    X, y, vali_sizes = cell.fold.vali.to_flat()
    valid = lgb.Dataset(X, y.astype(np.float64), group=vali_sizes, reference=data)
    return lgb.train(every, data, num_boost_round=booster.num_boost_round, valid_sets=[valid],
                     feval=ranking_feval([booster.selection], g=cell.config.g, conventions=cell.config.conventions),
                     callbacks=[lgb.early_stopping(booster.early_stopping_rounds, verbose=False)])


def _validation_score(model: Any) -> float:
    return float(next(iter(model.best_score["valid_0"].values())))


def _logger(fold: Any, config: ClicksConfig, seed: int) -> Any:
    """The logging ranker: native lambdarank on a share of the training queries, true grades."""
    import lightgbm as lgb

    train = fold.train
    rng = np.random.default_rng(seed)
    queries = np.sort(rng.choice(train.num_queries, max(1, round(config.logger.share * train.num_queries)),
                                 replace=False))
    keep = np.isin(train.query_index, queries)
    sizes = train.group_sizes[queries]
    params = {"objective": "lambdarank", "num_threads": config.booster.num_threads, "seed": seed, "verbosity": -1,
              "min_data_in_leaf": 5, "deterministic": True, "force_row_wise": True}
    data = lgb.Dataset(train.features[keep], train.labels[keep].astype(np.float64), group=sizes)
    return lgb.train(params, data, num_boost_round=config.logger.rounds)


def _evaluate(model: Any, test: Any, config: ClicksConfig) -> dict[str, list[float]]:
    scores = model.predict(test.features, num_threads=config.booster.num_threads)
    values = evaluate_letor(scores, test.labels, test.group_sizes, g=config.g, conventions=config.conventions)
    return {m: [float(v) for v in values[m]] for m in config.measures}


class Cell:
    """One (condition, fold, seed): the fold, the logging ranker, the simulated log (made on first use), and what
    every method reads of them."""

    def __init__(self, config: ClicksConfig, condition: Condition, fold_number: int, seed: int) -> None:
        self.config, self.condition, self.seed = config, condition, seed
        self.booster = config.booster
        self.fold = load_fold(config.dataset, fold_number)
        self.train, self.test = self.fold.train, self.fold.test
        self.shown = config.logger.shown
        self.model = trust_model(condition.eta, condition.trust_bias, self.shown)
        self.settings = dict(truncation_level=self.booster.truncation_level, norm=True)
        self._logs: tuple[Any, Any] | None = None
        self._logger: Any = None
        self._counts: dict[int, ClickCounts] = {}

    @property
    def logger(self) -> Any:
        if self._logger is None:
            self._logger = _logger(self.fold, self.config, self.seed)
        return self._logger

    def logs(self) -> tuple[Any, Any]:
        """The logger's own sessions and the randomised ones, each as long as the largest log needs; a smaller log
        is the first sessions of both."""
        if self._logs is None:
            scores = self.logger.predict(self.train.features, num_threads=self.booster.num_threads)
            total = max(self.config.sessions)
            randomised = round(self.condition.randomised_share * total)
            fixed = simulate_clicks(self.train, scores, total - randomised, self.model, shown=self.shown,
                                    seed=self.seed) if total > randomised else None
            shuffled = simulate_clicks(self.train, scores, randomised, self.model, shown=self.shown,
                                       randomise=self.shown, seed=self.seed + 10_000) if randomised else None
            self._logs = (fixed, shuffled)
        return self._logs

    def randomised_sessions(self, count: int) -> int:
        return round(self.condition.randomised_share * count)

    def counts(self, count: int) -> ClickCounts:
        """The first ``count`` sessions' events per row, position and level."""
        if count not in self._counts:
            fixed, shuffled = self.logs()
            n_random = self.randomised_sessions(count)
            table = np.zeros((len(self.train.labels), self.shown, 4), dtype=np.int64)
            if fixed is not None and count > n_random:
                fixed.sessions_between(0, count - n_random).add_to(table)
            if shuffled is not None and n_random:
                shuffled.sessions_between(0, n_random).add_to(table)
            self._counts[count] = ClickCounts(table, count)
        return self._counts[count]

    def propensities(self, kind: str, count: int) -> tuple[np.ndarray, np.ndarray | None]:
        """The ``kind`` learner's propensities (``[P]`` or ``[P, levels]``) and offsets (None: no affine
        correction)."""
        if kind == "naive":
            return np.ones(self.shown), None
        if kind == "IPW":
            return self.model.examined(self.shown), None
        if kind == "EM":
            return em_propensities(self.counts(count)), None
        if kind == "affine":  # clicks corrected for trust bias; carts and purchases by their propensities
            slope, offset = self.model.affine(self.shown)
            theta = self.model.examined(self.shown)
            return (np.stack([slope, theta, theta], axis=1),
                    np.stack([offset, np.zeros(self.shown), np.zeros(self.shown)], axis=1))
        shuffled = self.logs()[1]
        n_random = self.randomised_sessions(count)
        if shuffled is None or not n_random:
            raise GaprankInputError("IPW GAP (estimated) needs randomised sessions: randomised_share > 0")
        return estimate_propensities(shuffled.sessions_between(0, n_random), self.shown), None

    def fitted(self, objective: Any, data: tuple[np.ndarray, np.ndarray, np.ndarray]) -> dict[str, list[float]]:
        return _evaluate(_fit(self, data, objective), self.test, self.config)


def _logger_values(cell: Cell, count: int) -> dict[str, Any]:
    return _evaluate(cell.logger, cell.test, cell.config)


def _skyline_all(cell: Cell, count: int) -> dict[str, Any]:
    from gaprank.lightgbm import lambdarank_objective

    return cell.fitted(lambdarank_objective("gap", **cell.settings), cell.train.to_flat())


def _skyline_shown(cell: Cell, count: int) -> dict[str, Any]:
    from gaprank.lightgbm import lambdarank_objective

    data = click_training_set(cell.train, cell.counts(count), np.ones(cell.shown))
    return cell.fitted(lambdarank_objective("gap", **cell.settings),
                       (data.split.features, cell.train.labels[data.rows], data.split.group_sizes))


def _click_learner(kind: str, measure: str) -> Any:
    def learner(cell: Cell, count: int) -> dict[str, Any]:
        """LambdaMART on the log's events, each document weighed per level by its events' estimates under the
        ``kind`` propensities (naive: all 1; IPW: the true ones; estimated: from the randomised sessions; EM: by
        EM from all of them; affine: the true model's trust-bias correction of clicks)."""
        from gaprank.boosting import LambdaMARTSettings
        from gaprank.lightgbm import LambdaRankObjective

        propensities, offsets = cell.propensities(kind, count)
        data = click_training_set(cell.train, cell.counts(count), propensities, offsets=offsets)
        objective = LambdaRankObjective(LambdaMARTSettings(measure, row_weights="measure", **cell.settings),
                                        level_weights=data.weights)
        values = cell.fitted(objective, data.split.to_flat())
        estimated = {"propensities": np.asarray(propensities).tolist()} if kind in ("estimated", "EM") else {}
        return values | estimated

    learner.code = f"{kind} {measure}"  # type: ignore[attr-defined]
    return learner


def _affine_estimated_learner(cell: Cell, count: int) -> dict[str, Any]:
    """LambdaMART-GAP on the log's events with the affine correction of clicks by slopes and offsets estimated from
    the randomised sessions (:func:`gaprank.clicks.estimate_affine`, with ``AFFINE_CLASSES`` relevance classes, the
    best on the validation split where several); carts and purchases weighed by the slope plus offset of each rank
    over rank 1's (the rate of the most relevant class: examination times a trusted reaction)."""
    from gaprank.boosting import LambdaMARTSettings
    from gaprank.clicks import estimate_affine
    from gaprank.lightgbm import LambdaRankObjective

    shuffled = cell.logs()[1]
    n_random = cell.randomised_sessions(count)
    if shuffled is None or not n_random:
        raise GaprankInputError("affine GAP (estimated) needs randomised sessions: randomised_share > 0")
    best: tuple[float, Any, dict[str, Any]] | None = None
    for classes in AFFINE_CLASSES:
        slopes, offsets = estimate_affine(shuffled.sessions_between(0, n_random), cell.shown, classes=classes)
        trusted = (slopes + offsets) / (slopes[0] + offsets[0])
        data = click_training_set(cell.train, cell.counts(count), np.stack([slopes, trusted, trusted], axis=1),
                                  offsets=np.stack([offsets, np.zeros(cell.shown), np.zeros(cell.shown)], axis=1))
        objective = LambdaRankObjective(LambdaMARTSettings("gap", row_weights="measure", **cell.settings),
                                        level_weights=data.weights)
        model = _fit(cell, data.split.to_flat(), objective)
        score = _validation_score(model)
        if best is None or score > best[0]:
            best = (score, model, {"classes": classes, "slopes": slopes.tolist(), "offsets": offsets.tolist()})
    assert best is not None
    return _evaluate(best[1], cell.test, cell.config) | {"chosen": best[2]}


def _joint_learner(cell: Cell, count: int) -> dict[str, Any]:
    """LambdaMART-GAP on the log's events weighed by propensities estimated with it, each round on its scores from
    the sessions' pairs (:class:`gaprank.clicks.JointPropensities`); reports the last round's estimate."""
    from gaprank.boosting import LambdaMARTSettings
    from gaprank.clicks import JointPropensities
    from gaprank.lightgbm import LambdaRankObjective

    fixed, shuffled = cell.logs()
    n_random = cell.randomised_sessions(count)
    parts = ((fixed, count - n_random), (shuffled, n_random))
    joint = JointPropensities(cell.train, [log.sessions_between(0, sessions) for log, sessions in parts
                                           if log is not None and sessions > 0])
    objective = LambdaRankObjective(LambdaMARTSettings("gap", row_weights="measure", **cell.settings))
    values = cell.fitted(joint.objective(objective), joint.data.split.to_flat())
    return values | {"propensities": joint.propensities.tolist()}


def _network_learner(kind: str) -> Any:
    def learner(cell: Cell, count: int) -> dict[str, Any]:
        """A PyTorch ranker (``network``) on the log's sessions, each a list of its shown documents in position
        order: ``naive``, the GAP LambdaRank loss of its events as they come; ``DLA``, dual learning's losses
        (:class:`gaprank.clicks.DualLearningLoss`: the propensities learned with the ranker from the sessions, the
        GAP loss weighted by their inverses). Reports the propensities of DLA's best validation step."""
        import torch

        from gaprank.clicks import DualLearningLoss, session_lists
        from gaprank.losses import LambdaRankLoss

        settings, levels = cell.config.network, 3
        fixed, shuffled = cell.logs()
        n_random = cell.randomised_sessions(count)
        parts = [log.sessions_between(0, n) for log, n in ((fixed, count - n_random), (shuffled, n_random))
                 if log is not None and n > 0]
        lists = [session_lists(part, width=cell.shown) for part in parts]
        rows, events, positions, mask = (torch.from_numpy(np.concatenate([one[i] for one in lists]))
                                         for i in range(4))
        features = torch.from_numpy(cell.train.features.astype(np.float32))
        vali = torch.from_numpy(cell.fold.vali.features.astype(np.float32))
        torch.manual_seed(cell.seed)  # the network's start
        draws = torch.Generator().manual_seed(cell.seed)  # the batches
        network = torch.nn.Sequential(torch.nn.Linear(features.shape[1], settings.hidden), torch.nn.ReLU(),
                                      torch.nn.Linear(settings.hidden, 1 + levels))
        groups = [{"params": network.parameters(), "lr": settings.learning_rate}]
        if kind == "DLA":
            loss: Any = DualLearningLoss("gap", positions=cell.shown, levels=levels,
                                         truncation_level=cell.booster.truncation_level)
            groups.append({"params": [loss.position_logits], "lr": settings.position_learning_rate})
        else:
            loss = LambdaRankLoss("gap", max_grade=levels, truncation_level=cell.booster.truncation_level)
        optimiser = torch.optim.Adam(groups)
        best: tuple[float, int, dict[str, Any], Any] | None = None
        for step in range(1, settings.steps + 1):
            batch = torch.randint(0, rows.shape[0], (settings.batch,), generator=draws)
            outputs = network(features[rows[batch].clamp(min=0)])  # padding (row -1) is masked
            optimiser.zero_grad()
            if kind == "DLA":
                value = loss(outputs[..., 0], events[batch], positions[batch], mask[batch],
                             relevance=outputs[..., 1:])
            else:
                value = loss(outputs[..., 0], events[batch], mask=mask[batch])
            value.backward()
            optimiser.step()
            if step % settings.evaluate_every and step != settings.steps:
                continue
            with torch.no_grad():
                scores = network(vali)[:, 0].double().numpy()
            fold = cell.fold.vali
            score = float(np.mean(evaluate_letor(scores, fold.labels, fold.group_sizes, g=cell.config.g,
                                                 conventions=cell.config.conventions)[cell.booster.selection]))
            if best is None or score > best[0]:
                state = {k: v.clone() for k, v in network.state_dict().items()}
                best = (score, step, state, loss.propensities().tolist() if kind == "DLA" else None)
            elif step - best[1] >= settings.patience * settings.evaluate_every:
                break
        assert best is not None
        network.load_state_dict(best[2])
        with torch.no_grad():
            test_scores = network(torch.from_numpy(cell.test.features.astype(np.float32)))[:, 0].double().numpy()
        values = evaluate_letor(test_scores, cell.test.labels, cell.test.group_sizes, g=cell.config.g,
                                conventions=cell.config.conventions)
        reported = {m: [float(v) for v in values[m]] for m in cell.config.measures} | {"steps": best[1]}
        return reported | ({"propensities": best[3]} if kind == "DLA" else {})

    learner.code = f"network {kind}"  # type: ignore[attr-defined]
    return learner


def _peer_rows(cell: Cell, count: int, rule: str) -> tuple[Any, np.ndarray, np.ndarray]:
    """The shown documents as the peers take them: one row each, labelled from its events by ``rule`` ("highest
    event": the highest level it ever reached; "mean event": its mean event level over the sessions that showed
    it, rounded; "mean event, scaled in its query": that mean over the highest in the query, times the top level,
    rounded, which a long log does not saturate), at the position it was shown at most often (1-based)."""
    data = click_training_set(cell.train, cell.counts(count), np.ones(cell.shown))
    mean = data.weights.sum(1)
    if rule == "highest event":
        labels = data.split.labels
    elif rule == "mean event":
        labels = np.floor(mean + 0.5).astype(np.int64)
    else:
        sizes = data.split.group_sizes
        highest = np.repeat(np.maximum.reduceat(mean, np.cumsum(sizes) - sizes), sizes)
        scaled = np.divide(mean, highest, out=np.zeros_like(mean), where=highest > 0) * data.weights.shape[1]
        labels = np.floor(scaled + 0.5).astype(np.int64)
    positions = cell.counts(count).shown[data.rows].argmax(1) + 1
    return data.split, labels, positions


def _lightgbm_position_term(cell: Cell, count: int) -> dict[str, Any]:
    """LightGBM's own debiasing: native lambdarank (nDCG, its defaults) with each row's position and a learned
    position term; the best label rule and regularisation on the validation split."""
    best: tuple[float, Any, dict[str, Any]] | None = None
    for rule in LABEL_RULES:
        split, labels, positions = _peer_rows(cell, count, rule)
        for regularisation in LIGHTGBM_REGULARISATION:
            model = _fit(cell, (split.features, labels, split.group_sizes), "lambdarank", position=positions,
                         params={"lambdarank_position_bias_regularization": regularisation})
            score = _validation_score(model)
            if best is None or score > best[0]:
                best = (score, model, {"label_rule": rule, "position_bias_regularization": regularisation})
    assert best is not None
    return _evaluate(best[1], cell.test, cell.config) | {"chosen": best[2]}


def _gap_position_term(cell: Cell, count: int) -> dict[str, Any]:
    """gaprank's GAP objective with its learned position term, on the peers' rows (one per shown document at the
    position it was shown at most often, labelled by a rule): the best label rule on the validation split."""
    from gaprank.lightgbm import lambdarank_objective

    best: tuple[float, Any, dict[str, Any]] | None = None
    for rule in LABEL_RULES:
        split, labels, positions = _peer_rows(cell, count, rule)
        objective = lambdarank_objective("gap", position_term=True, position_learning_rate=cell.booster.learning_rate,
                                         **cell.settings)
        model = _fit(cell, (split.features, labels, split.group_sizes), objective, position=positions - 1)
        score = _validation_score(model)
        if best is None or score > best[0]:
            best = (score, model, {"label_rule": rule})
    assert best is not None
    return _evaluate(best[1], cell.test, cell.config) | {"chosen": best[2]}


def _xgboost_unbiased(cell: Cell, count: int) -> dict[str, Any]:
    """XGBoost's own debiasing: rank:ndcg with lambdarank_unbiased (its position biases estimated jointly; the rows
    of a query in the order they were shown); the best label rule and bias norm on the validation split."""
    import xgboost as xgb

    from gaprank.xgboost import metric

    booster = cell.booster
    X, y, vali_qid = cell.fold.vali.to_flat(qid=True)
    valid = xgb.DMatrix(X, label=y, qid=vali_qid)
    best: tuple[float, Any, dict[str, Any]] | None = None
    for rule in LABEL_RULES:
        split, labels, positions = _peer_rows(cell, count, rule)
        order = np.lexsort((positions, split.query_index))  # by query, then by position shown
        train = xgb.DMatrix(split.features[order], label=labels[order], qid=split.query_index[order])
        for norm in XGBOOST_BIAS_NORM:
            params = {"objective": "rank:ndcg", "lambdarank_unbiased": True, "lambdarank_bias_norm": norm,
                      "eta": booster.learning_rate, "max_depth": 6, "nthread": booster.num_threads,
                      "seed": cell.seed, "tree_method": "hist", "disable_default_eval_metric": True}
            history: dict[str, Any] = {}
            model = xgb.train(params, train, num_boost_round=booster.num_boost_round, evals=[(valid, "vali")],
                              custom_metric=metric([booster.selection], g=cell.config.g,
                                                   conventions=cell.config.conventions),
                              maximize=True, early_stopping_rounds=booster.early_stopping_rounds,
                              evals_result=history, verbose_eval=False)
            score = float(model.best_score)
            if best is None or score > best[0]:
                best = (score, model, {"label_rule": rule, "lambdarank_bias_norm": norm})
    assert best is not None
    model = best[1]
    test = cell.test
    scores = model.predict(xgb.DMatrix(test.features), iteration_range=(0, model.best_iteration + 1))
    values = evaluate_letor(scores, test.labels, test.group_sizes, g=cell.config.g, conventions=cell.config.conventions)
    return {m: [float(v) for v in values[m]] for m in cell.config.measures} | {"chosen": best[2]}


# name -> (runner, depends on the session count)
RUNNERS: dict[str, tuple[Any, bool]] = {
    "logger": (_logger_values, False),
    "naive GAP": (_click_learner("naive", "gap"), True),
    "naive nDCG": (_click_learner("naive", "ndcg"), True),
    "IPW GAP": (_click_learner("IPW", "gap"), True),
    "IPW nDCG": (_click_learner("IPW", "ndcg"), True),
    "IPW GAP (estimated)": (_click_learner("estimated", "gap"), True),
    "IPW GAP (EM)": (_click_learner("EM", "gap"), True),
    "IPW GAP (joint)": (_joint_learner, True),
    "affine GAP": (_click_learner("affine", "gap"), True),
    "affine GAP (estimated)": (_affine_estimated_learner, True),
    "GAP position term": (_gap_position_term, True),
    "LightGBM position term": (_lightgbm_position_term, True),
    "XGBoost lambdarank_unbiased": (_xgboost_unbiased, True),
    "naive GAP (MLP)": (_network_learner("naive"), True),
    "DLA GAP (MLP)": (_network_learner("DLA"), True),
    "skyline, shown": (_skyline_shown, True),
    "skyline, all": (_skyline_all, False),
}


def method_code(method: str, network: NetworkConfig | None = None) -> str:
    """A hash of the code that makes a method's result (its runner; the cell's, shared by every method; for the
    PyTorch rows, ``network``: their settings), so that a changed method is trained again and an unchanged one
    reused."""
    runner = RUNNERS[method][0]
    shared = (Cell, _fit, _validation_score, _logger, _evaluate, trust_model)
    own = (_click_learner,) if hasattr(runner, "code") else (runner,)
    if method in NETWORK_METHODS:
        own = (_network_learner,)
    peer_rows = runner in (_gap_position_term, _lightgbm_position_term, _xgboost_unbiased)
    if peer_rows:
        own = (*own, _peer_rows)
    source = "".join(inspect.getsource(f) for f in (*shared, *own)) + getattr(runner, "code", "")
    source += gaprank_source(METHOD_MODULES.get(method, ())) if method in METHOD_MODULES else ""
    source += repr((LABEL_RULES, LIGHTGBM_REGULARISATION, XGBOOST_BIAS_NORM)) if peer_rows else ""
    source += repr(network or NetworkConfig()) if method in NETWORK_METHODS else ""
    source += repr(AFFINE_CLASSES) if runner is _affine_estimated_learner else ""
    return hashlib.sha256(source.encode()).hexdigest()[:16]


def run_cell(config: ClicksConfig, condition: Condition, fold_number: int, seed: int,
             held: dict[str, Any] | None = None) -> dict[str, Any]:
    """One (condition, fold, seed): every method at every session count, its test measures (means over the test
    queries; the intervals are over cells). A method
    ``held`` (a record of this cell) with unchanged code is kept."""
    cell = Cell(config, condition, fold_number, seed)
    commit = checkout_commit()  # each method's record names the checkout that trained it
    start = time.perf_counter()
    methods: dict[str, Any] = {}
    for method in config.methods:
        code = method_code(method, config.network)
        kept = (held or {}).get("methods", {}).get(method)
        if kept is not None and kept["code"] == code and all(str(c) in kept["values"] for c in config.sessions):
            methods[method] = kept
            continue
        runner, per_count = RUNNERS[method]
        values: dict[str, Any] = {}
        once = None if per_count else _cell_means(runner(cell, max(config.sessions)), config)
        for count in sorted(config.sessions):
            try:
                values[str(count)] = _cell_means(runner(cell, count), config) if per_count else once
            except GaprankInputError as refused:  # e.g. too few shuffled sessions to estimate a propensity
                values[str(count)] = {"refused": str(refused)}
        methods[method] = {"code": code, "commit": commit, "values": values}
    return {"methods": methods, "seconds": time.perf_counter() - start,
            "true_propensities": [float(t) for t in cell.model.examined(cell.shown)]}


def _cell_means(values: dict[str, Any], config: ClicksConfig) -> dict[str, Any]:
    """A method's test measures averaged over the test queries (what a cell keeps), and what else it reported."""
    return {key: float(np.mean(value)) if key in config.measures else value for key, value in values.items()}


# The parts of gaprank a cell's numbers come from (the simulator, the estimates, the measures, the engine, the
# objectives, the data): a change there trains the cells again; one elsewhere (file formats, the CLI, other
# adapters) does not.
NUMBERS_FROM = ("_engine", "boosting", "metrics", "lightgbm", "data", "clicks/_simulator.py",
                "clicks/_training.py", "clicks/_propensities.py", "clicks/_em.py", "clicks/_log.py",
                "_inputs.py", "_grouped.py",
                "_padding.py", "_elementwise.py", "_compiled_setup.py")


# The parts of gaprank that one method's numbers come from besides NUMBERS_FROM: a change there trains that method
# again, and leaves the others.
METHOD_MODULES = {"IPW GAP (joint)": ("clicks/_joint.py", "clicks/_dla.py"),
                  "XGBoost lambdarank_unbiased": ("xgboost",),
                  "affine GAP (estimated)": ("clicks/_affine.py",),
                  "naive GAP (MLP)": ("clicks/_dla.py", "losses", "_autograd.py"),
                  "DLA GAP (MLP)": ("clicks/_dla.py", "losses", "_autograd.py")}


@functools.cache
def gaprank_source(parts: tuple[str, ...] = NUMBERS_FROM) -> str:
    """A hash of the gaprank code a cell's numbers come from (``parts``, default :data:`NUMBERS_FROM`; syntax trees
    without docstrings, so that an edit of the words alone keeps the cells): a cell trained by another engine is
    trained again."""
    root = Path(gaprank.__file__).parent
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        name = path.relative_to(root).as_posix()
        if not any(name == part or name.startswith(part.rstrip("/") + "/") for part in parts):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            body = getattr(node, "body", None)
            if (isinstance(body, list) and body and isinstance(body[0], ast.Expr)
                    and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str)):
                node.body = body[1:] or [ast.Pass()]  # type: ignore[attr-defined]
        digest.update(name.encode() + b"\0" + ast.dump(tree).encode())
    return digest.hexdigest()[:16]


def cell_key(config: ClicksConfig, condition: Condition, fold: int, seed: int) -> dict[str, Any]:
    """What every method of a cell depends on: its part of the config (the methods aside: each has its own code's
    hash), gaprank's version and source, the fold's data."""
    shared = {k: v for k, v in to_dict(config).items() if k not in (
        "name", "output_dir", "folds", "seeds", "etas", "trust_bias", "randomised_share", "headline", "headline_method",
        "methods", "measures", "network")}
    return {"config": shared, "measures": sorted(config.measures), "condition": dataclasses.asdict(condition),
            "fold": fold, "seed": seed, "gaprank": gaprank.__version__, "gaprank_source": gaprank_source(),
            "data": fold_fingerprint(config.dataset, fold)}


def _cell_path(root: Path, condition: Condition, fold: int, seed: int) -> Path:
    return root / "cells" / condition.key / f"fold{fold}-seed{seed}.json"


def means(values: dict[str, list[float]]) -> dict[str, float]:
    return {m: float(np.mean(v)) for m, v in values.items()}


def cell_values(cell: dict[str, Any], method: str, sessions: str) -> dict[str, Any] | None:
    """A cell's test measures of one method at one session count (None: not run, or refused: its inputs could not
    be made, as propensities from too few shuffled sessions)."""
    entry = cell["methods"].get(method)
    values = None if entry is None else entry["values"].get(sessions)
    return None if values is None or "refused" in values else values


def gap_closed(cells: list[dict[str, Any]], method: str, sessions: str, measure: str, *, resamples: int = 10_000,
               seed: int = 1) -> dict[str, Any] | None:
    """The share of the naive-to-shown-skyline gap ``method`` closes, pooled over cells (ratio of sums), with a 95%
    bootstrap interval over the cells and a paired t-test against the naive learner over the cells."""

    rows = []
    for cell in cells:  # the cells where all three ran
        values = {k: cell_values(cell, k, sessions) for k in (method, "naive GAP", "skyline, shown")}
        if any(v is None for v in values.values()):
            continue
        rows.append([float(np.mean(values[k][measure])) for k in (method, "naive GAP", "skyline, shown")])  # type: ignore[index]
    if not rows:
        return None
    table = np.array(rows)
    gained, possible = table[:, 0] - table[:, 1], table[:, 2] - table[:, 1]
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(rows), (resamples, len(rows)))
    with np.errstate(divide="ignore", invalid="ignore"):
        boot = gained[picks].sum(1) / possible[picks].sum(1)
    boot = boot[np.isfinite(boot)]
    p_value = _paired_tests(table[:, 0], table[:, 1])["t_test_p"] if len(rows) > 1 else None
    if not possible.sum():
        return None
    return {"closed": float(gained.sum() / possible.sum()),
            "interval": [float(np.quantile(boot, 0.025)), float(np.quantile(boot, 0.975))] if boot.size else None,
            "gap": float(possible.mean()), "cells": len(rows), "p_vs_naive": p_value}


def render(summary: dict[str, Any]) -> str:
    config = summary["config"]
    measures = config["measures"]
    lines = [f"# {config['name']}", "",
             "Test measures on the true grades, means over folds x seeds (each cell a fold and a seed). Learners "
             "see only the click log; see `training/clicks.py` for the protocol.", ""]
    headline = summary.get("headline")
    if headline:
        lines += ["## Headline", "", headline["text"], ""]
    for condition in summary["conditions"]:
        for sessions, methods in condition["by_sessions"].items():
            lines += [f"## eta {condition['eta']:g}, trust bias {'yes' if condition['trust_bias'] else 'no'}, "
                      f"randomised share {condition['randomised_share']:g}, {int(sessions):,} sessions "
                      f"({condition['cells']} cells)", "",
                      "| method | " + " | ".join(measures) + " | NDCG@10 gap closed (95% interval) |",
                      "|---|" + "---:|" * (len(measures) + 1)]
            for method, row in methods.items():
                closed = row.get("closed")
                closed_text = "" if not closed else (
                    f"{closed['closed']:.0%}" + (f" ({closed['interval'][0]:.0%} to {closed['interval'][1]:.0%})"
                                                 if closed["interval"] else ""))
                missing = condition["cells"] - row.get("cells", condition["cells"])
                note = f" ({missing} of {condition['cells']} cells refused)" if missing else ""
                lines.append(f"| {method}{note} | " + " | ".join(f"{row['means'][m]:.4f}" for m in measures)
                             + f" | {closed_text} |")
            lines.append("")
    if summary.get("pending"):
        lines += [f"Not yet run (the command resumes with them): {', '.join(summary['pending'])}.", ""]
    run = summary["run"]
    lines.append(f"Produced by `{run['command']}` at commit {run['commit']} ({run['machine']}): {run['wall_seconds']:.0f}"
                 f" s wall, {run['cells_reused']} of {run['cells']} cells reused. Data {config['dataset']}, folds "
                 f"{config['folds']}, seeds {config['seeds']}, conventions {config['conventions']}, g = {config['g']}.")
    return "\n".join(lines) + "\n"


def plot(summary: dict[str, Any], out: Path) -> str | None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    condition = next((c for c in summary["conditions"] if c["is_headline"]), None)
    if condition is None or len(condition["by_sessions"]) < 2:
        return None
    fig, axes = plt.subplots(1, 2, figsize=(13, 4.5))
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for ax, measure in zip(axes, ("NDCG@10", "GAP"), strict=True):
        sessions = sorted(condition["by_sessions"], key=int)
        for number, method in enumerate(summary["config"]["methods"]):
            # a method refused at some counts (too few shuffled sessions) is drawn where it ran
            shown = [s for s in sessions if method in condition["by_sessions"][s]]
            if not shown:
                continue
            ys = [condition["by_sessions"][s][method]["means"].get(measure) for s in shown]
            ax.plot([int(s) for s in shown], ys, marker="o", label=method, color=colours[number % len(colours)],
                    linestyle=("-", "--", ":")[number // len(colours) % 3])  # past the colours, other strokes
        ax.set_xscale("log")
        ax.set_xlabel("sessions")
        ax.set_ylabel(f"test {measure} (true grades)")
    axes[1].legend(fontsize=7, loc="center left", bbox_to_anchor=(1.02, 0.5))
    trust = "with" if condition["trust_bias"] else "no"
    fig.suptitle(f"{summary['config']['name']}: eta {condition['eta']:g}, {trust} trust bias")
    fig.tight_layout()
    path = out / "plots" / "sessions.png"
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return str(path)


def quick_config(config: ClicksConfig) -> ClicksConfig:
    return dataclasses.replace(
        config, folds=config.folds[:1], seeds=config.seeds[:1], etas=[config.headline.eta], sessions=[10_000],
        trust_bias=[False], randomised_share=[max(config.headline.randomised_share, 0.05)],
        headline=dataclasses.replace(config.headline, sessions=10_000),
        booster=dataclasses.replace(config.booster, num_boost_round=20, early_stopping_rounds=5),
        network=dataclasses.replace(config.network, steps=200, evaluate_every=50))


def run(config: ClicksConfig, *, quick: bool = False, force: bool = False, out: str | Path | None = None,
        command: str = "", progress: bool = True) -> dict[str, Any]:
    """Every cell (reusing finished ones), then the summary; the summary is written again after each condition, so
    that an interrupted run leaves the finished conditions summarised (``pending`` names the others)."""
    started = time.perf_counter()
    if quick:
        config = quick_config(config)
    root = output_path(out, "--out") if out is not None else output_root(config.output_dir, quick)
    root.mkdir(parents=True, exist_ok=True)
    all_conditions = config.conditions()
    conditions: list[dict[str, Any]] = []
    counts = {"cells": 0, "reused": 0}
    summary: dict[str, Any] = {}
    with locked(root):
        for index, condition in enumerate(all_conditions):
            cells = []
            for fold in config.folds:
                for seed in config.seeds:
                    cells.append(_cell(config, condition, fold, seed, root, force, progress, counts))
            conditions.append(_summarise(config, condition, cells))
            summary = _write_summary(config, conditions, [c.key for c in all_conditions[index + 1:]], root, command,
                                     started, counts)
    return summary


def _cell(config: ClicksConfig, condition: Condition, fold: int, seed: int, root: Path, force: bool, progress: bool,
          counts: dict[str, int]) -> dict[str, Any]:
    """One cell's record: reused whole, completed with the methods it lacks, or trained."""
    counts["cells"] += 1
    path = _cell_path(root, condition, fold, seed)
    key = cell_key(config, condition, fold, seed)
    held = json.loads(path.read_text()) if path.exists() and not force else None
    if held is not None and held.get("key") != key:
        held = None
    result = run_cell(config, condition, fold, seed, held)
    if held is not None and result["methods"] == {m: held["methods"].get(m) for m in config.methods}:
        counts["reused"] += 1
        return held
    methods = {**(held or {}).get("methods", {}), **result["methods"]}  # others' kept too
    record = {"key": key, "commit": checkout_commit(), **result, "methods": methods}  # commit: the last writer
    write_json_atomic(path, record)
    if progress:
        print(f"{condition.key} fold {fold} seed {seed}: {result['seconds']:.0f} s", flush=True)
    return record


def _write_summary(config: ClicksConfig, conditions: list[dict[str, Any]], pending: list[str], root: Path,
                   command: str, started: float, counts: dict[str, int]) -> dict[str, Any]:
    headline = _headline(config, conditions)
    summary = {"config": to_dict(config), "conditions": conditions, "headline": headline, "pending": pending,
               "run": {"command": command, "commit": checkout_commit(), "machine": machine_description(),
                       "wall_seconds": time.perf_counter() - started, "cells": counts["cells"],
                       "cells_reused": counts["reused"], "finished": time.strftime("%Y-%m-%dT%H:%M:%S")}}
    write_json_atomic(root / "summary.json", summary)
    table = render(summary)
    write_atomic(root / "table.md", table)
    plot(summary, root)
    return summary | {"table": table, "output_dir": str(root)}


def _summarise(config: ClicksConfig, condition: Condition, cells: list[dict[str, Any]]) -> dict[str, Any]:
    by_sessions: dict[str, dict[str, Any]] = {}
    for sessions in sorted(config.sessions):
        key = str(sessions)
        methods = {}
        for method in config.methods:
            per_cell = [{"cell": f"fold{cell['key']['fold']}-seed{cell['key']['seed']}",
                         **means({m: v for m, v in values.items() if m in config.measures})}
                        for cell, values in ((cell, cell_values(cell, method, key)) for cell in cells)
                        if values is not None]
            if not per_cell:
                continue
            row: dict[str, Any] = {"means": {m: float(np.mean([c[m] for c in per_cell])) for m in config.measures},
                                   "per_cell": per_cell, "cells": len(per_cell)}
            if method not in ("naive GAP", "skyline, shown", "skyline, all", "logger"):
                row["closed"] = gap_closed(cells, method, key, "NDCG@10")
            methods[method] = row
        by_sessions[key] = methods
    headline = config.headline
    is_headline = (condition.eta == headline.eta and condition.trust_bias == headline.trust_bias
                   and condition.randomised_share == headline.randomised_share)
    return {**dataclasses.asdict(condition), "cells": len(cells), "by_sessions": by_sessions,
            "is_headline": is_headline}


def _headline(config: ClicksConfig, conditions: list[dict[str, Any]]) -> dict[str, Any] | None:
    condition = next((c for c in conditions if c["is_headline"]), None)
    if condition is None or str(config.headline.sessions) not in condition["by_sessions"]:
        return None
    methods = condition["by_sessions"][str(config.headline.sessions)]
    best = config.headline_method
    closed = methods.get(best, {}).get("closed")
    if not closed:
        return None
    interval = closed["interval"]
    goal_met = bool(interval and closed["closed"] >= 0.8 and interval[0] > 0)
    peers = {}
    for peer in PEERS:
        if peer in methods:
            peers[peer] = {measure: _paired(cells_of(condition), best, peer, str(config.headline.sessions), measure)
                           for measure in ("GAP", "NDCG@10")}
    peer_text = "; ".join(
        f"against {peer}: GAP {tests['GAP']['difference']:+.4f} (p = {_p(tests['GAP']['p'])}), NDCG@10 "
        f"{tests['NDCG@10']['difference']:+.4f} (p = {_p(tests['NDCG@10']['p'])})" for peer, tests in peers.items()
        if tests["GAP"] and tests["NDCG@10"])
    text = (f"At eta {config.headline.eta:g}, {config.headline.sessions:,} sessions, no trust bias: {best} (named "
            f"before the run) closes {closed['closed']:.0%} of the naive-to-shown-skyline NDCG@10 gap "
            f"({closed['gap']:.4f} on average), 95% interval {interval[0]:.0%} to {interval[1]:.0%} over "
            f"{closed['cells']} cells; paired t-test against naive GAP p = {_p(closed['p_vs_naive'])}. Goal (>= 80%, "
            f"interval above 0): {'met' if goal_met else 'not met'}." + (
                f" Paired over the cells, {best} minus the peer, {peer_text}." if peer_text else ""))
    return {"method": best, **closed, "goal": ">= 0.80 of the gap, interval excluding the naive model",
            "goal_met": goal_met, "peers": peers, "text": text}


def cells_of(condition: dict[str, Any]) -> list[dict[str, float]]:
    """A summarised condition's per-cell means, by session count and method: ``[{(sessions, method, measure): v}]``."""
    rows: dict[str, dict[tuple[str, str, str], float]] = {}
    for sessions, methods in condition["by_sessions"].items():
        for method, row in methods.items():
            for cell in row["per_cell"]:
                for measure, value in cell.items():
                    if measure != "cell":
                        rows.setdefault(cell["cell"], {})[(sessions, method, measure)] = value
    return [rows[c] for c in sorted(rows)]


def _paired(cells: list[dict[tuple[str, str, str], float]], method: str, other: str, sessions: str,
            measure: str) -> dict[str, Any] | None:
    """``method`` minus ``other`` on ``measure``, paired over the cells: the mean difference, the paired t-test's p
    and the paired randomisation test's."""
    pairs = [(c[(sessions, method, measure)], c[(sessions, other, measure)]) for c in cells
             if (sessions, method, measure) in c and (sessions, other, measure) in c]
    if len(pairs) < 2:
        return None
    a, b = np.array(pairs).T
    tests = _paired_tests(a, b)
    return {"difference": tests["mean_difference"], "p": tests["t_test_p"],
            "randomisation_p": tests["randomisation_p"], "cells": len(pairs)}


def _paired_tests(a: np.ndarray, b: np.ndarray) -> dict[str, float]:
    """The comparison's paired tests (:func:`training.compare.paired_tests`) over cells."""
    from .compare import paired_tests

    return paired_tests(a, b, resamples=10_000, seed=1)


def _p(value: float | None) -> str:
    return "n/a (one cell)" if value is None else f"{value:.2g}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m training.clicks", description=__doc__.splitlines()[0])
    parser.add_argument("--config", required=True)
    parser.add_argument("--quick", action="store_true", help="fold 1, one seed, one condition, 10^4 sessions")
    parser.add_argument("--force", action="store_true", help="train every cell again")
    parser.add_argument("--out", help="write under this directory instead of the config's output_dir")
    args = parser.parse_args(argv)
    command = "python -m training.compare " + " ".join(shlex.quote(a) for a in (argv if argv is not None else sys.argv[1:]))
    try:
        config = load_config(args.config, ClicksConfig)
        result = run(config, quick=args.quick, force=args.force, out=args.out, command=command)
    except GaprankInputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(result["table"], end="")
    print(f"written to {result['output_dir']}/")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
