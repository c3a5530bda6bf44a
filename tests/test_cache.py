"""gaprank.data's parsed-file cache: the same split as the text parse, served without parsing, rebuilt when
the source changes or the entry is damaged, and a clear error for an unwritable cache directory."""

from __future__ import annotations

import numpy as np
import pytest

from gaprank import GaprankInputError
from gaprank.data import _folds, load_fold
from training.synthetic import SHAPES, write


@pytest.fixture()
def data_and_cache(tmp_path, monkeypatch):
    write(SHAPES["mslr-web10k"], 10, tmp_path / "data", folds=1, seed=1)
    cache = tmp_path / "cache"
    monkeypatch.setenv("GAPRANK_CACHE", str(cache))
    return tmp_path / "data", cache


def _same(a, b):
    for split in ("train", "vali", "test"):
        x, y = a.split(split), b.split(split)
        for field in ("features", "labels", "qids", "docids"):
            np.testing.assert_array_equal(getattr(x, field), getattr(y, field))
            assert getattr(x, field).dtype == getattr(y, field).dtype
        assert x.comments == y.comments and x.source == y.source and x.query_ids == y.query_ids


def test_a_cached_load_is_the_parsed_one_and_parses_nothing(data_and_cache, monkeypatch):
    data, cache = data_and_cache
    first = load_fold("MSLR-WEB10K", 1, data_dir=data)
    assert len(list(cache.glob("*.npz"))) == 3

    def no_parse(*args, **kwargs):
        raise AssertionError("parsed although the cache holds the file")

    monkeypatch.setattr(_folds, "read_letor", no_parse)
    _same(load_fold("MSLR-WEB10K", 1, data_dir=data), first)


def test_a_changed_source_or_a_damaged_entry_is_rebuilt(data_and_cache):
    data, cache = data_and_cache
    load_fold("MSLR-WEB10K", 1, data_dir=data)
    test_file = data / "MSLR-WEB10K" / "Fold1" / "test.txt"
    lines = test_file.read_text().splitlines()
    test_file.write_text("\n".join(["0" + line[1:] for line in lines]) + "\n")  # every grade now 0
    assert load_fold("MSLR-WEB10K", 1, data_dir=data).test.labels.max() == 0
    for entry in cache.glob("*.npz"):
        entry.write_bytes(entry.read_bytes()[:100])  # truncated
    fresh = load_fold("MSLR-WEB10K", 1, data_dir=data)
    assert fresh.test.labels.max() == 0 and fresh.train.features.shape[1] == 136


def test_parse_options_are_part_of_the_key(data_and_cache):
    data, cache = data_and_cache
    load_fold("MSLR-WEB10K", 1, data_dir=data, null="min")
    load_fold("MSLR-WEB10K", 1, data_dir=data, null="zero")
    assert len(list(cache.glob("*.npz"))) == 6


def test_unwritable_cache_and_cache_off(tmp_path, monkeypatch):
    write(SHAPES["mslr-web10k"], 10, tmp_path / "data", folds=1, seed=1)
    blocker = tmp_path / "a_file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("GAPRANK_CACHE", str(blocker / "cache"))
    with pytest.raises(GaprankInputError, match="cache directory .* is not writable.*GAPRANK_CACHE=off"):
        load_fold("MSLR-WEB10K", 1, data_dir=tmp_path / "data")
    monkeypatch.setenv("GAPRANK_CACHE", "off")
    assert load_fold("MSLR-WEB10K", 1, data_dir=tmp_path / "data").train.num_features == 136
