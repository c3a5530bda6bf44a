"""Where a data set comes from: one rule, and the sets that ship inside gaprank.

A set is looked for, in this order, in

1. the ``data_dir`` argument,
2. the ``GAPRANK_DATA`` directory,
3. the user's data directory (``platformdirs.user_data_dir("gaprank")``, where ``gaprank data import``
   puts a download),
4. the sets bundled with gaprank (LETOR 3.0 OHSUMED, QueryLevelNorm, and LETOR 4.0 MQ2008),

and the first place holding the set's folder is where all of its files are read. Every bundled file is
checked against the SHA-256 its manifest lists before it is read, so a damaged installation is an
error, never a different number.

``gaprank data import`` puts each import in its own folder, ``.versions/NAME.<stamp>-<pid>-<token>``, and
switches to it by rewriting one small file, ``NAME.current`` (atomically): a place holding that pointer
file reads the set from the folder it names, resolved once per load, so a reader never mixes two imports.
A place that cannot be read (no permission) is passed over with a warning.
"""

from __future__ import annotations

import functools
import hashlib
import os
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from .._inputs import GaprankInputError
from ._datasets import dataset_info

BUNDLED_DIR = Path(__file__).resolve().with_name("bundled")
MANIFEST = "SHA256SUMS"
POINTER_SUFFIX = ".current"  # NAME.current names the folder of the set's current import
VERSIONS_DIR = ".versions"  # where each import of a set lies, in a folder of its own


class DataNotFoundError(GaprankInputError, FileNotFoundError):
    """A data set is missing; the message says where we looked and where to download it."""


class BundledDataError(GaprankInputError):
    """A file bundled with gaprank differs from its manifest: the installation is damaged."""


class DataLocationWarning(UserWarning):
    """A place data sets are looked in cannot be read (no permission); it is passed over."""


@dataclass(frozen=True)
class DataLocation:
    """A place data sets are looked for: what it is (``"data_dir"``, ``"GAPRANK_DATA"``, ``"user"``,
    ``"bundled"``) and its directory."""

    kind: str
    path: Path

    def describe(self) -> str:
        """The place in words, for messages."""
        return {"data_dir": f"data_dir {self.path}", "GAPRANK_DATA": f"GAPRANK_DATA {self.path}",
                "user": f"the user data directory {self.path}",
                "bundled": "the sets bundled with gaprank"}[self.kind]


def user_data_dir() -> Path:
    """The user's gaprank data directory, where ``gaprank data import`` copies a set.

    Returns
    -------
    Path
        ``platformdirs.user_data_dir("gaprank")`` (``$XDG_DATA_HOME/gaprank`` or ``~/.local/share/gaprank``
        on Linux); it need not exist.
    """
    import platformdirs

    return Path(platformdirs.user_data_dir("gaprank", appauthor=False))


def data_locations(data_dir: str | Path | None = None) -> list[DataLocation]:
    """The places a data set is looked for, in order (see the module's rule).

    Parameters
    ----------
    data_dir : str or Path, optional
        An explicit directory, looked in first; it must exist.

    Returns
    -------
    list of DataLocation
        ``data_dir`` (when given), ``GAPRANK_DATA`` (when set), the user data directory, the bundled sets.

    Raises
    ------
    DataNotFoundError
        When ``data_dir`` or ``GAPRANK_DATA`` names something that is not a directory (a typo is never
        passed over for another place).

    Examples
    --------
    >>> from gaprank.data import data_locations
    >>> data_locations()[-1].kind
    'bundled'
    """
    places: list[DataLocation] = []
    if data_dir is not None:
        path = Path(data_dir)
        if not path.is_dir():
            raise DataNotFoundError(f"data_dir {path} is not a directory")
        places.append(DataLocation("data_dir", path))
    env = os.environ.get("GAPRANK_DATA")
    if env:
        path = Path(env)
        try:
            path.stat()
        except PermissionError as exc:  # a folder on its way cannot be searched: passed over as an unreadable one
            _warn_unreadable(DataLocation("GAPRANK_DATA", path), exc)
        except OSError:
            raise DataNotFoundError(f"GAPRANK_DATA={env} is not a directory") from None
        else:
            if not path.is_dir():
                raise DataNotFoundError(f"GAPRANK_DATA={env} is not a directory")
            places.append(DataLocation("GAPRANK_DATA", path))
    places.append(DataLocation("user", user_data_dir()))
    places.append(DataLocation("bundled", BUNDLED_DIR))
    return places


