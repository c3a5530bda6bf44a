"""``gaprank data import``: a downloaded set, checked whole, switched into the user data directory at once.

The download (a folder, a ``.zip`` or a tar archive) is unpacked into a hidden staging folder inside the
user data directory (``.import-NAME-<pid>-*``), its set folder found, only the files of the set's layout
kept, every fold read exactly as :func:`load_fold` reads it, and only then moved to a folder of its own,
``.versions/NAME.<stamp>-<pid>-<token>``, and made current by rewriting the pointer file ``NAME.current``
atomically. A reader resolves the pointer once per load, so it reads the old import or the new one, never
a mix, and never falls back to another copy in between. A set that fails any check, an interrupted copy
(Ctrl-C, SIGTERM, SIGHUP) or a full disk leaves nothing behind; what a killed process left (its staging
folder, an import no pointer names) is removed by the next import or ``gaprank data list``.
"""

from __future__ import annotations

import contextlib
import json
import lzma
import os
import re
import secrets
import shutil
import signal
import stat
import sys
import tarfile
import tempfile
import threading
import time
import warnings
import zipfile
import zlib
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import IO, Any

from .._inputs import GaprankInputError
from ._datasets import DATASETS, DatasetInfo, dataset_info
from ._files import write_atomic, write_json_atomic
from ._folds import _SPLIT_FILE_NAMES, SPLITS, check_dataset_folder
from ._locations import (
    VERSIONS_DIR,
    current_version,
    has_own_files,
    named_folders,
    pointer_file,
    user_data_dir,
    variant_folder,
)

TAR_SUFFIXES = (".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tbz2", ".tar.xz", ".txz")
RECORD = ".gaprank-import.json"
CHUNK = 1 << 20
MAX_DEPTH = 4  # how deep below the download's top the set's folder may lie
# The largest uncompressed archive imported unless max_size says otherwise: well above every named set's
# text files (MSLR-WEB30K's are a few GB), far below what a small archive built to fill a disk declares.
DEFAULT_MAX_SIZE = 100 << 30
STALE_LEGACY_SECONDS = 24 * 3600  # a staging folder of an older gaprank (no process id in its name)
VARIANTS = ("QueryLevelNorm", "Feature-min", "Feature-null")
FOLD_FILE_STEMS = ("train", "vali", "test", "trainingset", "validationset", "testset")
SUFFIXES = (".txt", ".txt.gz", "")
ZIP_METHODS = {zipfile.ZIP_STORED: "stored", zipfile.ZIP_DEFLATED: "deflate", zipfile.ZIP_BZIP2: "bzip2",
               zipfile.ZIP_LZMA: "lzma"}
_STAGING = re.compile(r"^\.import-(?P<name>.+)-(?P<pid>\d+)-[a-z0-9_]+$")
_LEGACY_STAGING = re.compile(r"^\.import-.+-[a-z0-9_]+$")
_VERSION = re.compile(r"^(?P<name>.+)\.\d{8}T\d{6}-(?P<pid>\d+)-[0-9a-f]+$")


class DataImportError(GaprankInputError):
    """A download that cannot be imported; the message names the file (and line) at fault."""


class DataImportWarning(UserWarning):
    """An import that succeeded with something to say: files skipped, counts that differ from the set's page."""


class ImportInterrupted(KeyboardInterrupt):
    """An import stopped by SIGINT, SIGTERM or SIGHUP; its staging folder is removed.

    ``signum`` is the signal; ``imported`` the set's folder when the signal came after the import was made
    current (the import stands), else None.
    """

    def __init__(self, signum: int, imported: Path | None = None) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum
        self.imported = imported


class _Signals:
    """SIGINT, SIGTERM and SIGHUP raise :class:`ImportInterrupted` (so ``finally`` blocks clean up), or
    wait while :meth:`deferred` runs (the switch to the new import and the removal of the old)."""

    def __init__(self) -> None:
        self.deferring = False
        self.pending: int | None = None

    def handler(self, signum: int, frame: Any) -> None:
        if self.deferring:
            self.pending = signum
            return
        raise ImportInterrupted(signum)

    @contextlib.contextmanager
    def deferred(self) -> Iterator[None]:
        self.deferring = True
        try:
            yield
        finally:
            self.deferring = False

    @contextlib.contextmanager
    def installed(self) -> Iterator[_Signals]:
        """The handlers, in the main thread, for each of the signals whose handler is Python's default."""
        previous: dict[int, Any] = {}
        if threading.current_thread() is threading.main_thread():
            for name in ("SIGINT", "SIGTERM", "SIGHUP"):
                number = getattr(signal, name, None)
                if number is not None and signal.getsignal(number) in (signal.SIG_DFL, signal.default_int_handler):
                    previous[number] = signal.signal(number, self.handler)
        try:
            yield self
        finally:
            for number, handler in previous.items():
                signal.signal(number, handler)



