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
uninterrupted one would, and re-running never repeats a finished trial; a trial a killed run left
half-done is marked failed and interrupted and does not count. A trial whose training diverges
counts against the budget (pruned). ``tuning.json`` (best parameters and values per objective) and
``table.md`` are written under ``output_dir``; ``--quick`` (2 trials, the first fold, a few epochs or
rounds) writes under ``<output_dir>-quick``.

``parallel_studies: 2`` with ``threads_per_trial: 1`` tunes two objectives at once, each in its own
process with one CPU thread (studies x threads may not exceed the cores: oversubscribed torch threads
run 20-40x slower). Each study is still one trial at a time, so its trials are those a sequential run
with the same threads would make.
"""

from __future__ import annotations

import dataclasses
import json
import math
import multiprocessing
import shutil
import sys
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

import gaprank
from gaprank import GaprankInputError
from gaprank.data import fold_fingerprint, write_atomic, write_json_atomic

from ._runner import checkout_commit, locked, output_root, published_root, publishing, run_config_key, script_parser
from ._trainers import DIVERGED, TRAINERS, RunEntry, check_seeds
from .config import ConfigError, available_cores, load_config, output_path, to_dict, with_params


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
    parallel_studies: int = 1  # studies (objectives) tuned at once, each in its own process
    threads_per_trial: int | None = None  # CPU threads of each trial; default: the run configs' own

    def validate(self) -> None:
        if self.parallel_studies < 1 or (self.threads_per_trial is not None and self.threads_per_trial < 1):
            raise GaprankInputError("parallel_studies and threads_per_trial must be >= 1")
        if self.parallel_studies > 1 and self.threads_per_trial is None:
            raise GaprankInputError("parallel_studies > 1 needs threads_per_trial (studies x threads <= cores)")
        cores = available_cores()  # the cores this process may use (its affinity), as num_threads: auto reads them
        if self.parallel_studies * (self.threads_per_trial or 1) > cores:
            raise GaprankInputError(f"parallel_studies x threads_per_trial = {self.parallel_studies} x "
                                    f"{self.threads_per_trial} exceeds the {cores} cores this process may use: oversubscribed "
                                    "torch threads run 20-40x slower; lower one of them")
        names = [r.name for r in self.runs]
        if not names or len(set(names)) != len(names):
            raise GaprankInputError(f"runs must list objectives with unique names; got {names}")
        missing = sorted({r.learner for r in self.runs} - set(self.learners))
        if missing:
            raise GaprankInputError(f"learners has no search space for {missing}")
        check_seeds([self.seed], "seed")


QUICK_TRIALS = 2  # per objective, with --quick


def trial_budget(config: TuneConfig, *, quick: bool = False) -> dict[str, int]:
    """Trials per objective of each learner (``--quick``: at most :data:`QUICK_TRIALS`)."""
    return {learner: min(space.trials, QUICK_TRIALS) if quick else space.trials
            for learner, space in config.learners.items()}


def studies_path(config: TuneConfig, *, quick: bool = False) -> Path:
    """The SQLite database of the config's studies."""
    return output_root(config.output_dir, quick) / "studies.sqlite3"


def params_text(params: dict[str, Any]) -> str:
    """Chosen hyperparameters as one line for a markdown table."""
    return ", ".join(f"{k} {v:.4g}" if isinstance(v, float) else f"{k} {v}" for k, v in params.items())


@dataclass
class _Study:
    entry: RunEntry
    config: Any
    space: LearnerSpace
    folds: list[int] = field(default_factory=list)


def load_studies(config: TuneConfig, *, quick: bool = False) -> list[_Study]:
    """Each objective's run config (``--quick``: fold 1, a few epochs / rounds) and its learner's space,
    every parameter path checked against that config."""
    studies = []
    budget = trial_budget(config, quick=quick)
    for entry in config.runs:
        run_config = entry.load(quick=quick)
        if config.threads_per_trial is not None:
            run_config = with_params(run_config, {TRAINERS[entry.trainer].threads_path: config.threads_per_trial})
        space = dataclasses.replace(config.learners[entry.learner], trials=budget[entry.learner])
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
    score = TRAINERS[study.entry.trainer].vali_score
    values = []
    for number in study.folds:
        try:
            values.append(score(run_config, number))
        except DIVERGED as exc:
            trial.set_user_attr("diverged", str(exc))
            raise optuna.TrialPruned(str(exc)) from None
        except KeyboardInterrupt:
            # Ctrl-C (SIGINT): Optuna stores the trial as FAIL; marked, it neither spends the budget nor seeds
            # the sampler when the study resumes, like a trial a killed run left RUNNING
            trial.set_user_attr("interrupted", True)
            raise
        trial.set_user_attr(f"vali Fold{number}", values[-1])
    return float(np.mean(values))


