"""training.cv: PyTorch rankers over the LETOR folds (selection on vali, determinism, re-runs, config errors)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml

from gaprank import GaprankInputError
from gaprank.lightgbm import ranking_feval
from training._runner import cpu_name
from training.config import ConfigError, load_config, read_config_data
from training.cv import CVConfig, LossConfig, ModelConfig, length_batches, main, predict, run, run_fold

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = sorted(p for folder in ("ohsumed", "mq2008") for p in (ROOT / "configs" / folder).glob("*.yaml")
                 if not p.name.startswith(("lambdamart_", "xgboost_", "compare", "tune", "base_", "clicks")))


def _write(tmp_path: Path, data: dict, name: str = "config.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data))
    return path


def _small(tmp_path: Path, **loss) -> dict:
    return {
        "name": "small",
        "data": {"dataset": "OHSUMED", "folds": [1]},
        "loss": loss or {"kind": "lambdarank", "measure": "gap", "g": [0.5, 0.5]},
        "training": {"epochs": 4, "batch_size": 16, "learning_rates": [0.001, 0.01], "patience": None,
                     "num_threads": 1},
        "evaluation": {"selection": "GAP", "measures": ["NDCG@10", "MAP", "P@10", "GAP"], "conventions": "letor3"},
        "output_dir": str(tmp_path / "out"),
    }


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_shipped_configs_load(path):
    config = load_config(path, CVConfig)
    assert config.data.folds == [1, 2, 3, 4, 5] and config.output_dir == f"results/{path.parent.name}-untuned/{path.stem}"
    assert config.evaluation.conventions == ("letor3" if path.parent.name == "ohsumed" else "letor4")
    assert config.evaluation.g == [0.5, 0.5]


def test_fold_run_selects_on_vali_and_is_deterministic(tmp_path, ohsumed_fold1):
    config = load_config(_write(tmp_path, _small(tmp_path)), CVConfig)
    record = run_fold(config, 1, progress=False)
    # the chosen (learning rate, epoch) is the argmax of the validation curves, first one on ties
    curves = {float(lr): np.asarray(r["GAP"]) for lr, r in record["vali"].items()}
    best_lr = max(curves, key=lambda lr: curves[lr].max())
    assert record["selected"]["learning_rate"] == best_lr
    assert record["selected"]["epoch"] == int(np.argmax(curves[best_lr])) + 1
    assert record["selected"]["vali GAP"] == pytest.approx(curves[best_lr].max(), abs=1e-6)
    assert all(len(c) == 4 for c in curves.values())  # patience off: every epoch ran
    assert len(record["per_query"]["GAP"]) == 22
    for measure, mean in record["test"].items():
        assert mean == pytest.approx(np.mean(list(record["per_query"][measure].values())))
    # same seed, same numbers; another seed, other numbers
    again = run_fold(config, 1, progress=False)
    assert again["per_query"] == record["per_query"] and again["vali"] == record["vali"]
    other = load_config(_write(tmp_path, {**_small(tmp_path), "training": {**_small(tmp_path)["training"], "seed": 7}}),
                        CVConfig)
    assert run_fold(other, 1, progress=False)["vali"] != record["vali"]


def test_test_scores_are_gaprank_metrics_of_the_selected_model(tmp_path, ohsumed_fold1):
    data = _small(tmp_path, kind="listnet")
    data["training"].update(learning_rates=[0.01], epochs=3)
    config = load_config(_write(tmp_path, data), CVConfig)
    record = run_fold(config, 1, progress=False)
    # retrain up to the selected epoch by hand and score the test fold with ranking_feval
    torch.manual_seed(1)
    model = config.model.build(ohsumed_fold1.train.num_features)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    batches = length_batches(ohsumed_fold1.train, 16, torch.float32)
    shuffle = torch.Generator().manual_seed(1)
    loss_fn = config.loss.build()
    for _ in range(record["selected"]["epoch"]):
        for index in torch.randperm(len(batches), generator=shuffle).tolist():
            b = batches[index]
            optimizer.zero_grad()
            loss_fn(model(b.features), b.labels, b.mask).backward()
            optimizer.step()
    test = ohsumed_fold1.test
    expected = ranking_feval(["NDCG@10", "MAP", "P@10", "GAP"], g=[0.5, 0.5], conventions="letor3").evaluate(
        predict(model, torch.as_tensor(test.features, dtype=torch.float32)), test.labels, test.group_sizes)
    for measure, value in expected.items():
        assert record["test"][measure] == pytest.approx(value, abs=1e-12)


def test_run_writes_results_skips_finished_folds_and_retrains_on_change(tmp_path, ohsumed_fold1):
    data = _small(tmp_path)
    data["training"].update(epochs=2, learning_rates=[0.01])
    config = load_config(_write(tmp_path, data), CVConfig)
    summary = run(config, progress=False)
    out = tmp_path / "out"
    assert summary["folds"] == ["Fold1"] and set(summary["mean"]) == {"NDCG@10", "MAP", "P@10", "GAP"}
    saved = json.loads((out / "summary.json").read_text())
    assert saved["conventions"]["name"] == "letor3" and saved["config"]["loss"]["kind"] == "lambdarank"
    assert (out / "per_query.tsv").read_text().count("\n") == 23 and "| **mean** |" in (out / "table.md").read_text()
    run(config, progress=False)
    events = [json.loads(line)["event"] for line in (out / "log.jsonl").read_text().splitlines()]
    assert events.count("fold_start") == 1 and "fold_skipped" in events
    data["training"]["epochs"] = 1
    run(load_config(_write(tmp_path, data), CVConfig), progress=False)
    events = [json.loads(line)["event"] for line in (out / "log.jsonl").read_text().splitlines()]
    assert events.count("fold_start") == 2


LOSSES = [
    {"kind": "soft", "measure": m, **({"g": [0.5, 0.5]} if m in ("gap", "xgap", "egap") else {})}
    for m in ("gap", "xgap", "egap", "ap", "ndcg")
] + [
    {"kind": "soft", "measure": "gap", "g": [0.5, 0.5], "smoothing": "expected"},
    *[{"kind": "soft", "measure": m, "smoothing": s, "sigma": 0.5, **({"g": [0.5, 0.5]} if m == "gap" else {})}
      for m in ("gap", "ndcg") for s in ("approx", "neuralsort", "softsort", "fast_soft_rank")],
    {"kind": "lambdarank", "measure": "ndcg", "truncation_level": 10},
    {"kind": "ranknet"},
    {"kind": "listnet"},
]


@pytest.mark.parametrize("loss", LOSSES, ids=lambda d: f"{d['kind']}-{d.get('measure', '')}-{d.get('smoothing', '')}")
def test_every_loss_kind_gives_a_finite_descent_direction(loss):
    config = LossConfig(**loss)
    config.validate()
    fn = config.build()
    torch.manual_seed(0)
    scores = torch.randn(3, 6, dtype=torch.float64, requires_grad=True)
    labels = torch.tensor([[2, 1, 0, 0, 1, 0], [0, 0, 1, 0, 0, 0], [1, 2, 0, 2, 0, 0]])
    mask = torch.ones(3, 6, dtype=torch.bool)
    mask[1, 4:] = False
    value = fn(scores, labels, mask)
    value.backward()
    assert torch.isfinite(value) and torch.isfinite(scores.grad).all() and scores.grad.abs().sum() > 0
    assert (scores.grad[1, 4:] == 0).all()  # padding
    stepped = fn((scores - 1e-3 * scores.grad).detach(), labels, mask)
    assert stepped < value  # a small step against the gradient lowers the loss


def test_models_and_length_batches(ohsumed_fold1):
    linear = ModelConfig().build(45)
    mlp = ModelConfig(kind="mlp", hidden=[16, 8], dropout=0.1).build(45)
    x = torch.rand(2, 7, 45)
    assert linear(x).shape == (2, 7) and mlp(x).shape == (2, 7)
    batches = length_batches(ohsumed_fold1.train, 8, torch.float32)
    sizes = sorted(ohsumed_fold1.train.group_sizes.tolist())
    assert [int(n) for b in batches for n in b.mask.sum(1)] == sizes  # every query once, sorted by length
    assert all(b.mask[:, -1].any() for b in batches)  # each batch padded only to its own longest query
    assert sum(int(b.labels[b.mask].sum()) for b in batches) == int(ohsumed_fold1.train.labels.sum())


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda d: d["training"].update(epoks=3), "unknown key 'epoks'"),
        (lambda d: d["training"].update(epochs="ten"), "training.epochs must be an integer"),
        (lambda d: d["training"].update(learning_rates=[]), "learning_rates"),
        (lambda d: d["training"].update(dtype="float16"), "training.dtype must be one of"),
        (lambda d: d.pop("loss"), "loss is required"),
        (lambda d: d["loss"].update(kind="softmax"), "loss.kind must be one of"),
        (lambda d: d["loss"].pop("measure"), "loss: kind 'lambdarank' needs a measure"),
        (lambda d: d["loss"].update(kind="soft", smoothing="expected", measure="ndcg"), "AP family"),
        (lambda d: d["loss"].update(measure="ap"), "loss: kind 'lambdarank': g applies to"),
        (lambda d: d["loss"].update(kind="soft", truncation_level=5),
         "kind 'soft' takes no setting 'truncation_level'.*kinds that take it: lambdarank"),
        (lambda d: d["loss"].update(g=[0.5, 0.6]), "sum to 1"),
        (lambda d: d["loss"].update(kind="soft", smoothing="sinkhorn"), "loss.smoothing must be one of"),
        (lambda d: d["loss"].update(kind="soft", smoothing="paper"), "loss.smoothing must be one of"),
        (lambda d: d["loss"].update(kind="lambdarank", smoothing="approx"), "loss.smoothing is only for loss.kind 'soft'"),
        (lambda d: d["loss"].update(kind="exact"), "loss.kind must be one of 'soft' | 'lambdarank'"),
        (lambda d: d["loss"].update(kind="soft", mode="paper"), "loss: unknown key 'mode'"),
        (lambda d: d["loss"].update(kind="soft", measure="vG", g=None, smoothing="approx"), "threshold identity"),
        (lambda d: d["loss"].update(sigma=0), "sigma"),
        (lambda d: d["model"].update(kind="mlp", hidden=[]), "model.hidden"),
        (lambda d: d["data"].update(folds=[0]), "folds"),
        (lambda d: d["evaluation"].update(selection="GAP@ten"), "GAP@ten"),
        (lambda d: d["training"].update(weight_decay=float("nan")), "training.weight_decay must be a finite number"),
        (lambda d: d["training"].update(learning_rates=[float("inf")]), "training.learning_rates\\[0\\] must be a finite"),
        (lambda d: d["training"].update(seed=2**64), "training.seed must fit in 64 bits"),
        (lambda d: d["training"].update(seed=-1), "training.seed must be in 0..2\\^63-1"),
        (lambda d: d.update(output_dir=""), "output_dir must name a directory; got ''"),
        (lambda d: d.update(output_dir="  "), "output_dir must name a directory"),
    ],
)
def test_config_errors_are_clear_messages(tmp_path, change, message):
    data = {**_small(tmp_path), "model": {"kind": "linear"}}
    change(data)
    with pytest.raises(ConfigError, match=message):
        load_config(_write(tmp_path, data), CVConfig)


def test_num_threads_auto_is_the_cores_this_process_may_use(tmp_path, monkeypatch):
    """``num_threads: auto`` (what the shipped configs say) resolves, when the config is read, to the cores of
    this process's CPU affinity, shared among torchrun's local processes; anything else is refused."""
    import os

    from training.config import auto_threads

    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    data = _small(tmp_path)
    data["training"]["num_threads"] = "auto"
    monkeypatch.delenv("LOCAL_WORLD_SIZE", raising=False)
    assert load_config(_write(tmp_path, data), CVConfig).training.num_threads == cores == auto_threads()
    monkeypatch.setenv("LOCAL_WORLD_SIZE", str(2 * cores))  # more processes than cores: one thread each
    assert load_config(_write(tmp_path, data), CVConfig).training.num_threads == 1
    data["training"]["num_threads"] = "all"
    with pytest.raises(ConfigError, match="training.num_threads must be an integer or auto; got 'all'"):
        load_config(_write(tmp_path, data), CVConfig)
    data["training"]["num_threads"] = 0
    with pytest.raises(ConfigError, match="training.num_threads must be >= 1"):
        load_config(_write(tmp_path, data), CVConfig)
    data["training"].update(num_threads=2, seed="auto")  # only a thread count takes auto
    with pytest.raises(ConfigError, match="training.seed must be an integer; got 'auto'"):
        load_config(_write(tmp_path, data), CVConfig)


def test_the_shipped_configs_ask_for_auto_threads():
    from training.lambdamart import LambdaMARTConfig

    for path in sorted((ROOT / "configs").rglob("*.yaml")):
        text = yaml.safe_load(path.read_text())
        for section in ("training", "booster"):
            if isinstance(text.get(section), dict) and "num_threads" in text[section]:
                assert text[section]["num_threads"] == "auto", path
    config = load_config(ROOT / "configs" / "ohsumed" / "lambdamart_gap.yaml", LambdaMARTConfig)
    assert isinstance(config.booster.num_threads, int) and config.booster.num_threads >= 1


def test_more_threads_than_cores_is_one_warning(monkeypatch):
    import torch

    from training import _runner

    before = torch.get_num_threads()
    monkeypatch.setattr(_runner, "_oversubscription_told", False)
    monkeypatch.setattr(_runner, "available_cores", lambda: 2)
    monkeypatch.delenv("LOCAL_WORLD_SIZE", raising=False)
    try:
        with pytest.warns(_runner.OversubscribedWarning, match="2 threads x 2 processes on 2 cores.*set num_threads to 1"):
            _runner.use_threads(2, processes=2)
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("error")
            _runner.use_threads(3)  # said once per process
            monkeypatch.setattr(_runner, "_oversubscription_told", False)
            _runner.use_threads(1, processes=2)  # within the cores: nothing to say
    finally:
        _runner.use_threads(before)


SMOOTHING_RECORDS = sorted((ROOT / "results").glob("*-untuned/*/folds/Fold1.json"))


@pytest.mark.parametrize("record", [p for p in SMOOTHING_RECORDS if p.parents[1].name.startswith(("soft_", "exact_"))],
                         ids=lambda p: f"{p.parents[2].name}/{p.parents[1].name}")
def test_committed_records_stand_for_every_spelling_of_their_smoothing(record, tmp_path, monkeypatch):
    """A SoftRank or E[M] config written with ``smoothing:`` is the same run as the shipped one, so the committed
    fold records are reused; another smoothing is another run."""
    import training.config
    from training._runner import same_run_config

    held = json.loads(record.read_text())["provenance"]["config"]
    # num_threads: auto is the cores this process may use; the records were made on two
    monkeypatch.setattr(training.config, "available_cores", lambda: held["training"]["num_threads"])
    shipped = ROOT / "configs" / record.parents[2].name.replace("-untuned", "") / f"{record.parents[1].name}.yaml"
    assert same_run_config(held, load_config(shipped, CVConfig))
    data = read_config_data(shipped)
    expected = data["loss"].get("smoothing") == "expected"
    if not expected:  # SoftRank: with smoothing unset or "softrank", the same run
        config = load_config(_write(tmp_path, {**data, "loss": {**data["loss"], "smoothing": "softrank"}}), CVConfig)
        assert same_run_config(held, config) and config.loss.smoothing is None
    else:  # E[M]: kind soft, smoothing "expected"
        assert held["loss"]["kind"] == "soft" and held["loss"]["smoothing"] == "expected"
    if not expected:
        other = load_config(_write(tmp_path, {**data, "loss": {**data["loss"], "smoothing": "approx"}}), CVConfig)
        assert not same_run_config(held, other)


def test_a_run_is_reused_under_its_new_spelling(tmp_path, ohsumed_fold1):
    data = _small(tmp_path, kind="soft", measure="gap", g=[0.5, 0.5], sigma=0.5)
    data["training"].update(epochs=1, learning_rates=[0.01])
    assert run(load_config(_write(tmp_path, data), CVConfig), progress=False)["trained_now"] == ["Fold1"]
    data["loss"]["smoothing"] = "softrank"
    assert run(load_config(_write(tmp_path, data), CVConfig), progress=False)["trained_now"] == []
    data["loss"]["smoothing"] = "fast_soft_rank"
    summary = run(load_config(_write(tmp_path, data), CVConfig), progress=False)
    assert summary["trained_now"] == ["Fold1"]
    saved = json.loads((tmp_path / "out" / "folds" / "Fold1.json").read_text())
    assert saved["provenance"]["config"]["loss"]["smoothing"] == "fast_soft_rank"


def test_a_binary_g_is_a_valid_loss_setting(tmp_path):
    config = load_config(_write(tmp_path, _small(tmp_path, kind="lambdarank", measure="gap", g=[1.0])), CVConfig)
    assert config.loss.g == [1.0]
    with pytest.raises(ConfigError, match="sum to 1"):
        load_config(_write(tmp_path, _small(tmp_path, kind="lambdarank", measure="gap", g=[0.7])), CVConfig)


def test_an_empty_output_directory_writes_nothing_into_the_working_directory(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    config = _write(tmp_path, {**_small(tmp_path), "output_dir": ""})
    assert main(["--config", str(config)]) == 2
    assert main(["--config", str(config), "--quick"]) == 2
    assert "output_dir must name a directory" in capsys.readouterr().err
    good = _write(tmp_path, _small(tmp_path), "good.yaml")
    assert main(["--config", str(good), "--out", " "]) == 2
    assert "--out must name a directory" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["config.yaml", "good.yaml"]


def test_output_dir_below_a_file_and_a_full_run_log_are_one_line_errors(tmp_path, monkeypatch, capsys):
    import errno

    blocker = tmp_path / "a_file"
    blocker.write_text("not a folder")
    assert main(["--config", str(_write(tmp_path, {**_small(tmp_path), "output_dir": str(blocker / "out")}))]) == 2
    err = capsys.readouterr().err
    assert "cannot create the output directory" in err and "Not a directory" in err and "Traceback" not in err
    real_open = Path.open

    def full_disk(self, mode="r", *args, **kwargs):
        if self.name == "log.jsonl" and "a" in mode:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_open(self, mode, *args, **kwargs)

    monkeypatch.setattr(Path, "open", full_disk)
    assert main(["--config", str(_write(tmp_path, _small(tmp_path), "ok.yaml"))]) == 2
    assert "cannot write the run log" in capsys.readouterr().err


def test_cli_quick_mode_and_errors(tmp_path, ohsumed_fold1):
    data = _small(tmp_path)
    data["data"]["folds"] = [1, 2]
    assert main(["--config", str(_write(tmp_path, data)), "--quick"]) == 0
    quick = tmp_path / "out-quick"
    record = json.loads((quick / "folds" / "Fold1.json").read_text())
    assert not (quick / "folds" / "Fold2.json").exists() and list(record["vali"]) == ["0.001"]
    assert len(record["vali"]["0.001"]["GAP"]) == 2 and not (tmp_path / "out").exists()
    bad = tmp_path / "bad.yaml"
    bad.write_text(f"name: x\ndata: {{dataset: OHSUMED, data_dir: /nonexistent}}\noutput_dir: {tmp_path / 'o'}\n"
                   "loss: {kind: listnet}\n")
    out = subprocess.run([sys.executable, "-m", "training.cv", "--config", str(bad)], cwd=ROOT,
                         capture_output=True, text=True)
    assert out.returncode == 2 and "/nonexistent" in out.stderr and "Traceback" not in out.stderr
    typo = tmp_path / "typo.yaml"
    typo.write_text("name: x\ndata: {dataset: OHSUMED}\noutput_dir: o\nloss: {kind: listnet, measure: gap}\n")
    out = subprocess.run([sys.executable, "-m", "training.cv", "--config", str(typo)], cwd=ROOT,
                         capture_output=True, text=True)
    assert out.returncode == 2 and "takes no measure" in out.stderr and "Traceback" not in out.stderr


def test_a_diverging_loss_is_a_clear_error(tmp_path, ohsumed_fold1, monkeypatch):
    from training import cv

    config = load_config(_write(tmp_path, _small(tmp_path, kind="listnet")), CVConfig)
    monkeypatch.setattr(cv.LossConfig, "build", lambda self: (lambda s, y, m: s.sum() * float("nan")))
    with pytest.raises(cv.TrainingDiverged, match="loss became nan at epoch 1 .*smaller learning rate"):
        run_fold(config, 1, progress=False)


class _GoesNaN(torch.nn.Module):
    """A linear model whose weights turn NaN after ``steps`` forward calls (what a too-large step does)."""

    def __init__(self, features: int, steps: int):
        super().__init__()
        self.linear, self.calls, self.steps = torch.nn.Linear(features, 1), 0, steps

    def forward(self, x):
        self.calls += 1
        if self.calls > self.steps:
            with torch.no_grad():
                self.linear.weight.fill_(float("nan"))
        return self.linear(x).squeeze(-1)


@pytest.mark.parametrize("steps, message", [(3, "loss became nan at epoch 1"),  # mid-epoch: train scores
                                            (4, "vali scores became NaN or infinite at epoch 1")])  # vali scoring
def test_weights_gone_nan_are_divergence_not_bad_input(tmp_path, ohsumed_fold1, monkeypatch, steps, message):
    from training import cv

    config = load_config(_write(tmp_path, _small(tmp_path)), CVConfig)  # LambdaRank-GAP: refuses NaN scores
    monkeypatch.setattr(cv.ModelConfig, "build", lambda self, n: _GoesNaN(n, steps))
    with pytest.raises(cv.TrainingDiverged, match=message):
        run_fold(config, 1, progress=False)


# --- hardening: what a fold record holds, and results on disk ---


def _toy(tmp_path: Path, data_dir: Path, folds=(1, 2)) -> dict:
    return {
        "name": "toy",
        "data": {"dataset": "OHSUMED", "data_dir": str(data_dir), "folds": list(folds)},
        "loss": {"kind": "lambdarank", "measure": "gap", "g": [0.5, 0.5]},
        "training": {"epochs": 2, "batch_size": 4, "learning_rates": [0.01], "patience": None, "num_threads": 1},
        "evaluation": {"selection": "GAP", "measures": ["NDCG@10", "MAP", "P@10", "GAP"]},
        "output_dir": str(tmp_path / "out"),
    }


def _events(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "log.jsonl").read_text().splitlines()]


def test_changed_data_is_retrained_never_reused(tmp_path, toy_data, capsys):
    from conftest import write_toy_dataset

    config = load_config(_write(tmp_path, _toy(tmp_path, toy_data)), CVConfig)
    first = run(config, progress=False)
    record = json.loads((tmp_path / "out" / "folds" / "Fold1.json").read_text())
    assert record["provenance"]["data"]["test"][0]["file"] == "P1.txt"
    assert set(record["provenance"]) == {"config", "data", "gaprank", "versions", "machine"}
    assert set(record["provenance"]["versions"]) == {"torch", "gaprank", "numpy", "numba"}
    assert record["provenance"]["machine"].endswith(cpu_name()) and cpu_name()
    assert run(config, progress=False)["trained_now"] == []  # same config, data and version: reused
    write_toy_dataset(toy_data, seed=5)  # same config, new data
    second = run(config, progress=True)
    assert second["trained_now"] == ["Fold1", "Fold2"]
    assert "Fold1: the data files changed since it was trained; training it again" in capsys.readouterr().err
    assert [e["reason"] for e in _events(tmp_path / "out") if e["event"] == "fold_stale"] == [
        "the data files changed since it was trained"] * 2
    forced = run(config, progress=False, force=True)
    assert second["mean"] == forced["mean"] != first["mean"]


def test_another_gaprank_version_is_retrained(tmp_path, toy_data, monkeypatch):
    import gaprank

    config = load_config(_write(tmp_path, _toy(tmp_path, toy_data, folds=[1])), CVConfig)
    run(config, progress=False)
    monkeypatch.setattr(gaprank, "__version__", "99.0")
    assert run(config, progress=False)["trained_now"] == ["Fold1"]
    stale = [e for e in _events(tmp_path / "out") if e["event"] == "fold_stale"]
    assert [e["reason"] for e in stale] == ["gaprank's version changed since it was trained"]


def test_a_truncated_record_is_retrained_and_files_are_written_atomically(tmp_path, toy_data, monkeypatch):
    import os

    config = load_config(_write(tmp_path, _toy(tmp_path, toy_data, folds=[1])), CVConfig)
    run(config, progress=False)
    path = tmp_path / "out" / "folds" / "Fold1.json"
    text = path.read_text()
    path.write_text(text[: len(text) // 2])  # what a kill in the middle of a plain write leaves
    assert run(config, progress=False)["trained_now"] == ["Fold1"]
    assert any(e["event"] == "fold_record_unreadable" for e in _events(tmp_path / "out"))
    assert json.loads(path.read_text())["test"] == json.loads(text)["test"]
    # a write that fails leaves the previous file whole and no temporary file behind
    summary = (tmp_path / "out" / "summary.json").read_text()
    monkeypatch.setattr(os, "replace", lambda *a: (_ for _ in ()).throw(OSError(28, "No space left on device")))
    with pytest.raises(Exception, match="cannot write .*summary.json: No space left on device"):
        run(config, progress=False)
    assert (tmp_path / "out" / "summary.json").read_text() == summary
    assert not [p for p in (tmp_path / "out").iterdir() if p.name.endswith(".tmp")]


def test_a_fold_subset_keeps_every_finished_fold_in_the_summary(tmp_path, toy_data):
    config = load_config(_write(tmp_path, _toy(tmp_path, toy_data, folds=[1, 2, 3])), CVConfig)
    assert run(config, folds=[2], progress=False)["folds"] == ["Fold2"]
    result = run(config, folds=[1], progress=False)
    assert result["trained_now"] == ["Fold1"] and result["folds"] == ["Fold1", "Fold2"]
    saved = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert saved["folds"] == ["Fold1", "Fold2"] and (tmp_path / "out" / "per_query.tsv").read_text().count("\n") == 9
    with pytest.raises(GaprankInputError, match="fold \\[4\\] not among the config's data.folds \\[1, 2, 3\\]"):
        run(config, folds=[4], progress=False)
    path = _write(tmp_path, _toy(tmp_path, toy_data, folds=[1, 2, 3]))
    out = subprocess.run([sys.executable, "-m", "training.cv", "--config", str(path), "--folds", "4"], cwd=ROOT,
                         capture_output=True, text=True)
    assert out.returncode == 2 and "not among the config's data.folds" in out.stderr and "Traceback" not in out.stderr


def test_a_second_run_on_one_output_directory_is_refused(tmp_path, toy_data):
    from filelock import FileLock

    from training._runner import OutputInUse

    path = _write(tmp_path, _toy(tmp_path, toy_data, folds=[1]))
    (tmp_path / "out").mkdir()
    with FileLock(str(tmp_path / "out" / ".lock")):  # another run holds the directory
        with pytest.raises(OutputInUse, match="out is in use by another run"):
            run(load_config(path, CVConfig), progress=False)
        out = subprocess.run([sys.executable, "-m", "training.cv", "--config", str(path)], cwd=ROOT,
                             capture_output=True, text=True)
        assert out.returncode == 2 and "in use by another run" in out.stderr and "Traceback" not in out.stderr
    assert not (tmp_path / "out" / "folds").exists()
    assert run(load_config(path, CVConfig), progress=False)["trained_now"] == ["Fold1"]


def test_config_files_that_are_not_yaml_mappings_are_one_line_errors(tmp_path):
    dup = tmp_path / "dup.yaml"
    dup.write_text("name: x\noutput_dir: o\nname: y\n")
    with pytest.raises(ConfigError, match="dup.yaml, line 3: key 'name' is given twice \\(first at line 1\\)"):
        load_config(dup, CVConfig)
    nested = tmp_path / "nested.yaml"
    nested.write_text("name: x\ntraining:\n  epochs: 3\n  epochs: 4\n")
    with pytest.raises(ConfigError, match="line 4: key 'epochs' is given twice"):
        load_config(nested, CVConfig)
    binary = tmp_path / "bin.yaml"
    binary.write_bytes(b"name: \xff\xfe\n")
    with pytest.raises(ConfigError, match="bin.yaml: not UTF-8 text"):
        load_config(binary, CVConfig)
    with pytest.raises(ConfigError, match="is a directory; give a YAML file"):
        load_config(tmp_path, CVConfig)
    for path in (dup, binary, tmp_path):
        out = subprocess.run([sys.executable, "-m", "training.cv", "--config", str(path)], cwd=ROOT,
                             capture_output=True, text=True)
        assert out.returncode == 2 and out.stderr.count("\n") == 1 and "Traceback" not in out.stderr


def test_tqdm_disable_silences_the_progress_bars(tmp_path, toy_data):
    import os

    path = _write(tmp_path, _toy(tmp_path, toy_data, folds=[1]))
    env = {**os.environ, "TQDM_DISABLE": "1"}
    quiet = subprocess.run([sys.executable, "-m", "training.cv", "--config", str(path)], cwd=ROOT,
                           capture_output=True, text=True, env=env)
    assert quiet.returncode == 0 and "epoch" not in quiet.stderr and "fold/s" not in quiet.stderr
    assert "toy Fold1" not in quiet.stderr  # nor the line per fold
    env["TQDM_DISABLE"] = "0"
    loud = subprocess.run([sys.executable, "-m", "training.cv", "--config", str(path), "--force"], cwd=ROOT,
                          capture_output=True, text=True, env=env)
    # standard error is a pipe, not a terminal: one line per fold, no bars
    assert loud.returncode == 0 and "toy Fold1: epoch" in loud.stderr and "\r" not in loud.stderr


def test_a_config_takes_its_base_and_replaces_what_it_gives(tmp_path):
    """``base:``: every key of the base file, the run's own replacing them section by section (a list whole)."""
    (tmp_path / "base.yaml").write_text(yaml.safe_dump({
        "data": {"dataset": "OHSUMED", "folds": [1, 2]}, "loss": {"kind": "soft", "sigma": 0.5},
        "training": {"epochs": 3, "learning_rates": [0.1, 0.2]}, "output_dir": str(tmp_path / "base_out")}))
    run_file = _write(tmp_path, {"base": "base.yaml", "name": "r", "loss": {"measure": "gap", "g": [0.5, 0.5]},
                                 "training": {"learning_rates": [0.3]}, "output_dir": str(tmp_path / "out")})
    config = load_config(run_file, CVConfig)
    assert (config.loss.kind, config.loss.measure, config.loss.sigma) == ("soft", "gap", 0.5)
    assert config.training.epochs == 3 and config.training.learning_rates == [0.3] and config.data.folds == [1, 2]
    assert config.output_dir == str(tmp_path / "out")