def _progress_bar_class():
    """tqdm's bar when it is installed (the experiments extra brings it), else a bar that shows nothing."""
    try:
        from tqdm import tqdm
    except ImportError:
        return _NoBar
    return tqdm


class _NoBar:
    """What the import uses of a tqdm bar, doing nothing (a lean install has no tqdm)."""

    def __init__(self, *args, **kwargs) -> None:
        pass

    def __enter__(self) -> _NoBar:
        return self

    def __exit__(self, *exc) -> None:
        pass

    total: int | None = None

    def update(self, n: int = 1) -> None:
        pass


def parse_size(value: int | str) -> int:
    """A size in bytes from an int or a string such as ``"500M"``, ``"2.5G"``, ``"1T"`` (powers of 1024).

    Raises
    ------
    DataImportError
        When ``value`` is not a positive size.
    """
    if isinstance(value, int) and not isinstance(value, bool):
        number = value
    else:
        match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([KMGT]?)(?:i?B)?\s*", str(value), re.IGNORECASE)
        if match is None:
            raise DataImportError(f"max size must be a number of bytes or one such as 500M, 2.5G, 1T; got {value!r}")
        number = int(float(match.group(1)) * 1024 ** " KMGT".index(match.group(2).upper() or " "))
    if number <= 0:
        raise DataImportError(f"max size must be positive; got {value!r}")
    return number


