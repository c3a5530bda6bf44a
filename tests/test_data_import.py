"""gaprank data import / list: a synthetic MSLR-shaped download imported from a folder, a .zip and a .tar.gz
into the user data directory; a wrong set, a damaged archive, a member outside the archive, an unwritable
data directory are one-line errors (exit 2) that leave nothing behind."""

from __future__ import annotations

import io
import json
import shutil
import tarfile
import zipfile
from pathlib import Path

import numpy as np
import pytest

from gaprank.cli.main import main
from gaprank.data import DataImportError, import_dataset, load_fold, locate_dataset, user_data_dir
from training.synthetic import SHAPES, write

# Queries of the synthetic download: two per partition. What is checked (archives, layouts, refusals) does not
# depend on the size, and each import reads every fold of its 136 features.
QUERIES = 10


@pytest.fixture(scope="module")
def download(tmp_path_factory):
    """An MSLR-WEB10K-shaped download (``QUERIES`` queries, five folds) as Microsoft lays it out:
    MSLR-WEB10K/FoldK/."""
    out = tmp_path_factory.mktemp("download")
    write(SHAPES["mslr-web10k"], QUERIES, out, folds=5, seed=5)
    return out


@pytest.fixture()
def user_dir(tmp_path, monkeypatch):
    """An empty user data directory of this test's own."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    return tmp_path / "xdg" / "gaprank"


def _tar(folder: Path, target: Path, arcname: str = "MSLR-WEB10K") -> Path:
    with tarfile.open(target, "w:gz") as archive:
        archive.add(folder, arcname=arcname)
    return target


def _zip(folder: Path, target: Path, prefix: str) -> Path:
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(folder.rglob("*")):
            archive.write(path, f"{prefix}/{path.relative_to(folder).as_posix()}")
    return target


def _left_behind(user_dir: Path) -> list[str]:
    """What the user data directory holds, the imports' folders as ``.versions/NAME`` (without their stamp)."""
    if not user_dir.exists():
        return []
    names = [p.name for p in user_dir.iterdir() if p.name != ".versions"]
    names += [f".versions/{p.name.split('.')[0]}" for p in (user_dir / ".versions").glob("*")]
    return sorted(names)


def _current(user_dir: Path, name: str) -> Path:
    """The folder the set's pointer names."""
    return user_dir / (user_dir / f"{name}.current").read_text().strip()


def _same_folds(download: Path) -> None:
    for k in (1, 4):
        imported, original = load_fold("MSLR-WEB10K", k), load_fold("MSLR-WEB10K", k, data_dir=download)
        for split in ("train", "vali", "test"):
            assert imported.split(split).query_ids == original.split(split).query_ids
            np.testing.assert_array_equal(imported.split(split).features, original.split(split).features)
            np.testing.assert_array_equal(imported.split(split).labels, original.split(split).labels)


def test_import_a_tar_gz_then_load_fold_reads_it(download, user_dir, tmp_path, capsys):
    archive = _tar(download / "MSLR-WEB10K", tmp_path / "MSLR-WEB10K.tar.gz")
    assert main(["data", "import", "mslr-web10k", str(archive)]) == 0
    imported = _current(user_dir, "MSLR-WEB10K")
    assert imported.parent == user_dir / ".versions" and imported.name.startswith("MSLR-WEB10K.")
    assert f"imported MSLR-WEB10K into {imported}" in capsys.readouterr().out
    assert locate_dataset("MSLR-WEB10K") == imported
    assert _left_behind(user_dir) == [".versions/MSLR-WEB10K", "MSLR-WEB10K.current"]  # no staging folder survives
    _same_folds(download)
    record = json.loads((imported / ".gaprank-import.json").read_text())
    assert record["dataset"] == "MSLR-WEB10K" and record["folds"] == 5 and record["queries"] == QUERIES
    assert main(["data", "list", "--format", "json"]) == 0
    listed = {row["name"]: row for row in json.loads(capsys.readouterr().out)}
    assert listed["MSLR-WEB10K"]["status"] == "found" and listed["MSLR-WEB10K"]["path"] == str(imported)
    assert listed["OHSUMED"]["status"] == listed["MQ2008"]["status"] == "bundled"
    assert listed["MSLR-WEB30K"]["status"] == "missing"
    assert "Introducing LETOR 4.0" in listed["MSLR-WEB10K"]["citation"]
    # a second import is refused unless it replaces the first
    assert main(["data", "import", "MSLR-WEB10K", str(archive)]) == 2
    assert "already imported" in capsys.readouterr().err
    assert main(["data", "import", "MSLR-WEB10K", str(archive), "--replace"]) == 0
    assert _left_behind(user_dir) == [".versions/MSLR-WEB10K", "MSLR-WEB10K.current"]  # the replaced copy is gone
    assert _current(user_dir, "MSLR-WEB10K") != imported and not imported.exists()


@pytest.mark.filterwarnings("ignore:MSLR-WEB10K has")  # the synthetic set is not the real one's size
def test_import_a_nested_zip_and_a_folder(download, user_dir, tmp_path):
    archive = _zip(download / "MSLR-WEB10K", tmp_path / "download.zip", "unpacked/MSLR-WEB10K")
    assert import_dataset("MSLR-WEB10K", archive) == _current(user_dir, "MSLR-WEB10K")
    _same_folds(download)
    (user_dir / "MSLR-WEB10K.current").unlink()
    assert import_dataset("MSLR-WEB10K", download) == _current(user_dir, "MSLR-WEB10K")  # the unpacked folder
    _same_folds(download)


