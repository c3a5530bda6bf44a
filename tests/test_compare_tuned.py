"""training.compare with seeds and tuning (issue 13): seeds aggregate as documented, tuned parameters
reach the runs, studies refuse to mix two searches, moved results stay reusable."""

from __future__ import annotations

import csv
import dataclasses
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import yaml

pytest.importorskip("optuna")

from gaprank.data import load_fold  # noqa: E402
from training import cv  # noqa: E402
from training.compare import RELEVANT_ONLY, CompareConfig, aggregate_seeds, run  # noqa: E402
from training.config import ConfigError, load_config  # noqa: E402
from training.tune import TuneConfig, tune  # noqa: E402

MEASURES = ["NDCG@10", "MAP", "P@10", "GAP"]


def _run_configs(folder: Path, data_dir: Path) -> dict[str, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    common = {"data": {"dataset": "OHSUMED", "data_dir": str(data_dir), "folds": [1, 2]},
              "evaluation": {"measures": MEASURES}}
    configs = {
        "lr_ndcg": {"name": "lr_ndcg", "loss": {"kind": "lambdarank", "measure": "ndcg"},
                    "training": {"epochs": 3, "batch_size": 4, "learning_rates": [0.01], "patience": None,
                                 "num_threads": 1}, "model": {"kind": "mlp", "hidden": [8]}},
        "lr_gap": {"name": "lr_gap", "loss": {"kind": "lambdarank", "measure": "gap", "g": [0.5, 0.5]},
                   "training": {"epochs": 3, "batch_size": 4, "learning_rates": [0.01], "patience": None,
                                "num_threads": 1}, "model": {"kind": "mlp", "hidden": [8]}},
        "lm_gap": {"name": "lm_gap", "objective": {"measure": "gap", "g": [0.5, 0.5]},
                   "booster": {"num_boost_round": 8, "early_stopping_rounds": 3, "min_data_in_leaf": 2,
                               "num_leaves": 4, "num_threads": 1,
                               "params": {"bagging_fraction": 0.7, "bagging_freq": 1}}},
    }
    paths = {}
    for name, config in configs.items():
        paths[name] = folder / f"{name}.yaml"
        paths[name].write_text(yaml.safe_dump({**common, **config, "output_dir": str(folder / "own" / name)}))
    return paths


def _runs(paths: dict[str, Path]) -> list[dict]:
    return [{"name": "LR-nDCG", "learner": "LambdaRank", "config": str(paths["lr_ndcg"]), "optimises": "ndcg"},
            {"name": "LR-GAP", "learner": "LambdaRank", "config": str(paths["lr_gap"]), "optimises": "gap"},
            {"name": "LM-GAP", "learner": "LambdaMART", "config": str(paths["lm_gap"]), "trainer": "lambdamart",
             "optimises": "gap"}]


def _tune_config(folder: Path, paths: dict[str, Path], *, trials: int = 2, sigma_high: float = 4.0) -> Path:
    config = {"name": "toy", "output_dir": str(folder / "tuning"), "seed": 5, "runs": _runs(paths)[1:],
              "learners": {
                  "LambdaRank": {"trials": trials, "params": {
                      "training.learning_rates": {"type": "float", "low": 1e-3, "high": 1e-1, "log": True},
                      "loss.sigma": {"type": "float", "low": 0.5, "high": sigma_high}}},
                  "LambdaMART": {"trials": trials, "params": {
                      "booster.num_leaves": {"type": "int", "low": 2, "high": 6}}}}}
    path = folder / "tune.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def _compare_config(folder: Path, paths: dict[str, Path], **extra) -> CompareConfig:
    config = {"name": "toy", "output_dir": str(folder / "compare"), "runs": _runs(paths), "measures": MEASURES,
              "significance": {"measures": ["NDCG@10", "MAP"], "resamples": 200}, **extra}
    path = folder / "compare.yaml"
    path.write_text(yaml.safe_dump(config))
    return load_config(path, CompareConfig)


def test_aggregate_seeds_against_hand_computed_values():
    rng = np.random.default_rng(4)
    results = {}
    for seed in (3, 7, 11):
        per_query = {f"Fold{f}": {"MAP": {f"q{f}{i}": float(v) for i, v in enumerate(rng.random(4))}} for f in (1, 2)}
        per_fold = {fold: {"MAP": float(np.mean(list(q["MAP"].values())))} for fold, q in per_query.items()}
        results[seed] = {"mean": {"MAP": float(np.mean([v["MAP"] for v in per_fold.values()]))},
                         "per_fold": per_fold, "per_query": per_query}
    merged = aggregate_seeds(results, ["MAP"])
    means = [results[s]["mean"]["MAP"] for s in (3, 7, 11)]
    assert merged["mean"]["MAP"] == pytest.approx(sum(means) / 3)
    assert merged["seed_sd"]["MAP"] == pytest.approx(np.sqrt(sum((m - sum(means) / 3) ** 2 for m in means) / 2))
    assert merged["per_query"]["Fold2"]["MAP"]["q21"] == pytest.approx(
        sum(results[s]["per_query"]["Fold2"]["MAP"]["q21"] for s in (3, 7, 11)) / 3)
    # the mean of the seed-averaged fold means is the mean over seeds of the five-fold means
    assert np.mean([v["MAP"] for v in merged["per_fold"].values()]) == pytest.approx(merged["mean"]["MAP"])
    assert aggregate_seeds({3: results[3]}, ["MAP"])["seed_sd"]["MAP"] is None
    del results[7]["per_query"]["Fold2"]["MAP"]["q21"]
    with pytest.raises(Exception, match="other folds or queries"):
        aggregate_seeds(results, ["MAP"])


def _tsv(path: Path) -> list[dict[str, str]]:
    with path.open() as fh:
        return list(csv.DictReader(fh, delimiter="\t"))


def _unjudge_first_queries(data_dir: Path) -> None:
    """Give the first query of every partition no relevant document (label 0 throughout)."""
    for path in (data_dir / "OHSUMED" / "QueryLevelNorm").glob("P*.txt"):
        lines = path.read_text().splitlines()
        first = lines[0].split()[1]
        path.write_text("\n".join("0" + line[1:] if line.split()[1] == first else line for line in lines) + "\n")


def test_a_tuned_seeded_comparison_aggregates_its_runs(tmp_path, toy_data):
    _unjudge_first_queries(toy_data)
    paths = _run_configs(tmp_path, toy_data)
    config = _compare_config(tmp_path, paths, seeds=[1, 2], tuning=str(_tune_config(tmp_path, paths)),
                             relevant_queries_only=["GAP"])
    summary = run(config, progress=False)
    out = tmp_path / "compare"
    tuned = json.loads((tmp_path / "tuning" / "tuning.json").read_text())["objectives"]
    for name, o in summary["objectives"].items():
        assert o["seeds"] == [1, 2]
        seed_runs = [json.loads((out / "runs" / summary["run_configs"][name]["name"] / f"seed{s}" / "summary.json")
                                .read_text()) for s in (1, 2)]
        assert [r["config"]["training" if "training" in r["config"] else "booster"]["seed"] for r in seed_runs] == [1, 2]
        for m in MEASURES:
            assert o[m] == pytest.approx(np.mean([r["mean"][m] for r in seed_runs]))
            assert o["seed_sd"][m] == pytest.approx(np.std([r["mean"][m] for r in seed_runs], ddof=1))
        if name == "LR-nDCG":
            assert o["tuning"] is None
        else:  # the study's best parameters are what the runs trained with
            assert o["tuning"]["params"] == tuned[name]["params"] and o["tuning"]["trials"] == 2
            for path, value in tuned[name]["params"].items():
                section, key = path.split(".")
                got = summary["run_configs"][name][section][key]
                assert got == ([value] if isinstance(got, list) else value)
    # seeds differ (initialisation, batch order, bagging), so the spread is real
    assert any(sd > 0 for o in summary["objectives"].values() for sd in o["seed_sd"].values())
    # per_query.tsv holds each query's value averaged over seeds; significance pairs those values
    rows = [r for r in _tsv(out / "per_query.tsv") if r["objective"] == "LR-GAP"]
    seed_rows = {s: {(r["fold"], r["qid"]): r for r in _tsv(out / "runs" / "lr_gap" / f"seed{s}" / "per_query.tsv")}
                 for s in (1, 2)}
    for r in rows:
        assert float(r["MAP"]) == pytest.approx(np.mean([float(seed_rows[s][(r["fold"], r["qid"])]["MAP"])
                                                         for s in (1, 2)]), abs=1e-6)
    ndcg_gain = [float(a["NDCG@10"]) - float(b["NDCG@10"]) for a, b in zip(
        rows, [r for r in _tsv(out / "per_query.tsv") if r["objective"] == "LR-nDCG"], strict=True)]
    row = next(r for r in summary["significance"] if r["versus"] == "LR-nDCG")
    assert row["NDCG@10"]["mean_difference"] == pytest.approx(np.mean(ndcg_gain), abs=1e-5)
    # GAP over only the queries with a relevant document, per fold then over folds
    name = "GAP" + RELEVANT_ONLY
    for seed in (1, 2):
        per_fold = []
        for fold in (1, 2):
            record = json.loads((out / "runs" / "lr_gap" / f"seed{seed}" / "folds" / f"Fold{fold}.json").read_text())
            judged = _judged(toy_data, fold)
            assert 0 < len(judged) < len(record["per_query"]["GAP"])
            per_fold.append(np.mean([record["per_query"]["GAP"][q] for q in judged]))
        assert summary["objectives"]["LR-GAP"]["per_seed"][seed][name] == pytest.approx(np.mean(per_fold))
        assert summary["objectives"]["LR-GAP"]["per_seed"][seed][name] > summary["objectives"]["LR-GAP"]["per_seed"][seed]["GAP"]
    table = (out / "table.md").read_text()
    assert "averaged over seeds" in table and "| LR-GAP | LambdaRank | gap | 2 trials | 2 |" in table
    assert "### Tuned hyperparameters" in table and "| LR-nDCG | LambdaRank | ndcg | – | 2 |" in table
    assert len(_tsv(out / "per_seed.tsv")) == 3 * 2
    assert summary["seeds"] == [1, 2] and summary["tuning"]["trials"] == {"LambdaRank": 2, "LambdaMART": 2}
    record = json.loads((out / "runs" / "lr_gap" / "seed1" / "folds" / "Fold2.json").read_text())
    assert summary["provenance"]["data"]["Fold2"] == record["provenance"]["data"]
    assert summary["provenance"]["gaprank"] == record["provenance"]["gaprank"]


def _judged(data_dir: Path, fold: int) -> list[str]:
    test = load_fold("OHSUMED", fold, data_dir=data_dir).test
    starts = np.concatenate([[0], np.cumsum(test.group_sizes)[:-1]])
    return [q for q, top in zip(test.query_ids, np.maximum.reduceat(test.labels, starts), strict=True) if top >= 1]


def test_a_study_refuses_to_continue_another_search(tmp_path, toy_data):
    paths = _run_configs(tmp_path, toy_data)
    tune(load_config(_tune_config(tmp_path, paths), TuneConfig), progress=False)
    more = load_config(_tune_config(tmp_path, paths, trials=3), TuneConfig)
    tune(more, progress=False)  # a larger budget continues the same search
    other = load_config(_tune_config(tmp_path, paths, trials=3, sigma_high=8.0), TuneConfig)
    with pytest.raises(Exception, match="'LR-GAP' .* was made with a different space"):
        tune(other, progress=False)
    changed = _run_configs(tmp_path / "changed", toy_data)
    text = changed["lr_gap"].read_text().replace("epochs: 3", "epochs: 4")
    paths["lr_gap"].write_text(text.replace(str(tmp_path / "changed" / "own"), str(tmp_path / "own")))
    with pytest.raises(Exception, match="different run_config"):
        tune(more, progress=False)


def test_tuning_config_must_name_the_comparisons_runs(tmp_path, toy_data):
    paths = _run_configs(tmp_path, toy_data)
    tune_path = _tune_config(tmp_path, paths)
    data = yaml.safe_load(tune_path.read_text())
    data["runs"][0]["name"] = "Someone else"
    tune_path.write_text(yaml.safe_dump(data))
    with pytest.raises(ConfigError, match="tunes 'Someone else', which is not a run of the comparison"):
        run(_compare_config(tmp_path, paths, seeds=[1], tuning=str(tune_path)), progress=False)
    with pytest.raises(ConfigError, match="a run's own seeds need the comparison's seeds"):
        runs = _runs(paths)
        runs[0]["seeds"] = [1, 2]
        path = tmp_path / "bad.yaml"
        path.write_text(yaml.safe_dump({"name": "x", "output_dir": str(tmp_path / "x"), "runs": runs}))
        load_config(path, CompareConfig)
    with pytest.raises(ConfigError, match="seeds must be a non-empty list of distinct integers"):
        _compare_config(tmp_path, paths, seeds=[1, 1])


def test_a_moved_result_directory_is_still_reused(tmp_path, toy_data):
    paths = _run_configs(tmp_path, toy_data)
    config = load_config(paths["lr_gap"], cv.CVConfig)
    first = cv.run(config, progress=False)
    moved = tmp_path / "moved"
    shutil.copytree(config.output_dir, moved)
    again = cv.run(load_config(paths["lr_gap"], cv.CVConfig).__class__(**{**vars(config), "output_dir": str(moved)}),
                   progress=False)
    assert first["trained_now"] == ["Fold1", "Fold2"] and again["trained_now"] == []
    assert again["mean"] == first["mean"]


def test_a_study_made_before_a_config_field_existed_continues(tmp_path, toy_data):
    """The OHSUMED LambdaMART studies predate the engine and dask fields: they must still resume."""
    import optuna

    paths = _run_configs(tmp_path, toy_data)
    tune(load_config(_tune_config(tmp_path, paths), TuneConfig), progress=False)
    study = optuna.load_study(study_name="LM-GAP", storage=f"sqlite:///{tmp_path / 'tuning' / 'studies.sqlite3'}")
    provenance = study.user_attrs["provenance"]
    for key in ("engine", "dask"):
        del provenance["run_config"][key]
    study.set_user_attr("provenance", provenance)
    tune(load_config(_tune_config(tmp_path, paths, trials=3), TuneConfig), progress=False)
    assert len(study.get_trials(states=(optuna.trial.TrialState.COMPLETE,))) == 3
    text = paths["lm_gap"].read_text()
    paths["lm_gap"].write_text(text + "dask: {workers: 3}\n")  # a field away from its default: another search
    with pytest.raises(Exception, match="'LM-GAP' .* was made with a different run_config"):
        tune(load_config(_tune_config(tmp_path, paths, trials=4), TuneConfig), progress=False)


def test_a_study_continues_under_another_thread_count(tmp_path, toy_data):
    """How many threads ran a trial is not part of the search: the shipped studies were made with
    num_threads 2 and continue where ``auto`` gives 1 (a pinned core, threads_per_trial)."""
    import optuna

    paths = _run_configs(tmp_path, toy_data)
    tune(load_config(_tune_config(tmp_path, paths), TuneConfig), progress=False)
    study = optuna.load_study(study_name="LR-GAP", storage=f"sqlite:///{tmp_path / 'tuning' / 'studies.sqlite3'}")
    provenance = study.user_attrs["provenance"]
    assert provenance["run_config"]["training"]["num_threads"] != 7
    provenance["run_config"]["training"]["num_threads"] = 7
    study.set_user_attr("provenance", provenance)
    tune(load_config(_tune_config(tmp_path, paths, trials=3), TuneConfig), progress=False)
    assert len(study.get_trials(states=(optuna.trial.TrialState.COMPLETE,))) == 3
    provenance["run_config"]["training"]["epochs"] = 99  # anything else still refuses
    study.set_user_attr("provenance", provenance)
    with pytest.raises(Exception, match="'LR-GAP' .* was made with a different run_config"):
        tune(load_config(_tune_config(tmp_path, paths, trials=4), TuneConfig), progress=False)


def test_a_record_made_before_a_nested_field_existed_still_stands(tmp_path, toy_data):
    """The MQ2008 LambdaRank studies predate training.device (a field inside a section): still the same run."""
    from training._runner import run_config_key, same_run_config

    paths = _run_configs(tmp_path, toy_data)
    config = load_config(paths["lr_gap"], cv.CVConfig)
    held = run_config_key(config)
    assert same_run_config(held, config)
    del held["training"]["device"]
    assert same_run_config(held, config)  # the new nested field sits at its default
    moved = dataclasses.replace(config, training=dataclasses.replace(config.training, epochs=config.training.epochs + 1))
    assert not same_run_config(held, moved)  # an existing nested field changed
    with_extra = {**held, "training": {**held["training"], "unknown_knob": 3}}
    assert not same_run_config(with_extra, config)  # the record knows a field this config does not
    del held["training"]["dtype"]  # a missing field stands only for its default
    assert same_run_config(held, config)
    assert not same_run_config(held, dataclasses.replace(config, training=dataclasses.replace(config.training,
                                                                                               dtype="float64")))
