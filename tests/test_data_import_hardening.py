"""gaprank data import, hardened: Yahoo! set 2 replaced beside set 1, a folder named for another set, unreadable
and damaged archives, unreadable data directories, signals during an import and what a killed one leaves,
files outside the set's layout and archives larger than the limit. Each refusal is one line, exit 2.

Two private units on purpose: ``parse_size`` (the ``--max-size`` parser) and ``_check``, slowed down in a child
process so that a signal lands while an import is under way."""

from __future__ import annotations

import gzip
import io
import json
import lzma
import os
import signal
import subprocess
import sys
import tarfile
import time
import warnings
import zipfile
from pathlib import Path

import numpy as np
import pytest

import gaprank
from gaprank.cli.main import main
from gaprank.data import (
    DataImportError,
    DataImportWarning,
    DataLocationWarning,
    DataNotFoundError,
    find_dataset,
    import_dataset,
    load_fold,
    load_split,
)
from gaprank.data._import import parse_size

SRC = Path(gaprank.__file__).resolve().parents[1]


def tiny_download(root: Path, name: str = "MQ2008", *, features: int = 46, marker: float = 0.25, seed: int = 0) -> Path:
    """A five-fold download of ``name``'s shape, small: five partitions of three queries of four documents,
    Fold K testing on partition K and validating on the next; every row's feature 1 is ``marker``, so
    which download a loaded fold came from can be told."""
    rng = np.random.default_rng(seed)
    partitions = []
    for p in range(5):
        lines = []
        for q in range(3):
            for label in rng.integers(0, 3, 4):
                values = [marker, *np.round(rng.random(features - 1), 3)]
                lines.append(f"{label} qid:{p + 1}{q:02d} " + " ".join(f"{i + 1}:{v}" for i, v in enumerate(values)))
        partitions.append("\n".join(lines) + "\n")
    folder = root / name
    for k in range(5):
        fold = folder / f"Fold{k + 1}"
        fold.mkdir(parents=True, exist_ok=True)
        vali = (k + 1) % 5
        (fold / "test.txt").write_text(partitions[k])
        (fold / "vali.txt").write_text(partitions[vali])
        (fold / "train.txt").write_text("".join(partitions[j] for j in range(5) if j not in (k, vali)))
    return folder


def yahoo_download(root: Path, number: int, marker: float, folder: str = "Yahoo") -> Path:
    """Yahoo! set ``number``'s three files (sparse, 699 features) in ``root/folder``; feature 1 is ``marker``."""
    out = root / folder
    out.mkdir(parents=True, exist_ok=True)
    for stem, qid in (("train", 1), ("valid", 2), ("test", 3)):
        (out / f"set{number}.{stem}.txt").write_text(f"2 qid:{qid} 1:{marker} 699:1\n0 qid:{qid} 1:{marker} 5:0.5\n")
    return out


@pytest.fixture()
def user_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    return tmp_path / "xdg" / "gaprank"


