"""Assembling a LETOR data set's five folds from the folder :func:`locate_dataset` finds.

Two layouts are understood, under ``<DATASET>[/<variant>]``:

* **partitions + folds.json** (the sets bundled with gaprank): each query partition is stored once
  (``Fold2/test.txt.gz``, ``S1.txt.gz``); ``folds.json`` says which partitions make each fold's
  train, vali and test sets.
* **the standard LETOR download**: ``FoldK/{train,vali,test}.txt`` (LETOR 3.0 QueryLevelNorm, LETOR 4.0)
  or ``FoldK/{trainingset,validationset,testset}.txt`` (LETOR 3.0 Feature-min / Feature-null),
  optionally gzip-compressed.

Where the folder is looked for is one rule, in :mod:`gaprank.data._locations`.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from .._inputs import GaprankInputError
from ._cache import cached_read
from ._datasets import DATASETS, DatasetInfo, dataset_info
from ._letor import RankingSplit, feature_dtype, read_letor
from ._locations import DataNotFoundError, check_bundled, download_hint, file_sha256, locate_dataset, variant_folder

# Derived views of the registry (gaprank.data._datasets), kept for callers that look one thing up.
NUM_FEATURES = {key: info.num_features for key, info in DATASETS.items()}
MAX_LABEL = {key: info.max_label for key, info in DATASETS.items()}
SPLITS = ("train", "vali", "test")
READ_ATTEMPTS = 5  # reads of a set that a new import replaced while they ran, before giving up
T = TypeVar("T")
_SPLIT_FILE_NAMES = {
    "train": ("train", "trainingset"),
    "vali": ("vali", "validationset"),
    "test": ("test", "testset"),
}


@dataclass
class Fold:
    name: str
    train: RankingSplit
    vali: RankingSplit
    test: RankingSplit

    def split(self, name: str) -> RankingSplit:
        if name not in SPLITS:
            raise GaprankInputError(f"split must be one of {SPLITS}; got {name!r}")
        return getattr(self, name)


def _find_file(base: Path, stems: tuple[str, ...]) -> Path | None:
    """The one file of ``base`` named by one of ``stems`` (``.txt``, ``.txt.gz`` or bare); two of them
    (a download unpacked over another, ``train.txt`` beside ``train.txt.gz``) are refused: which one the
    user meant cannot be guessed."""
    found = [base / f"{stem}{suffix}" for stem in stems for suffix in (".txt", ".txt.gz", "")
             if (base / f"{stem}{suffix}").is_file()]
    if len(found) > 1:
        raise FoldsFileError(f"{base}: {' and '.join(p.name for p in found)} are the same split; keep one of them "
                             "(a mixed or twice-unpacked download?)")
    return found[0] if found else None


class FoldsFileError(GaprankInputError):
    """A ``folds.json`` that cannot be used; the message names the file and what is wrong."""


def _partition_file(base: Path, partition: str, source: Path) -> Path:
    parts = partition.split("/")
    if not partition or partition.startswith("/") or "\\" in partition or any(p in ("", ".", "..") for p in parts):
        raise FoldsFileError(f"{source}: partition {partition!r} must be a relative path inside {base} "
                             "(no '..', no absolute path)")
    folder, _, name = partition.rpartition("/")
    stems = _SPLIT_FILE_NAMES.get(name, (name,))
    found = _find_file(base / folder if folder else base, stems)
    if found is None:
        raise DataNotFoundError(f"partition {partition!r} not found under {base} (looked for {', '.join(stems)}[.txt|.txt.gz])")
    if not found.resolve().is_relative_to(base.resolve()):  # a symbolic link out of the data set
        raise FoldsFileError(f"{source}: partition {partition!r} resolves to {found.resolve()}, outside {base}")
    return found


def _read_folds_json(path: Path) -> dict[str, Any]:
    """``folds.json``'s ``"folds"`` mapping, checked: each fold names train, vali and test partitions
    (a name or a list of names) and, optionally, the query ids of each split."""
    check_bundled(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise FoldsFileError(f"{path}: cannot be read ({exc})") from None
    except json.JSONDecodeError as exc:
        raise FoldsFileError(f"{path}, line {exc.lineno}: not valid JSON ({exc.msg})") from None
    folds = data.get("folds") if isinstance(data, dict) else None
    if not isinstance(folds, dict):
        raise FoldsFileError(f"{path}: needs a \"folds\" mapping {{\"Fold1\": {{\"train\": ..., \"vali\": ..., \"test\": ...}}}}")
    for name, spec in folds.items():
        if not isinstance(spec, dict):
            raise FoldsFileError(f"{path}: folds.{name} must be a mapping with train, vali and test")
        for split in SPLITS:
            entry = spec.get(split)
            names = [entry] if isinstance(entry, str) else entry
            if not isinstance(names, list) or not names or not all(isinstance(n, str) for n in names):
                raise FoldsFileError(f"{path}: folds.{name}.{split} must be a partition name or a non-empty list of them")
            qids = spec.get(f"{split}_qids")
            if qids is not None and not (isinstance(qids, list) and all(isinstance(q, str) for q in qids)):
                raise FoldsFileError(f"{path}: folds.{name}.{split}_qids must be a list of query id strings")
    return folds


def _fold_spec(dataset: str, fold: int, variant: str | None, data_dir: str | Path | None) -> tuple[Path, Path, dict | None]:
    """The data set's folder, the folder of its files (the variant's, if any) and its folds.json entry."""
    return _fold_spec_in(*_fold_folder(dataset, fold, variant, data_dir))


def _fold_folder(dataset: str, fold: int, variant: str | None, data_dir: str | Path | None
                 ) -> tuple[Path, str, int, str | None]:
    """The arguments checked, and the folder the set is read from: ``_fold_spec_in``'s arguments."""
    info = dataset_info(dataset)
    if isinstance(fold, bool) or not isinstance(fold, int) or not 1 <= fold <= 5:
        raise GaprankInputError(f"fold must be an integer 1..5; got {fold!r}")
    if info is not None and info.layout == "splits" and fold != 1:
        raise GaprankInputError(f"{info.name} has one train/vali/test split, read as fold 1; got fold {fold}")
    if variant is None and info is not None:
        variant = info.variant
    return locate_dataset(dataset, variant=variant, data_dir=data_dir), dataset, fold, variant


