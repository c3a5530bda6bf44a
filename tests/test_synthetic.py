"""training.synthetic: an MSLR-shaped set in MSLR's own layout, read by load_fold as the download would be;
the MSLR data sets' feature count and grade scale are checked."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import lightgbm as lgb
import numpy as np
import pytest

from gaprank.data import DataNotFoundError, LetorFormatError, load_fold
from gaprank.lightgbm import ranking_feval
from training.synthetic import SHAPES, write

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory):
    out = tmp_path_factory.mktemp("synthetic")
    write(SHAPES["mslr-web30k"], 40, out, folds=5, seed=3)
    return out


def test_the_five_folds_rotate_the_partitions_like_mslr(synthetic):
    tests = []
    for k in range(1, 6):
        fold = load_fold("MSLR-WEB30K", k, data_dir=synthetic)
        ids = {split: set(fold.split(split).query_ids) for split in ("train", "vali", "test")}
        assert not (ids["train"] & ids["vali"]) and not (ids["train"] & ids["test"]) and not (ids["vali"] & ids["test"])
        assert len(ids["train"]) == 24 and len(ids["vali"]) == len(ids["test"]) == 8
        assert fold.train.features.shape[1] == 136 and fold.train.labels.max() <= 4
        next_test = set(load_fold("MSLR-WEB30K", k % 5 + 1, data_dir=synthetic).test.query_ids)
        assert ids["vali"] == next_test  # Fold K validates on the partition Fold K+1 tests on
        tests.append(ids["test"])
    assert set().union(*tests) == {str(q) for q in range(1, 41)}


def test_shape_and_signal_like_the_real_set(synthetic):
    fold = load_fold("MSLR-WEB30K", 1, data_dir=synthetic)
    labels = np.concatenate([fold.train.labels, fold.vali.labels, fold.test.labels])
    rates = np.bincount(labels, minlength=5) / labels.size
    np.testing.assert_allclose(rates, SHAPES["mslr-web30k"].label_rates, atol=0.03)
    sizes = np.concatenate([fold.train.group_sizes, fold.vali.group_sizes, fold.test.group_sizes])
    assert 80 < sizes.mean() < 170 and sizes.max() <= 1251
    X, y, group = fold.train.to_flat()
    params = {"objective": "lambdarank", "verbosity": -1, "num_threads": 1, "min_data_in_leaf": 20}
    booster = lgb.train(params, lgb.Dataset(X, y, group=group), 20)
    ndcg = ranking_feval(["nDCG@10"])
    test = fold.test
    learned = ndcg.evaluate(booster.predict(test.features), test.labels, test.group_sizes)["nDCG@10"]
    chance = ndcg.evaluate(np.random.default_rng(0).normal(size=test.labels.size), test.labels, test.group_sizes)["nDCG@10"]
    assert learned > chance + 0.1  # the grades are learnable from the features


def test_named_sets_check_features_and_grades(tmp_path):
    folder = tmp_path / "MSLR-WEB10K" / "Fold1"
    folder.mkdir(parents=True)
    row = " ".join(f"{i}:0.5" for i in range(1, 137))
    for name in ("train", "vali"):
        (folder / f"{name}.txt").write_text(f"1 qid:1 {row}\n0 qid:1 {row}\n")
    (folder / "test.txt").write_text(f"1 qid:2 {row}\n5 qid:2 {row}\n")
    with pytest.raises(LetorFormatError, match=r"test\.txt.*line 2.*grades 0\.\.4"):
        load_fold("MSLR-WEB10K", 1, data_dir=tmp_path)
    short = " ".join(f"{i}:0.5" for i in range(1, 47))
    (folder / "test.txt").write_text(f"1 qid:2 {short}\n0 qid:2 {short}\n")
    with pytest.raises(LetorFormatError, match="136"):
        load_fold("MSLR-WEB10K", 1, data_dir=tmp_path)
    with pytest.raises(DataNotFoundError, match="research/project/mslr.*training.synthetic"):
        load_fold("MSLR-WEB30K", 1, data_dir=tmp_path)


def test_command_line(tmp_path):
    ok = subprocess.run([sys.executable, "-m", "training.synthetic", "--like", "mslr-web10k", "--queries", "10",
                         "--folds", "1", "--out", str(tmp_path)], cwd=ROOT, capture_output=True, text=True)
    assert ok.returncode == 0 and (tmp_path / "MSLR-WEB10K" / "Fold1" / "test.txt").is_file()
    assert not (tmp_path / "MSLR-WEB10K" / "Fold2").exists()
    bad = subprocess.run([sys.executable, "-m", "training.synthetic", "--like", "mslr-web30k", "--queries", "3",
                          "--out", str(tmp_path)], cwd=ROOT, capture_output=True, text=True)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "at least 5" in bad.stderr
    folds = subprocess.run([sys.executable, "-m", "training.synthetic", "--like", "mslr-web30k", "--queries", "10",
                            "--folds", "3", "--out", str(tmp_path)], cwd=ROOT, capture_output=True, text=True)
    assert folds.returncode == 2 and folds.stderr.count("\n") == 1 and "--folds must be 1 or 5" in folds.stderr
