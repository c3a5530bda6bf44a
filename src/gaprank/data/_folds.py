"""Locating LETOR data sets and assembling their five folds.

Two layouts are understood, under ``<data_dir>/<DATASET>[/<variant>]``:

* **partitions + folds.json** (this project's ``shared/data``): each query partition is stored once
  (``Fold2/test.txt.gz``, ``S1.txt.gz``); ``folds.json`` says which partitions make each fold's
  train, vali and test sets.
* **the standard LETOR download**: ``FoldK/{train,vali,test}.txt`` (LETOR 3.0 QueryLevelNorm, LETOR 4.0)
  or ``FoldK/{trainingset,validationset,testset}.txt`` (LETOR 3.0 Feature-min / Feature-null),
  optionally gzip-compressed.

The data directory is, in order: the ``data_dir`` argument, the ``GAPRANK_DATA`` environment variable,
``../shared/data`` beside the repository.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from .._inputs import GaprankInputError
from ._letor import RankingSplit, read_letor

DATASETS = {"OHSUMED": "QueryLevelNorm", "MQ2008": None, "MQ2007": None}
SPLITS = ("train", "vali", "test")
_SPLIT_FILE_NAMES = {
    "train": ("train", "trainingset"),
    "vali": ("vali", "validationset"),
    "test": ("test", "testset"),
}
DOWNLOAD_HINT = (
    "Download LETOR 3.0 (OHSUMED) or LETOR 4.0 (MQ2007/MQ2008) from Microsoft Research "
    "(https://www.microsoft.com/en-us/research/project/letor-learning-rank-information-retrieval/), "
    "unpack it so that <data_dir>/OHSUMED/QueryLevelNorm/Fold1/train.txt (or <data_dir>/MQ2008/Fold1/train.txt) "
    "exists, and pass data_dir=... or set GAPRANK_DATA."
)


class DataNotFoundError(GaprankInputError, FileNotFoundError):
    """A data set is missing; the message says where we looked and what to download."""


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


def _repository_root() -> Path:
    return Path(__file__).resolve().parents[3]


def default_data_dir_candidates() -> list[Path]:
    """Places searched after the argument and ``GAPRANK_DATA``: ``../shared/data`` beside the repository."""
    repo = _repository_root()
    candidates = [repo.parent / "shared" / "data", Path.cwd().parent / "shared" / "data"]
    unique: list[Path] = []
    for c in candidates:
        if c not in unique:
            unique.append(c)
    return unique


def resolve_data_dir(data_dir: str | Path | None = None) -> Path:
    """The data directory: explicit argument > ``GAPRANK_DATA`` > ``../shared/data`` from the repository."""
    if data_dir is not None:
        path = Path(data_dir)
        if not path.is_dir():
            raise DataNotFoundError(f"data_dir {path} is not a directory. {DOWNLOAD_HINT}")
        return path
    env = os.environ.get("GAPRANK_DATA")
    if env:
        path = Path(env)
        if not path.is_dir():
            raise DataNotFoundError(f"GAPRANK_DATA={env} is not a directory. {DOWNLOAD_HINT}")
        return path
    candidates = default_data_dir_candidates()
    for path in candidates:
        if path.is_dir():
            return path
    looked = ", ".join(str(c) for c in candidates)
    raise DataNotFoundError(f"no data directory: data_dir not given, GAPRANK_DATA not set, and none of {looked} exists. {DOWNLOAD_HINT}")


def _dataset_dir(root: Path, dataset: str) -> Path:
    for entry in sorted(root.iterdir()) if root.is_dir() else []:
        if entry.is_dir() and entry.name.lower() == dataset.lower():
            return entry
    raise DataNotFoundError(f"data set {dataset!r} not found: no folder {root / dataset}. {DOWNLOAD_HINT}")


def _find_file(base: Path, stems: tuple[str, ...]) -> Path | None:
    for stem in stems:
        for suffix in (".txt", ".txt.gz", ""):
            candidate = base / f"{stem}{suffix}"
            if candidate.is_file():
                return candidate
    return None


def _partition_file(base: Path, partition: str) -> Path:
    folder, _, name = partition.rpartition("/")
    stems = _SPLIT_FILE_NAMES.get(name, (name,))
    found = _find_file(base / folder if folder else base, stems)
    if found is None:
        raise DataNotFoundError(f"partition {partition!r} not found under {base} (looked for {', '.join(stems)}[.txt|.txt.gz])")
    return found


def fold_files(dataset: str, fold: int, *, variant: str | None = None, data_dir: str | Path | None = None) -> dict[str, list[Path]]:
    """The files that make up train, vali and test of ``FoldK`` (several files when built from partitions)."""
    if isinstance(fold, bool) or not isinstance(fold, int) or not 1 <= fold <= 5:
        raise GaprankInputError(f"fold must be an integer 1..5; got {fold!r}")
    root = resolve_data_dir(data_dir)
    ds_dir = _dataset_dir(root, dataset)
    if variant is None:
        variant = DATASETS.get(ds_dir.name.upper())
    base = ds_dir / variant if variant and (ds_dir / variant).is_dir() else ds_dir
    if variant and base == ds_dir and not (ds_dir / f"Fold{fold}").is_dir():
        raise DataNotFoundError(f"variant {variant!r} of {dataset} not found: no folder {ds_dir / variant}. {DOWNLOAD_HINT}")
    folds_json = ds_dir / "folds.json"
    if folds_json.is_file():
        spec = json.loads(folds_json.read_text())["folds"].get(f"Fold{fold}")
        if spec is None:
            raise DataNotFoundError(f"{folds_json} has no entry Fold{fold}")
        return {
            split: [_partition_file(base, p) for p in ([spec[split]] if isinstance(spec[split], str) else spec[split])]
            for split in SPLITS
        }
    fold_dir = base / f"Fold{fold}"
    files: dict[str, list[Path]] = {}
    for split in SPLITS:
        found = _find_file(fold_dir, _SPLIT_FILE_NAMES[split])
        if found is None:
            raise DataNotFoundError(
                f"{dataset} Fold{fold} {split} set not found: looked for {fold_dir}/"
                f"{{{','.join(_SPLIT_FILE_NAMES[split])}}}[.txt|.txt.gz] and for {folds_json}. {DOWNLOAD_HINT}"
            )
        files[split] = [found]
    return files


def load_fold(
    dataset: str,
    fold: int,
    *,
    variant: str | None = None,
    data_dir: str | Path | None = None,
    null: str = "min",
) -> Fold:
    """Load train, vali and test of LETOR ``FoldK`` for ``dataset`` ("OHSUMED", "MQ2008", ...).

    ``variant`` picks the OHSUMED feature variant ("QueryLevelNorm" by default, "Feature-min",
    "Feature-null"); ``null`` is passed to :func:`read_letor`.

    Examples
    --------
    >>> from gaprank.data import load_fold
    >>> fold = load_fold("OHSUMED", 1)          # doctest: +SKIP
    >>> fold.test.num_queries, fold.train.num_queries   # doctest: +SKIP
    (22, 63)
    """
    files = fold_files(dataset, fold, variant=variant, data_dir=data_dir)
    cache: dict[Path, RankingSplit] = {}
    parts = {}
    for split, paths in files.items():
        loaded = []
        for p in paths:
            if p not in cache:
                cache[p] = read_letor(p, null=null)
            loaded.append(cache[p])
        parts[split] = loaded[0] if len(loaded) == 1 else RankingSplit.concatenate(loaded)
    return Fold(f"{dataset} Fold{fold}", parts["train"], parts["vali"], parts["test"])