def _from_one_copy(dataset: str, fold: int, variant: str | None, data_dir: str | Path | None,
                   read: Callable[[tuple[Path, Path, dict | None]], T]) -> T:
    """``read`` of the fold's :func:`_fold_spec`, every file from one copy of the set.

    The set's folder is resolved once (an imported set's pointer is read once); an import never changes a
    folder's files, it writes a new folder, switches the pointer to it, then removes the old one. So a read
    that fails because a replace removed its folder is read again from the new copy, and one that succeeds
    read one copy whole.
    """
    for attempt in range(READ_ATTEMPTS):
        where = _fold_folder(dataset, fold, variant, data_dir)
        try:
            return read(_fold_spec_in(*where))
        except (GaprankInputError, OSError):
            if attempt + 1 == READ_ATTEMPTS or not _replaced(where[0], dataset, fold, variant, data_dir):
                raise
    raise AssertionError("unreachable")  # pragma: no cover


def _replaced(folder: Path, dataset: str, fold: int, variant: str | None, data_dir: str | Path | None) -> bool:
    """Whether the set is now read from another folder than ``folder`` (a new import replaced it)."""
    try:
        return _fold_folder(dataset, fold, variant, data_dir)[0] != folder
    except GaprankInputError:
        return False


def _fold_spec_in(ds_dir: Path, dataset: str, fold: int, variant: str | None) -> tuple[Path, Path, dict | None]:
    """:func:`_fold_spec` for a set whose folder is known."""
    base = variant_folder(ds_dir, variant)
    if variant and base == ds_dir and not (ds_dir / f"Fold{fold}").is_dir():
        raise DataNotFoundError(f"variant {variant!r} of {dataset} not found: no folder {ds_dir / variant}. "
                                f"{download_hint(dataset)}")
    folds_json = ds_dir / "folds.json"
    if not folds_json.is_file():
        return ds_dir, base, None
    spec = _read_folds_json(folds_json).get(f"Fold{fold}")
    if spec is None:
        raise DataNotFoundError(f"{folds_json} has no entry Fold{fold}")
    return ds_dir, base, spec


def fold_files(dataset: str, fold: int, *, variant: str | None = None,
               data_dir: str | Path | None = None) -> dict[str, list[Path]]:
    """The files that make up train, vali and test of ``FoldK`` (several files when built from partitions).

    Parameters
    ----------
    dataset, fold, variant, data_dir
        As in :func:`load_fold`.

    Returns
    -------
    dict of str to list of Path
        ``{"train": [...], "vali": [...], "test": [...]}``.
    """
    return _from_one_copy(dataset, fold, variant, data_dir, lambda located: _split_files(dataset, fold, *located))