@pytest.fixture(autouse=True)
def _quiet_counts():
    """The tiny downloads differ from the real sets' counts: that warning is tested once, below."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "MQ2008 has|MSLR-WEB10K has|Yahoo-set2 has", DataImportWarning)
        yield


def _refused(argv: list[str], capsys, *expected: str) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and err.startswith("gaprank data: error: "), err
    for text in expected:
        assert text in err, err
    return err


def _tar_bytes(folder: Path, arcname: str) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        archive.add(folder, arcname=arcname)
    return buffer.getvalue()


def _zip(folder: Path, target: Path, prefix: str, method: int = zipfile.ZIP_DEFLATED,
         extra: dict[str, bytes] | None = None) -> Path:
    with zipfile.ZipFile(target, "w", method) as archive:
        for path in sorted(folder.rglob("*")):
            archive.write(path, f"{prefix}/{path.relative_to(folder).as_posix()}")
        for name, data in (extra or {}).items():
            archive.writestr(name, data)
    return target


# 2. Yahoo! set 2 beside set 1

def test_replacing_yahoo_set2_keeps_set1_and_a_folder_without_a_set_passes_the_question_on(user_dir, tmp_path, monkeypatch,
                                                                                          capsys):
    shared = yahoo_download(user_dir, 1, marker=0.1)  # the user unpacked set 1 and set 2 into the user data directory
    yahoo_download(user_dir, 2, marker=0.2)
    import_dataset("Yahoo-set2", yahoo_download(tmp_path / "new", 2, marker=0.3), replace=True)
    assert load_split("Yahoo-set1", "train").features[0, 0] == 0.1  # set 1 is still there
    assert load_split("Yahoo-set2", "train").features[0, 0] == 0.3  # set 2 is the new import
    assert sorted(p.name for p in shared.iterdir()) == ["set1.test.txt", "set1.train.txt", "set1.valid.txt"]
    # a place whose Yahoo folder holds set 1 only does not hold set 2: the question passes on to the import
    elsewhere = tmp_path / "elsewhere"
    yahoo_download(elsewhere, 1, marker=0.4)
    monkeypatch.setenv("GAPRANK_DATA", str(elsewhere))
    assert find_dataset("Yahoo-set2")[0].kind == "user"
    assert load_fold("Yahoo-set2", 1).test.features[0, 0] == 0.3
    assert load_split("Yahoo-set1", "test").features[0, 0] == 0.4
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "empty"))
    assert main(["data", "list", "--format", "json"]) == 0
    listed = {row["name"]: row for row in json.loads(capsys.readouterr().out)}
    assert listed["Yahoo-set1"]["status"] == "found" and listed["Yahoo-set2"]["status"] == "missing"
    with pytest.raises(DataNotFoundError, match="data set Yahoo-set2 not found"):
        load_split("Yahoo-set2", "train")


# 6. a folder named for another set; counts that differ from the set's page

def test_a_download_named_for_another_set_is_refused(user_dir, tmp_path, capsys):
    mq2007 = tiny_download(tmp_path / "a", "MQ2007")
    _refused(["data", "import", "MQ2008", str(mq2007)], capsys, f"{mq2007}: named 'MQ2007', which is MQ2007, not MQ2008")
    _refused(["data", "import", "MQ2008", str(mq2007.parent)], capsys, "named 'MQ2007'")
    web10k = tiny_download(tmp_path / "b", "MSLR-WEB10K", features=136)
    archive = _zip(web10k, tmp_path / "MSLR-WEB10K.zip", "Fold-files")
    _refused(["data", "import", "MSLR-WEB30K", str(archive)], capsys, "named 'MSLR-WEB10K', which is MSLR-WEB10K")
    assert not user_dir.exists() or not any(user_dir.iterdir())
    # named for itself, or for nothing known: imported; its counts differ from the page's, which is said in one line
    assert main(["data", "import", "MQ2007", str(mq2007)]) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["gaprank data: warning: MQ2007 has 1,692 queries and 69,623 documents on its page; this download has "
                   "15 and 60 (a sample, or another set?); imported all the same"]


# 9. archives Python cannot read, damaged ones, duplicate members

def _patch_zip(path: Path, *, method: int | None = None, flag: int | None = None) -> None:
    """Set every member's compression method or general-purpose flag, in the local and the central headers."""
    data = bytearray(path.read_bytes())
    for signature, flag_at, method_at in ((b"PK\x03\x04", 6, 8), (b"PK\x01\x02", 8, 10)):
        start = data.find(signature)
        while start >= 0:
            if method is not None:
                data[start + method_at:start + method_at + 2] = method.to_bytes(2, "little")
            if flag is not None:
                data[start + flag_at] |= flag
            start = data.find(signature, start + 4)
    path.write_bytes(bytes(data))


