"""``gaprank data import``: a downloaded set, checked whole, copied into the user data directory at once.

The download (a folder, a ``.zip`` or a tar archive) is unpacked into a hidden staging folder inside the
user data directory, its set folder found, every fold read exactly as :func:`load_fold` reads it, and only
then renamed into place: a set that fails any check, an interrupted copy or a full disk leaves nothing
behind, and a reader never sees half a set.
"""

from __future__ import annotations

import shutil
import stat
import sys
import tarfile
import tempfile
import time
import zipfile
import zlib
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import IO, Any

from .._inputs import GaprankInputError
from ._datasets import DATASETS, DatasetInfo, dataset_info
from ._files import write_json_atomic
from ._folds import check_dataset_folder
from ._locations import dataset_folder, user_data_dir, variant_folder

TAR_SUFFIXES = (".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tbz2", ".tar.xz", ".txz")
RECORD = ".gaprank-import.json"
CHUNK = 1 << 20
MAX_DEPTH = 4  # how deep below the download's top the set's folder may lie


class DataImportError(GaprankInputError):
    """A download that cannot be imported; the message names the file (and line) at fault."""


def _progress_bar(total: int | None, description: str, enabled: bool) -> Any:
    from tqdm import tqdm

    return tqdm(total=total, desc=description, unit="B", unit_scale=True, unit_divisor=1024, disable=not enabled,
                file=sys.stderr, leave=False)


def _safe_relative(name: str, source: Path) -> PurePosixPath:
    """An archive member's path, refused when it would land outside the archive's root."""
    path = PurePosixPath(name.replace("\\", "/"))
    if path.is_absolute() or ".." in path.parts or (path.parts and ":" in path.parts[0]):
        raise DataImportError(f"{source}: member {name!r} points outside the archive's root; refusing to unpack it")
    return path


def _copy_stream(reader: IO[bytes], target: Path, bar: Any) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target, "xb") as out:
        for block in iter(lambda: reader.read(CHUNK), b""):
            out.write(block)
            bar.update(len(block))


def _unpack_folder(source: Path, into: Path, bar: Any) -> None:
    root = source.resolve()
    for path in sorted(source.rglob("*")):
        relative = path.relative_to(source)
        if path.is_symlink() and not path.resolve().is_relative_to(root):
            raise DataImportError(f"{path}: a link to {path.resolve()}, outside {source}; refusing to follow it")
        if path.is_file():
            with path.open("rb") as reader:
                _copy_stream(reader, into / relative, bar)


def _unpack_zip(source: Path, into: Path, bar: Any) -> None:
    with zipfile.ZipFile(source) as archive:
        members = archive.infolist()
        bar.total = sum(m.file_size for m in members)
        for member in members:
            relative = _safe_relative(member.filename, source)
            if stat.S_ISLNK(member.external_attr >> 16):
                raise DataImportError(f"{source}: member {member.filename!r} is a link; refusing to unpack it")
            if member.is_dir():
                (into / relative).mkdir(parents=True, exist_ok=True)
                continue
            with archive.open(member) as reader:
                _copy_stream(reader, into / relative, bar)


def _unpack_tar(source: Path, into: Path, bar: Any) -> None:
    with tarfile.open(source, "r:*") as archive:
        for member in archive:
            relative = _safe_relative(member.name, source)
            if member.isdir():
                (into / relative).mkdir(parents=True, exist_ok=True)
            elif member.isfile():
                reader = archive.extractfile(member)
                assert reader is not None  # a regular member always has its data
                _copy_stream(reader, into / relative, bar)
            else:
                raise DataImportError(f"{source}: member {member.name!r} is a link or a special file; refusing to unpack it")


def _unpack(source: Path, into: Path, progress: bool) -> None:
    """Copy the download's files into ``into``, refusing anything that would land outside it."""
    into.mkdir()
    lowered = source.name.lower()
    with _progress_bar(None, f"copying {source.name}", progress) as bar:
        if source.is_dir():
            bar.total = sum(p.stat().st_size for p in source.rglob("*") if p.is_file())
            _unpack_folder(source, into, bar)
            return
        try:
            if lowered.endswith(".zip"):
                _unpack_zip(source, into, bar)
            elif lowered.endswith(TAR_SUFFIXES):
                _unpack_tar(source, into, bar)
            else:
                raise DataImportError(f"{source}: give the unpacked folder, a .zip or a tar archive "
                                      f"({', '.join(TAR_SUFFIXES)})")
        except (zipfile.BadZipFile, tarfile.TarError, EOFError, zlib.error) as exc:
            raise DataImportError(f"{source}: not a readable archive, truncated or damaged ({exc})") from None
        except OSError as exc:
            if exc.filename is None or not str(exc.filename).startswith(str(into)):
                raise DataImportError(f"{source}: not a readable archive, truncated or damaged "
                                      f"({exc.strerror or exc})") from None
            raise


