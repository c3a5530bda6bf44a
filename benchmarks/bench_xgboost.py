"""XGBoost speed: time per boosting round with gaprank's objective vs XGBoost's native ``rank:ndcg``.

Run by hand, with nothing else running:  python benchmarks/bench_xgboost.py [--data ohsumed,mq2008,synthetic]
    [--rounds 50] [--synthetic-rounds 5] [--repeat 5] [--threads 2]

Same data, same XGBoost parameters (hist, max_depth 6, eta 0.1, ``--threads`` threads for XGBoost and
for torch), same process. Cases:

* ``native``: ``objective="rank:ndcg"`` (its defaults: topk pairs, 32 per sample, both normalisations);
* ``ndcg mirror``: our objective with those settings (it reproduces native's predictions; tested);
* ``gap k=32``: our GAP objective with the same truncation and normalisation (the like-for-like case);
* ``gap all pairs``: our defaults (every pair, no normalisation);
* ``api floor``: a custom objective that returns ``gap k=32``'s first-round gradients every round without
  computing anything: what XGBoost's custom-objective round trip (margin prediction, gradient copy) costs
  over native, the floor under any Python objective.

A round's time is (training time for ``--rounds`` rounds) / rounds, best of ``--repeat``; the cases take
turns within each repeat, and the DMatrix is built once. Target (issue 15): ``gap k=32`` at most 2.0x
native (moonshot 1.3x). Data: OHSUMED and MQ2008 Fold1 train, and the MSLR-sized synthetic set of
``bench_lightgbm.py`` (10,000 queries, lognormal sizes, 136 features).
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time

import torch
import xgboost as xgb

from gaprank.xgboost import objective

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_lightgbm import load, warm_compiled_kernel  # noqa: E402  (the same data, synthetic set included, for both boosters)

CASES = {
    "native": None,
    "ndcg mirror": dict(measure="ndcg", truncation_level=32, norm=True),
    "gap k=32": dict(measure="gap", truncation_level=32, norm=True),
    "gap all pairs": dict(measure="gap"),
    "api floor": "fixed",
}


def fixed_gradients(data: xgb.DMatrix):
    """A custom objective returning ``gap k=32``'s gradients at the first round's margins, every round."""
    gap = objective(**CASES["gap k=32"])
    grad, hess = gap(torch.full((data.num_row(),), 0.5).numpy(), data)
    return lambda predt, dtrain: (grad, hess)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default="ohsumed,mq2008,synthetic")
    parser.add_argument("--rounds", type=int, default=50)
    parser.add_argument("--synthetic-rounds", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    compile_seconds = warm_compiled_kernel(args.threads)
    params = {"tree_method": "hist", "max_depth": 6, "eta": 0.1, "nthread": args.threads, "base_score": 0.5, "seed": 1}
    print(f"# {platform.processor() or platform.machine()}, {os.cpu_count()} cpus, threads {args.threads}; "
          f"xgboost {xgb.__version__}, torch {torch.__version__}, python {sys.version.split()[0]}")
    print(f"# compiled kernel (numba): first call {compile_seconds:.2f} s, not in any timing below")
    print("| data | queries | docs | case | ms / round | x native |")
    print("|---|---:|---:|---|---:|---:|")
    for name in args.data.split(","):
        X, y, sizes = load(name)
        data = xgb.DMatrix(X, label=y)
        data.set_group(sizes)
        rounds = args.rounds if name != "synthetic" else args.synthetic_rounds
        best = dict.fromkeys(CASES, float("inf"))
        for _ in range(args.repeat):
            for case, spec in CASES.items():
                obj = None if spec is None else fixed_gradients(data) if spec == "fixed" else objective(**spec)
                case_params = {**params, "objective": "rank:ndcg"} if spec is None else params
                start = time.perf_counter()
                xgb.train(case_params, data, num_boost_round=rounds, obj=obj)
                best[case] = min(best[case], (time.perf_counter() - start) / rounds)
        for case in CASES:
            print(f"| {name} | {len(sizes)} | {len(y)} | {case} | {best[case] * 1000:.1f} | "
                  f"{best[case] / best['native']:.2f} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