def test_unreadable_and_damaged_archives_are_one_line(user_dir, tmp_path, capsys):
    download = tiny_download(tmp_path / "dl")
    deflate64 = _zip(download, tmp_path / "deflate64.zip", "MQ2008", zipfile.ZIP_STORED)
    _patch_zip(deflate64, method=9)
    _refused(["data", "import", "MQ2008", str(deflate64)], capsys, "not a readable archive", "Deflate64")
    encrypted = _zip(download, tmp_path / "encrypted.zip", "MQ2008")
    _patch_zip(encrypted, flag=0x1)
    _refused(["data", "import", "MQ2008", str(encrypted)], capsys, "not a readable archive", "is encrypted")
    raw = _tar_bytes(download, "MQ2008")
    xz = bytearray(lzma.compress(raw))
    xz[len(xz) // 2] ^= 0x55
    (tmp_path / "damaged.tar.xz").write_bytes(bytes(xz))
    _refused(["data", "import", "MQ2008", str(tmp_path / "damaged.tar.xz")], capsys, "not a readable archive", "damaged")
    # a damaged member header: tarfile ends the member list there, silently; the files after it are not "missing"
    header = raw.find(b"MQ2008/Fold3/vali.txt")
    assert header % 512 == 0
    broken = bytearray(raw)
    broken[header] = ord("X")
    (tmp_path / "header.tar.gz").write_bytes(gzip.compress(bytes(broken)))
    _refused(["data", "import", "MQ2008", str(tmp_path / "header.tar.gz")], capsys, "damaged")
    # one flipped bit anywhere in the compressed stream: damaged (the gzip checksum is read at the stream's end)
    packed = gzip.compress(raw)
    for where in (0.3, 0.5, 0.7, 0.9):
        flipped = bytearray(packed)
        flipped[int(len(flipped) * where)] ^= 0x10
        (tmp_path / "flipped.tar.gz").write_bytes(bytes(flipped))
        _refused(["data", "import", "MQ2008", str(tmp_path / "flipped.tar.gz")], capsys, "damaged")
    twice = tmp_path / "twice.tar"
    with tarfile.open(twice, "w") as archive:
        archive.add(download, arcname="MQ2008")
        archive.add(download / "Fold1" / "test.txt", arcname="MQ2008/Fold1/test.txt")
    _refused(["data", "import", "MQ2008", str(twice)], capsys, "member 'MQ2008/Fold1/test.txt' is in the archive twice")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zipfile warns of the duplicate name it writes
        _zip(download, tmp_path / "twice.zip", "MQ2008", extra={"MQ2008/Fold2/vali.txt": b"0 qid:1 1:0\n"})
    _refused(["data", "import", "MQ2008", str(tmp_path / "twice.zip")], capsys, "is in the archive twice")
    assert not user_dir.exists() or not any(user_dir.iterdir())


# 10. an unreadable data directory

@pytest.fixture()
def unreadable(monkeypatch):
    """Make folders unreadable: no permission bits, and (root reads them all the same) listing them fails as
    the system fails it for anyone else."""
    blocked: list[Path] = []
    real_scandir, real_listdir = os.scandir, os.listdir

    def refuse(path: object) -> None:
        if any(Path(os.fsdecode(path)) == b for b in blocked):  # type: ignore[arg-type]
            raise PermissionError(13, "Permission denied", os.fsdecode(path))  # type: ignore[arg-type]

    monkeypatch.setattr(os, "scandir", lambda path=".": refuse(path) or real_scandir(path))
    monkeypatch.setattr(os, "listdir", lambda path=".": refuse(path) or real_listdir(path))

    def block(folder: Path) -> Path:
        folder.mkdir(parents=True, exist_ok=True)
        folder.chmod(0)
        blocked.append(folder)
        return folder
    yield block
    for folder in blocked:
        folder.chmod(0o755)


def test_an_unreadable_data_directory_is_passed_over_with_a_warning(user_dir, tmp_path, monkeypatch, unreadable, capsys):
    env = unreadable(tmp_path / "env")
    monkeypatch.setenv("GAPRANK_DATA", str(env))
    with pytest.warns(DataLocationWarning, match=f"cannot read GAPRANK_DATA {env} \\(Permission denied\\); passed over"):
        assert load_fold("OHSUMED", 1).test.num_queries == 22  # the bundled set
    unreadable(user_dir)
    with pytest.warns(DataLocationWarning) as caught:
        assert load_split("MQ2008", "test", fold=2).num_queries == 157
    assert {str(w.message) for w in caught} == {f"gaprank: cannot read {where} (Permission denied); passed over"
                                                for where in (f"GAPRANK_DATA {env}", f"the user data directory {user_dir}")}
    assert main(["data", "list"]) == 0
    captured = capsys.readouterr()
    assert "OHSUMED      bundled" in captured.out
    assert captured.err.splitlines() == [
        f"gaprank data: warning: cannot read GAPRANK_DATA {env} (Permission denied); passed over",
        f"gaprank data: warning: cannot read the user data directory {user_dir} (Permission denied); passed over"]
    _refused(["data", "import", "MQ2008", str(tiny_download(tmp_path / "dl"))], capsys,
             f"cannot read the user data directory {user_dir}: Permission denied")


# 12. signals during an import; what a killed import leaves

SLOW_IMPORT = """
import pathlib, signal, sys, time
# as from a terminal: a parent started with nohup or in a shell's background ignores SIGHUP or SIGINT, and the
# import (rightly) leaves an ignored signal ignored
signal.signal(signal.SIGHUP, signal.SIG_DFL)
signal.signal(signal.SIGINT, signal.default_int_handler)
import gaprank.data._import as importer
def slow_check(*args, **kwargs):
    pathlib.Path(sys.argv[1]).write_text("checking")
    time.sleep(120)
importer._check = slow_check
from gaprank.cli.main import main
sys.exit(main(["data", "import", "MQ2008", sys.argv[2]]))
"""


@pytest.mark.parametrize("name", ["SIGTERM", "SIGHUP", "SIGINT", "SIGKILL"])
def test_a_signal_during_an_import_cleans_up_in_one_line(user_dir, tmp_path, name, capsys):
    number = getattr(signal, name)
    ready = tmp_path / "ready"
    env = {**os.environ, "PYTHONPATH": str(SRC), "XDG_DATA_HOME": str(user_dir.parent)}
    child = subprocess.Popen([sys.executable, "-c", SLOW_IMPORT, str(ready), str(tiny_download(tmp_path / "dl"))],
                             env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while not ready.exists() and child.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert ready.exists(), child.communicate()[1]
        assert [p.name for p in user_dir.glob(".import-MQ2008-*")]  # staging, mid-import
        child.send_signal(number)
        out, err = child.communicate(timeout=60)
    finally:
        child.kill()
    if name == "SIGKILL":
        assert child.returncode == -number and [p.name for p in user_dir.glob(".import-MQ2008-*")]
        assert main(["data", "list"]) == 0  # the process is gone: the next data list removes its staging folder
        assert "left by an import that was stopped" in capsys.readouterr().err
    else:
        assert child.returncode == 128 + number
        assert err.strip() == f"gaprank data: interrupted by {name}; nothing was imported"
    assert sorted(p.name for p in user_dir.iterdir()) == []


def test_leftovers_of_dead_imports_are_removed_and_live_ones_kept(user_dir, capsys):
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    dead, alive = gone.pid, os.getpid()
    leftovers = [user_dir / f".import-MQ2008-{dead}-abc_12", user_dir / ".versions" / f"MQ2008.20260101T000000-{dead}-0a1b2c"]
    kept = [user_dir / f".import-MSLR-WEB10K-{alive}-xyz", user_dir / ".versions" / f"MQ2008.20260101T000000-{alive}-3d4e5f"]
    for folder in leftovers + kept:
        (folder / "Fold1").mkdir(parents=True)
        (folder / "Fold1" / "train.txt").write_text("0 qid:1 1:0\n")
    assert main(["data", "list"]) == 0
    assert all(not p.exists() for p in leftovers) and all(p.exists() for p in kept)
    assert capsys.readouterr().err.count("left by an import that was stopped") == 2


# 15. only the set's files; a limit on the archive's size

def test_only_the_sets_files_are_imported_and_the_rest_is_named_in_one_line(user_dir, tmp_path, capsys):
    download = tiny_download(tmp_path / "dl")
    archive = _zip(download, tmp_path / "download.zip", "MQ2008",
                   extra={"MQ2008/readme.txt": b"about", "MQ2008/Fold1/extra.bin": bytes(1000), "features.txt": b"1 bm25"})
    assert main(["data", "import", "MQ2008", str(archive)]) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["gaprank data: warning: skipped 3 files of the download that are not part of MQ2008's layout: "
                   "MQ2008/Fold1/extra.bin, MQ2008/readme.txt, features.txt"]
    imported = find_dataset("MQ2008")[1]
    files = sorted(p.relative_to(imported).as_posix() for p in imported.rglob("*") if p.is_file())
    assert files == [".gaprank-import.json"] + [f"Fold{k}/{s}.txt" for k in range(1, 6) for s in ("test", "train", "vali")]
    record = json.loads((imported / ".gaprank-import.json").read_text())
    assert record["skipped"] == ["MQ2008/Fold1/extra.bin", "MQ2008/readme.txt", "features.txt"]
    # an unpacked folder: only the layout's files are copied, the others are named
    (download / "notes.md").write_text("mine")
    with pytest.warns(DataImportWarning, match="skipped 1 file of the download that is not part of MQ2008's layout: notes.md"):
        import_dataset("MQ2008", download, replace=True)
    assert not (find_dataset("MQ2008")[1] / "notes.md").exists()


def test_an_archive_above_the_size_limit_is_refused(user_dir, tmp_path, capsys):
    download = tiny_download(tmp_path / "dl")
    archive = _zip(download, tmp_path / "MQ2008.zip", "MQ2008")
    size = sum(m.file_size for m in zipfile.ZipFile(archive).infolist())
    _refused(["data", "import", "MQ2008", str(archive), "--max-size", "10K"], capsys,
             "declares more than 10.0 KiB uncompressed, the limit", f"(at least {size / 1024:.1f} KiB)", "--max-size")
    (tmp_path / "MQ2008.tar.gz").write_bytes(gzip.compress(_tar_bytes(download, "MQ2008")))
    with pytest.raises(DataImportError, match="declares more than 10.0 KiB"):
        import_dataset("MQ2008", tmp_path / "MQ2008.tar.gz", max_size="10K")
    assert not user_dir.exists() or not any(user_dir.iterdir())
    assert main(["data", "import", "MQ2008", str(archive), "--max-size", "1M"]) == 0
    assert parse_size("100G") == 100 << 30 and parse_size("2.5k") == 2560 and parse_size(512) == 512
    for bad in ("lots", "-1G", 0, "1.5X"):
        with pytest.raises(DataImportError, match="max size must be"):
            parse_size(bad)


def test_istella_without_a_vali_split_imports(user_dir, tmp_path):
    folder = tmp_path / "dl" / "Istella"
    folder.mkdir(parents=True)
    for split, qid in (("train", 1), ("test", 2)):
        (folder / f"{split}.txt").write_text("".join(f"{label} qid:{qid} " + " ".join(f"{i}:{label}" for i in range(1, 221))
                                                     + "\n" for label in (0, 3)))
    with pytest.warns(DataImportWarning, match="Istella has 33,018 queries .* this download has 2 and 4"):
        imported = import_dataset("Istella", folder)
    assert load_split("Istella", "test").labels.tolist() == [0, 3]
    assert json.loads((imported / ".gaprank-import.json").read_text())["queries"] == 2
