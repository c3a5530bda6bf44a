"""The training scripts' command lines: progress written to a log file is one line per fold, not thousands of
bar updates; every config path their help texts name exists."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from training.config import load_config
from training.cv import CVConfig, run

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = ["training.cv", "training.lambdamart", "training.compare", "training.tune", "training.synthetic"]


def _toy_config(tmp_path: Path, data_dir: Path) -> CVConfig:
    data = {
        "name": "toy",
        "data": {"dataset": "OHSUMED", "data_dir": str(data_dir), "folds": [1, 2]},
        "loss": {"kind": "lambdarank", "measure": "gap", "g": [0.5, 0.5]},
        "training": {"epochs": 3, "batch_size": 4, "learning_rates": [0.01, 0.001], "patience": None, "num_threads": 1},
        "evaluation": {"selection": "GAP", "measures": ["NDCG@10", "GAP"]},
        "output_dir": str(tmp_path / "out"),
    }
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(data))
    return load_config(tmp_path / "config.yaml", CVConfig)


def test_progress_to_a_file_is_one_line_per_fold(tmp_path, toy_data, capsys, monkeypatch):
    monkeypatch.delenv("TQDM_DISABLE", raising=False)
    config = _toy_config(tmp_path, toy_data)
    run(config, progress=True)  # standard error is pytest's capture, not a terminal
    err = capsys.readouterr().err
    assert "\r" not in err and "epoch/s" not in err and "s/epoch" not in err
    announced, *lines = err.splitlines()
    assert announced == "toy: training 2 folds (Fold1, Fold2)" and len(lines) == 2, err  # said before training
    for line, fold in zip(lines, ("Fold1", "Fold2"), strict=True):
        assert re.fullmatch(rf"toy {fold}: epoch \d, learning_rate 0\.0?01, vali GAP [0-9.]+; \d+\.\d s; "
                            r"test NDCG@10 [01]\.\d{4}, GAP [01]\.\d{4}", line), line
    run(config, progress=True)
    assert capsys.readouterr().err.splitlines() == [
        f"toy Fold{k}: finished before with the same config, data and version; reused" for k in (1, 2)]
    run(config, progress=False, force=True)
    assert capsys.readouterr().err == ""
    monkeypatch.setenv("TQDM_DISABLE", "1")  # progress switched off: no bars and no lines
    run(config, progress=True, force=True)
    assert capsys.readouterr().err == ""


def test_progress_on_a_terminal_is_bars(tmp_path, toy_data, capsys, monkeypatch):
    monkeypatch.delenv("TQDM_DISABLE", raising=False)
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    run(_toy_config(tmp_path, toy_data), progress=True)
    err = capsys.readouterr().err
    assert "\r" in err and "lr 0.01" in err and "toy Fold1: epoch" not in err


@pytest.mark.parametrize("script", SCRIPTS)
def test_every_config_path_a_script_s_help_names_exists(script):
    done = subprocess.run([sys.executable, "-m", script, "--help"], capture_output=True, text=True, cwd=ROOT,
                          check=True)
    paths = re.findall(r"configs/[\w./-]+\.ya?ml", done.stdout)
    assert paths or script == "training.synthetic"
    for path in paths:
        assert (ROOT / path).is_file(), f"python -m {script} --help names {path}, which does not exist"


@pytest.mark.parametrize("script", ["training.cv", "training.lambdamart", "training.compare", "training.tune"])
def test_help_is_plain_text(script, capsys):
    """--help shows the module doc as a terminal reads it: no reST roles or double backquotes."""
    import importlib

    with pytest.raises(SystemExit):
        importlib.import_module(script).main(["--help"])
    shown = capsys.readouterr().out
    assert "usage:" in shown and "``" not in shown and ":mod:" not in shown and ":func:" not in shown


def test_committed_records_are_read_never_written_and_win_over_stale_scratch(tmp_path, toy_data, monkeypatch, capsys):
    """A run whose results live in the committed results/ writes to runs/ unless asked (publishing), reuses the
    committed records that stand for it, also over a stale scratch record, and leaves results/ as it was."""
    import dataclasses
    import json

    from training import _runner

    monkeypatch.setattr(_runner, "RESULTS", tmp_path / "results")
    monkeypatch.setattr(_runner, "SCRATCH", tmp_path / "runs")
    config = dataclasses.replace(_toy_config(tmp_path, toy_data), output_dir=str(tmp_path / "results" / "toy"))
    with _runner.publishing(tmp_path / "results" / "toy"):  # --out results/toy: made as the committed results
        assert run(config, progress=False)["trained_now"] == ["Fold1", "Fold2"]
    committed = {p: p.read_bytes() for p in (tmp_path / "results").rglob("*") if p.is_file() and p.name != ".lock"}
    scratch = tmp_path / "runs" / "toy" / "folds"
    scratch.mkdir(parents=True)
    stale = json.loads((tmp_path / "results" / "toy" / "folds" / "Fold1.json").read_text())
    stale["provenance"]["gaprank"] = "0.0.1"  # made by another version: not reusable
    (scratch / "Fold1.json").write_text(json.dumps(stale))
    result = run(config, progress=True)
    assert result["trained_now"] == []  # both folds from the committed records, Fold1's over the stale one
    assert json.loads((scratch / "Fold1.json").read_text())["provenance"]["gaprank"] != "0.0.1"
    assert (tmp_path / "runs" / "toy" / "summary.json").is_file()
    assert "is read, never written" in capsys.readouterr().err
    assert {p: p.read_bytes() for p in (tmp_path / "results").rglob("*") if p.is_file() and p.name != ".lock"} == committed