@pytest.mark.parametrize("base, message", [
    ("missing.yaml", "base missing.yaml does not exist"),
    ("", "base must name a YAML file beside it"),
    ("chained.yaml", "has a base of its own; a base is one file"),
    ("listed.yaml", "must be a mapping of config sections"),
])
def test_a_bad_base_is_one_line_naming_the_file(tmp_path, base, message):
    (tmp_path / "chained.yaml").write_text("base: other.yaml\nname: x\n")
    (tmp_path / "listed.yaml").write_text("- 1\n- 2\n")
    run_file = _write(tmp_path, {"base": base, "name": "r"})
    with pytest.raises(ConfigError, match=message) as caught:
        load_config(run_file, CVConfig)
    assert str(caught.value).startswith(str(run_file)) and "\n" not in str(caught.value)


def test_each_shipped_run_starts_from_its_data_sets_base():
    """One base per data set and trainer: a run file holds its name, output and what makes it that run, and no key
    that repeats its base's value."""
    from training.lambdamart import LambdaMARTConfig

    for folder in ("ohsumed", "mq2008"):
        for path in sorted((ROOT / "configs" / folder).glob("*.yaml")):
            if path.name.startswith(("compare", "tune", "base_", "clicks")):
                continue
            own = yaml.safe_load(path.read_text())
            assert own["base"] == ("base_cv.yaml" if "loss" in read_config_data(path) else "base_lambdamart.yaml"), path
            base = yaml.safe_load((path.parent / own["base"]).read_text())
            for section, values in own.items():
                if isinstance(values, dict) and isinstance(base.get(section), dict):
                    repeated = [key for key, value in values.items() if base[section].get(key, object()) == value]
                    assert not repeated, f"{path.name}: {section}.{repeated} repeats the base"
            load_config(path, CVConfig if "loss" in own or "loss" in base else LambdaMARTConfig)