def _split_files(dataset: str, fold: int, ds_dir: Path, base: Path, spec: dict | None,
                 splits: tuple[str, ...] = SPLITS) -> dict[str, list[Path]]:
    """:func:`fold_files` for a fold whose folder and folds.json entry are already known."""
    folds_json = ds_dir / "folds.json"
    info = dataset_info(dataset)
    if spec is None and info is not None and info.layout == "splits":
        return {split: [_named_split_file(info, base, split)] for split in splits}
    if spec is not None:
        return {
            split: [_partition_file(base, p, folds_json)
                    for p in ([spec[split]] if isinstance(spec[split], str) else spec[split])]
            for split in splits
        }
    fold_dir = base / f"Fold{fold}"
    files: dict[str, list[Path]] = {}
    for split in splits:
        found = _find_file(fold_dir, _SPLIT_FILE_NAMES[split])
        if found is None:
            raise DataNotFoundError(
                f"{dataset} Fold{fold} {split} set not found: looked for {fold_dir}/"
                f"{{{','.join(_SPLIT_FILE_NAMES[split])}}}[.txt|.txt.gz] and for {folds_json}. {download_hint(dataset)}"
            )
        files[split] = [found]
    return files


def _named_split_file(info: DatasetInfo, base: Path, split: str) -> Path:
    """The file of ``split`` of a one-split set (Yahoo!, Istella)."""
    stems = info.split_files.get(split)
    if stems is None:
        raise DataNotFoundError(f"{info.name} has no {split} split (it comes with {', '.join(info.split_files)} only); "
                                "take a validation set out of train, or use a set that has one")
    found = _find_file(base, stems)
    if found is None:
        raise DataNotFoundError(f"{info.name} {split} set not found: looked for {base}/{stems[0]}[.txt|.txt.gz]. "
                                f"{download_hint(info.name)}")
    return found


def _file_digest(path: Path) -> dict[str, Any]:
    """Name, size and SHA-256 of a file."""
    return {"file": path.name, "bytes": path.stat().st_size, "sha256": file_sha256(path)}


def fold_fingerprint(dataset: str, fold: int, *, variant: str | None = None,
                     data_dir: str | Path | None = None) -> dict[str, Any]:
    """What a fold's data is made of: size and SHA-256 of every file of train, vali and test (and of
    ``folds.json`` when it defines the fold). Equal fingerprints mean equal data wherever it lies, so a
    result trained on other data (or another fold layout) is never taken for this one's.

    The arguments are those of :func:`load_fold`.

    Returns
    -------
    dict
        For each split the list of its files' ``{"file", "bytes", "sha256"}``, and ``folds.json``'s.

    Examples
    --------
    >>> from gaprank.data import fold_fingerprint
    >>> fold_fingerprint("OHSUMED", 1)["test"][0]["file"]
    'test.txt.gz'
    """
    def digests(located: tuple[Path, Path, dict | None]) -> dict[str, Any]:
        ds_dir, base, spec = located
        files = _split_files(dataset, fold, ds_dir, base, spec)
        fingerprint: dict[str, Any] = {split: [_file_digest(p) for p in paths] for split, paths in files.items()}
        if spec is not None:
            fingerprint["folds.json"] = _file_digest(ds_dir / "folds.json")
        return fingerprint
    return _from_one_copy(dataset, fold, variant, data_dir, digests)


def _check_splits(name: str, parts: dict[str, RankingSplit], spec: dict | None, source: Path) -> None:
    """Train, vali and test share no query, and match the query lists folds.json gives for them."""
    ids = {split: part.query_ids for split, part in parts.items()}
    present = [split for split in SPLITS if split in ids]  # a set without a vali split (Istella) has two
    for i, a in enumerate(present):
        for b in present[i + 1:]:
            shared = sorted(set(ids[a]) & set(ids[b]), key=lambda q: (len(q), q))
            if shared:
                more = f" and {len(shared) - 5} more" if len(shared) > 5 else ""
                raise FoldsFileError(f"{name}: {a} and {b} share {len(shared)} queries ({', '.join(shared[:5])}{more}); "
                                     f"the splits of a fold must be disjoint (check {source})")
    for split in present:
        listed = None if spec is None else spec.get(f"{split}_qids")
        if listed is not None and sorted(listed) != sorted(ids[split]):
            missing = sorted(set(listed) - set(ids[split]))[:3]
            extra = sorted(set(ids[split]) - set(listed))[:3]
            raise FoldsFileError(f"{source}: {name} {split}_qids contradicts its partitions "
                                 f"(listed but not loaded: {missing or '-'}; loaded but not listed: {extra or '-'})")


