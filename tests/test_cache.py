"""gaprank.data's parsed-file cache: the same split as the text parse, served without parsing, rebuilt when
the source changes (also behind an old modification time) or the entry is damaged, and a warning, with the
data returned, when the cache cannot be written.

One private unit on purpose: the text parser in ``gaprank.data._folds``, replaced to prove a cached read parses
nothing."""

from __future__ import annotations

import errno
import os
import shutil
import time
from pathlib import Path

import numpy as np
import pytest

from gaprank.data import CacheWriteWarning, _folds, load_fold
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


def test_a_file_replaced_with_its_old_mtime_is_parsed_again(tmp_path, monkeypatch):
    """cp -p, tar x and rsync -t carry the old modification time over; same size, same first MiB."""
    write(SHAPES["mslr-web10k"], 30, tmp_path / "data", folds=1, seed=1)
    monkeypatch.setenv("GAPRANK_CACHE", str(tmp_path / "cache"))
    source = tmp_path / "data" / "MSLR-WEB10K" / "Fold1" / "train.txt"
    text = source.read_bytes()
    assert len(text) > (1 << 20) + 1000
    before = load_fold("MSLR-WEB10K", 1, data_dir=tmp_path / "data").train
    last = text.rindex(b"\n", 0, len(text) - 1) + 1  # the last row, beyond the first MiB
    changed = text[:last] + (b"3" if text[last:last + 1] != b"3" else b"2") + text[last + 1:]
    replacement = tmp_path / "replacement.txt"
    replacement.write_bytes(changed)
    old = source.stat()
    os.utime(replacement, ns=(old.st_atime_ns, old.st_mtime_ns))
    time.sleep(0.05)  # past the file system's timestamp tick
    shutil.copy2(replacement, source)  # what cp -p does: new bytes, the old modification time
    assert source.stat().st_mtime_ns == old.st_mtime_ns and source.stat().st_size == old.st_size
    after = load_fold("MSLR-WEB10K", 1, data_dir=tmp_path / "data").train
    assert after.labels[-1] != before.labels[-1] and after.labels[-1] == int(changed[last:last + 1])


def test_a_cache_that_cannot_be_written_warns_and_leaves_nothing(tmp_path, monkeypatch):
    write(SHAPES["mslr-web10k"], 10, tmp_path / "data", folds=1, seed=1)
    cache = tmp_path / "cache"
    monkeypatch.setenv("GAPRANK_CACHE", str(cache))
    real_savez = np.savez

    def full_disk(file, **arrays):  # half an entry written, then the device is full
        real_savez(file, **arrays)
        Path(file).write_bytes(Path(file).read_bytes()[:50])
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(np, "savez", full_disk)
    with pytest.warns(CacheWriteWarning, match="cannot be written .No space left on device.*GAPRANK_CACHE=off"):
        fold = load_fold("MSLR-WEB10K", 1, data_dir=tmp_path / "data")
    assert fold.train.num_features == 136 and list(cache.iterdir()) == []  # no temporary file survives
    monkeypatch.setattr(np, "savez", real_savez)
    assert load_fold("MSLR-WEB10K", 1, data_dir=tmp_path / "data").train.num_features == 136
    assert len(list(cache.glob("*.npz"))) == 3


def test_unwritable_cache_and_cache_off(tmp_path, monkeypatch):
    write(SHAPES["mslr-web10k"], 10, tmp_path / "data", folds=1, seed=1)
    blocker = tmp_path / "a_file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("GAPRANK_CACHE", str(blocker / "cache"))
    with pytest.warns(CacheWriteWarning, match="cache .* cannot be written.*GAPRANK_CACHE=off"):
        assert load_fold("MSLR-WEB10K", 1, data_dir=tmp_path / "data").train.num_features == 136
    monkeypatch.setenv("GAPRANK_CACHE", "off")
    assert load_fold("MSLR-WEB10K", 1, data_dir=tmp_path / "data").train.num_features == 136