def study_provenance(config: TuneConfig, study: _Study) -> dict[str, Any]:
    """What a study's trials depend on: the run's config (its output directory aside), the search space
    (its trial count aside: raising it continues the study), the folds and their train and vali files,
    the sampler's seed and gaprank's version. Stored with the study; a resumed study must match it."""
    run_config = run_config_key(study.config)
    data = study.config.data
    fingerprints = {}
    for number in study.folds:
        files = fold_fingerprint(data.dataset, number, variant=data.variant, data_dir=data.data_dir)
        fingerprints[f"Fold{number}"] = {k: v for k, v in files.items() if k != "test"}  # test is never used
    space = {path: to_dict(spec) for path, spec in study.space.params.items()}
    provenance = {"run_config": run_config, "space": space, "folds": study.folds,
                  "data": fingerprints, "seed": config.seed, "gaprank": gaprank.__version__}
    return json.loads(json.dumps(provenance))  # as the database gives it back


def _check_provenance(study: Any, item: _Study, provenance: dict[str, Any], where: str) -> None:
    held = study.user_attrs.get("provenance")
    if held is None:
        if study.trials:
            raise GaprankInputError(f"study {study.study_name!r} in {where} has {len(study.trials)} trials but no "
                                    "record of what produced them; delete it or tune into another output_dir")
        study.set_user_attr("provenance", provenance)
        study.set_user_attr("commit", checkout_commit())  # the code the trials run with (not part of the key)
        return
    changed = [key for key in provenance if key != "run_config" and held.get(key) != provenance[key]]
    if not TRAINERS[item.entry.trainer].same_run(held.get("run_config"), item.config):
        changed.insert(0, "run_config")
    if changed:
        raise GaprankInputError(f"study {study.study_name!r} in {where} was made with a different "
                                f"{', '.join(changed)}; continuing would mix two searches: delete the study "
                                "(optuna delete-study) or tune into another output_dir")


def _write_summary(root: Path, config: TuneConfig, quick: bool, results: dict[str, Any]) -> None:
    """``tuning.json`` and ``table.md`` for the studies finished so far."""
    write_json_atomic(root / "tuning.json", {"config": to_dict(config), "quick": quick, "written_at_commit": checkout_commit(),
                                             "objectives": results})
    lines = ["| objective | learner | trials | best mean vali | parameters |", "|---|---|---:|---:|---|"]
    for name, r in results.items():
        value = "–" if r["best_value"] is None else f"{r['best_value']:.4f}"
        params = params_text(r["params"] or {})
        lines.append(f"| {name} | {r['learner']} | {r['trials']} | {value} | {params} |")
    write_atomic(root / "table.md", "\n".join(lines) + "\n")


def _storage(root: Path) -> Any:
    """The SQLite study database; several processes may write it at once (parallel_studies), so a writer
    waits for the file's lock instead of failing."""
    import optuna

    return optuna.storages.RDBStorage(f"sqlite:///{root / 'studies.sqlite3'}",
                                      engine_kwargs={"connect_args": {"timeout": 300}})