def _size_text(number: int) -> str:
    for unit, shift in (("TiB", 40), ("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if number >= 1 << shift:
            return f"{number / (1 << shift):.1f} {unit}"
    return f"{number} bytes"


class _Budget:
    """The uncompressed bytes an archive declares, refused past the limit or the free space."""

    def __init__(self, source: Path, limit: int, free: int) -> None:
        self.source, self.limit, self.free, self.total = source, limit, free, 0

    def add(self, size: int) -> None:
        self.total += size
        if self.total > self.limit:
            raise DataImportError(f"{self.source}: the archive declares more than {_size_text(self.limit)} uncompressed, "
                                  f"the limit (at least {_size_text(self.total)}); if it is right, raise it "
                                  f"(--max-size, max_size=)")
        if self.total > self.free:
            raise DataImportError(f"{self.source}: the archive declares at least {_size_text(self.total)} uncompressed, "
                                  f"more than the {_size_text(self.free)} free in the user data directory")


def _progress_bar(total: int | None, description: str, enabled: bool) -> Any:
    tqdm = _progress_bar_class()

    return tqdm(total=total, desc=description, unit="B", unit_scale=True, unit_divisor=1024, disable=not enabled,
                file=sys.stderr, leave=False)


def _safe_relative(name: str, source: Path) -> PurePosixPath:
    """An archive member's path, refused when it would land outside the archive's root."""
    path = PurePosixPath(name.replace("\\", "/"))
    if path.is_absolute() or ".." in path.parts or (path.parts and ":" in path.parts[0]):
        raise DataImportError(f"{source}: member {name!r} points outside the archive's root; refusing to unpack it")
    return path


def _new_member(seen: set[str], relative: PurePosixPath, name: str, source: Path) -> None:
    key = relative.as_posix().rstrip("/")
    if key in seen:
        raise DataImportError(f"{source}: member {name!r} is in the archive twice; which copy is meant cannot be told "
                              "(an archive appended to?)")
    seen.add(key)


def _copy_stream(reader: IO[bytes], target: Path, bar: Any, source: Path, name: str) -> None:
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        out = open(target, "xb")
    except (FileExistsError, NotADirectoryError):
        raise DataImportError(f"{source}: member {name!r} clashes with another member of the same path") from None
    with out:
        for block in iter(lambda: reader.read(CHUNK), b""):
            out.write(block)
            bar.update(len(block))


def _unpack_zip(source: Path, into: Path, bar: Any, budget: _Budget) -> None:
    with zipfile.ZipFile(source) as archive:
        members = archive.infolist()
        for member in members:  # every member is checked before anything is written
            if member.flag_bits & 0x1:
                raise DataImportError(f"{source}: not a readable archive: member {member.filename!r} is encrypted; "
                                      "unpack it with its password and import the folder")
            if member.compress_type not in ZIP_METHODS:
                method = "Deflate64 (what Windows Explorer writes for large files)" if member.compress_type == 9 \
                    else f"compression method {member.compress_type}"
                raise DataImportError(f"{source}: not a readable archive: member {member.filename!r} uses {method}, "
                                      "which Python cannot read; unpack it (7-Zip, unzip) and import the folder")
        budget.add(sum(m.file_size for m in members))
        bar.total = budget.total
        seen: set[str] = set()
        for member in members:
            relative = _safe_relative(member.filename, source)
            if stat.S_ISLNK(member.external_attr >> 16):
                raise DataImportError(f"{source}: member {member.filename!r} is a link; refusing to unpack it")
            _new_member(seen, relative, member.filename, source)
            if member.is_dir():
                (into / relative).mkdir(parents=True, exist_ok=True)
                continue
            with archive.open(member) as reader:
                _copy_stream(reader, into / relative, bar, source, member.filename)


def _unpack_tar(source: Path, into: Path, bar: Any, budget: _Budget) -> None:
    with tarfile.open(source, "r:*") as archive:
        seen: set[str] = set()
        for member in archive:
            relative = _safe_relative(member.name, source)
            _new_member(seen, relative, member.name, source)
            if member.isdir():
                (into / relative).mkdir(parents=True, exist_ok=True)
            elif member.isfile():
                budget.add(member.size)
                reader = archive.extractfile(member)
                assert reader is not None  # a regular member always has its data
                _copy_stream(reader, into / relative, bar, source, member.name)
            else:
                raise DataImportError(f"{source}: member {member.name!r} is a link or a special file; refusing to unpack it")
        # tarfile ends the member list at a damaged header, silently; and a compressed stream's checksum
        # is only checked at its end: read to the end, where only the end-of-archive zero blocks may remain
        assert archive.fileobj is not None
        for block in iter(lambda: archive.fileobj.read(CHUNK), b""):  # type: ignore[union-attr]
            if block.strip(b"\0"):
                raise DataImportError(f"{source}: not a readable archive, damaged: a member header is damaged "
                                      f"(the member list stops after {len(seen)} members)")


def _unpack(source: Path, into: Path, progress: bool, budget: _Budget) -> None:
    """Unpack the archive ``source`` into ``into``, refusing anything that would land outside it."""
    into.mkdir()
    lowered = source.name.lower()
    with _progress_bar(None, f"unpacking {source.name}", progress) as bar:
        try:
            if lowered.endswith(".zip"):
                _unpack_zip(source, into, bar, budget)
            elif lowered.endswith(TAR_SUFFIXES):
                _unpack_tar(source, into, bar, budget)
            else:
                raise DataImportError(f"{source}: give the unpacked folder, a .zip or a tar archive "
                                      f"({', '.join(TAR_SUFFIXES)})")
        except (zipfile.BadZipFile, tarfile.TarError, EOFError, zlib.error, lzma.LZMAError, NotImplementedError) as exc:
            raise DataImportError(f"{source}: not a readable archive, truncated or damaged ({exc})") from None
        except OSError as exc:
            if exc.filename is None or not str(exc.filename).startswith(str(into)):
                raise DataImportError(f"{source}: not a readable archive, truncated or damaged "
                                      f"({exc.strerror or exc})") from None
            raise


def _looks_like(folder: Path, info: DatasetInfo) -> bool:
    if info.layout == "splits":
        return has_own_files(folder, info.name)
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


def _archive_stem(name: str) -> str:
    lowered = name.lower()
    for suffix in (*TAR_SUFFIXES, ".zip"):
        if lowered.endswith(suffix):
            return name[: -len(suffix)]
    return name


def _refuse_another_sets_name(info: DatasetInfo, names: list[str], shown: Path) -> None:
    """A download whose folder (or archive) is named for another known set is that set, not ``info``'s."""
    own = set(info.own_names())
    for name in names:
        other = next((o for o in DATASETS.values() if name.lower() in o.own_names() and name.lower() not in own), None)
        if other is not None:
            raise DataImportError(f"{shown}: named {name!r}, which is {other.name}, not {info.name}; import it as "
                                  f"{other.name}, or rename it if it really holds {info.name}")


def _layout_files(folder: Path, info: DatasetInfo) -> list[PurePosixPath]:
    """The files of ``folder`` that belong to ``info``'s layout (those :func:`load_fold` reads, every feature
    variant's folds, ``folds.json`` and its partitions), relative to ``folder``."""
    candidates: list[Path] = []
    if info.layout == "splits":
        candidates = [folder / name for name in info.split_file_names()]
    elif (folder / "folds.json").is_file():
        candidates.append(folder / "folds.json")
        base = variant_folder(folder, info.variant)
        try:
            folds = json.loads((folder / "folds.json").read_text(encoding="utf-8"))["folds"]
            for spec in folds.values():
                for split in SPLITS:
                    entry = spec[split]
                    for partition in [entry] if isinstance(entry, str) else entry:
                        parent, _, name = str(partition).rpartition("/")
                        stems = _SPLIT_FILE_NAMES.get(name, (name,))
                        candidates += [base / parent / f"{stem}{suffix}" for stem in stems for suffix in SUFFIXES]
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            pass  # a malformed folds.json: the check names what is wrong with it
    else:
        bases = [folder, *(folder / v for v in VARIANTS)] if info.variant else [folder]
        candidates = [base / f"Fold{k}" / f"{stem}{suffix}" for base in bases for k in range(1, 6)
                      for stem in FOLD_FILE_STEMS for suffix in SUFFIXES]
    top = folder.resolve()
    kept = [c for c in candidates if c.is_file() and c.resolve().is_relative_to(top)]
    return list(dict.fromkeys(PurePosixPath(c.relative_to(folder).as_posix()) for c in kept))


def _files_below(folder: Path) -> list[PurePosixPath]:
    return sorted(PurePosixPath(p.relative_to(folder).as_posix()) for p in folder.rglob("*") if p.is_file())


def _copy_folder_files(source: Path, found: Path, files: list[PurePosixPath], staged: Path, progress: bool) -> None:
    """Copy ``files`` of ``found`` (inside the download folder ``source``) into ``staged``."""
    root = source.resolve()
    paths = [found / f for f in files]
    for path in paths:
        if path.is_symlink() and not path.resolve().is_relative_to(root):
            raise DataImportError(f"{path}: a link to {path.resolve()}, outside {source}; refusing to follow it")
    with _progress_bar(sum(p.stat().st_size for p in paths), f"copying {source.name}", progress) as bar:
        for path, relative in zip(paths, files, strict=True):
            with path.open("rb") as reader:
                _copy_stream(reader, staged / relative, bar, source, relative.as_posix())


def _process_alive(pid: int) -> bool:
    """Whether process ``pid`` runs (True when that cannot be told, so nothing of a live import is removed)."""
    if pid == os.getpid():
        return True
    if os.name == "nt":  # pragma: no cover - os.kill(pid, 0) would stop the process on Windows
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def _remove_versions(root: Path, name: str, keep: str | None, *, ours: bool) -> list[Path]:
    """Remove the folders of ``name``'s imports under ``root/.versions`` other than ``keep`` made by a process
    that is gone, and by this one when ``ours`` (a live process's may be an import about to be made current)."""
    removed: list[Path] = []
    versions = root / VERSIONS_DIR
    if not versions.is_dir():
        return removed
    for entry in sorted(versions.iterdir()):
        match = _VERSION.match(entry.name)
        if match is None or match["name"] != name or entry.name == keep:
            continue
        pid = int(match["pid"])
        if (ours and pid == os.getpid()) or not _process_alive(pid):
            shutil.rmtree(entry, ignore_errors=True)
            removed.append(entry)
    return removed


def _stale_staging(entry: Path) -> bool:
    match = _STAGING.match(entry.name)
    if match is not None:
        return not _process_alive(int(match["pid"]))
    # an older gaprank's staging folder has no process id: removed once nothing has touched it for a day
    return bool(_LEGACY_STAGING.match(entry.name)) and time.time() - entry.stat().st_mtime > STALE_LEGACY_SECONDS


def remove_stale_imports(root: Path | None = None) -> list[Path]:
    """Remove what interrupted or killed imports left in the user data directory: staging folders
    (``.import-NAME-<pid>-*``) whose process is gone, and imports no pointer names whose process is gone.

    Parameters
    ----------
    root : Path, optional
        The directory (default: :func:`user_data_dir`).

    Returns
    -------
    list of Path
        What was removed. A directory that cannot be read is left alone.
    """
    root = user_data_dir() if root is None else root
    removed: list[Path] = []
    try:
        for entry in sorted(root.iterdir()) if root.is_dir() else []:
            if entry.is_dir() and _stale_staging(entry):
                shutil.rmtree(entry, ignore_errors=True)
                removed.append(entry)
        for info in DATASETS.values():
            try:
                current = current_version(root, info.name)
            except GaprankInputError:
                continue  # a broken pointer: what it meant to name cannot be told, so nothing is removed
            removed += _remove_versions(root, info.name, current.name if current is not None else None, ours=False)
    except OSError:
        pass
    return removed


def _imported_copies(root: Path, info: DatasetInfo) -> list[Path]:
    """The copies of ``info``'s set an import into ``root`` replaces: the pointer (its folder, or the pointer
    itself when it is broken) and folders named for the set that hold its own files."""
    copies: list[Path] = []
    pointer = pointer_file(root, info.name)
    if pointer.exists():
        try:
            copies.append(current_version(root, info.name) or pointer)
        except GaprankInputError:
            copies.append(pointer)
    copies += [folder for folder in named_folders(root, info.name) if has_own_files(folder, info.name)]
    return copies


def _remove_legacy(root: Path, info: DatasetInfo) -> None:
    """After a replace: remove the set from the folders named for it that earlier imports (or the user) made,
    only its own files where the folder is shared (``Yahoo`` holds set 1 and set 2)."""
    for folder in named_folders(root, info.name):
        if info.layout == "splits":
            for name in info.split_file_names():
                with contextlib.suppress(FileNotFoundError):
                    (folder / name).unlink()
            rest = [p for p in folder.rglob("*") if p.name != RECORD]
            if not rest:
                shutil.rmtree(folder, ignore_errors=True)
        else:
            shutil.rmtree(folder, ignore_errors=True)


def import_dataset(dataset: str, source: str | Path, *, replace: bool = False, progress: bool = False,
                   max_size: int | str = DEFAULT_MAX_SIZE) -> Path:
    """Check a downloaded set and copy it into the user data directory, where :func:`load_fold` finds it.

    Parameters
    ----------
    dataset : str
        A named set (``gaprank.data.DATASETS``: "MSLR-WEB30K", "MQ2007", "Yahoo-set1", ...).
    source : str or Path
        The download: its unpacked folder, a ``.zip``, or a tar archive (``.tar``, ``.tar.gz``, ...).
    replace : bool
        Replace a copy imported before (otherwise that is an error). Readers see the old copy or the new
        one, never a mix; a set sharing a folder with another (Yahoo! set 1 and 2) replaces its own files only.
    progress : bool
        Show progress bars on standard error.
    max_size : int or str
        The largest uncompressed size an archive may declare, in bytes or as "200G" (default 100 GiB).

    Returns
    -------
    Path
        The imported set's folder, ``user_data_dir() / ".versions" / "NAME.<stamp>-<pid>-<token>"``, which
        ``user_data_dir() / "NAME.current"`` names.

    Raises
    ------
    DataImportError
        When the download is not the named set (layout, feature count, grade scale, folds: the first
        offending file and line; a folder named for another set), is truncated, damaged or larger than
        ``max_size``, holds a path outside its root, or the user data directory cannot be written.
        Nothing is left behind.
    ImportInterrupted
        On SIGINT, SIGTERM or SIGHUP (in the main thread); nothing is left behind.

    Warns
    -----
    DataImportWarning
        Files of the download that are not part of the set's layout (skipped), query or document counts
        that differ from those the set's page gives.

    Examples
    --------
    >>> from gaprank.data import import_dataset
    >>> import_dataset("MSLR-WEB10K", "MSLR-WEB10K.zip", progress=True)   # doctest: +SKIP
    PosixPath('/home/me/.local/share/gaprank/.versions/MSLR-WEB10K.20260101T120000-4242-9f8e7d')
    """
    info = dataset_info(dataset)
    if info is None:
        raise DataImportError(f"unknown data set {dataset!r}; gaprank data import takes one of: "
                              f"{', '.join(i.name for i in DATASETS.values())}")
    source = Path(source)
    if not source.exists():
        raise DataImportError(f"{source} does not exist")
    limit = parse_size(max_size)
    root = user_data_dir()
    with _Signals().installed() as signals:
        return _import(info, source, root, replace, progress, limit, signals)


def _import(info: DatasetInfo, source: Path, root: Path, replace: bool, progress: bool, limit: int,
            signals: _Signals) -> Path:
    remove_stale_imports(root)
    try:
        existing = _imported_copies(root, info)
    except OSError as exc:
        raise DataImportError(f"cannot read the user data directory {root}: {exc.strerror or exc}") from None
    if existing and not replace:
        raise DataImportError(f"{info.name} is already imported at {existing[0]}; remove it or pass --replace")
    try:
        root.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".import-{info.name}-{os.getpid()}-", dir=root))
        free = shutil.disk_usage(root).free
    except OSError as exc:
        raise DataImportError(f"cannot write to the user data directory {root}: {exc.strerror or exc}") from None
    target: Path | None = None
    try:
        staged = staging / info.name
        if source.is_dir():
            found = _find_set_folder(source, info, source)
            shown = found
            _refuse_another_sets_name(info, [source.name, *found.relative_to(source).parts], shown)
            files = _layout_files(found, info)
            within = PurePosixPath(found.relative_to(source).as_posix())
            skipped = [within / f for f in _files_below(found) if f not in set(files)]
            _copy_folder_files(source, found, files, staged, progress)
        else:
            unpacked = staging / "unpacked"
            _unpack(source, unpacked, progress, _Budget(source, limit, free))
            found = _find_set_folder(unpacked, info, source)
            shown = Path(f"{source}:{found.relative_to(unpacked).as_posix()}")
            _refuse_another_sets_name(info, [_archive_stem(source.name), *found.relative_to(unpacked).parts], shown)
            files = _layout_files(found, info)
            for relative in files:
                (staged / relative).parent.mkdir(parents=True, exist_ok=True)
                (found / relative).rename(staged / relative)
            skipped = _files_below(unpacked)
        summary = _check(info, staged, shown, progress)
        from .. import __version__

        write_json_atomic(staged / RECORD, {
            "dataset": info.name, "source": str(source.resolve()), "imported": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "gaprank": __version__, **summary,
            "files": [{"path": p.as_posix(), "bytes": (staged / p).stat().st_size} for p in files],
            "skipped": [p.as_posix() for p in skipped]})
        version = f"{info.name}.{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}-{secrets.token_hex(3)}"
        (root / VERSIONS_DIR).mkdir(exist_ok=True)
        staged.rename(root / VERSIONS_DIR / version)
        with signals.deferred():
            # the switch: readers resolve this pointer once per load; the copies it replaces go after it
            write_atomic(pointer_file(root, info.name), f"{VERSIONS_DIR}/{version}\n")
            target = root / VERSIONS_DIR / version
            _remove_versions(root, info.name, version, ours=True)
            _remove_legacy(root, info)
    except OSError as exc:
        raise DataImportError(f"cannot import {source} into {root}: {exc.strerror or exc}") from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    if signals.pending is not None:
        raise ImportInterrupted(signals.pending, imported=target)
    _notify(info, summary, skipped)
    return target


