"""LETOR data: the five folds from folds.json partitions and from the standard LETOR layouts."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest
import torch

from gaprank.data import RankingSplit, data_locations, fold_files, load_fold, locate_dataset, read_letor

# The first three queries (85, 86, 87) of LETOR 3.0 OHSUMED Fold1/testset.txt in its Feature-min and
# Feature-null variants, byte for byte (gaprank bundles QueryLevelNorm only).
VARIANTS = Path(__file__).parent / "data" / "ohsumed-variants"


@pytest.mark.parametrize("dataset, sizes", [
    ("OHSUMED", {1: (63, 21, 22), 2: (63, 22, 21), 3: (64, 21, 21), 4: (64, 21, 21), 5: (64, 21, 21)}),
    ("MQ2008", {1: (471, 157, 156), 3: (470, 157, 157)}),
])
def test_folds_from_partitions_match_provenance(dataset, sizes):
    spec = json.loads((locate_dataset(dataset) / "folds.json").read_text())["folds"]
    for k, expected in sizes.items():
        fold = load_fold(dataset, k)
        assert (fold.train.num_queries, fold.vali.num_queries, fold.test.num_queries) == expected
        for split in ("train", "vali", "test"):
            assert fold.split(split).query_ids == spec[f"Fold{k}"][f"{split}_qids"]
        all_q = fold.train.query_ids + fold.vali.query_ids + fold.test.query_ids
        assert len(set(all_q)) == len(all_q)


def test_ohsumed_label_histogram():
    fold = load_fold("OHSUMED", 1)
    everything = RankingSplit.concatenate([fold.train, fold.vali, fold.test])
    assert everything.num_queries == 106 and len(everything.labels) == 16140
    assert np.bincount(everything.labels).tolist() == [11303, 2585, 2252]
    assert everything.num_features == 45
    qln = fold.test.features
    assert qln.min() >= 0 and qln.max() <= 1


def _variant_folder(root, variant):
    """OHSUMED ``variant``'s Fold1 with one query per split (train 85, vali 86, test 87), LETOR's names."""
    lines = gzip.open(VARIANTS / f"{variant}.Fold1.first3.txt.gz", "rt").read().splitlines(True)
    folder = root / "OHSUMED" / variant / "Fold1"
    folder.mkdir(parents=True)
    for name, qid in (("trainingset", "85"), ("validationset", "86"), ("testset", "87")):
        (folder / f"{name}.txt").write_text("".join(line for line in lines if line.split()[1] == f"qid:{qid}"))
    return root


def test_ohsumed_variants(tmp_path):
    for variant in ("Feature-min", "Feature-null"):
        _variant_folder(tmp_path, variant)
    qln = load_fold("OHSUMED", 1).test
    qln_first = qln.features[:len(read_letor(tmp_path / "OHSUMED/Feature-min/Fold1/testset.txt").labels)]
    minimum = load_fold("OHSUMED", 1, variant="Feature-min", data_dir=tmp_path)
    null = load_fold("OHSUMED", 1, variant="Feature-null", data_dir=tmp_path)
    assert [s.query_ids for s in (minimum.train, minimum.vali, minimum.test)] == [["85"], ["86"], ["87"]]
    assert (minimum.test.docids == null.test.docids).all()
    assert (minimum.test.labels == qln.labels[qln.qids == "87"]).all() and qln.query_ids[2] == "87"
    assert (minimum.test.features != qln_first).any()  # raw values, not QueryLevelNorm's
    # NULL -> min(0, query minimum) agrees with LETOR's own Feature-min except a few log-BM25 cells
    assert (null.test.features != minimum.test.features).sum() < 20
    with pytest.raises(FileNotFoundError, match="Feature-min"):
        load_fold("OHSUMED", 1, variant="Feature-min")  # not bundled, and nowhere else here


def test_padded_and_flat_views_agree():
    split = load_fold("MQ2008", 1).test
    x, y, group = split.to_flat()
    assert group.sum() == len(y) == x.shape[0] and len(group) == split.num_queries
    batch = split.to_padded(dtype=torch.float64)
    assert batch.features.shape == (split.num_queries, group.max(), 46)
    assert batch.mask.dtype == torch.bool and int(batch.mask.sum()) == len(y)
    np.testing.assert_array_equal(batch.labels[batch.mask].numpy(), y)
    np.testing.assert_allclose(batch.features[batch.mask].numpy(), x)
    assert batch.qids == split.query_ids


def _copy_as_standard_layout(tmp_path, gz: bool, names=("train", "vali", "test")):
    """Write OHSUMED Fold1 the way the LETOR download lays it out: FoldK/{train,vali,test}.txt."""
    files = fold_files("OHSUMED", 1)
    fold_dir = tmp_path / "OHSUMED" / "QueryLevelNorm" / "Fold1"
    fold_dir.mkdir(parents=True)
    for split, name in zip(("train", "vali", "test"), names, strict=True):
        text = "".join((gzip.open if p.suffix == ".gz" else open)(p, "rt").read() for p in files[split])
        target = fold_dir / (f"{name}.txt.gz" if gz else f"{name}.txt")
        if gz:
            with gzip.open(target, "wt") as fh:
                fh.write(text)
        else:
            target.write_text(text.replace("\n", "\r\n"))  # LETOR's own files use CRLF
    return tmp_path


@pytest.mark.parametrize("gz, names", [(False, ("train", "vali", "test")),
                                       (True, ("trainingset", "validationset", "testset"))])
def test_standard_letor_layouts(tmp_path, gz, names):
    root = _copy_as_standard_layout(tmp_path, gz, names)
    ours = load_fold("OHSUMED", 1, data_dir=root)
    bundled = load_fold("OHSUMED", 1)
    for split in ("train", "vali", "test"):
        a, b = ours.split(split), bundled.split(split)
        assert a.query_ids == b.query_ids
        np.testing.assert_array_equal(a.features, b.features)
        np.testing.assert_array_equal(a.labels, b.labels)


def test_where_a_set_is_read_from(tmp_path, monkeypatch):
    """data_dir > GAPRANK_DATA > the user data directory > the bundled sets, set by set."""
    bundled = locate_dataset("OHSUMED")
    assert [place.kind for place in data_locations()] == ["user", "bundled"]
    user = _copy_as_standard_layout(tmp_path / "user" / "gaprank", False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "user"))
    assert locate_dataset("OHSUMED") == user / "OHSUMED"
    env = _copy_as_standard_layout(tmp_path / "env", False)
    monkeypatch.setenv("GAPRANK_DATA", str(env))
    assert locate_dataset("OHSUMED") == env / "OHSUMED"
    explicit = _copy_as_standard_layout(tmp_path / "explicit", False)
    assert locate_dataset("OHSUMED", data_dir=explicit) == explicit / "OHSUMED"
    assert [place.kind for place in data_locations(explicit)] == ["data_dir", "GAPRANK_DATA", "user", "bundled"]
    # a place without the set passes it on: MQ2008 is in none of them but the bundled sets
    assert locate_dataset("MQ2008", data_dir=explicit) == bundled.parent / "MQ2008"
    assert load_fold("MQ2008", 1, data_dir=explicit).test.num_queries == 156
    monkeypatch.delenv("GAPRANK_DATA")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "empty"))
    assert locate_dataset("OHSUMED") == bundled


def test_bundled_files_are_checked_against_their_manifest(tmp_path, monkeypatch):
    from gaprank.data import BundledDataError, _locations

    copy = tmp_path / "bundled"
    import shutil

    shutil.copytree(_locations.BUNDLED_DIR, copy)
    monkeypatch.setattr(_locations, "BUNDLED_DIR", copy)
    assert load_fold("MQ2008", 2).test.num_queries == 157  # an intact copy reads
    damaged = copy / "MQ2008" / "S1.txt.gz"
    data = bytearray(damaged.read_bytes())
    data[-20] ^= 1
    damaged.write_bytes(bytes(data))
    with pytest.raises(BundledDataError, match=r"S1\.txt\.gz: SHA-256 .* differs from the manifest.*reinstall"):
        load_fold("MQ2008", 2)
    (copy / "MQ2008" / "folds.json").write_text("{}")
    with pytest.raises(BundledDataError, match="folds.json"):
        load_fold("MQ2008", 3)


def test_concatenate_refuses_shared_queries():
    split = read_letor(fold_files("OHSUMED", 1)["test"][0])
    with pytest.raises(ValueError, match="more than one split"):
        RankingSplit.concatenate([split, split])


def test_mq2008_docids_and_comments_are_kept():
    split = load_fold("MQ2008", 1).test
    assert split.docids[0].startswith("GX") and "inc =" in split.comments[0]



# --- hardening: folds are disjoint, folds.json is read strictly and stays inside its folder ---

from conftest import write_toy_dataset  # noqa: E402
from gaprank import GaprankInputError  # noqa: E402
from gaprank.data import FoldsFileError, fold_fingerprint  # noqa: E402


def _set_folds(root, folds_text):
    (root / "OHSUMED" / "folds.json").write_text(folds_text)


def test_toy_folds_load_and_are_disjoint(toy_data):
    fold = load_fold("OHSUMED", 1, data_dir=toy_data)
    assert (fold.train.num_queries, fold.vali.num_queries, fold.test.num_queries) == (12, 4, 4)
    assert fold.test.query_ids[0] == "100" and fold.vali.query_ids[0] == "500"


def test_overlapping_splits_are_an_error_naming_the_queries(toy_data):
    _set_folds(toy_data, json.dumps({"folds": {"Fold1": {"train": ["P2", "P3", "P1"], "vali": "P5", "test": "P1"}}}))
    with pytest.raises(FoldsFileError, match="train and test share 4 queries \\(100, 101, 102, 103\\).*folds.json"):
        load_fold("OHSUMED", 1, data_dir=toy_data)


def test_query_lists_that_contradict_the_partitions_are_an_error(toy_data):
    spec = {"train": ["P2", "P3", "P4"], "vali": "P5", "test": "P1", "test_qids": ["100", "101", "102", "999"]}
    _set_folds(toy_data, json.dumps({"folds": {"Fold1": spec}}))
    with pytest.raises(FoldsFileError, match="Fold1 test_qids contradicts its partitions.*'999'.*'103'"):
        load_fold("OHSUMED", 1, data_dir=toy_data)
    spec["test_qids"] = ["103", "102", "101", "100"]  # the same set in another order is fine
    _set_folds(toy_data, json.dumps({"folds": {"Fold1": spec}}))
    assert load_fold("OHSUMED", 1, data_dir=toy_data).test.num_queries == 4


@pytest.mark.parametrize("text, message", [
    ('{"folds": {"Fold1": ', "folds.json, line 1: not valid JSON"),
    ('{"partitions": {}}', 'needs a "folds" mapping'),
    ('[1, 2]', 'needs a "folds" mapping'),
    ('{"folds": {"Fold1": ["P1"]}}', "folds.Fold1 must be a mapping"),
    ('{"folds": {"Fold1": {"train": [], "vali": "P5", "test": "P1"}}}', "folds.Fold1.train must be a partition name"),
    ('{"folds": {"Fold1": {"train": ["P2"], "vali": 5, "test": "P1"}}}', "folds.Fold1.vali must be"),
    ('{"folds": {"Fold1": {"train": ["P2"], "vali": "P5", "test": "P1", "test_qids": [1]}}}', "test_qids must be a list"),
])
def test_malformed_folds_json_is_one_clear_line(toy_data, text, message):
    _set_folds(toy_data, text)
    with pytest.raises(FoldsFileError, match=message) as exc:
        load_fold("OHSUMED", 1, data_dir=toy_data)
    assert "\n" not in str(exc.value)


@pytest.mark.parametrize("partition", ["../../../etc/passwd", "/etc/passwd", "P1/../../x", "./P1", "a\\b"])
def test_partition_paths_stay_inside_the_data_set(toy_data, partition):
    _set_folds(toy_data, json.dumps({"folds": {"Fold1": {"train": [partition], "vali": "P5", "test": "P1"}}}))
    with pytest.raises(FoldsFileError, match="must be a relative path inside"):
        load_fold("OHSUMED", 1, data_dir=toy_data)


def test_a_symbolic_link_out_of_the_data_set_is_refused(toy_data, tmp_path):
    outside = tmp_path / "secret.txt"
    outside.write_text((toy_data / "OHSUMED" / "QueryLevelNorm" / "P2.txt").read_text())
    (toy_data / "OHSUMED" / "QueryLevelNorm" / "P9.txt").symlink_to(outside)
    _set_folds(toy_data, json.dumps({"folds": {"Fold1": {"train": ["P9"], "vali": "P5", "test": "P1"}}}))
    with pytest.raises(FoldsFileError, match="outside"):
        load_fold("OHSUMED", 1, data_dir=toy_data)


def test_known_feature_count_is_enforced_for_named_data_sets(tmp_path):
    root = write_toy_dataset(tmp_path / "d", name="MQ2008")  # 45 features where MQ2008 has 46
    with pytest.raises(GaprankInputError, match="45 features, expected 46"):
        load_fold("MQ2008", 1, data_dir=root)


def test_fold_fingerprint_follows_content_not_place(toy_data, tmp_path):
    first = fold_fingerprint("OHSUMED", 1, data_dir=toy_data)
    assert set(first) == {"train", "vali", "test", "folds.json"} and len(first["train"]) == 3
    copy = write_toy_dataset(tmp_path / "copy")  # same seed, same bytes, other place and mtimes
    assert fold_fingerprint("OHSUMED", 1, data_dir=copy) == first
    path = toy_data / "OHSUMED" / "QueryLevelNorm" / "P1.txt"
    path.write_text(path.read_text() + "0 qid:199 " + " ".join(f"{i}:0" for i in range(1, 46)) + "\n")
    assert fold_fingerprint("OHSUMED", 1, data_dir=toy_data)["test"] != first["test"]


def test_find_dataset_and_dataset_file_with_garbage(tmp_path):
    from gaprank import GaprankInputError
    from gaprank.data import check_dataset_folder, dataset_file, find_dataset

    place, folder = find_dataset("MQ2008")
    assert place.kind == "bundled" and folder == locate_dataset("MQ2008")
    assert find_dataset("MQ2007") is None and find_dataset("no such set", data_dir=tmp_path) is None
    assert find_dataset("OHSUMED", variant="Feature-null") is None  # the bundled copy has QueryLevelNorm only
    assert dataset_file("OHSUMED", "letor3-baselines/no_such.csv") is None
    for bad in ("../MQ2008/folds.json", "/etc/passwd", ""):
        with pytest.raises(GaprankInputError, match="must be a relative path inside the OHSUMED folder"):
            dataset_file("OHSUMED", bad)
    with pytest.raises(GaprankInputError, match="unknown data set 'MSLR'"):
        check_dataset_folder("MSLR", tmp_path)


def test_one_conventions_a_data_set_s_own_is_its_entry_s():
    """gaprank.metrics.CONVENTIONS is the one CONVENTIONS; a data set's conventions are its entry's (the old
    per-data-set dict of gaprank.data is gone)."""

    import gaprank.data as D
    from gaprank.metrics import CONVENTIONS

    assert D.dataset_info("MQ2008").conventions == "letor4" and D.dataset_info("ohsumed").conventions == "letor3"
    assert all(info.conventions in CONVENTIONS for info in D.DATASETS.values())
    assert "CONVENTIONS" not in D.__all__
    assert not hasattr(D, "CONVENTIONS")


def test_to_flat_and_conventions_refuse_garbage_in_one_line():
    import pytest

    from gaprank import GaprankInputError
    from gaprank.metrics import get_conventions

    split = load_fold("MQ2008", 1).test
    for bad in ("no", 1, None):
        with pytest.raises(GaprankInputError, match="qid must be True or False"):
            split.to_flat(qid=bad)
    for bad in ("nDCG", len, 3):
        with pytest.raises(GaprankInputError, match="is not the metric function of a registered measure") as caught:
            get_conventions("trec").keywords(bad)
        assert "\n" not in str(caught.value)