def _run_study(config: TuneConfig, item: _Study, root: Path, progress: bool) -> dict[str, Any]:
    """Run (or resume) one objective's study to its budget; its summary for ``tuning.json``."""
    import optuna

    if not progress:
        optuna.logging.set_verbosity(optuna.logging.WARNING)
    storage = _storage(root)
    study = optuna.create_study(study_name=item.entry.name, storage=storage, direction="maximize",
                                load_if_exists=True)
    _check_provenance(study, item, study_provenance(config, item), str(root / "studies.sqlite3"))
    # A trial left RUNNING was cut off by a killed run (the directory lock rules out a live one): mark it
    # failed and interrupted, and leave it out of the count that seeds the sampler and spends the budget.
    study_id = storage.get_study_id_from_name(item.entry.name)
    for trial in study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.RUNNING,)):
        trial_id = storage.get_trial_id_from_study_id_trial_number(study_id, trial.number)
        storage.set_trial_user_attr(trial_id, "interrupted", True)
        storage.set_trial_state_values(trial_id, optuna.trial.TrialState.FAIL)
    finished = (optuna.trial.TrialState.COMPLETE, optuna.trial.TrialState.PRUNED, optuna.trial.TrialState.FAIL)
    done = sum(1 for t in study.get_trials(deepcopy=False, states=finished) if not t.user_attrs.get("interrupted"))
    for count in range(done, item.space.trials):
        # one trial at a time, its sampler seeded by the number of trials already finished
        study.sampler = optuna.samplers.TPESampler(seed=config.seed + count)
        study.optimize(lambda trial: _objective(item, trial), n_trials=1, show_progress_bar=False)
        if progress:
            print(f"{item.entry.name}: trial {count + 1}/{item.space.trials} "
                  f"({study.trials[-1].state.name.lower()})", file=sys.stderr, flush=True)
    complete = study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,))
    best = max(complete, key=lambda t: (t.value, -t.number)) if complete else None
    return {
        "learner": item.entry.learner, "trials": item.space.trials,
        "best_value": None if best is None else best.value,
        "params": None if best is None else best.params,
        "folds": [f"Fold{n}" for n in item.folds],
        "study_commit": study.user_attrs.get("commit"),
    }


def tune(config: TuneConfig, *, quick: bool = False, progress: bool = True) -> dict[str, Any]:
    """Run (or resume) every objective's study (``parallel_studies`` at a time); returns
    ``{name: {"trials", "best_value", "params", ...}}`` in the config's order."""
    studies = load_studies(config, quick=quick)
    path = studies_path(config, quick=quick)
    root = path.parent
    order = [item.entry.name for item in studies]
    with locked(root):
        published = published_root(config.output_dir, quick) / path.name
        if path != published and not path.exists() and published.is_file():
            # the committed studies, copied: their finished trials are resumed from, never written
            shutil.copyfile(published, path)
            if progress:
                print(f"tuning: writing to {root} (the studies in {published.parent} are read, never written; --out "
                      f"{published.parent} writes there)", file=sys.stderr)
        done: dict[str, Any] = {}

        def record(name: str, result: dict[str, Any]) -> None:
            done[name] = result  # tuning.json after each study: an interrupted run keeps what finished
            _write_summary(root, config, quick, {n: done[n] for n in order if n in done})

        if config.parallel_studies == 1:
            for item in studies:
                record(item.entry.name, _run_study(config, item, root, progress))
        else:
            _storage(root)  # the schema, created once here: two processes creating it at once collide
            context = multiprocessing.get_context("spawn")  # a fresh interpreter: no inherited torch threads
            with ProcessPoolExecutor(config.parallel_studies, mp_context=context) as pool:
                futures = {pool.submit(_run_study, config, item, root, progress): item.entry.name for item in studies}
                for future in as_completed(futures):
                    record(futures[future], future.result())
    return {name: done[name] for name in order}


def main(argv: list[str] | None = None) -> int:
    parser = script_parser("python -m training.tune", __doc__, "configs/ohsumed/tune.yaml")
    parser.add_argument("--quick", action="store_true", help="2 trials, the first fold, a few epochs / rounds (CI)")
    parser.add_argument("--quiet", action="store_true", help="no progress lines")
    parser.add_argument("--out", help="write under this directory instead of runs/<the config's output_dir under "
                                      "results/> (--out results/... updates the committed studies)")
    args = parser.parse_args(argv)
    try:
        config = load_config(args.config, TuneConfig)
        if args.out is not None:
            config = dataclasses.replace(config, output_dir=str(output_path(args.out, "--out")))
        with publishing(args.out):
            results = tune(config, quick=args.quick, progress=not args.quiet)
    except GaprankInputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted: the trial under way is not counted; run the same command again to resume",
              file=sys.stderr)
        return 130
    for name, r in results.items():
        print(f"{name}: best mean vali {r['best_value']} with {r['params']}")
    return 0


__all__ = ["SearchParam", "LearnerSpace", "TuneConfig", "study_provenance", "tune", "with_params"]


if __name__ == "__main__":
    raise SystemExit(main())
