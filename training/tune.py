"""Hyperparameter search on vali only, with the same number of trials for every objective of a learner.

    python -m training.tune --config configs/ohsumed/tune.yaml [--quick]

``runs`` lists the objectives, as in :mod:`training.compare` (each its own config, trainer, learner);
``learners`` gives each learner its number of trials and its search space: parameters named by their
dotted path in the run's config (``training.learning_rates``, ``loss.sigma``, ``model.hidden``,
``booster.num_leaves``, ``booster.params.feature_fraction``...), each a float or int range (``log`` for a
log scale) or a list of choices. A trial's score is the mean over the folds of the best vali value of the
run's selection measure (each fold's epoch / boosting round still chosen on its own vali set); the test
split is never read.

Studies live in one SQLite database per data set, ``<output_dir>/studies.sqlite3`` (Optuna's RDB
storage), one study per objective. Each trial's TPE sampler is seeded with ``seed`` plus the number of
trials already finished, so a study that is interrupted and resumed proposes exactly what an
uninterrupted one would, and re-running never repeats a finished trial. A trial whose training diverges
counts against the budget (pruned). ``tuning.json`` (best parameters and values per objective) and
``table.md`` are written under ``output_dir``; ``--quick`` (2 trials, the first fold, a few epochs or
rounds) writes under ``<output_dir>-quick``.
"""

from __future__ import annotations

import dataclasses
import math
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

from gaprank import GaprankInputError
from gaprank.data import write_atomic, write_json_atomic

from . import cv, lambdamart
from ._runner import locked, script_parser
from .compare import RunEntry
from .config import ConfigError, build_config, load_config, to_dict

VALI_SCORES = {"cv": cv.vali_score, "lambdamart": lambdamart.vali_score}
CONFIGS = {"cv": cv.CVConfig, "lambdamart": lambdamart.LambdaMARTConfig}
DIVERGED = (cv.TrainingDiverged,)


@dataclass
class SearchParam:
    type: Literal["float", "int", "categorical"]
    low: float | None = None
    high: float | None = None
    log: bool = False
    choices: list[Any] | None = None  # categorical: numbers, strings ("64,32" for a list of widths), booleans

    def validate(self) -> None:
        if self.type == "categorical":
            if not self.choices:
                raise GaprankInputError("a categorical parameter needs a non-empty list of choices")
            return
        if self.low is None or self.high is None:
            raise GaprankInputError(f"a {self.type} parameter needs low and high")
        if not (math.isfinite(self.low) and math.isfinite(self.high)) or self.low >= self.high:
            raise GaprankInputError(f"low must be below high; got low {self.low}, high {self.high}")
        if self.log and self.low <= 0:
            raise GaprankInputError(f"a log scale needs low > 0; got {self.low}")
        if self.type == "int" and (self.low != int(self.low) or self.high != int(self.high)):
            raise GaprankInputError(f"an int parameter needs integer bounds; got {self.low}, {self.high}")

    def suggest(self, trial: Any, name: str) -> Any:
        if self.type == "categorical":
            return trial.suggest_categorical(name, self.choices)
        if self.type == "int":
            return trial.suggest_int(name, int(self.low), int(self.high), log=self.log)  # type: ignore[arg-type]
        return trial.suggest_float(name, self.low, self.high, log=self.log)

    def example(self) -> Any:
        """A value of the space (its lower bound or first choice), to check a path against a config."""
        if self.type == "categorical":
            return self.choices[0]  # type: ignore[index]
        return int(self.low) if self.type == "int" else self.low  # type: ignore[arg-type]


@dataclass
class LearnerSpace:
    trials: int
    params: dict[str, SearchParam]

    def validate(self) -> None:
        if self.trials < 1:
            raise GaprankInputError(f"trials must be >= 1; got {self.trials}")
        if not self.params:
            raise GaprankInputError("params is empty: name at least one parameter to search")


@dataclass
class TuneConfig:
    name: str
    output_dir: str
    runs: list[RunEntry]
    learners: dict[str, LearnerSpace]
    seed: int = 1
    folds: list[int] | None = None  # default: each run's own folds

    def validate(self) -> None:
        names = [r.name for r in self.runs]
        if not names or len(set(names)) != len(names):
            raise GaprankInputError(f"runs must list objectives with unique names; got {names}")
        missing = sorted({r.learner for r in self.runs} - set(self.learners))
        if missing:
            raise GaprankInputError(f"learners has no search space for {missing}")
        if not 0 <= self.seed < 2**31:
            raise GaprankInputError(f"seed must be in 0..2^31-1; got {self.seed}")


def with_params(run_config: Any, params: dict[str, Any]) -> Any:
    """``run_config`` with the dotted-path ``params`` set, rebuilt and validated as its config file would
    be. A value for a list field (``training.learning_rates``: one rate; ``model.hidden``: "64,32") becomes
    that list."""
    data = to_dict(run_config)
    for path, value in params.items():
        *parents, leaf = path.split(".")
        node = data
        for part in parents:
            if not isinstance(node, dict) or not isinstance(node.get(part), dict):
                raise GaprankInputError(f"parameter {path!r}: {part!r} is not a section of the run's config")
            node = node[part]
        is_pass_through = parents and parents[-1] == "params"  # LightGBM parameters: any name LightGBM knows
        if leaf not in node and not is_pass_through:
            raise GaprankInputError(f"parameter {path!r}: the run's config has no {leaf!r} there "
                                    f"(keys: {', '.join(node)})")
        current = node.get(leaf)
        if isinstance(current, list) and not isinstance(value, list):
            value = [int(v) for v in value.split(",")] if isinstance(value, str) else [value]
        node[leaf] = value
    return build_config(type(run_config), data)