def _warn_unreadable(place: DataLocation, exc: OSError) -> None:
    warnings.warn(f"gaprank: cannot read {place.describe()} ({exc.strerror or exc}); passed over",
                  DataLocationWarning, stacklevel=4)


def pointer_file(root: Path, dataset: str) -> Path:
    """The file naming the folder of ``dataset``'s current import under ``root`` (it need not exist)."""
    info = dataset_info(dataset)
    return root / f"{info.name if info else dataset}{POINTER_SUFFIX}"


def current_version(root: Path, dataset: str) -> Path | None:
    """The folder ``root``'s pointer file for ``dataset`` names, or None when ``root`` has none.

    Raises
    ------
    DataNotFoundError
        When the pointer names no folder of ``root``'s ``.versions`` (a damaged or hand-edited pointer is
        never passed over for another copy of the set).
    OSError
        When the pointer cannot be read (no permission).
    """
    pointer = pointer_file(root, dataset)
    text = ""
    for _ in range(3):  # a replace may switch the pointer and remove the folder it named between two reads
        try:
            text = pointer.read_text(encoding="utf-8").strip()
        except (FileNotFoundError, NotADirectoryError):
            return None
        parts = Path(text).parts
        if len(parts) == 2 and parts[0] == VERSIONS_DIR and parts[1] not in (".", ".."):
            folder = root / text
            if folder.is_dir():
                return folder
    raise DataNotFoundError(f"{pointer} names {text!r}, which is not a folder under {root / VERSIONS_DIR}; import the "
                            f"set again: gaprank data import {dataset} PATH --replace")


def named_folders(root: Path, dataset: str) -> list[Path]:
    """The folders of ``root`` named for ``dataset`` (its name or one of its known folder names, any case),
    in the order of those names; imports' pointers are not looked at.

    Raises
    ------
    OSError
        When ``root`` cannot be listed (no permission).
    """
    if not root.is_dir():
        return []
    info = dataset_info(dataset)
    names = info.own_names() if info else (dataset.lower(),)
    with os.scandir(root) as listing:
        entries = {entry.name.lower(): Path(entry.path) for entry in sorted(listing, key=lambda e: e.name)}
    return [entries[name] for name in names if name in entries and entries[name].is_dir()]


def dataset_folders(root: Path, dataset: str) -> list[Path]:
    """The candidate folders of ``dataset`` under ``root``: the folder of its current import when ``root``
    has a pointer for it (then that one only), else the folders named for it (:func:`named_folders`)."""
    version = current_version(root, dataset)
    return [version] if version is not None else named_folders(root, dataset)


def dataset_folder(root: Path, dataset: str) -> Path | None:
    """The first of :func:`dataset_folders`, or None."""
    return next(iter(dataset_folders(root, dataset)), None)


def has_own_files(folder: Path, dataset: str) -> bool:
    """Whether ``folder`` holds ``dataset``'s own files: for a one-split set (Yahoo!, Istella), its train
    file, since one folder (``Yahoo``) may hold several sets; any folder for the others."""
    info = dataset_info(dataset)
    if info is None or info.layout != "splits":
        return True
    stem = info.split_files["train"][0]
    return any((folder / f"{stem}{suffix}").is_file() for suffix in (".txt", ".txt.gz", ""))


