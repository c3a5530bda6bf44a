"""LETOR / SVMlight and TREC data: reading, folds, padded and flat views."""

from .._grouped import GroupedLists, LengthBucket
from ._cache import CacheWriteWarning
from ._datasets import DATASETS, DatasetInfo, dataset_info
from ._files import to_json, write_atomic, write_json_atomic
from ._folds import (
    MAX_LABEL,
    NUM_FEATURES,
    Fold,
    FoldsFileError,
    check_dataset_folder,
    fold_files,
    fold_fingerprint,
    load_fold,
    load_split,
)
from ._import import DataImportError, DataImportWarning, import_dataset, remove_stale_imports
from ._letor import LetorFormatError, PaddedBatch, RankingSplit, read_letor, read_scores
from ._locations import (
    BundledDataError,
    DataLocation,
    DataLocationWarning,
    DataNotFoundError,
    bundled_sets,
    data_locations,
    dataset_file,
    find_dataset,
    locate_dataset,
    user_data_dir,
)
from ._trec import read_qrels, read_run

__all__ = [
    "DATASETS",
    "DatasetInfo",
    "dataset_info",
    "load_split",
    "MAX_LABEL",
    "NUM_FEATURES",
    "DataNotFoundError",
    "DataImportError",
    "DataImportWarning",
    "DataLocationWarning",
    "CacheWriteWarning",
    "Fold",
    "FoldsFileError",
    "fold_fingerprint",
    "to_json",
    "write_atomic",
    "write_json_atomic",
    "LetorFormatError",
    "PaddedBatch",
    "RankingSplit",
    "GroupedLists",
    "LengthBucket",
    "BundledDataError",
    "DataLocation",
    "bundled_sets",
    "check_dataset_folder",
    "data_locations",
    "dataset_file",
    "find_dataset",
    "import_dataset",
    "remove_stale_imports",
    "locate_dataset",
    "user_data_dir",
    "fold_files",
    "load_fold",
    "read_letor",
    "read_qrels",
    "read_run",
    "read_scores",
]