def test_data_list_text(capsys):
    assert main(["data", "list"]) == 0
    out = capsys.readouterr().out
    assert "OHSUMED      bundled" in out and "MSLR-WEB30K  missing" in out
    assert "research/project/mslr" in out and "Chapelle" in out and "gaprank data import NAME PATH" in out


def _refused(argv: list[str], capsys, *expected: str) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and err.startswith("gaprank data: error: ")
    for text in expected:
        assert text in err, err
    return err


def test_a_wrong_set_is_refused_naming_the_file_and_line(download, user_dir, tmp_path, capsys):
    archive = _tar(download / "MSLR-WEB10K", tmp_path / "letor.tar.gz", arcname="letor")
    # MQ2008 has 46 features: the MSLR rows are refused at the first file's first line
    _refused(["data", "import", "MQ2008", str(archive)], capsys, "not MQ2008:",
             f"{archive}:letor/Fold1/train.txt, line 1", "num_features=46")
    assert _left_behind(user_dir) == []
    # a grade above the set's scale, deep in one file
    bad = tmp_path / "bad" / "MSLR-WEB10K"
    shutil.copytree(download / "MSLR-WEB10K", bad)
    lines = (bad / "Fold3" / "vali.txt").read_text().splitlines(True)
    lines[6] = "7" + lines[6][1:]
    (bad / "Fold3" / "vali.txt").write_text("".join(lines))
    _refused(["data", "import", "MSLR-WEB10K", str(bad.parent)], capsys,
             f"{bad}/Fold3/vali.txt", "line 7", "0..4")
    # folds whose test sets overlap
    shutil.copy(download / "MSLR-WEB10K" / "Fold1" / "vali.txt", bad / "Fold3" / "vali.txt")
    shutil.copy(download / "MSLR-WEB10K" / "Fold1" / "test.txt", bad / "Fold2" / "test.txt")
    _refused(["data", "import", "MSLR-WEB10K", str(bad.parent)], capsys, "must be disjoint")
    # a missing fold
    for fold, split in (("Fold2", "test"), ("Fold3", "vali")):
        shutil.copy(download / "MSLR-WEB10K" / fold / f"{split}.txt", bad / fold / f"{split}.txt")
    shutil.rmtree(bad / "Fold5")
    _refused(["data", "import", "MSLR-WEB10K", str(bad.parent)], capsys, "Fold5")
    assert _left_behind(user_dir) == []


def test_damaged_archives_and_escaping_members_are_refused(download, user_dir, tmp_path, capsys):
    archive = _tar(download / "MSLR-WEB10K", tmp_path / "whole.tar.gz")
    truncated = tmp_path / "truncated.tar.gz"
    truncated.write_bytes(archive.read_bytes()[: archive.stat().st_size // 2])
    _refused(["data", "import", "MSLR-WEB10K", str(truncated)], capsys, "truncated or damaged")
    zipped = _zip(download / "MSLR-WEB10K", tmp_path / "whole.zip", "MSLR-WEB10K")
    cut = tmp_path / "cut.zip"
    cut.write_bytes(zipped.read_bytes()[: zipped.stat().st_size // 2])
    _refused(["data", "import", "MSLR-WEB10K", str(cut)], capsys, "truncated or damaged")
    escaping = tmp_path / "escaping.tar.gz"
    with tarfile.open(escaping, "w:gz") as tar:
        tar.add(download / "MSLR-WEB10K", arcname="MSLR-WEB10K")
        data = b"0 qid:1 1:0\n"
        member = tarfile.TarInfo("MSLR-WEB10K/../../escaped.txt")
        member.size = len(data)
        tar.addfile(member, io.BytesIO(data))
    _refused(["data", "import", "MSLR-WEB10K", str(escaping)], capsys, "outside the archive's root")
    linked = tmp_path / "linked.tar.gz"
    with tarfile.open(linked, "w:gz") as tar:
        member = tarfile.TarInfo("MSLR-WEB10K/Fold1/train.txt")
        member.type, member.linkname = tarfile.SYMTYPE, "/etc/passwd"
        tar.addfile(member)
    _refused(["data", "import", "MSLR-WEB10K", str(linked)], capsys, "is a link")
    _refused(["data", "import", "MSLR-WEB10K", str(tmp_path / "nothing.zip")], capsys, "does not exist")
    _refused(["data", "import", "MSLR-WEB11K", str(archive)], capsys, "unknown data set 'MSLR-WEB11K'")
    assert not list(tmp_path.rglob("escaped.txt")) and _left_behind(user_dir) == []


def test_an_unwritable_user_data_directory_is_one_line(download, tmp_path, monkeypatch, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("a file where the data directory's parent should be")
    monkeypatch.setenv("XDG_DATA_HOME", str(blocker))
    assert user_data_dir() == blocker / "gaprank"
    _refused(["data", "import", "MSLR-WEB10K", str(download)], capsys, "cannot write to the user data directory")


def test_the_library_error_is_a_gaprank_input_error(download, user_dir):
    with pytest.raises(DataImportError, match="no MQ2007 layout found"):
        import_dataset("MQ2007", download / "MSLR-WEB10K" / "Fold1")
