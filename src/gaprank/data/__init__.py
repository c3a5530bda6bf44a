"""LETOR / SVMlight and TREC data: reading, folds, padded and flat views."""

from ._folds import (
    DataNotFoundError,
    Fold,
    default_data_dir_candidates,
    fold_files,
    load_fold,
    resolve_data_dir,
)
from ._letor import LetorFormatError, PaddedBatch, RankingSplit, read_letor, read_scores
from ._trec import read_qrels, read_run

__all__ = [
    "DataNotFoundError",
    "Fold",
    "LetorFormatError",
    "PaddedBatch",
    "RankingSplit",
    "default_data_dir_candidates",
    "fold_files",
    "load_fold",
    "read_letor",
    "read_qrels",
    "read_run",
    "read_scores",
    "resolve_data_dir",
]
