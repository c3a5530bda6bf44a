"""training.lambdamart and training.config: a short real run, skip-on-rerun, and config errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from gaprank import GaprankInputError
from training.config import ConfigError, load_config
from training.lambdamart import LambdaMARTConfig, main, run

ROOT = Path(__file__).resolve().parents[1]


def _write(tmp_path: Path, data: dict) -> Path:
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def _quick(tmp_path: Path, **objective) -> dict:
    return {
        "name": "quick",
        "data": {"dataset": "OHSUMED", "folds": [1]},
        "objective": objective or {"measure": "gap", "g": [0.5, 0.5], "truncation_level": 30},
        "booster": {"num_boost_round": 12, "early_stopping_rounds": 3, "learning_rate": 0.1, "num_leaves": 7,
                    "num_threads": 1},
        "evaluation": {"selection": "GAP", "measures": ["NDCG@10", "MAP", "P@10", "GAP"], "conventions": "letor3"},
        "output_dir": str(tmp_path / "out"),
    }


@pytest.mark.parametrize("name", ["lambdamart_gap", "lambdamart_egap", "lambdamart_ap", "lambdamart_ndcg"])
def test_shipped_configs_load(name):
    config = load_config(ROOT / "configs" / "ohsumed" / f"{name}.yaml", LambdaMARTConfig)
    assert config.data.folds == [1, 2, 3, 4, 5] and config.output_dir.startswith("results/ohsumed-untuned/")
    for mq in (ROOT / "configs" / "mq2008").glob("lambdamart_*.yaml"):
        assert load_config(mq, LambdaMARTConfig).data.dataset == "MQ2008"


def test_one_fold_run_writes_results_and_skips_on_rerun(tmp_path):
    pytest.importorskip("lightgbm")
    config = load_config(_write(tmp_path, _quick(tmp_path)), LambdaMARTConfig)
    summary = run(config)
    out = tmp_path / "out"
    record = json.loads((out / "folds" / "Fold1.json").read_text())
    assert set(record["test"]) == {"NDCG@10", "MAP", "P@10", "GAP"}
    assert 1 <= record["best_iteration"] <= 12 and len(record["per_query"]["GAP"]) == 22  # Fold1 test: 22 queries
    assert summary["mean"]["GAP"] == pytest.approx(record["test"]["GAP"])
    assert 0.2 < summary["mean"]["NDCG@10"] < 0.7
    saved = json.loads((out / "summary.json").read_text())
    assert saved["conventions"]["name"] == "letor3" and saved["config"]["objective"]["measure"] == "gap"
    assert (out / "per_query.tsv").read_text().count("\n") == 23 and "| **mean** |" in (out / "table.md").read_text()
    # a re-run with the same config skips the finished fold; a changed config retrains it
    run(config)
    events = [json.loads(line)["event"] for line in (out / "log.jsonl").read_text().splitlines()]
    assert events.count("fold_start") == 1 and "fold_skipped" in events
    changed = load_config(_write(tmp_path, {**_quick(tmp_path), "booster": {"num_boost_round": 5, "num_threads": 1}}),
                          LambdaMARTConfig)
    run(changed)
    events = [json.loads(line)["event"] for line in (out / "log.jsonl").read_text().splitlines()]
    assert events.count("fold_start") == 2


def test_native_objective_runs_through_the_same_script(tmp_path):
    data = _quick(tmp_path, kind="native", measure="ndcg", truncation_level=30, norm=True)
    data["evaluation"]["selection"] = "NDCG@10"
    assert main(["--config", str(_write(tmp_path, data))]) == 0


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda d: d["booster"].update(lerning_rate=0.1), "unknown key 'lerning_rate'"),
        (lambda d: d["booster"].update(num_leaves="many"), "booster.num_leaves must be an integer"),
        (lambda d: d["data"].update(dataset="MSLR"), "data.dataset must be one of"),
        (lambda d: d["data"].update(folds=[1, 6]), "folds"),
        (lambda d: d.pop("output_dir"), "output_dir is required"),
        (lambda d: d["objective"].update(g=[0.5, 0.6]), "sum to 1"),
        (lambda d: d["objective"].update(kind="native"), "native"),
        (lambda d: d["objective"].update(precision="float16"), "objective.precision must be one of"),
        (lambda d: d["evaluation"].update(selection="nDCG@x"), "measure"),
        (lambda d: d["booster"].update(params={"objective": "regression"}), "may not set"),
        (lambda d: d["booster"].update(num_leaves=1), "booster.num_leaves must be >= 2; got 1"),
    ],
)
def test_config_errors_are_clear_messages(tmp_path, change, message):
    data = _quick(tmp_path)
    change(data)
    with pytest.raises(ConfigError, match=message):
        load_config(_write(tmp_path, data), LambdaMARTConfig)


def test_cli_reports_config_errors_without_traceback(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\ndata: {dataset: OHSUMED}\noutput_dir: o\nbooster: {seed: one}\n")
    out = subprocess.run([sys.executable, "-m", "training.lambdamart", "--config", str(bad)], cwd=ROOT,
                         capture_output=True, text=True)
    assert out.returncode == 2 and "booster.seed must be an integer" in out.stderr and "Traceback" not in out.stderr
    missing = subprocess.run([sys.executable, "-m", "training.lambdamart", "--config", str(tmp_path / "nope.yaml")],
                             cwd=ROOT, capture_output=True, text=True)
    assert missing.returncode == 2 and "does not exist" in missing.stderr


# --- hardening: booster.params read as LightGBM reads them ---


@pytest.mark.parametrize("params, message", [
    ({"num_trees": 2}, "may not set 'num_trees' \\(LightGBM's alias of num_iterations\\): it comes from booster.num_boost_round"),
    ({"n_estimators": 2}, "alias of num_iterations"),
    ({"random_state": 3}, "alias of seed\\): it comes from booster.seed"),
    ({"sigmoid": 2.0}, "may not set 'sigmoid': it comes from objective.sigma"),
    ({"bagging_fractoin": 0.5}, "'bagging_fractoin' is not a LightGBM parameter; did you mean 'bagging_fraction'"),
    ({"lambda_l2": 1.0, "reg_lambda": 2.0}, "sets lambda_l2 twice: as 'lambda_l2' and 'reg_lambda'"),
    ({"feature_fraction": 2.0}, "LightGBM refuses them: Check failed: \\(feature_fraction\\) <= \\(1.0\\)$"),
    ({"max_bin": "many"}, "LightGBM refuses them: Parameter max_bin should be of type int"),
])
def test_booster_params_are_resolved_against_lightgbms_alias_table(tmp_path, params, message):
    data = _quick(tmp_path)
    data["booster"]["params"] = params
    with pytest.raises(ConfigError, match=message):
        load_config(_write(tmp_path, data), LambdaMARTConfig)


def test_valid_booster_params_pass_and_reach_lightgbm(tmp_path):
    data = _quick(tmp_path)
    data["booster"]["params"] = {"bagging_fraction": 0.8, "bagging_freq": 1, "reg_lambda": 0.5}
    config = load_config(_write(tmp_path, data), LambdaMARTConfig)
    assert config.booster.lightgbm_params()["reg_lambda"] == 0.5


def test_booster_param_errors_print_one_line_without_lightgbms_fatal_log(tmp_path):
    data = _quick(tmp_path)
    data["booster"]["params"] = {"feature_fraction": 2.0}
    data["booster"]["seed"] = 1
    out = subprocess.run([sys.executable, "-m", "training.lambdamart", "--config", str(_write(tmp_path, data))],
                         cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 2 and out.stderr.count("\n") == 1 and "[Fatal]" not in out.stderr
    data["booster"] = {**data["booster"], "params": {}, "seed": 2**40}
    with pytest.raises(ConfigError, match="booster.seed must be in 0..2\\^31-1"):
        load_config(_write(tmp_path, data), LambdaMARTConfig)


def test_settings_the_engine_refuses_are_one_line(tmp_path, monkeypatch):
    data = _quick(tmp_path)
    data["booster"]["params"] = {"boosting": "rf"}  # random forests need bagging
    out = subprocess.run([sys.executable, "-m", "training.lambdamart", "--config", str(_write(tmp_path, data))],
                         cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr[-1500:]
    assert "booster.params" in out.stderr and out.stderr.strip().count("\n") == 0
    # what only training finds out is worded the same way
    import lightgbm as lgb

    from training import lambdamart

    def refused(config, fold):
        raise lgb.basic.LightGBMError("Check failed: something LightGBM checks while training\nmore detail")

    monkeypatch.setitem(lambdamart.TRAINERS, "lightgbm", refused)
    config = load_config(_write(tmp_path, _quick(tmp_path)), LambdaMARTConfig)
    with pytest.raises(GaprankInputError, match="^quick: lightgbm refused the booster settings: Check failed: something"):
        lambdamart.vali_score(config, 1)


# ---------------------------------------------------------------- engines: xgboost and lightgbm on Dask


def _engine_run(tmp_path: Path, name: str, **changes) -> dict:
    data = _quick(tmp_path / name)
    data["output_dir"] = str(tmp_path / name / "out")
    for key, value in changes.items():
        data[key] = {**data.get(key, {}), **value} if isinstance(value, dict) else value
    (tmp_path / name).mkdir(parents=True, exist_ok=True)
    run(load_config(_write(tmp_path / name, data), LambdaMARTConfig), progress=False)
    return json.loads((tmp_path / name / "out" / "folds" / "Fold1.json").read_text())


def test_xgboost_engine_our_ndcg_mirror_equals_native_rank_ndcg(tmp_path):
    pytest.importorskip("xgboost")
    settings = dict(engine="xgboost", booster={"num_boost_round": 15, "early_stopping_rounds": 15})
    ours = _engine_run(tmp_path, "ours", objective={"kind": "gaprank", "measure": "ndcg", "g": None,
                                                     "truncation_level": 32, "norm": True}, **settings)
    native = _engine_run(tmp_path, "native", objective={"kind": "native", "measure": "ndcg", "g": None,
                                                         "truncation_level": 32, "norm": True}, **settings)
    assert ours["best_iteration"] == native["best_iteration"] and ours["rounds_trained"] <= 15
    for measure, value in native["test"].items():
        assert ours["test"][measure] == pytest.approx(value, abs=1e-6)
    assert ours["provenance"]["versions"]["xgboost"] and len(ours["feature_importance_gain"]) == 45
    assert 0.2 < ours["test"]["NDCG@10"] < 0.7 and len(ours["vali"]["GAP"]) == ours["rounds_trained"]


def test_lightgbm_dask_engine_selects_as_early_stopping_does(tmp_path):
    pytest.importorskip("distributed")
    pytest.importorskip("pandas")
    local = _engine_run(tmp_path, "local", booster={"num_boost_round": 30, "early_stopping_rounds": 4})
    remote = _engine_run(tmp_path, "dask", engine="lightgbm-dask", dask={"workers": 1},
                         booster={"num_boost_round": 30, "early_stopping_rounds": 4})
    # one worker trains the local model; scoring vali after training picks the round early stopping picked
    assert remote["best_iteration"] == local["best_iteration"] and remote["rounds_trained"] == 30
    assert remote["vali"]["GAP"][:len(local["vali"]["GAP"])] == pytest.approx(local["vali"]["GAP"], abs=1e-9)
    assert remote["test"] == pytest.approx(local["test"], abs=1e-9)


def test_select_like_early_stopping():
    from training.engines import select_like_early_stopping

    assert select_like_early_stopping([0.1, 0.3, 0.2, 0.3, 0.25, 0.5], patience=3) == 2
    assert select_like_early_stopping([0.1, 0.3, 0.2, 0.3, 0.25, 0.5], patience=4) == 6
    assert select_like_early_stopping([0.4, 0.4], patience=1) == 1


def test_a_record_made_before_the_engine_fields_existed_is_still_reused(tmp_path):
    config = load_config(_write(tmp_path, _quick(tmp_path)), LambdaMARTConfig)
    run(config, progress=False)
    path = tmp_path / "out" / "folds" / "Fold1.json"
    record = json.loads(path.read_text())
    for key in ("engine", "dask"):
        del record["provenance"]["config"][key]
    path.write_text(json.dumps(record))
    assert run(config, progress=False)["trained_now"] == []
    other = load_config(_write(tmp_path, {**_quick(tmp_path), "engine": "xgboost"}), LambdaMARTConfig)
    assert run(other, progress=False)["trained_now"] == ["Fold1"]  # a non-default engine is a different run


@pytest.mark.parametrize("changes, message", [
    ({"engine": "xgboost", "booster": {"params": {"no_such_param": 1}}}, r"XGBoost does not know \{ \"no_such_param\" \}"),
    ({"engine": "xgboost", "booster": {"params": {"max_depth": -3}}}, "XGBoost refuses them"),
    ({"engine": "xgboost", "booster": {"params": {"eta": 0.3}}}, r"may not set \['eta'\]"),
    ({"engine": "xgboost", "booster": {"min_data_in_leaf": 5}}, "min_data_in_leaf is LightGBM's"),
    ({"engine": "xgboost", "objective": {"kind": "native", "measure": "ndcg", "g": None, "sigma": 2.0}}, "sigma 1"),
    ({"engine": "spark"}, "engine"),
    ({"engine": "lightgbm-dask", "dask": {"workers": 0}}, "dask.workers must be >= 1"),
])
def test_engine_settings_errors(tmp_path, changes, message):
    pytest.importorskip("xgboost")
    data = _quick(tmp_path)
    for key, value in changes.items():
        data[key] = {**data.get(key, {}), **value} if isinstance(value, dict) else value
    with pytest.raises(ConfigError, match=message):
        load_config(_write(tmp_path, data), LambdaMARTConfig)


@pytest.mark.parametrize("engine", ["lightgbm", "xgboost"])
def test_loading_a_config_trains_nothing(tmp_path, monkeypatch, engine):
    """The engines' checks read their parameter tables and parsers; no boosting round runs at load time."""
    xgb = pytest.importorskip("xgboost")
    import lightgbm as lgb

    def trained(*args, **kwargs):
        raise AssertionError("a boosting round ran while a config was loaded")

    monkeypatch.setattr(xgb, "train", trained)
    monkeypatch.setattr(xgb.Booster, "update", trained)
    monkeypatch.setattr(lgb, "train", trained)
    monkeypatch.setattr(lgb.Booster, "update", trained)
    data = {**_quick(tmp_path), "engine": engine}
    data["booster"] = {**data.get("booster", {}), "params": {"max_depth": 4} if engine == "xgboost" else {"max_bin": 63}}
    config = load_config(_write(tmp_path, data), LambdaMARTConfig)
    assert config.engine == engine
