"""Web-scale data: the whole-array reader equals the line-by-line one and hands every irregular file to
it; float32 features; Yahoo! (sparse) and Istella by name with load_split; mixed and truncated downloads."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gaprank import GaprankInputError
from gaprank.data import DATASETS, DataNotFoundError, FoldsFileError, LetorFormatError, _letor, load_fold, load_split, read_letor
from training.synthetic import SHAPES, write


@pytest.fixture(scope="module")
def mslr(tmp_path_factory):
    out = tmp_path_factory.mktemp("mslr")
    write(SHAPES["mslr-web30k"], 30, out, folds=1, seed=5)
    return out


def _strict(path, **options):
    options.setdefault("num_features", None)
    options.setdefault("max_label", None)
    return _letor._read_line_by_line(Path(path), options["num_features"], "min", options["max_label"],
                                     np.dtype(options.get("dtype", np.float64)), options.get("sparse", False))


def _same(a, b):
    assert a.features.dtype == b.features.dtype
    np.testing.assert_array_equal(a.features, b.features)
    np.testing.assert_array_equal(a.labels, b.labels)
    assert a.qids.tolist() == b.qids.tolist() and a.docids.tolist() == b.docids.tolist() and a.comments == b.comments
    assert a.group_sizes.tolist() == b.group_sizes.tolist()


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_plain_files_take_the_whole_array_reader_and_read_the_same(mslr, monkeypatch, tmp_path, dtype):
    path = mslr / "MSLR-WEB30K" / "Fold1" / "train.txt"
    expected = _strict(path, num_features=136, max_label=4, dtype=dtype)
    monkeypatch.setattr(_letor, "BLOCK_BYTES", 1 << 16)  # many blocks, lines cut at block ends
    with monkeypatch.context() as patch:
        patch.setattr(_letor, "_read_line_by_line", lambda *a: pytest.fail("the plain file went line by line"))
        _same(read_letor(path, num_features=136, max_label=4, dtype=dtype), expected)
        packed = tmp_path / "train.txt.gz"
        packed.write_bytes(gzip.compress(path.read_bytes()))
        _same(read_letor(packed, num_features=136, max_label=4, dtype=dtype), expected)
    if dtype == np.float32:  # float32 holds what a float64 read cast to float32 holds
        wide = read_letor(path, num_features=136)
        np.testing.assert_array_equal(read_letor(path, num_features=136, dtype=np.float32).features,
                                      wide.features.astype(np.float32))


def test_files_with_comments_or_irregular_lines_go_line_by_line(tmp_path):
    plain = "2 qid:7 1:0.5 2:1\n0 qid:7 1:0.25 2:0\n1 qid:9 1:3 2:4\n"
    cases = {
        "comments": plain.replace("\n", " #docid = d\n"),
        "leading zero qid": plain.replace("qid:9", "qid:09"),
        "NULL": plain.replace("1:3", "1:NULL"),
        "CRLF": plain.replace("\n", "\r\n"),
        "spaces": plain.replace(" 1:", "  1:"),
    }
    for name, text in cases.items():
        path = tmp_path / f"{name.replace(' ', '_')}.txt"
        path.write_text(text)
        _same(read_letor(path), _strict(path))
    assert read_letor(tmp_path / "leading_zero_qid.txt").query_ids == ["7", "09"]


# Query ids that name another query as text than as a number ("1.5" is not "1"; "1e1" is not "10")
QUERY_IDS = ["0", "1", "1.5", "1.0", "2", "10", "1e1", "01", "7", "123456789", "1E1", "10.0"]


@given(st.lists(st.tuples(st.sampled_from(QUERY_IDS), st.integers(1, 4)), min_size=1, max_size=8,
                unique_by=lambda q: q[0]),
       st.integers(0, 2**31))
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_both_readers_give_the_same_queries_for_any_ids(tmp_path, queries, seed):
    """Whole-array reader (plain file) and line-by-line reader (the same rows with a comment) agree on
    every file: ids are compared as the text they are."""
    rng = np.random.default_rng(seed)
    lines = [f"{rng.integers(0, 3)} qid:{qid} 1:{rng.integers(0, 100) / 100:g} 2:{rng.integers(0, 100) / 100:g}"
             for qid, count in queries for _ in range(count)]
    plain, commented = tmp_path / f"plain{seed}.txt", tmp_path / f"commented{seed}.txt"
    plain.write_text("\n".join(lines) + "\n")
    commented.write_text("\n".join(line + " # c" for line in lines) + "\n")
    fast, strict = read_letor(plain), read_letor(commented)
    assert fast.query_ids == strict.query_ids == [qid for qid, _ in queries]
    assert fast.group_sizes.tolist() == strict.group_sizes.tolist() == [count for _, count in queries]
    np.testing.assert_array_equal(fast.features, strict.features)
    np.testing.assert_array_equal(fast.labels, strict.labels)


@pytest.mark.parametrize("ids", [["1", "1.5", "2"], ["1", "1.0"], ["1e1", "10"]])
def test_non_integer_query_ids_are_not_merged(tmp_path, ids):
    path = tmp_path / "ids.txt"
    path.write_text("".join(f"1 qid:{qid} 1:0.5 2:0.25\n" for qid in ids))
    split = read_letor(path)
    assert split.query_ids == ids and split.group_sizes.tolist() == [1] * len(ids)


@pytest.mark.parametrize("text, message", [
    ("1 qid:1 1:0.5 2:1\n0 qid:1 1:0.5\n", "line 2: 1 features"),
    ("1 qid:1 1:0.5 2:1\n0 qid:2 1:0.5 2:1\n1 qid:1 1:0 2:0\n", "line 3: rows of query 1 are not contiguous"),
    ("1 qid:1 1:0.5 2:1\n\n0 qid:1 1:0.5 2:1\n", "line 2: empty line"),
    ("1 qid:1 1:0.5 2:1_0\n", "line 1: feature value '1_0'"),
    ("1 qid:1 1:0.5 2:1e999\n", "overflows"),
    ("7 qid:1 1:0.5 2:1\n", "line 1: label 7 is outside the data set's grades 0..4"),
    ("1 qid:1 1:0.5 3:1\n0 qid:1 1:0.5 2:1\n", "line 2: 2 features"),
    ("1.0 qid:1 1:0.5 2:1\n", "line 1: label '1.0'"),
])
def test_a_bad_plain_file_is_named_with_its_line(tmp_path, text, message):
    path = tmp_path / "bad.txt"
    path.write_text(text)
    with pytest.raises(LetorFormatError, match=message) as error:
        read_letor(path, max_label=4)
    assert str(path) in str(error.value)


def test_named_sets_check_feature_count_truncation_and_mixed_downloads(mslr, tmp_path):
    fold = load_fold("MSLR-WEB30K", 1, data_dir=mslr, dtype=np.float32)
    assert fold.train.features.dtype == np.float32 and fold.train.num_features == 136
    wrong = tmp_path / "data" / "MSLR-WEB10K" / "Fold1"
    wrong.mkdir(parents=True)
    for split in ("train", "vali", "test"):
        (wrong / f"{split}.txt").write_text("1 qid:1 " + " ".join(f"{i}:0.5" for i in range(1, 47)) + "\n")
    with pytest.raises(LetorFormatError, match=r"train.txt, line 1: 46 features, expected 136"):
        load_fold("MSLR-WEB10K", 1, data_dir=tmp_path / "data")
    source = mslr / "MSLR-WEB30K" / "Fold1" / "test.txt"
    cut = tmp_path / "cut" / "MSLR-WEB30K" / "Fold1"
    cut.mkdir(parents=True)
    packed = gzip.compress(source.read_bytes())
    (cut / "test.txt.gz").write_bytes(packed[: len(packed) // 2])  # a download cut short
    with pytest.raises(LetorFormatError, match=r"test.txt.gz: cannot be read"):
        load_split("MSLR-WEB30K", "test", fold=1, data_dir=tmp_path / "cut")
    (cut / "test.txt").write_bytes(source.read_bytes()[:-300])  # and a text file cut inside a line
    with pytest.raises(FoldsFileError, match="test.txt and test.txt.gz are the same split"):
        load_split("MSLR-WEB30K", "test", fold=1, data_dir=tmp_path / "cut")
    (cut / "test.txt.gz").unlink()
    with pytest.raises(LetorFormatError, match=r"test.txt, line \d+: (malformed feature|\d+ features, expected 136)"):
        load_split("MSLR-WEB30K", "test", fold=1, data_dir=tmp_path / "cut")
    with pytest.raises(GaprankInputError, match="five folds: pass fold"):
        load_split("MSLR-WEB30K", "test", data_dir=mslr)


def test_yahoo_is_sparse_and_istella_has_its_own_splits(tmp_path):
    yahoo = tmp_path / "Yahoo"
    yahoo.mkdir()
    rows = {"train": "2 qid:1 3:0.5 699:1\n0 qid:1 10:0.25\n", "valid": "1 qid:2 1:1\n", "test": "4 qid:3 2:2 5:1\n"}
    for stem, text in rows.items():
        (yahoo / f"set1.{stem}.txt").write_text(text)
    train = load_split("Yahoo-set1", "train", data_dir=tmp_path, dtype="float32")
    assert train.features.shape == (2, 699) and train.features.dtype == np.float32
    assert train.features[0, 2] == 0.5 and train.features[0, 698] == 1 and train.features[1, 9] == 0.25
    assert np.count_nonzero(train.features) == 3
    fold = load_fold("Yahoo-set1", 1, data_dir=tmp_path)
    assert fold.vali.query_ids == ["2"] and fold.test.labels.tolist() == [4]
    (yahoo / "set1.test.txt").write_text("4 qid:3 2:2 700:1\n")
    with pytest.raises(LetorFormatError, match="set1.test.txt, line 1: feature id 700 is above num_features=699"):
        load_split("Yahoo-set1", "test", data_dir=tmp_path)
    with pytest.raises(GaprankInputError, match="one train/vali/test split"):
        load_fold("Yahoo-set1", 2, data_dir=tmp_path)
    istella = tmp_path / "Istella"
    istella.mkdir()
    line = "1 qid:4 " + " ".join(f"{i}:1" for i in range(1, 221)) + "\n"
    for split in ("train", "test"):
        (istella / f"{split}.txt").write_text(line.replace("qid:4", f"qid:{len(split)}"))
    assert load_split("Istella", "train", data_dir=tmp_path).num_features == 220
    with pytest.raises(DataNotFoundError, match="Istella has no vali split"):
        load_split("Istella", "vali", data_dir=tmp_path)
    with pytest.raises(DataNotFoundError, match="Istella-S.*istella.ai"):
        load_split("Istella-S", "train", data_dir=tmp_path)
    assert {"MSLR-WEB30K", "YAHOO-SET1", "ISTELLA-X"} <= set(DATASETS)


def test_garbage_arguments_to_the_new_readers_are_one_line_errors(mslr, tmp_path):
    with pytest.raises(GaprankInputError, match="split must be one of"):
        load_split("MSLR-WEB30K", "training", fold=1, data_dir=mslr)
    with pytest.raises(GaprankInputError, match="no fold to choose"):
        load_split("Yahoo-set1", "train", fold=1, data_dir=tmp_path)
    with pytest.raises(GaprankInputError, match="fold must be an integer 1..5"):
        load_split("MSLR-WEB30K", "test", fold=0, data_dir=mslr)
    path = mslr / "MSLR-WEB30K" / "Fold1" / "vali.txt"
    with pytest.raises(GaprankInputError, match="dtype must be float32 or float64; got int8"):
        read_letor(path, dtype="int8")
    with pytest.raises(GaprankInputError, match="dtype must be float32 or float64; got 'no such dtype'"):
        read_letor(path, dtype="no such dtype")
    with pytest.raises(GaprankInputError, match="dtype must be float32 or float64; got int64"):
        load_fold("MSLR-WEB30K", 1, data_dir=mslr, dtype=int)
    with pytest.raises(DataNotFoundError, match="data set MSLR-WEB10K not found"):
        load_split("MSLR-WEB10K", "train", fold=1, data_dir=mslr)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_sparse_plain_files_read_whole_array_as_the_strict_reader_does(monkeypatch, tmp_path, dtype):
    """Yahoo-style sparse rows (each lists its own increasing ids) read by NumPy block by block, without
    scikit-learn, equal the strict reader's; a row breaking a rule goes to the strict reader, which words it."""
    rng = np.random.default_rng(3)
    lines = []
    for query in range(60):
        for _ in range(int(rng.integers(1, 9))):
            ids = np.sort(rng.choice(np.arange(1, 41), size=int(rng.integers(1, 12)), replace=False))
            values = rng.normal(size=ids.size) * 10.0 ** rng.integers(-3, 4)
            cells = " ".join(f"{i}:{v:.6g}" for i, v in zip(ids, values, strict=True))
            lines.append(f"{rng.integers(0, 5)} qid:{1000 + query} {cells}")
    path = tmp_path / "set1.train.txt"
    path.write_text("\n".join(lines) + "\n")
    expected = _strict(path, num_features=40, sparse=True, dtype=dtype)
    monkeypatch.setattr(_letor, "BLOCK_BYTES", 1 << 10)  # many blocks
    with monkeypatch.context() as patch:
        patch.setattr(_letor, "_read_line_by_line", lambda *a: pytest.fail("the plain sparse file went line by line"))
        _same(read_letor(path, num_features=40, sparse=True, dtype=dtype), expected)
    for bad, message in [("1 qid:5 3:1 2:1", "increasing"), ("1 qid:5 41:1", "above num_features"),
                         ("1 qid:5 0:1", "must be >= 1")]:
        broken = tmp_path / "broken.txt"
        broken.write_text("\n".join(lines[:3] + [bad] + lines[3:6]) + "\n")
        with pytest.raises(LetorFormatError, match=message):
            read_letor(broken, num_features=40, sparse=True)
