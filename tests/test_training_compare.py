"""training.compare: significance tests against brute force, the summary's schema, references, config errors."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pytest
import yaml
from scipy import stats

from gaprank.data import locate_dataset
from training.compare import CompareConfig, letor_baselines, load_runs, main, paired_tests
from training.config import ConfigError, load_config, read_config_data

ROOT = Path(__file__).resolve().parents[1]


def test_paired_tests_match_brute_force():
    rng = np.random.default_rng(3)
    a = rng.random(12)
    b = a + rng.normal(0.05, 0.1, 12)
    b[0] = a[0]  # one tie
    result = paired_tests(a, b, resamples=10_000, seed=1)
    diff = a - b
    t = diff.mean() / (diff.std(ddof=1) / np.sqrt(diff.size))
    assert result["t_test_p"] == pytest.approx(2 * stats.t.sf(abs(t), diff.size - 1), rel=1e-10)
    # every one of the 2^12 sign flips: scipy runs the exact test when resamples >= 4096
    flips = np.array(list(itertools.product([1, -1], repeat=diff.size)))
    null = (flips * diff).mean(axis=1)
    exact = np.mean(np.abs(null) >= abs(diff.mean()) - 1e-12)
    assert result["randomisation_p"] == pytest.approx(exact, rel=1e-9)
    assert result["mean_difference"] == pytest.approx(diff.mean())
    assert (result["wins"], result["ties"], result["losses"]) == ((diff > 0).sum(), 1, (diff < 0).sum())
    same = paired_tests(a, a.copy(), resamples=1000, seed=1)
    assert same["t_test_p"] == 1.0 and same["randomisation_p"] == 1.0 and same["ties"] == 12


def test_paired_tests_tie_values_averaged_over_different_seed_counts():
    # per-query values of a 3-seed and a 5-seed run that agree on every seed differ only by rounding
    values = np.array([0.1, 0.7, 0.3, 0.9, 0.2, 0.6])
    three, five = np.mean(np.tile(values, (3, 1)), axis=0), np.mean(np.tile(values, (5, 1)), axis=0)
    assert np.any(three != five)  # the rounding this guards against
    same = paired_tests(three, five, resamples=1000, seed=1)
    assert (same["wins"], same["ties"], same["losses"]) == (0, 6, 0)
    assert same["t_test_p"] == 1.0 and same["randomisation_p"] == 1.0
    better = five.copy()
    better[:2] += 0.1
    result = paired_tests(better, three, resamples=1000, seed=1)
    assert (result["wins"], result["ties"], result["losses"]) == (2, 4, 0)
    assert result["mean_difference"] == pytest.approx(0.2 / 6)


def test_letor_baselines_are_the_published_averages():
    table = letor_baselines(locate_dataset("OHSUMED") / "letor3-baselines/ohsumed_letor3_baselines.csv",
                            ["NDCG@10", "MAP", "P@10"])
    assert len(table) == 12
    assert table["SmoothRank"]["NDCG@10"] == 0.4568
    assert table["AdaRank-NDCG"]["MAP"] == 0.4498 and table["AdaRank-NDCG"]["P@10"] == 0.5087
    assert max(v["NDCG@10"] for v in table.values()) == 0.4568


@pytest.mark.parametrize("folder", ["ohsumed", "mq2008"])
def test_shipped_compare_configs_load_every_run(folder):
    config = load_config(ROOT / "configs" / folder / "compare.yaml", CompareConfig)
    runs = load_runs(config)
    names = [r.entry.name for r in runs]
    for expected in ["SoftNDCG", "SoftAP", "SoftGAP", "SoftxGAP", "SofteGAP", "E[GAP] exact", "LambdaRank-nDCG",
                     "LambdaRank-AP", "LambdaRank-GAP", "LambdaRank-xGAP", "LambdaRank-eGAP", "RankNet", "ListNet",
                     "LambdaMART-nDCG (native)", "LambdaMART-GAP", "LambdaMART-eGAP"]:
        assert expected in names
    assert {r.config.data.dataset for r in runs} == {folder.upper()}
    assert all(r.config.evaluation.g == [0.5, 0.5] for r in runs)
    if folder == "ohsumed":
        assert len(config.reference) == 6 and config.reference[1].values["NDCG@10"] == 0.4747


def _tiny_compare(tmp_path: Path) -> Path:
    def cv(name, loss, selection):
        data = {"name": name, "data": {"dataset": "OHSUMED", "folds": [1]}, "loss": loss,
                "training": {"epochs": 2, "batch_size": 16, "learning_rates": [0.01], "num_threads": 1},
                "evaluation": {"selection": selection, "measures": ["NDCG@10", "MAP", "P@10", "GAP"], "conventions": "letor3"},
                "output_dir": "unused"}
        path = tmp_path / f"{name}.yaml"
        path.write_text(yaml.safe_dump(data))
        return str(path)

    compare = {
        "name": "tiny", "output_dir": str(tmp_path / "unused"),
        "significance": {"resamples": 2000},
        "letor_baselines": "OHSUMED/letor3-baselines/ohsumed_letor3_baselines.csv",
        "runs": [
            {"name": "LR-nDCG", "learner": "LambdaRank", "optimises": "ndcg",
             "config": cv("lr_ndcg", {"kind": "lambdarank", "measure": "ndcg"}, "NDCG@10")},
            {"name": "LR-AP", "learner": "LambdaRank", "optimises": "ap",
             "config": cv("lr_ap", {"kind": "lambdarank", "measure": "ap"}, "MAP")},
            {"name": "LR-GAP", "learner": "LambdaRank", "optimises": "gap",
             "config": cv("lr_gap", {"kind": "lambdarank", "measure": "gap", "g": [0.5, 0.5]}, "GAP")},
            {"name": "ListNet", "learner": "ListNet", "config": cv("listnet", {"kind": "listnet"}, "NDCG@10")},
        ],
        "reference": [{"source": "paper", "learner": "LambdaRank", "objective": "Opt GAP",
                       "values": {"NDCG@10": 0.4665, "MAP": 0.4432, "P@10": 0.5042}}],
    }
    path = tmp_path / "compare.yaml"
    path.write_text(yaml.safe_dump(compare))
    return path


def test_compare_writes_the_summary_table_and_plots(tmp_path):
    out = tmp_path / "results"
    assert main(["--config", str(_tiny_compare(tmp_path)), "--out", str(out)]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert list(summary["objectives"]) == ["LR-nDCG", "LR-AP", "LR-GAP", "ListNet"]
    for o in summary["objectives"].values():
        for m in ("NDCG@10", "MAP", "P@10", "GAP"):
            assert o[m] == pytest.approx(o["per_fold"]["Fold1"][m])
        fold_record = json.loads((Path(o["output_dir"]) / "folds" / "Fold1.json").read_text())
        assert o["GAP"] == pytest.approx(fold_record["test"]["GAP"])
    assert summary["conventions"]["name"] == "letor3" and summary["g"] == [0.5, 0.5]
    assert summary["run"]["command"].startswith("python -m training.compare --config")
    assert summary["run"]["commit"] and summary["run"]["wall_seconds"] > 0
    pairs = [(r["objective"], r["versus"]) for r in summary["significance"]]
    assert pairs == [("LR-GAP", "LR-nDCG"), ("LR-GAP", "LR-AP")]
    row = summary["significance"][0]["NDCG@10"]
    assert row["queries"] == 22 and 0 <= row["t_test_p"] <= 1 and 0 < row["randomisation_p"] <= 1
    assert row["wins"] + row["ties"] + row["losses"] == 22
    table = (out / "table.md").read_text()
    assert "| LETOR 3.0 baseline | SmoothRank | – | 0.4568 |" in table and "| paper | LambdaRank | Opt GAP |" in table
    assert "| LR-GAP | LR-nDCG |" in table
    assert (out / "per_query.tsv").read_text().count("\n") == 1 + 4 * 22
    assert (out / "plots" / "means.png").stat().st_size > 1000
    assert (out / "plots" / "gap_vs_ndcg_per_query.png").stat().st_size > 1000
    assert summary["run"]["runs_reused"] == [] and "every run trained in this invocation" in table
    # a second invocation reuses every finished run and says so; the numbers are the same
    assert main(["--config", str(_tiny_compare(tmp_path)), "--out", str(out)]) == 0
    again = json.loads((out / "summary.json").read_text())
    assert again["run"]["runs_reused"] == list(summary["objectives"])
    assert "4 of 4 runs reused" in (out / "table.md").read_text()
    assert [o["GAP"] for o in again["objectives"].values()] == [o["GAP"] for o in summary["objectives"].values()]


def test_compare_config_errors(tmp_path):
    good = {"name": "x", "output_dir": "o", "runs": [
        {"name": "A", "learner": "L", "config": "configs/ohsumed/listnet.yaml"},
        {"name": "B", "learner": "L", "config": "configs/ohsumed/ranknet.yaml"}]}

    def load(data):
        path = tmp_path / "c.yaml"
        path.write_text(yaml.safe_dump(data))
        return load_runs(load_config(path, CompareConfig))

    assert len(load(good)) == 2
    with pytest.raises(ConfigError, match="names must be unique"):
        load({**good, "runs": [good["runs"][0], good["runs"][0]]})
    with pytest.raises(ConfigError, match="unknown key 'optimizes'"):
        load({**good, "runs": [{**good["runs"][0], "optimizes": "gap"}]})
    with pytest.raises(ConfigError, match="nope.yaml does not exist"):
        load({**good, "runs": [{**good["runs"][0], "config": "configs/nope.yaml"}]})
    with pytest.raises(ConfigError, match="different data"):
        load({**good, "runs": [good["runs"][0], {**good["runs"][1], "config": "configs/mq2008/ranknet.yaml"}]})
    with pytest.raises(ConfigError, match=r"does not report \['RBP'\]"):
        load({**good, "measures": ["RBP"]})
    with pytest.raises(ConfigError, match="trainer must be one of"):
        load({**good, "runs": [{**good["runs"][0], "trainer": "xgboost"}]})


def test_compare_quick_mode_runs_every_shipped_objective(quick_ohsumed_comparison):
    """What CI runs: the shipped OHSUMED comparison in --quick mode (fold 1, few epochs / rounds)."""
    config, summary = quick_ohsumed_comparison
    assert len(summary["objectives"]) == len(config.runs) and summary["run"]["quick"]
    assert all(0.0 < o["NDCG@10"] < 1.0 for o in summary["objectives"].values())
    # SoftRank, LambdaRank, LambdaMART GAP runs against nDCG and AP; XGBoost's against native nDCG only
    assert len(summary["significance"]) == 4 * 2 + 3 * 2 + 2 * 2 + 2 * 1


def test_run_names_and_baselines_stay_inside_their_directories(tmp_path):
    run_config = read_config_data(ROOT / "configs/ohsumed/listnet.yaml")
    escaping = tmp_path / "escaping.yaml"
    escaping.write_text(yaml.safe_dump({**run_config, "name": "../x"}))
    data = {"name": "x", "output_dir": str(tmp_path / "o"), "runs": [
        {"name": "A", "learner": "L", "config": str(escaping)}]}
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(ConfigError, match="name '../x' must be a plain folder name to be written under --out"):
        load_runs(load_config(path, CompareConfig), out=tmp_path / "dir")
    assert main(["--config", str(path), "--quick", "--out", str(tmp_path / "dir")]) == 2
    assert not (tmp_path / "x").exists()
    good = tmp_path / "good.yaml"
    good.write_text(yaml.safe_dump(run_config))
    path.write_text(yaml.safe_dump({**data, "runs": [{"name": "A", "learner": "L", "config": str(good)}],
                                    "letor_baselines": "../../etc/passwd"}))
    with pytest.raises(ConfigError, match="must be <DATASET>/<path inside"):
        from training.compare import run
        run(load_config(path, CompareConfig), quick=True, out=tmp_path / "dir2", progress=False)


@pytest.mark.parametrize("folder", ["ohsumed", "mq2008"])
def test_shipped_tuned_comparisons_load_with_their_tuning_configs(folder, monkeypatch):
    import training.tune
    from training.compare import load_tuning

    monkeypatch.setattr(training.tune, "available_cores", lambda: 2)  # MQ2008 tunes two studies at once: load it anywhere

    config = load_config(ROOT / "configs" / folder / "compare_tuned.yaml", CompareConfig)
    tune_config = load_tuning(config)
    assert config.seeds == [1, 2, 3, 4, 5] and config.output_dir == f"results/{folder}"
    runs = load_runs(config)
    # the seeds' runs go under the comparison's folder: runs/<folder>, not the committed results/<folder>
    from training._runner import SCRATCH
    assert all(Path(r.config.output_dir).is_relative_to(SCRATCH / folder / "runs") for r in runs)
    tuned = {r.name for r in tune_config.runs}
    # every learner of the comparison is tuned but RankNet and ListNet (one objective each: nothing to compare)
    assert tuned == {r.entry.name for r in runs if r.entry.learner not in ("RankNet", "ListNet")}
    # equal budgets: 30 trials for every learner
    budgets = {learner: {tune_config.learners[r.learner].trials for r in tune_config.runs if r.learner == learner}
               for learner in {r.learner for r in tune_config.runs}}
    assert budgets == {learner: {30} for learner in ("LambdaRank", "LambdaMART", "SoftRank", "ApproxRank", "NeuralSort",
                                                     "SoftSort", "FastSoftRank")}
    # issue 41: each smoothing's GAP run has its nDCG counterpart of the same learner (the paired tests' pair)
    # (ApproxNDCG's runs took the interpolated discount: for GAP the two forms are one)
    for learner, smoothing, ndcg_smoothing in (("ApproxRank", "approx", "approx_interpolated"),
                                               ("NeuralSort", "neuralsort", "neuralsort"),
                                               ("SoftSort", "softsort", "softsort"),
                                               ("FastSoftRank", "fast_soft_rank", "fast_soft_rank")):
        losses = {(r.config.loss.measure, r.config.loss.smoothing) for r in runs if r.entry.learner == learner}
        assert losses == {("gap", smoothing), ("ndcg", ndcg_smoothing)}
    # every run reports LETOR's NDCG@10 and the 1/log2(r+1) one
    assert all({"NDCG@10", "nDCG(discount=log2p1,short_list=pad)@10"} <= set(r.config.evaluation.measures) for r in runs)
    assert all(len(r.seeded) == 5 for r in runs)
