"""The named LETOR-format data sets gaprank knows: one entry each, with where its files lie and what
they must hold (feature count, grade scale, evaluation conventions)."""

from __future__ import annotations

from dataclasses import dataclass, field

MSR_LETOR = "Microsoft Research (https://www.microsoft.com/en-us/research/project/letor-learning-rank-information-retrieval/)"
MSLR = "Microsoft Research (https://www.microsoft.com/en-us/research/project/mslr/)"
YAHOO = "Yahoo! Webscope (https://webscope.sandbox.yahoo.com/, C14: Learning to Rank Challenge)"
ISTELLA = "Istella (https://istella.ai/data/letor-dataset/)"

LETOR3_CITATION = ("Tao Qin, Tie-Yan Liu, Jun Xu, Hang Li. LETOR: A benchmark collection for research on learning to rank "
                   "for information retrieval. Information Retrieval 13(4):346-374, 2010; and for the OHSUMED collection: "
                   "William Hersh, Chris Buckley, T. J. Leone, David Hickam. OHSUMED: an interactive retrieval evaluation "
                   "and new large test collection for research. SIGIR 1994")
LETOR4_CITATION = "Tao Qin, Tie-Yan Liu. Introducing LETOR 4.0 Datasets. arXiv:1306.2597, 2013"
YAHOO_CITATION = ("Olivier Chapelle, Yi Chang. Yahoo! Learning to Rank Challenge Overview. JMLR Workshop and Conference "
                  "Proceedings 14:1-24, 2011")
ISTELLA_CITATION = ("Domenico Dato, Claudio Lucchese, Franco Maria Nardini, Salvatore Orlando, Raffaele Perego, Nicola "
                    "Tonellotto, Rossano Venturini. Fast ranking with additive ensembles of oblivious and non-oblivious "
                    "regression trees. ACM TOIS 35(2), 2016")
ISTELLA_S_CITATION = ("Claudio Lucchese, Franco Maria Nardini, Salvatore Orlando, Raffaele Perego, Fabrizio Silvestri, "
                      "Salvatore Trani. Post-learning optimization of tree ensembles for efficient ranking. SIGIR 2016")
ISTELLA_X_CITATION = ("Claudio Lucchese, Franco Maria Nardini, Raffaele Perego, Salvatore Orlando, Salvatore Trani. "
                      "Selective gradient boosting for effective learning to rank. SIGIR 2018")


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
    citation: str = ""  # what a user of the set owes its makers
    # the whole set's query and document (row) counts as its makers publish them, where they do;
    # an import that differs is warned about (a sample, or another set under this name)
    queries: int | None = None
    documents: int | None = None

    @property
    def fold_numbers(self) -> tuple[int, ...]:
        """The folds a complete copy has: 1..5, or 1 for a set with one train/vali/test split."""
        return (1,) if self.layout == "splits" else (1, 2, 3, 4, 5)

    def own_names(self) -> tuple[str, ...]:
        """The set's name and folder names, lower case: what a folder of this set may be called."""
        return tuple(dict.fromkeys(n.lower() for n in (self.name, *self.folders)))

    def split_file_names(self) -> tuple[str, ...]:
        """The names of a one-split set's own files (``set1.train.txt``, ``set1.train.txt.gz``, ...)."""
        return tuple(f"{stem}{suffix}" for stems in self.split_files.values() for stem in stems
                     for suffix in (".txt", ".txt.gz", ""))

    def expected_layout(self) -> str:
        """The files of the set as its download lays them out, for messages."""
        folder = self.folders[0] if self.folders else self.name
        if self.layout == "splits":
            files = ", ".join(f"{stems[0]}.txt" for stems in self.split_files.values())
            return f"{folder}/{{{files}}}"
        return f"{folder}/{self.variant + '/' if self.variant else ''}Fold1..Fold5/{{train,vali,test}}.txt"



def _yahoo(number: int, queries: int, documents: int) -> DatasetInfo:
    files: dict[str, tuple[str, ...]] = {split: (f"set{number}.{stem}",)
                                         for split, stem in (("train", "train"), ("vali", "valid"), ("test", "test"))}
    return DatasetInfo(f"Yahoo-set{number}", 699, 4, "letor4", YAHOO, layout="splits",
                       folders=("Yahoo", "ltrc_yahoo", f"Yahoo-set{number}"), split_files=files, sparse=True,
                       citation=YAHOO_CITATION, queries=queries, documents=documents)


def _istella(name: str, vali: bool, citation: str, queries: int, documents: int) -> DatasetInfo:
    files: dict[str, tuple[str, ...]] = {"train": ("train",), "test": ("test",)}
    if vali:
        files["vali"] = ("vali",)
    return DatasetInfo(name, 220, 4, "letor4", ISTELLA, layout="splits", folders=(name,), split_files=files,
                       citation=citation, queries=queries, documents=documents)


# Counts: LETOR 3.0 and 4.0 papers (OHSUMED, MQ2007, MQ2008), the MSLR page, the Yahoo! challenge overview
# (train + valid + test), the Istella page.
DATASETS: dict[str, DatasetInfo] = {info.name.upper(): info for info in (
    DatasetInfo("OHSUMED", 45, 2, "letor3", "LETOR 3.0, " + MSR_LETOR, variant="QueryLevelNorm",
                citation=LETOR3_CITATION, queries=106, documents=16_140),
    DatasetInfo("MQ2008", 46, 2, "letor4", "LETOR 4.0, " + MSR_LETOR, citation=LETOR4_CITATION, queries=784,
                documents=15_211),
    DatasetInfo("MQ2007", 46, 2, "letor4", "LETOR 4.0, " + MSR_LETOR, citation=LETOR4_CITATION, queries=1_692,
                documents=69_623),
    DatasetInfo("MSLR-WEB10K", 136, 4, "letor4", MSLR, citation=LETOR4_CITATION, queries=10_000, documents=1_200_192),
    DatasetInfo("MSLR-WEB30K", 136, 4, "letor4", MSLR, citation=LETOR4_CITATION, queries=31_531, documents=3_771_125),
    _yahoo(1, queries=29_921, documents=709_877),
    _yahoo(2, queries=6_330, documents=172_870),
    _istella("Istella", vali=False, citation=ISTELLA_CITATION, queries=33_018,
             documents=10_454_629),  # Istella LETOR: train and test only
    _istella("Istella-S", vali=True, citation=ISTELLA_S_CITATION, queries=33_018, documents=3_408_630),
    _istella("Istella-X", vali=True, citation=ISTELLA_X_CITATION, queries=10_000, documents=26_791_447),
)}


def dataset_info(name: str) -> DatasetInfo | None:
    """The entry of a named data set (any case), or None for a folder gaprank does not know."""
    return DATASETS.get(name.upper())
