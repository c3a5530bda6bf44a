"""training.clicks (through training.compare): the quick comparison end to end, the reuse of finished cells and of
each method by its code, the gap-closed statistic against a hand computation, bad configs."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
import yaml

from training import clicks
from training.compare import main

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "configs" / "mq2008" / "clicks.yaml"


def test_the_quick_click_comparison_runs_through_training_compare_and_reuses_its_cells(tmp_path, capsys):
    out = tmp_path / "clicks"
    assert main(["--config", str(CONFIG), "--quick", "--out", str(out)]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["run"]["cells"] == 1 and summary["run"]["cells_reused"] == 0 and summary["pending"] == []
    (condition,) = summary["conditions"]
    methods = condition["by_sessions"]["10000"]
    (cell_file,) = (out / "cells").rglob("*.json")
    record = json.loads(cell_file.read_text())
    # an estimate refused for too few shuffled sessions (500 here) is recorded with its reason, and left out
    refused = {m for m, entry in record["methods"].items() if "refused" in entry["values"]["10000"]}
    assert refused <= {"affine GAP (estimated)", "IPW GAP (estimated)"}
    assert all("too few" in record["methods"][m]["values"]["10000"]["refused"] for m in refused)
    assert set(methods) == set(clicks.METHODS) - refused
    for row in methods.values():
        assert set(row["means"]) == {"NDCG@10", "GAP", "MAP", "P@10"}
        assert all(0.0 <= v <= 1.0 for v in row["means"].values())
    # the skylines and the logger do not depend on the session count; a learner on clicks reads the log
    assert record["key"]["gaprank_source"] == clicks.gaprank_source()
    dla = np.array(record["methods"]["DLA GAP (MLP)"]["values"]["10000"]["propensities"])  # [positions, levels]
    assert dla.shape == (10, 3) and (dla[0] == 1.0).all() and ((dla > 0) & np.isfinite(dla)).all()
    assert "| IPW GAP |" in (out / "table.md").read_text()
    capsys.readouterr()
    assert main(["--config", str(CONFIG), "--quick", "--out", str(out)]) == 0
    again = json.loads((out / "summary.json").read_text())
    assert again["run"]["cells_reused"] == 1
    assert again["conditions"] == summary["conditions"]


def test_gap_closed_is_the_ratio_of_sums_with_a_bootstrap_interval():
    """Three cells by hand: (method - naive) / (shown skyline - naive), summed over cells."""
    values = [(0.30, 0.20, 0.40), (0.25, 0.20, 0.30), (0.22, 0.21, 0.23)]
    cells = [{"methods": {name: {"values": {"100": {"NDCG@10": v}}} for name, v in
                          zip(("IPW GAP", "naive GAP", "skyline, shown"), row, strict=True)}} for row in values]
    result = clicks.gap_closed(cells, "IPW GAP", "100", "NDCG@10", resamples=2000)
    gained = sum(a - b for a, b, _ in values)
    possible = sum(c - b for _, b, c in values)
    assert result["closed"] == pytest.approx(gained / possible)
    low, high = result["interval"]
    assert low <= result["closed"] <= high
    assert result["cells"] == 3 and result["gap"] == pytest.approx(possible / 3)


def test_a_method_whose_code_is_unchanged_is_kept_and_a_new_one_trained(tmp_path):
    """run_cell keeps a held method with its code's hash and trains the ones it lacks."""
    config = clicks.quick_config(clicks.load_config(CONFIG, clicks.ClicksConfig))
    first = clicks.run_cell(config.__class__(**{**config.__dict__, "methods": ["logger", "naive GAP"]}),
                            config.conditions()[0], 1, 1)
    assert set(first["methods"]) == {"logger", "naive GAP"}
    held = {"methods": first["methods"]}
    wider = config.__class__(**{**config.__dict__, "methods": ["logger", "naive GAP", "IPW GAP"]})
    second = clicks.run_cell(wider, config.conditions()[0], 1, 1, held)
    assert second["methods"]["naive GAP"] is first["methods"]["naive GAP"]
    assert set(second["methods"]) == {"logger", "naive GAP", "IPW GAP"}
    assert np.isfinite(second["methods"]["IPW GAP"]["values"]["10000"]["NDCG@10"])


@pytest.mark.parametrize("change, message", [
    ({"kind": "compare"}, "kind must be 'clicks'"),
    ({"methods": ["IPW GAP", "DLA"]}, "'DLA' is not one of"),
    ({"headline_method": "best"}, "headline_method: 'best' is not one of"),
    ({"logger": {"share": 0.0}}, r"logger.share must be in \(0, 1\]"),
    ({"sessions": [0]}, "sessions must be positive"),
])
def test_a_bad_click_config_exits_2_naming_the_problem(tmp_path, capsys, change, message):
    data = yaml.safe_load(CONFIG.read_text())
    data.update(change)
    path = tmp_path / "clicks.yaml"
    path.write_text(yaml.safe_dump(data))
    assert clicks.main(["--config", str(path), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert re.search(message, err), err
    assert err.count("\n") == 1


def test_a_method_s_own_gaprank_modules_key_that_method_only(monkeypatch):
    """A method's own modules (outside the shared NUMBERS_FROM: the joint learner's, XGBoost's adapter) change its
    code's hash and no other's."""
    methods = ("IPW GAP (joint)", "XGBoost lambdarank_unbiased", "IPW GAP")
    before = {m: clicks.method_code(m) for m in methods}
    monkeypatch.setitem(clicks.METHOD_MODULES, "IPW GAP (joint)", ("clicks/_joint.py",))
    monkeypatch.setitem(clicks.METHOD_MODULES, "XGBoost lambdarank_unbiased", ("xgboost/_dmatrix.py",))
    assert clicks.method_code("IPW GAP (joint)") != before["IPW GAP (joint)"]
    assert clicks.method_code("XGBoost lambdarank_unbiased") != before["XGBoost lambdarank_unbiased"]
    assert clicks.method_code("IPW GAP") == before["IPW GAP"]
    assert clicks.gaprank_source() == clicks.gaprank_source(clicks.NUMBERS_FROM)
    assert not set(clicks.NUMBERS_FROM) & {part for parts in clicks.METHOD_MODULES.values() for part in parts}


def test_the_network_settings_key_the_pytorch_rows_only():
    """The PyTorch rows' settings (config ``network``) are part of their code's hash, not of the cell's key, so a
    change trains those rows again and keeps the others."""
    import dataclasses

    config = clicks.load_config(CONFIG, clicks.ClicksConfig)
    changed = dataclasses.replace(config, network=dataclasses.replace(config.network, steps=10))
    for method in clicks.METHODS:
        moved = clicks.method_code(method, changed.network) != clicks.method_code(method, config.network)
        assert moved == (method in clicks.NETWORK_METHODS), method
    condition = config.conditions()[0]
    assert clicks.cell_key(changed, condition, 1, 1) == clicks.cell_key(config, condition, 1, 1)