@dataclass
class _Study:
    entry: RunEntry
    config: Any
    space: LearnerSpace
    folds: list[int] = field(default_factory=list)


def load_studies(config: TuneConfig, *, quick: bool = False) -> list[_Study]:
    """Each objective's run config (``--quick``: fold 1, a few epochs / rounds) and its learner's space,
    every parameter path checked against that config."""
    from .compare import REPO, TRAINERS

    studies = []
    for entry in config.runs:
        _, _, make_quick = TRAINERS[entry.trainer]
        path = Path(entry.config)
        run_config = load_config(path if path.is_absolute() else REPO / path, CONFIGS[entry.trainer])
        if quick:
            run_config = make_quick(run_config)
        space = config.learners[entry.learner]
        if quick:
            space = dataclasses.replace(space, trials=min(space.trials, 2))
        try:
            with_params(run_config, {p: s.example() for p, s in space.params.items()})
        except GaprankInputError as exc:
            raise ConfigError(f"learners.{entry.learner} for run {entry.name!r}: {exc}") from None
        folds = (config.folds or run_config.data.folds)[:1] if quick else (config.folds or run_config.data.folds)
        studies.append(_Study(entry, run_config, space, list(folds)))
    return studies


def _objective(study: _Study, trial: Any) -> float:
    import optuna

    params = {path: spec.suggest(trial, path) for path, spec in study.space.params.items()}
    run_config = with_params(study.config, params)
    score = VALI_SCORES[study.entry.trainer]
    values = []
    for number in study.folds:
        try:
            values.append(score(run_config, number))
        except DIVERGED as exc:
            trial.set_user_attr("diverged", str(exc))
            raise optuna.TrialPruned(str(exc)) from None
        trial.set_user_attr(f"vali Fold{number}", values[-1])
    return float(np.mean(values))


def _write_summary(root: Path, config: TuneConfig, quick: bool, results: dict[str, Any]) -> None:
    """``tuning.json`` and ``table.md`` for the studies finished so far."""
    write_json_atomic(root / "tuning.json", {"config": to_dict(config), "quick": quick, "objectives": results})
    lines = ["| objective | learner | trials | best mean vali | parameters |", "|---|---|---:|---:|---|"]
    for name, r in results.items():
        value = "–" if r["best_value"] is None else f"{r['best_value']:.4f}"
        params = ", ".join(f"{k} {v:.4g}" if isinstance(v, float) else f"{k} {v}" for k, v in (r["params"] or {}).items())
        lines.append(f"| {name} | {r['learner']} | {r['trials']} | {value} | {params} |")
    write_atomic(root / "table.md", "\n".join(lines) + "\n")


def tune(config: TuneConfig, *, quick: bool = False, progress: bool = True) -> dict[str, Any]:
    """Run (or resume) every objective's study; returns ``{name: {"trials", "best_value", "params"}}``."""
    import optuna

    studies = load_studies(config, quick=quick)
    root = Path(config.output_dir + ("-quick" if quick else ""))
    with locked(root):
        storage = optuna.storages.RDBStorage(f"sqlite:///{root / 'studies.sqlite3'}")
        if not progress:
            optuna.logging.set_verbosity(optuna.logging.WARNING)
        results: dict[str, Any] = {}
        for item in studies:
            study = optuna.create_study(study_name=item.entry.name, storage=storage, direction="maximize",
                                        load_if_exists=True)
            finished = {optuna.trial.TrialState.COMPLETE, optuna.trial.TrialState.PRUNED, optuna.trial.TrialState.FAIL}
            done = len(study.get_trials(deepcopy=False, states=tuple(finished)))
            for count in range(done, item.space.trials):
                # one trial at a time, its sampler seeded by the number of trials already finished
                study.sampler = optuna.samplers.TPESampler(seed=config.seed + count)
                study.optimize(lambda trial, item=item: _objective(item, trial), n_trials=1,
                               show_progress_bar=False)
                if progress:
                    print(f"{item.entry.name}: trial {count + 1}/{item.space.trials} "
                          f"({study.trials[-1].state.name.lower()})", file=sys.stderr)
            complete = study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,))
            best = max(complete, key=lambda t: (t.value, -t.number)) if complete else None
            results[item.entry.name] = {
                "learner": item.entry.learner, "trials": item.space.trials,
                "best_value": None if best is None else best.value,
                "params": None if best is None else best.params,
                "folds": [f"Fold{n}" for n in item.folds],
            }
            _write_summary(root, config, quick, results)  # after each study: an interrupted run keeps what finished
    return results


def main(argv: list[str] | None = None) -> int:
    parser = script_parser("python -m training.tune", __doc__, "configs/ohsumed/tune.yaml")
    parser.add_argument("--quick", action="store_true", help="2 trials, the first fold, a few epochs / rounds (CI)")
    parser.add_argument("--quiet", action="store_true", help="no progress lines")
    args = parser.parse_args(argv)
    try:
        config = load_config(args.config, TuneConfig)
        results = tune(config, quick=args.quick, progress=not args.quiet)
    except GaprankInputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for name, r in results.items():
        print(f"{name}: best mean vali {r['best_value']} with {r['params']}")
    return 0


__all__ = ["SearchParam", "LearnerSpace", "TuneConfig", "tune", "with_params"]


if __name__ == "__main__":
    raise SystemExit(main())
