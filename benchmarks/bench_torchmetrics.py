"""torchmetrics' retrieval metrics: gaprank's RetrievalGAP/XGAP/EGAP beside torchmetrics' own RetrievalMAP and
RetrievalNormalizedDCG, on the same documents.

Run by hand:  python benchmarks/bench_torchmetrics.py [--queries 10000] [--repeat 5]

Each metric gets the same flat tensors (one update), then ``compute()`` is timed (best of ``--repeat``; a
fresh metric per repeat, so no cached result is reused). torchmetrics' metrics loop over the queries in
Python; gaprank's pad the queries in a few buckets and make one batched call per bucket. Prints seconds and
the ratio to RetrievalMAP measured in this run.
"""

from __future__ import annotations

import argparse
import platform
import time

import numpy as np
import torch
from torchmetrics.retrieval import RetrievalMAP, RetrievalNormalizedDCG

from gaprank.torchmetrics import RetrievalEGAP, RetrievalGAP, RetrievalXGAP


def compute_time(make, preds, target, indexes, repeat):
    times, value = [], None
    for _ in range(repeat):
        metric = make()
        metric.update(preds, target, indexes=indexes)
        start = time.perf_counter()
        value = metric.compute()
        times.append(time.perf_counter() - start)
    return min(times), float(value)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--queries", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    torch.set_num_threads(1)
    rng = np.random.default_rng(args.seed)
    sizes = rng.integers(10, 101, args.queries)  # 10..100 documents per query
    indexes = torch.tensor(np.repeat(np.arange(args.queries), sizes))
    preds = torch.tensor(rng.random(indexes.numel()), dtype=torch.float32)
    target = torch.tensor(rng.integers(0, 3, indexes.numel()))
    binary = (target >= 1).long()
    print(f"# {args.queries} queries, {indexes.numel()} documents (10..100 per query, grades 0..2), "
          f"torch {torch.__version__}, 1 thread, {platform.machine()} {platform.processor() or ''}".rstrip())
    rows = [
        ("torchmetrics RetrievalMAP (binary)", RetrievalMAP, binary),
        ("torchmetrics RetrievalNormalizedDCG", RetrievalNormalizedDCG, target),
        ("gaprank RetrievalGAP", lambda: RetrievalGAP(g=[0.5, 0.5]), target),
        ("gaprank RetrievalXGAP", lambda: RetrievalXGAP(g=[0.5, 0.5]), target),
        ("gaprank RetrievalEGAP", lambda: RetrievalEGAP(g=[0.5, 0.5]), target),
        ("gaprank RetrievalGAP(g=[1]) (binary: AP)", lambda: RetrievalGAP(g=[1.0]), binary),
    ]
    baseline = None
    for name, make, labels in rows:
        seconds, value = compute_time(make, preds, labels, indexes, args.repeat)
        baseline = baseline or seconds
        print(f"{name:<42} compute {seconds:8.3f} s  value {value:.6f}  ratio to RetrievalMAP {seconds / baseline:6.3f}")


if __name__ == "__main__":
    main()
