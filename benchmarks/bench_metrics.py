"""Metric speed: gaprank (NumPy and torch inputs) vs trec_eval (pytrec_eval) on the same rankings.

Run by hand:  python benchmarks/bench_metrics.py [--quick]

Prints milliseconds per 1,000 queries and the ratio to pytrec_eval's AP, all measured in this run.
pytrec_eval's time is its ``evaluate`` call only (building its qrels/run dicts is not counted);
gaprank's time is the whole call from arrays to per-query values.
"""

from __future__ import annotations

import argparse
import platform
import time

import numpy as np
import torch

import gaprank.metrics as M
from gaprank._padding import pad_by_group
from gaprank.data import RankingSplit, load_fold


def best_time(fn, repeat):
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def trec_dicts(scores, labels, mask):
    qrels, run = {}, {}
    for i in range(scores.shape[0]):
        idx = np.flatnonzero(mask[i])
        q = str(i)
        qrels[q] = {str(j): int(labels[i, j]) for j in idx}
        run[q] = {str(j): float(scores[i, j]) for j in idx}
    return qrels, run


def bench(name, scores, labels, mask, repeat):
    import pytrec_eval

    b = scores.shape[0]
    per_1000 = 1000.0 / b
    qrels, run = trec_dicts(scores, labels, mask)
    ap_eval = pytrec_eval.RelevanceEvaluator(qrels, {"map"})
    both_eval = pytrec_eval.RelevanceEvaluator(qrels, {"map", "ndcg_cut"})
    rows = {}
    rows["pytrec_eval AP"] = best_time(lambda: ap_eval.evaluate(run), repeat)
    rows["pytrec_eval AP + nDCG@k"] = best_time(lambda: both_eval.evaluate(run), repeat)
    ts, tl, tm = torch.from_numpy(scores), torch.from_numpy(labels), torch.from_numpy(mask)
    g = [0.5, 0.5]
    for label, fn, kw in [("GAP", M.gap, {"g": g}), ("eGAP", M.egap, {"g": g}), ("xGAP", M.xgap, {"g": g}),
                          ("nDCG@10", M.ndcg, {"k": 10}), ("AP", M.average_precision, {})]:
        rows[f"gaprank {label} (numpy)"] = best_time(lambda: fn(scores, labels, mask=mask, reduction="none", **kw), repeat)
        rows[f"gaprank {label} (torch)"] = best_time(lambda: fn(ts, tl, mask=tm, reduction="none", **kw), repeat)
    yardstick = rows["pytrec_eval AP"]
    print(f"\n## {name}: {b} queries, list size {scores.shape[1]}, {int(mask.sum())} documents")
    print("| implementation | ms per 1,000 queries | ratio to pytrec_eval AP |")
    print("|---|---:|---:|")
    for key, seconds in rows.items():
        print(f"| {key} | {seconds * per_1000 * 1000:.1f} | {seconds / yardstick:.2f} |")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="a 1,000 x 200 synthetic batch instead of 10,000 x 200")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(f"# gaprank metric benchmark — torch {torch.__version__}, {torch.get_num_threads()} threads, "
          f"{platform.processor() or platform.machine()}")
    fold = load_fold("OHSUMED", 1)
    everything = RankingSplit.concatenate([fold.train, fold.vali, fold.test])
    rng = np.random.default_rng(0)
    scores = rng.normal(size=len(everything.labels))
    s, mask = pad_by_group(scores, everything.group_sizes)
    y, _ = pad_by_group(everything.labels, everything.group_sizes)
    bench("OHSUMED, all queries, random scores", s, y, mask, args.repeat)
    b = 1000 if args.quick else 10_000
    s = rng.normal(size=(b, 200))
    y = rng.choice(3, size=(b, 200), p=[0.7, 0.2, 0.1])
    bench(f"synthetic {b} x 200, grades 0/1/2", s, y, np.ones_like(y, dtype=bool), args.repeat)


if __name__ == "__main__":
    main()