def load_fold(
    dataset: str,
    fold: int,
    *,
    variant: str | None = None,
    data_dir: str | Path | None = None,
    null: str = "min",
    dtype: Any = np.float64,
) -> Fold:
    """Load train, vali and test of LETOR ``FoldK`` for ``dataset`` ("OHSUMED", "MQ2008", ...).

    ``variant`` picks the OHSUMED feature variant ("QueryLevelNorm" by default, "Feature-min",
    "Feature-null"); ``null`` is passed to :func:`read_letor`, with the data set's known feature count.

    Parameters
    ----------
    dataset : str
        A named set ("OHSUMED", "MQ2008", "MQ2007", "MSLR-WEB10K", "MSLR-WEB30K", "Yahoo-set1",
        "Yahoo-set2", "Istella-S", "Istella-X": ``gaprank.data.DATASETS``) or another folder of the data
        directory; a named set's feature count and grade scale are checked.
    fold : int
        1..5 (1 for a set with a single train/vali/test split).
    variant : str, optional
        OHSUMED's feature variant: "QueryLevelNorm" (default), "Feature-min", "Feature-null".
    data_dir : str or Path, optional
        A directory looked in first; then ``GAPRANK_DATA``, the user data directory and the sets bundled
        with gaprank (:func:`locate_dataset`).
    null : {"min", "zero", "nan", "error"}
        The policy for LETOR's ``NULL`` values (see :func:`read_letor`).
    dtype : {float64, float32}
        The features' dtype; float32 halves the memory of a web-scale set (the values are those a float64
        read cast to float32 holds).

    Returns
    -------
    Fold
        ``train``, ``vali`` and ``test`` :class:`RankingSplit` s.

    Raises
    ------
    FoldsFileError
        When train, vali and test share a query (the message lists them), when ``folds.json``'s own
        query lists contradict its partitions, or when ``folds.json`` is malformed or points outside
        the data set's folder.

    Examples
    --------
    >>> from gaprank.data import load_fold
    >>> fold = load_fold("OHSUMED", 1)          # the bundled copy unless another place holds one
    >>> fold.test.num_queries, fold.train.num_queries
    (22, 63)
    """
    _, parts = _from_one_copy(dataset, fold, variant, data_dir, lambda located: _read_fold(dataset, fold, located, null, dtype))
    return Fold(f"{dataset} Fold{fold}", parts["train"], parts["vali"], parts["test"])


def _read_fold(dataset: str, fold: int, located: tuple[Path, Path, dict | None], null: str, dtype: Any,
               cache: bool = True, splits: tuple[str, ...] = SPLITS) -> tuple[dict[str, list[Path]], dict[str, RankingSplit]]:
    """A fold's files and its ``splits``, read and checked (no query in two splits, folds.json's query
    lists), from its :func:`_fold_spec`."""
    ds_dir, base, spec = located
    files = _split_files(dataset, fold, ds_dir, base, spec, splits)
    read = _split_reader(dataset, ds_dir, null, dtype, cache)
    parts = {split: _read_split(paths, read) for split, paths in files.items()}
    source = ds_dir / "folds.json" if spec is not None else ds_dir / f"Fold{fold}"
    _check_splits(f"{dataset} Fold{fold}", parts, spec, source)
    return files, parts


def _read_split(paths: list[Path], read: Callable[[Path], RankingSplit]) -> RankingSplit:
    """One split from its files (several when a fold is built from partitions)."""
    loaded = [read(p) for p in paths]
    return loaded[0] if len(loaded) == 1 else RankingSplit.concatenate(loaded)


def _split_reader(dataset: str, ds_dir: Path, null: str, dtype: Any, cache: bool = True) -> Callable[[Path], RankingSplit]:
    """``read(path) -> RankingSplit`` with the named set's checks, through the parsed-file cache (when ``cache``)."""
    info = dataset_info(dataset) or dataset_info(ds_dir.name)
    options = {"null": null, "num_features": info.num_features if info else None,
               "max_label": info.max_label if info else None, "dtype": feature_dtype(dtype).name,
               "sparse": bool(info and info.sparse)}

    def read(path: Path) -> RankingSplit:
        check_bundled(path)
        parse = functools.partial(read_letor, path, **options)
        return cached_read(path, options, parse) if cache else parse()
    return read