def _looks_like(folder: Path, info: DatasetInfo) -> bool:
    if info.layout == "splits":
        stem = info.split_files["train"][0]
        return any((folder / f"{stem}{suffix}").is_file() for suffix in (".txt", ".txt.gz", ""))
    return (folder / "folds.json").is_file() or (variant_folder(folder, info.variant) / "Fold1").is_dir()


def _folders(top: Path) -> Iterator[tuple[int, Path]]:
    """Every folder below ``top`` (itself included) with its depth, shallowest first."""
    level = [top]
    for depth in range(MAX_DEPTH + 1):
        yield from ((depth, folder) for folder in level)
        level = sorted(child for folder in level for child in folder.iterdir() if child.is_dir())


def _find_set_folder(unpacked: Path, info: DatasetInfo, source: Path) -> Path:
    """The shallowest folder of the download laid out as ``info``'s set; two at that depth are ambiguous."""
    found: list[Path] = []
    for depth, folder in _folders(unpacked):
        if found and depth > len(found[0].relative_to(unpacked).parts):
            break
        if _looks_like(folder, info):
            found.append(folder)
    if not found:
        raise DataImportError(f"{source}: no {info.name} layout found; expected {info.expected_layout()}")
    if len(found) > 1:
        names = ", ".join(str(f.relative_to(unpacked)) for f in found[:3])
        raise DataImportError(f"{source}: more than one {info.name} folder ({names}); import one of them")
    return found[0]


def import_dataset(dataset: str, source: str | Path, *, replace: bool = False, progress: bool = False) -> Path:
    """Check a downloaded set and copy it into the user data directory, where :func:`load_fold` finds it.

    Parameters
    ----------
    dataset : str
        A named set (``gaprank.data.DATASETS``: "MSLR-WEB30K", "MQ2007", "Yahoo-set1", ...).
    source : str or Path
        The download: its unpacked folder, a ``.zip``, or a tar archive (``.tar``, ``.tar.gz``, ...).
    replace : bool
        Replace a copy imported before (otherwise that is an error).
    progress : bool
        Show progress bars on standard error.

    Returns
    -------
    Path
        The imported set's folder, ``user_data_dir() / NAME``.

    Raises
    ------
    DataImportError
        When the download is not the named set (layout, feature count, grade scale, folds: the first
        offending file and line), is truncated or damaged, holds a path outside its root, or the user
        data directory cannot be written. Nothing is left behind.

    Examples
    --------
    >>> from gaprank.data import import_dataset
    >>> import_dataset("MSLR-WEB10K", "MSLR-WEB10K.zip", progress=True)   # doctest: +SKIP
    PosixPath('/home/me/.local/share/gaprank/MSLR-WEB10K')
    """
    info = dataset_info(dataset)
    if info is None:
        raise DataImportError(f"unknown data set {dataset!r}; gaprank data import takes one of: "
                              f"{', '.join(i.name for i in DATASETS.values())}")
    source = Path(source)
    if not source.exists():
        raise DataImportError(f"{source} does not exist")
    root = user_data_dir()
    existing = dataset_folder(root, info.name)
    if existing is not None and not replace:
        raise DataImportError(f"{info.name} is already imported at {existing}; remove it or pass --replace")
    try:
        root.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".import-{info.name}-", dir=root))
    except OSError as exc:
        raise DataImportError(f"cannot write to the user data directory {root}: {exc.strerror or exc}") from None
    try:
        unpacked = staging / "unpacked"
        _unpack(source, unpacked, progress)
        found = _find_set_folder(unpacked, info, source)
        shown = source / found.relative_to(unpacked) if source.is_dir() else \
            Path(f"{source}:{found.relative_to(unpacked).as_posix()}")
        staged = staging / info.name
        found.rename(staged)
        summary = _check(info, staged, shown, progress)
        files = sorted(p for p in staged.rglob("*") if p.is_file())
        from .. import __version__

        write_json_atomic(staged / RECORD, {
            "dataset": info.name, "source": str(source.resolve()), "imported": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "gaprank": __version__, **summary,
            "files": [{"path": p.relative_to(staged).as_posix(), "bytes": p.stat().st_size} for p in files]})
        if existing is not None:
            existing.rename(staging / "replaced")
        target = root / info.name
        staged.rename(target)
    except OSError as exc:
        raise DataImportError(f"cannot import {source} into {root}: {exc.strerror or exc}") from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target


def _check(info: DatasetInfo, staged: Path, shown: Path, progress: bool) -> dict[str, int]:
    """:func:`check_dataset_folder` on the staged copy, its messages naming the download's files."""
    from tqdm import tqdm

    with tqdm(total=len(info.fold_numbers), desc=f"checking {info.name}", unit="fold", disable=not progress, file=sys.stderr,
              leave=False) as bar:
        try:
            return check_dataset_folder(info.name, staged, progress=lambda _: bar.update(1))
        except GaprankInputError as exc:
            raise DataImportError(f"not {info.name}: {str(exc).replace(str(staged), str(shown))}") from None

