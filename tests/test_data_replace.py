"""``gaprank data import --replace`` while another process reads the set: every load sees one import whole,
never a fold mixing two imports, never the bundled copy in between (the pointer switch of gaprank.data._import)."""

from __future__ import annotations

import multiprocessing
import time
import warnings

from test_data_import_hardening import tiny_download

from gaprank.data import import_dataset

MARKERS = (0.25, 0.75)  # feature 1 of every row of the two downloads
READ_SECONDS = 10.0


def _read_while_replaced(seconds: float, started, results) -> None:
    """Load MQ2008's folds (and ask where it is read from) for ``seconds``; report what was seen."""
    import numpy as np

    from gaprank.data import find_dataset, load_fold, load_split

    seen = {"loads": 0, "mixed": 0, "bundled": 0, "markers": set(), "errors": []}
    started.set()
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        k = 1 + seen["loads"] % 5
        try:
            fold = load_fold("MQ2008", k)
            values = {float(v) for part in (fold.train, fold.vali, fold.test) for v in np.unique(part.features[:, 0])}
            split = {float(v) for v in np.unique(load_split("MQ2008", "train", fold=k).features[:, 0])}
            place, _ = find_dataset("MQ2008")
        except Exception as exc:  # noqa: BLE001 - any failure of a reader is a finding
            seen["errors"].append(f"{type(exc).__name__}: {exc}")
            continue
        seen["loads"] += 1
        seen["bundled"] += place.kind == "bundled" or not (values | split) <= set(MARKERS)
        seen["mixed"] += len(values) > 1 or len(split) > 1  # one load, two imports
        seen["markers"] |= values & set(MARKERS)
    results.put(seen)


def test_a_reader_never_sees_a_half_replaced_set(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    downloads = [tiny_download(tmp_path / f"d{i}", marker=marker, seed=i) for i, marker in enumerate(MARKERS)]
    warnings.filterwarnings("ignore", "MQ2008 has")  # the tiny downloads' counts are not the real set's
    import_dataset("MQ2008", downloads[0])
    context = multiprocessing.get_context("spawn")
    started, results = context.Event(), context.Queue()
    reader = context.Process(target=_read_while_replaced, args=(READ_SECONDS, started, results))
    reader.start()
    try:
        assert started.wait(120), "the reader did not start"
        imports = 0
        while reader.is_alive() and results.empty():
            import_dataset("MQ2008", downloads[(imports + 1) % 2], replace=True)
            imports += 1
        seen = results.get(timeout=60)
    finally:
        reader.join(30)
        if reader.is_alive():
            reader.kill()
    assert seen["errors"] == [] and seen["mixed"] == 0 and seen["bundled"] == 0, seen
    assert imports >= 5 and seen["loads"] >= 20 and seen["markers"] == set(MARKERS), (imports, seen)
    versions = list((tmp_path / "xdg" / "gaprank" / ".versions").iterdir())
    assert len(versions) == 1  # each replace removed the copy it replaced