def variant_folder(folder: Path, variant: str | None) -> Path:
    """Where a set's files lie: its ``variant`` folder when it has one, else the set's folder itself."""
    return folder / variant if variant and (folder / variant).is_dir() else folder


def _holds(folder: Path, dataset: str, variant: str | None) -> bool:
    """Whether a set's folder holds the set's own files and the requested feature variant (a variant
    folder, or the folds or partitions directly)."""
    if not has_own_files(folder, dataset):
        return False
    if variant is None or (folder / variant).is_dir():
        return True
    return not any((folder / v).is_dir() for v in ("QueryLevelNorm", "Feature-min", "Feature-null")) and \
        any(folder.glob("Fold*"))


def not_found_message(dataset: str, places: list[DataLocation], variant: str | None = None) -> str:
    """The short error for a missing set: its name, where it was looked for, and that set's download
    page and expected layout."""
    what = f"{dataset} ({variant})" if variant else dataset
    looked = "; ".join(place.describe() for place in places)
    return f"data set {what} not found; looked in: {looked}. " + (
        download_hint(dataset) or f"Put it in a folder {dataset}/ under one of them.")


def download_hint(dataset: str) -> str:
    """Where to get a named set and how to add it ("" for a set gaprank does not know)."""
    info = dataset_info(dataset)
    if info is None:
        return ""
    hint = (f"Download it from {info.download}, then run: gaprank data import {info.name} PATH "
            f"(the download's layout: {info.expected_layout()})")
    if info.name.startswith("MSLR"):
        hint += f"; or write a synthetic set of its shape: python -m training.synthetic --like {info.name.lower()}"
    return hint + "."


def locate_dataset(dataset: str, *, variant: str | None = None, data_dir: str | Path | None = None) -> Path:
    """The folder a data set is read from: the first place of :func:`data_locations` that holds it.

    Parameters
    ----------
    dataset : str
        A named set ("OHSUMED", "MQ2008", "MSLR-WEB30K", ...: ``gaprank.data.DATASETS``) or another folder name.
    variant : str, optional
        A feature variant the folder must have ("QueryLevelNorm", "Feature-min", "Feature-null").
    data_dir : str or Path, optional
        A directory looked in before all others.

    Returns
    -------
    Path
        The set's folder.

    Raises
    ------
    DataNotFoundError
        When no place holds it; the message lists the places and the set's download page and layout.

    Examples
    --------
    >>> from gaprank.data import locate_dataset
    >>> locate_dataset("MQ2008").name
    'MQ2008'
    """
    found = find_dataset(dataset, variant=variant, data_dir=data_dir)
    if found is None:
        raise DataNotFoundError(not_found_message(dataset, data_locations(data_dir), variant))
    return found[1]


def find_dataset(dataset: str, *, variant: str | None = None, data_dir: str | Path | None = None
                 ) -> tuple[DataLocation, Path] | None:
    """The place a data set is read from and its folder there (the rule of :func:`locate_dataset`), or
    None when no place holds it.

    Parameters
    ----------
    dataset, variant, data_dir
        As in :func:`locate_dataset`.

    Returns
    -------
    tuple of DataLocation and Path, or None

    Examples
    --------
    >>> from gaprank.data import find_dataset
    >>> place, folder = find_dataset("OHSUMED")
    >>> place.kind, folder.name
    ('bundled', 'OHSUMED')
    """
    return next(_copies(dataset, data_dir, lambda folder: _holds(folder, dataset, variant)), None)


def _copies(dataset: str, data_dir: str | Path | None, accept: Callable[[Path], bool]
            ) -> Iterator[tuple[DataLocation, Path]]:
    """Each place, in the rule's order, with its first folder of ``dataset`` that ``accept`` takes. A place
    that cannot be read is passed over with a warning, except an explicit ``data_dir``: that is an error."""
    for place in data_locations(data_dir):
        try:
            folders = dataset_folders(place.path, dataset)
        except PermissionError as exc:
            if place.kind == "data_dir":
                raise DataNotFoundError(f"cannot read data_dir {place.path}: {exc.strerror or exc}") from None
            _warn_unreadable(place, exc)
            continue
        found = next((folder for folder in folders if accept(folder)), None)
        if found is not None:
            yield place, found


