"""training.tune: vali-only search with Optuna, resumable studies in SQLite, clear config errors."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import yaml

pytest.importorskip("optuna")

from training import cv, lambdamart  # noqa: E402
from training.config import ConfigError, available_cores, load_config  # noqa: E402
from training.tune import TuneConfig, tune  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def _configs(tmp_path: Path, data_dir: Path, *, trials: int = 3, **learner_changes) -> Path:
    tmp_path.mkdir(parents=True, exist_ok=True)
    cv_config = {"name": "lr_gap", "data": {"dataset": "OHSUMED", "data_dir": str(data_dir), "folds": [1, 2]},
                 "loss": {"kind": "lambdarank", "measure": "gap", "g": [0.5, 0.5]},
                 "training": {"epochs": 3, "batch_size": 4, "learning_rates": [0.01], "patience": None,
                              "num_threads": 1},
                 "output_dir": str(tmp_path / "unused_cv")}
    lm_config = {"name": "lm_gap", "data": {"dataset": "OHSUMED", "data_dir": str(data_dir), "folds": [1, 2]},
                 "objective": {"measure": "gap", "g": [0.5, 0.5]},
                 "booster": {"num_boost_round": 10, "early_stopping_rounds": 3, "min_data_in_leaf": 2,
                             "num_leaves": 4, "num_threads": 1},
                 "output_dir": str(tmp_path / "unused_lm")}
    (tmp_path / "cv.yaml").write_text(yaml.safe_dump(cv_config))
    (tmp_path / "lm.yaml").write_text(yaml.safe_dump(lm_config))
    learners = {
        "LambdaRank": {"trials": trials, "params": {
            "training.learning_rates": {"type": "float", "low": 1e-4, "high": 1e-1, "log": True},
            "loss.sigma": {"type": "float", "low": 0.5, "high": 4.0},
            "model.kind": {"type": "categorical", "choices": ["linear", "mlp"]},
            "model.hidden": {"type": "categorical", "choices": ["16", "32,16"]}}},
        "LambdaMART": {"trials": trials, "params": {
            "booster.learning_rate": {"type": "float", "low": 0.01, "high": 0.3, "log": True},
            "booster.num_leaves": {"type": "int", "low": 2, "high": 8},
            "booster.params.feature_fraction": {"type": "float", "low": 0.5, "high": 1.0}}},
    }
    for learner, change in learner_changes.items():
        change(learners[learner])
    config = {"name": "toy", "output_dir": str(tmp_path / "tune"), "seed": 3, "learners": learners,
              "runs": [{"name": "LR-GAP", "learner": "LambdaRank", "config": str(tmp_path / "cv.yaml"), "optimises": "gap"},
                       {"name": "LM-GAP", "learner": "LambdaMART", "config": str(tmp_path / "lm.yaml"),
                        "trainer": "lambdamart", "optimises": "gap"}]}
    path = tmp_path / "tune.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def _trials(out: Path) -> dict[str, list[tuple[dict, float]]]:
    import optuna

    storage = f"sqlite:///{out / 'studies.sqlite3'}"
    return {name: [(t.params, t.value) for t in optuna.load_study(study_name=name, storage=storage).trials]
            for name in ("LR-GAP", "LM-GAP")}


def test_a_resumed_study_equals_an_uninterrupted_one_and_reruns_repeat_nothing(tmp_path, toy_data):
    whole = load_config(_configs(tmp_path / "a", toy_data, trials=4), TuneConfig)
    tune(whole, progress=False)
    parted = tmp_path / "b"
    tune(load_config(_configs(parted, toy_data, trials=2), TuneConfig), progress=False)  # interrupted after 2
    resumed = load_config(_configs(parted, toy_data, trials=4), TuneConfig)
    tune(resumed, progress=False)
    assert _trials(parted / "tune") == _trials(tmp_path / "a" / "tune")
    assert all(len(t) == 4 for t in _trials(parted / "tune").values())
    tune(resumed, progress=False)  # finished: nothing more
    assert all(len(t) == 4 for t in _trials(parted / "tune").values())
    saved = json.loads((parted / "tune" / "tuning.json").read_text())["objectives"]
    for name, trials in _trials(parted / "tune").items():
        best = max(trials, key=lambda t: t[1])
        assert saved[name]["best_value"] == best[1] and saved[name]["params"] == best[0]


def test_tuning_never_reads_test(tmp_path, toy_data, monkeypatch):
    clean = load_config(_configs(tmp_path / "clean", toy_data), TuneConfig)
    tune(clean, progress=False)
    original = cv.load_fold

    def poisoned(*args, **kwargs):
        fold = original(*args, **kwargs)
        fold.test.labels = np.random.default_rng(0).integers(0, 3, fold.test.labels.size)
        fold.test.features = np.full_like(fold.test.features, np.nan)
        return fold

    monkeypatch.setattr(cv, "load_fold", poisoned)
    monkeypatch.setattr(lambdamart, "load_fold", poisoned)
    dirty = load_config(_configs(tmp_path / "dirty", toy_data), TuneConfig)
    tune(dirty, progress=False)
    assert _trials(tmp_path / "dirty" / "tune") == _trials(tmp_path / "clean" / "tune")


@pytest.mark.parametrize("change, message", [
    (lambda s: s.update(params={}), "learners.LambdaRank: params is empty"),
    (lambda s: s["params"].update({"training.lr": {"type": "float", "low": 0.1, "high": 1.0}}),
     "parameter 'training.lr': the run's config has no 'lr' there"),
    (lambda s: s["params"].update({"loss.sigma": {"type": "float", "low": 2.0, "high": 1.0}}),
     "low must be below high; got low 2.0, high 1.0"),
    (lambda s: s["params"].update({"loss.sigma": {"type": "float", "low": 0.0, "high": 1.0, "log": True}}),
     "a log scale needs low > 0"),
    (lambda s: s["params"].update({"loss.sigma": {"type": "categorical", "choices": []}}), "non-empty list of choices"),
    (lambda s: s["params"].update({"nope.sigma": {"type": "float", "low": 0.1, "high": 1.0}}), "'nope' is not a section"),
    (lambda s: s.update(trials=0), "trials must be >= 1"),
])
def test_bad_tuning_configs_are_one_line_errors(tmp_path, toy_data, change, message):
    path = _configs(tmp_path, toy_data, LambdaRank=change)
    with pytest.raises(ConfigError, match=message):
        from training.tune import load_studies

        load_studies(load_config(path, TuneConfig))
    out = subprocess.run([sys.executable, "-m", "training.tune", "--config", str(path)], cwd=ROOT,
                         capture_output=True, text=True)
    assert out.returncode == 2 and out.stderr.count("\n") == 1 and "Traceback" not in out.stderr


def test_quick_mode_from_the_command_line(tmp_path, toy_data):
    path = _configs(tmp_path, toy_data)
    out = subprocess.run([sys.executable, "-m", "training.tune", "--config", str(path), "--quick", "--quiet"],
                         cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    saved = json.loads((tmp_path / "tune-quick" / "tuning.json").read_text())
    assert saved["quick"] and all(o["trials"] == 2 and o["folds"] == ["Fold1"] for o in saved["objectives"].values())
    assert "| LR-GAP | LambdaRank | 2 |" in (tmp_path / "tune-quick" / "table.md").read_text()


def test_the_shipped_tuning_config_loads_every_run_and_space():
    from training.tune import load_studies

    studies = load_studies(load_config(ROOT / "configs" / "ohsumed" / "tune.yaml", TuneConfig))
    assert {s.entry.learner for s in studies} == {"LambdaRank", "LambdaMART", "SoftRank", "ApproxRank", "NeuralSort",
                                                  "SoftSort", "FastSoftRank"}
    assert all(s.folds == [1, 2, 3, 4, 5] for s in studies)
    assert all(s.space.trials == 30 for s in studies)


@pytest.mark.parametrize("folder", ["ohsumed", "mq2008"])
def test_the_committed_softrank_studies_tried_the_same_configurations(folder):
    # what docs/experiments.md says of the SoftRank studies: their first 8 trials (TPE's seeded random
    # start-up) are the same configurations for every SoftRank objective
    import optuna

    storage = f"sqlite:///{ROOT / 'results' / folder / 'tuning' / 'studies.sqlite3'}"
    tried = {}
    for name in ["SoftNDCG", "SoftAP", "SoftGAP", "SoftxGAP", "SofteGAP"]:
        study = optuna.load_study(study_name=name, storage=storage)
        complete = study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,))
        first = sorted(complete, key=lambda t: t.number)[:8]
        tried[name] = sorted(json.dumps(t.params, sort_keys=True) for t in first)
    assert all(len(configs) == 8 for configs in tried.values())
    assert len({tuple(configs) for configs in tried.values()}) == 1


@pytest.mark.skipif(available_cores() < 2, reason="two studies at once need two cores (refused on fewer)")
def test_parallel_studies_make_the_trials_of_a_sequential_run(tmp_path, toy_data):
    def config(folder: str, parallel: int) -> TuneConfig:
        path = _configs(tmp_path / folder, toy_data, trials=3)
        data = yaml.safe_load(path.read_text())
        path.write_text(yaml.safe_dump({**data, "parallel_studies": parallel, "threads_per_trial": 1}))
        return load_config(path, TuneConfig)

    tune(config("one", 1), progress=False)
    tune(config("two", 2), progress=False)
    assert _trials(tmp_path / "two" / "tune") == _trials(tmp_path / "one" / "tune")
    saved = json.loads((tmp_path / "two" / "tune" / "tuning.json").read_text())
    assert list(saved["objectives"]) == ["LR-GAP", "LM-GAP"]
    assert saved["config"]["threads_per_trial"] == 1


def test_oversubscribed_parallel_tuning_is_refused(tmp_path, toy_data, monkeypatch):
    import os

    import training.config
    import training.tune

    path = _configs(tmp_path, toy_data)
    data = yaml.safe_load(path.read_text())
    path.write_text(yaml.safe_dump({**data, "parallel_studies": 2, "threads_per_trial": os.cpu_count()}))
    with pytest.raises(ConfigError, match="exceeds the .* cores this process may use: oversubscribed"):
        load_config(path, TuneConfig)
    # the cores a process may use are its affinity's (taskset -c 1: one), not the machine's
    monkeypatch.setattr(training.config, "available_cores", lambda: 1)
    monkeypatch.setattr(training.tune, "available_cores", lambda: 1)
    path.write_text(yaml.safe_dump({**data, "parallel_studies": 2, "threads_per_trial": 1}))
    with pytest.raises(ConfigError, match="2 x 1 exceeds the 1 cores this process may use"):
        load_config(path, TuneConfig)
    path.write_text(yaml.safe_dump({**data, "parallel_studies": 2}))
    with pytest.raises(ConfigError, match="parallel_studies > 1 needs threads_per_trial"):
        load_config(path, TuneConfig)


def test_a_trial_cut_off_by_a_killed_run_does_not_change_the_search(tmp_path, toy_data):
    import optuna

    whole = load_config(_configs(tmp_path / "a", toy_data, trials=3), TuneConfig)
    tune(whole, progress=False)
    parted = tmp_path / "b"
    tune(load_config(_configs(parted, toy_data, trials=1), TuneConfig), progress=False)
    storage = f"sqlite:///{parted / 'tune' / 'studies.sqlite3'}"
    for name in ("LR-GAP", "LM-GAP"):  # a killed run leaves its trial RUNNING in the database
        optuna.load_study(study_name=name, storage=storage).ask()
    tune(load_config(_configs(parted, toy_data, trials=3), TuneConfig), progress=False)
    for name in ("LR-GAP", "LM-GAP"):
        trials = optuna.load_study(study_name=name, storage=storage).trials
        cut = [t for t in trials if t.user_attrs.get("interrupted")]
        assert len(cut) == 1 and cut[0].state == optuna.trial.TrialState.FAIL
        kept = [(t.params, t.value) for t in trials if not t.user_attrs.get("interrupted")]
        assert kept == _trials(tmp_path / "a" / "tune")[name]


def test_a_trial_cut_off_by_ctrl_c_does_not_spend_the_budget(tmp_path, toy_data, monkeypatch):
    """SIGINT, as a terminal sends it, in the second trial of a study of budget 4; the resumed study has 4
    complete trials, equal to an uninterrupted one's, and the cut-off trial is marked."""
    import os
    import signal

    import optuna

    from training import _trainers

    tune(load_config(_configs(tmp_path / "a", toy_data, trials=4), TuneConfig), progress=False)
    trainer = _trainers.TRAINERS["cv"]
    calls = {"n": 0}

    def interrupted_in_trial_2(config, number):
        calls["n"] += 1
        if calls["n"] == 3:  # two folds a trial: the first fold of trial 2
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(5)  # the signal handler raises KeyboardInterrupt here
        return trainer.vali_score(config, number)

    parted = load_config(_configs(tmp_path / "b", toy_data, trials=4), TuneConfig)
    monkeypatch.setitem(_trainers.TRAINERS, "cv", dataclasses.replace(trainer, vali_score=interrupted_in_trial_2))
    with pytest.raises(KeyboardInterrupt):
        tune(parted, progress=False)
    monkeypatch.setitem(_trainers.TRAINERS, "cv", trainer)
    storage = f"sqlite:///{tmp_path / 'b' / 'tune' / 'studies.sqlite3'}"
    cut = [t for t in optuna.load_study(study_name="LR-GAP", storage=storage).trials if t.user_attrs.get("interrupted")]
    assert len(cut) == 1 and cut[0].state == optuna.trial.TrialState.FAIL and cut[0].number == 1
    tune(parted, progress=False)
    for name in ("LR-GAP", "LM-GAP"):
        trials = optuna.load_study(study_name=name, storage=storage).trials
        kept = [(t.params, t.value) for t in trials if not t.user_attrs.get("interrupted")]
        assert [t.state for t in trials].count(optuna.trial.TrialState.COMPLETE) == 4
        assert kept == _trials(tmp_path / "a" / "tune")[name]
    saved = json.loads((tmp_path / "b" / "tune" / "tuning.json").read_text())["objectives"]
    assert saved["LR-GAP"]["trials"] == 4


@pytest.mark.parametrize("folder", ["ohsumed", "mq2008"])
def test_the_committed_studies_stand_for_the_shipped_configs(folder, monkeypatch):
    """Every committed study continues with the shipped config, none is a different search (their run configs
    say ``measure``, as the configs do)."""
    import optuna

    import training.tune
    from training._trainers import TRAINERS
    from training.tune import load_studies

    monkeypatch.setattr(training.tune, "available_cores", lambda: 2)  # MQ2008 tunes two studies at once: load it anywhere

    storage = f"sqlite:///{ROOT / 'results' / folder / 'tuning' / 'studies.sqlite3'}"
    committed = {summary.study_name for summary in optuna.get_all_study_summaries(storage)}
    studies = [item for item in load_studies(load_config(ROOT / "configs" / folder / "tune.yaml", TuneConfig))
               if item.entry.name in committed]
    assert len(studies) == len(committed)
    for item in studies:
        held = optuna.load_study(study_name=item.entry.name, storage=storage).user_attrs["provenance"]["run_config"]
        section = held.get("loss", held.get("objective"))
        assert "measure" in section and "metric" not in section and "mode" not in section, item.entry.name
        assert TRAINERS[item.entry.trainer].same_run(held, item.config), item.entry.name
