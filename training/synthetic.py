"""Synthetic ranking data shaped like a web-scale LETOR set, written in that set's own layout.

    python -m training.synthetic --like mslr-web30k --queries 31531 --out DIR [--folds 5] [--seed 0]

writes ``DIR/MSLR-WEB30K/FoldK/{train,vali,test}.txt`` as Microsoft's download lays it out (five
partitions S1..S5 of the queries; Fold K tests on one, validates on the next and trains on the other
three), so ``gaprank.data.load_fold("MSLR-WEB30K", 1, data_dir=DIR)`` reads it exactly as it reads the
real set. ``--folds 1`` writes Fold1 only. Shaped like MSLR-WEB30K: list lengths lognormal around its
mean (about 120 documents, at most 1,251), grades 0..4 at its label rates, 136 non-negative features of
which the first 20 carry the (noisy, learnable) signal the grades come from.
"""

from __future__ import annotations

import argparse
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


def generate(shape: Shape, queries: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Features ``[rows, F]`` (float32), grades ``[rows]`` and query sizes ``[queries]``."""
    rng = np.random.default_rng(seed)
    sizes = np.clip(np.round(rng.lognormal(np.log(shape.mean_docs) - 0.18, 0.6, queries)), 1, shape.max_docs)
    sizes = sizes.astype(np.int64)
    rows = int(sizes.sum())
    features = rng.gamma(2.0, 1.0, size=(rows, shape.num_features)).astype(np.float32)
    weights = rng.normal(size=20).astype(np.float32)
    query_effect = np.repeat(rng.normal(scale=1.0, size=queries), sizes)  # some queries have more relevant documents
    latent = features[:, :20] @ weights + query_effect + rng.normal(scale=2.0, size=rows)
    cuts = np.quantile(latent, np.cumsum(shape.label_rates)[:-1])
    labels = np.searchsorted(cuts, latent).astype(np.int64)
    return features, labels, sizes


def _lines(features: np.ndarray, labels: np.ndarray, qids: np.ndarray) -> str:
    ids = [f"{i + 1}:" for i in range(features.shape[1])]
    out = []
    for label, qid, row in zip(labels.tolist(), qids.tolist(), features.tolist(), strict=True):
        out.append(f"{label} qid:{qid} " + " ".join(f"{name}{value:.6g}" for name, value in zip(ids, row, strict=True)))
    return "\n".join(out) + "\n"


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
    text = [_lines(features[starts[a]:starts[b]], labels[starts[a]:starts[b]], qids[starts[a]:starts[b]])
            for a, b in zip(bounds[:-1], bounds[1:], strict=True)]
    root = out / shape.name
    for k in range(1, folds + 1):
        test, vali = k - 1, k % PARTITIONS
        train = [p for p in range(PARTITIONS) if p not in (test, vali)]
        folder = root / f"Fold{k}"
        folder.mkdir(parents=True, exist_ok=True)
        for name, parts in (("train", train), ("vali", [vali]), ("test", [test])):
            (folder / f"{name}.txt").write_text("".join(text[p] for p in parts))
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