def dataset_file(dataset: str, relative: str, *, data_dir: str | Path | None = None) -> Path | None:
    """The file ``relative`` (a path inside a set's folder) from the first place whose copy of the set
    has it, checked when bundled; None when none has it.

    Parameters
    ----------
    dataset : str
        The set's name.
    relative : str
        A relative path inside the set's folder (no ``..``).
    data_dir : str or Path, optional
        A directory looked in before all others.

    Returns
    -------
    Path or None

    Raises
    ------
    GaprankInputError
        When ``relative`` is absolute, holds ``..`` or resolves outside the set's folder.

    Examples
    --------
    >>> from gaprank.data import dataset_file
    >>> dataset_file("OHSUMED", "letor3-baselines/ohsumed_letor3_baselines.csv").name
    'ohsumed_letor3_baselines.csv'
    """
    parts = Path(relative).parts
    if not parts or Path(relative).is_absolute() or ".." in parts:
        raise GaprankInputError(f"{relative!r} must be a relative path inside the {dataset} folder (no '..')")
    found = next(_copies(dataset, data_dir, lambda folder: (folder / relative).is_file()), None)
    if found is None:
        return None
    folder = found[1]
    path = folder / relative
    if not path.resolve().is_relative_to(folder.resolve()):
        raise GaprankInputError(f"{path} resolves outside the {dataset} folder {folder}")
    check_bundled(path)
    return path


@functools.lru_cache(maxsize=1)
def bundled_manifest() -> dict[str, str]:
    """{path relative to the bundled folder: SHA-256} of every bundled data file."""
    manifest: dict[str, str] = {}
    for number, line in enumerate((BUNDLED_DIR / MANIFEST).read_text(encoding="utf-8").splitlines(), 1):
        digest, _, name = line.partition("  ")
        if len(digest) != 64 or not name:
            raise BundledDataError(f"{BUNDLED_DIR / MANIFEST}, line {number}: not '<sha256>  <path>'")
        manifest[name] = digest
    return manifest


_DIGESTS: dict[tuple[str, int, int, int], str] = {}


def file_sha256(path: Path) -> str:
    """The SHA-256 of a file, computed once per path, size, modification and change time in a process."""
    stat = path.stat()
    key = (str(path.resolve()), stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns)
    if key not in _DIGESTS:
        digest = hashlib.sha256()
        with path.open("rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                digest.update(block)
        _DIGESTS[key] = digest.hexdigest()
    return _DIGESTS[key]


def check_bundled(path: Path) -> None:
    """When ``path`` is a bundled file, check it against the manifest; other files pass untouched.

    Raises
    ------
    BundledDataError
        When a bundled file is not in the manifest or its SHA-256 differs.
    """
    resolved = path.resolve()
    if not resolved.is_relative_to(BUNDLED_DIR):
        return
    name = resolved.relative_to(BUNDLED_DIR).as_posix()
    expected = bundled_manifest().get(name)
    if expected is None:
        raise BundledDataError(f"{resolved}: not in the bundled sets' manifest {MANIFEST}; reinstall gaprank")
    actual = file_sha256(resolved)
    if actual != expected:
        raise BundledDataError(f"{resolved}: SHA-256 {actual[:12]}... differs from the manifest's {expected[:12]}...; "
                               "the installation is damaged: reinstall gaprank")


def bundled_sets() -> list[str]:
    """The names of the sets bundled with gaprank.

    Examples
    --------
    >>> from gaprank.data import bundled_sets
    >>> bundled_sets()
    ['MQ2008', 'OHSUMED']
    """
    return sorted(entry.name for entry in BUNDLED_DIR.iterdir() if entry.is_dir())
