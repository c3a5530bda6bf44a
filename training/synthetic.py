"""Synthetic ranking data shaped like a web-scale LETOR set, written in that set's own layout.

    python -m training.synthetic --like mslr-web30k --queries 31531 --out DIR [--folds 5] [--seed 0]

writes ``DIR/MSLR-WEB30K/FoldK/{train,vali,test}.txt`` as Microsoft's download lays it out (five
partitions S1..S5 of the queries; Fold K tests on one, validates on the next and trains on the other
three), so ``gaprank.data.load_fold("MSLR-WEB30K", 1, data_dir=DIR)`` reads it exactly as it reads the
real set. ``--folds 1`` writes Fold1 only. Shaped like MSLR-WEB30K: list lengths lognormal around its
mean (about 120 documents, at most 1,251), grades 0..4 at its label rates, 136 non-negative features of
which the first 20 carry the (noisy, learnable) signal the grades come from. Feature values have two
decimals (MSLR's are mostly counts and short decimals), which lets the writer format a whole block of
rows from a table of ready-made ``id:value`` tokens instead of number by number.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from gaprank import GaprankInputError


@dataclass(frozen=True)
class Shape:
    name: str  # the data set's folder name
    mean_docs: float
    max_docs: int
    label_rates: tuple[float, ...]  # of grades 0, 1, 2, ...
    num_features: int


SHAPES = {
    # MSLR-WEB30K: 31,531 queries, 3,771,125 documents; grades 0-4 at about 51.4 / 32.5 / 13.4 / 1.9 / 0.8 %
    "mslr-web30k": Shape("MSLR-WEB30K", 119.6, 1251, (0.514, 0.325, 0.134, 0.019, 0.008), 136),
    "mslr-web10k": Shape("MSLR-WEB10K", 120.2, 908, (0.516, 0.324, 0.134, 0.018, 0.008), 136),
}
# Fold K: test partition K, vali the next, train the other three (MSLR's rotation).
PARTITIONS = 5


# Feature values are multiples of 0.01 below MAX_VALUE, so every value has a ready-made token.
MAX_VALUE = 100.0
ROWS_PER_BLOCK = 20_000


def generate(shape: Shape, queries: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Features ``[rows, F]`` (float32, multiples of 0.01), grades ``[rows]`` and query sizes ``[queries]``."""
    rng = np.random.default_rng(seed)
    sizes = np.clip(np.round(rng.lognormal(np.log(shape.mean_docs) - 0.18, 0.6, queries)), 1, shape.max_docs)
    sizes = sizes.astype(np.int64)
    rows = int(sizes.sum())
    features = np.empty((rows, shape.num_features), dtype=np.float32)
    for first in range(0, rows, ROWS_PER_BLOCK):  # block by block: no float64 copy of the whole matrix
        block = rng.gamma(2.0, 1.0, size=(min(ROWS_PER_BLOCK, rows - first), shape.num_features))
        features[first:first + block.shape[0]] = np.minimum(np.round(block, 2), MAX_VALUE - 0.01)
    weights = rng.normal(size=20).astype(np.float32)
    query_effect = np.repeat(rng.normal(scale=1.0, size=queries), sizes)  # some queries have more relevant documents
    latent = features[:, :20] @ weights + query_effect + rng.normal(scale=2.0, size=rows)
    cuts = np.quantile(latent, np.cumsum(shape.label_rates)[:-1])
    labels = np.searchsorted(cuts, latent).astype(np.int64)
    return features, labels, sizes


def _write_rows(fh, features: np.ndarray, labels: np.ndarray, qids: np.ndarray, tokens: np.ndarray) -> None:
    """Write LETOR lines ``label qid:q 1:v ... F:v``, a block of rows at a time."""
    columns = np.arange(features.shape[1])
    for first in range(0, features.shape[0], ROWS_PER_BLOCK):
        block = slice(first, first + ROWS_PER_BLOCK)
        codes = np.rint(features[block] * 100).astype(np.int64)
        rows = tokens[columns, codes].tolist()
        fh.write("".join(f"{label} qid:{qid} {' '.join(row)}\n"
                         for label, qid, row in zip(labels[block].tolist(), qids[block].tolist(), rows, strict=True)))


def write(shape: Shape, queries: int, out: Path, *, folds: int = 5, seed: int = 0) -> Path:
    """Generate and write the set; returns ``out / shape.name``."""
    if queries < PARTITIONS:
        raise GaprankInputError(f"--queries must be at least {PARTITIONS} (one per partition); got {queries}")
    if folds not in (1, 5):
        raise GaprankInputError(f"--folds must be 1 or 5; got {folds}")
    features, labels, sizes = generate(shape, queries, seed)
    qids = np.repeat(np.arange(1, queries + 1), sizes)
    starts = np.concatenate([[0], np.cumsum(sizes)])
    bounds = np.linspace(0, queries, PARTITIONS + 1).astype(int)  # queries of partition S1..S5
    values = [f"{v / 100:g}" for v in range(int(MAX_VALUE * 100))]
    tokens = np.array([[f"{f + 1}:{v}" for v in values] for f in range(shape.num_features)], dtype=object)
    root = out / shape.name
    parts = root / ".partitions"
    parts.mkdir(parents=True, exist_ok=True)
    for number, (a, b) in enumerate(zip(bounds[:-1], bounds[1:], strict=True)):
        rows = slice(starts[a], starts[b])
        with (parts / f"S{number + 1}.txt").open("w") as fh:
            _write_rows(fh, features[rows], labels[rows], qids[rows], tokens)
    for k in range(1, folds + 1):
        test, vali = k - 1, k % PARTITIONS
        train = [p for p in range(PARTITIONS) if p not in (test, vali)]
        folder = root / f"Fold{k}"
        folder.mkdir(parents=True, exist_ok=True)
        for name, chosen in (("train", train), ("vali", [vali]), ("test", [test])):
            with (folder / f"{name}.txt").open("wb") as fh:
                for p in chosen:
                    with (parts / f"S{p + 1}.txt").open("rb") as part:
                        shutil.copyfileobj(part, fh, 16 << 20)
    shutil.rmtree(parts)
    return root


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m training.synthetic", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--like", required=True, choices=sorted(SHAPES))
    parser.add_argument("--queries", type=int, required=True)
    parser.add_argument("--out", required=True, help="the data directory to write the set under")
    parser.add_argument("--folds", type=int, default=5, help="5 (all folds) or 1 (Fold1 only)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    try:
        root = write(SHAPES[args.like], args.queries, Path(args.out), folds=args.folds, seed=args.seed)
    except GaprankInputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {root}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
