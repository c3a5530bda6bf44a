"""The named LETOR-format data sets gaprank knows: one entry each, with where its files lie and what
they must hold (feature count, grade scale, evaluation conventions)."""

from __future__ import annotations

from dataclasses import dataclass, field

MSR_LETOR = "Microsoft Research (https://www.microsoft.com/en-us/research/project/letor-learning-rank-information-retrieval/)"
MSLR = "Microsoft Research (https://www.microsoft.com/en-us/research/project/mslr/)"
YAHOO = "Yahoo! Webscope (https://webscope.sandbox.yahoo.com/, C14: Learning to Rank Challenge)"
ISTELLA = "Istella (https://istella.ai/data/letor-dataset/)"


@dataclass(frozen=True)
class DatasetInfo:
    """A named data set.

    ``layout`` "folds": ``<folder>/FoldK/{train,vali,test}.txt`` (or this project's partitions and
    ``folds.json``); "splits": one train / vali / test split, files named by ``split_files`` in
    ``<folder>`` (read as fold 1). ``folders``: the folder names accepted under the data directory
    (any case). ``sparse``: rows list only their non-zero features.
    """

    name: str
    num_features: int
    max_label: int
    conventions: str  # the evaluation conventions of the set's own tool (metrics.CONVENTIONS)
    download: str
    layout: str = "folds"
    variant: str | None = None
    folders: tuple[str, ...] = ()
    split_files: dict[str, tuple[str, ...]] = field(default_factory=dict)
    sparse: bool = False

    def example_path(self) -> str:
        """Where a file of the set is expected, for messages."""
        folder = self.folders[0] if self.folders else self.name
        if self.layout == "splits":
            return f"<data_dir>/{folder}/{self.split_files['train'][0]}.txt"
        return f"<data_dir>/{folder}/{self.variant + '/' if self.variant else ''}Fold1/train.txt"


def _yahoo(number: int) -> DatasetInfo:
    files: dict[str, tuple[str, ...]] = {split: (f"set{number}.{stem}",)
                                         for split, stem in (("train", "train"), ("vali", "valid"), ("test", "test"))}
    return DatasetInfo(f"Yahoo-set{number}", 699, 4, "letor4", YAHOO, layout="splits",
                       folders=("Yahoo", "ltrc_yahoo", f"Yahoo-set{number}"), split_files=files, sparse=True)


def _istella(name: str, vali: bool) -> DatasetInfo:
    files: dict[str, tuple[str, ...]] = {"train": ("train",), "test": ("test",)}
    if vali:
        files["vali"] = ("vali",)
    return DatasetInfo(name, 220, 4, "letor4", ISTELLA, layout="splits", folders=(name,), split_files=files)


DATASETS: dict[str, DatasetInfo] = {info.name.upper(): info for info in (
    DatasetInfo("OHSUMED", 45, 2, "letor3", "LETOR 3.0, " + MSR_LETOR, variant="QueryLevelNorm"),
    DatasetInfo("MQ2008", 46, 2, "letor4", "LETOR 4.0, " + MSR_LETOR),
    DatasetInfo("MQ2007", 46, 2, "letor4", "LETOR 4.0, " + MSR_LETOR),
    DatasetInfo("MSLR-WEB10K", 136, 4, "letor4", MSLR),
    DatasetInfo("MSLR-WEB30K", 136, 4, "letor4", MSLR),
    _yahoo(1),
    _yahoo(2),
    _istella("Istella", vali=False),  # Istella LETOR: train and test only
    _istella("Istella-S", vali=True),
    _istella("Istella-X", vali=True),
)}


def dataset_info(name: str) -> DatasetInfo | None:
    """The entry of a named data set (any case), or None for a folder gaprank does not know."""
    return DATASETS.get(name.upper())