def _notify(info: DatasetInfo, summary: dict[str, int], skipped: list[PurePosixPath]) -> None:
    if skipped:
        shown = ", ".join(p.as_posix() for p in skipped[:5]) + (f" and {len(skipped) - 5} more" if len(skipped) > 5 else "")
        warnings.warn(f"skipped {len(skipped)} file{'s' if len(skipped) > 1 else ''} of the download that "
                      f"{'are' if len(skipped) > 1 else 'is'} not part of {info.name}'s layout: {shown}",
                      DataImportWarning, stacklevel=4)
    if info.queries is not None and (summary["queries"], summary["documents"]) != (info.queries, info.documents):
        warnings.warn(f"{info.name} has {info.queries:,} queries and {info.documents:,} documents on its page; this "
                      f"download has {summary['queries']:,} and {summary['documents']:,} (a sample, or another set?); "
                      "imported all the same", DataImportWarning, stacklevel=4)


def _check(info: DatasetInfo, staged: Path, shown: Path, progress: bool) -> dict[str, int]:
    """:func:`check_dataset_folder` on the staged copy, its messages naming the download's files."""
    tqdm = _progress_bar_class()

    with tqdm(total=len(info.fold_numbers), desc=f"checking {info.name}", unit="fold", disable=not progress, file=sys.stderr,
              leave=False) as bar:
        try:
            return check_dataset_folder(info.name, staged, progress=lambda _: bar.update(1))
        except GaprankInputError as exc:
            raise DataImportError(f"not {info.name}: {str(exc).replace(str(staged), str(shown))}") from None