def load_split(
    dataset: str,
    split: str,
    *,
    fold: int | None = None,
    variant: str | None = None,
    data_dir: str | Path | None = None,
    null: str = "min",
    dtype: Any = np.float64,
) -> RankingSplit:
    """Load one split ("train", "vali" or "test") of a named data set, reading only its files.

    Parameters
    ----------
    dataset : str
        A set with one train/vali/test split ("Yahoo-set1", "Yahoo-set2", "Istella", "Istella-S",
        "Istella-X"), or a five-fold set ("MSLR-WEB30K", "OHSUMED", ...) with ``fold``.
    split : {"train", "vali", "test"}
    fold : int, optional
        1..5, for five-fold sets only.
    variant, data_dir, null, dtype
        As in :func:`load_fold`.

    Returns
    -------
    RankingSplit
        The split's rows grouped by query.

    Examples
    --------
    >>> from gaprank.data import load_split
    >>> load_split("Yahoo-set1", "train", dtype="float32").num_features   # doctest: +SKIP
    699
    """
    if split not in SPLITS:
        raise GaprankInputError(f"split must be one of {SPLITS}; got {split!r}")
    info = dataset_info(dataset)
    if info is not None and info.layout == "splits":
        if fold is not None:
            raise GaprankInputError(f"{info.name} has one train/vali/test split: no fold to choose (got fold={fold})")
        fold = 1
    elif fold is None:
        raise GaprankInputError(f"{dataset} comes in five folds: pass fold=1..5")
    def read(located: tuple[Path, Path, dict | None]) -> RankingSplit:
        ds_dir, base, spec = located
        paths = _split_files(dataset, fold, ds_dir, base, spec, (split,))[split]
        return _read_split(paths, _split_reader(dataset, ds_dir, null, dtype))
    return _from_one_copy(dataset, fold, variant, data_dir, read)


def check_dataset_folder(dataset: str, folder: Path, *, dtype: Any = np.float32,
                         progress: Callable[[str], None] | None = None) -> dict[str, int]:
    """Read every fold of a named set from ``folder`` as :func:`load_fold` reads it (layout, feature count,
    grade scale, disjoint splits, ``folds.json``), bypassing the cache, and check that the folds' test
    sets are disjoint.

    Parameters
    ----------
    dataset : str
        A named set (``gaprank.data.DATASETS``).
    folder : Path
        The set's folder.
    dtype : {float32, float64}
        The features' dtype while reading.
    progress : callable, optional
        Called with each fold's name once it is checked.

    Returns
    -------
    dict
        ``{"folds", "queries", "documents"}`` of the set (for a five-fold set over the test sets, which
        together cover it; for a one-split set over train, vali and test).

    Raises
    ------
    GaprankInputError
        The first problem found, naming its file and line where it is in a file.
    """
    info = dataset_info(dataset)
    if info is None:
        names = ", ".join(i.name for i in DATASETS.values())
        raise GaprankInputError(f"unknown data set {dataset!r}; the named sets are {names}")
    folds = info.fold_numbers
    tested: dict[str, str] = {}
    documents = 0
    for fold in folds:
        # a one-split set is checked in the splits it comes with (Istella has no vali split)
        splits = tuple(s for s in SPLITS if s in info.split_files) if info.layout == "splits" else SPLITS
        files, parts = _read_fold(info.name, fold, _fold_spec_in(folder, info.name, fold, info.variant), "min", dtype,
                                  cache=False, splits=splits)
        for qid in parts["test"].query_ids:
            if qid in tested:
                raise FoldsFileError(f"{files['test'][0]}: query {qid} is in the test sets of both {tested[qid]} and "
                                     f"Fold{fold}; the folds' test sets must be disjoint")
            tested[qid] = f"Fold{fold}"
        documents += len(parts["test"].labels)
        if info.layout == "splits":  # one split: the whole set is train, vali and test (disjoint, checked above)
            for split in splits[:-1]:
                tested.update((f"{split}:{qid}", "") for qid in parts[split].query_ids)
                documents += len(parts[split].labels)
        if progress is not None:
            progress(f"Fold{fold}")
    return {"folds": len(folds), "queries": len(tested), "documents": documents}
