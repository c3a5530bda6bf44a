"""The whole path at web scale: an MSLR-WEB30K-sized Fold1 from LETOR text to a trained epoch / boosting
rounds, on this machine, each step in its own process so its peak memory is its own.

Run by hand, with nothing else running:
    python -m training.synthetic --like mslr-web30k --queries 31531 --out DATA --folds 1
    python benchmarks/bench_scale.py --data DATA [--parts load,epoch,lambdamart] [--device cpu|cuda]

The ``epoch`` part needs allRank's loss modules: ``pip install allrank --no-deps`` (as ``bench_losses.py``).

* ``load``: ``load_fold("MSLR-WEB30K", 1, dtype=float32)`` with an empty parsed-file cache (cold: the
  text is parsed and the cache written), then again in a new process (cached). Target: cached <= 1/10
  of cold.
* ``epoch``: one training epoch (Adam, batches of ``--batch`` queries of similar length, built per
  bucket) of the MLP ranker (136-256-1, ReLU) with gaprank's LambdaRank-GAP (g uniform over grades 1..4, sigma 1;
  the module, which keeps its buffers per batch shape, with ``validate=False`` as docs/losses.md advises for a
  GPU), then the same epoch with allRank's lambdaLoss (its lambdaRank_scheme, all pairs, on the same batches
  with allRank's -1 padding labels), each in its own process from the same seeded model. Peak memory is
  the process's peak resident set (loading included) against the float32 feature matrix of the fold.
  Targets: gaprank <= 0.5x allRank's time, peak <= 2x the feature matrix.
* ``lambdamart``: ``--rounds`` boosting rounds of LightGBM with gaprank's GAP objective (native's truncation
  level 30 and normalisation: like for like) and
  with native lambdarank (num_leaves 31, learning_rate 0.1), seconds per round.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # training.cv's batches, as training uses them
G = (0.25, 0.25, 0.25, 0.25)  # uniform over MSLR's grades 1..4


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _load(data: str):
    import numpy as np

    from gaprank.data import load_fold

    return load_fold("MSLR-WEB30K", 1, data_dir=data, dtype=np.float32)


def part_load(args) -> dict:
    import gaprank.data  # noqa: F401 - imports (torch's among them) are not the load

    start = time.perf_counter()
    fold = _load(args.data)
    seconds = time.perf_counter() - start
    rows = sum(s.features.shape[0] for s in (fold.train, fold.vali, fold.test))
    return {"seconds": seconds, "peak_mb": _peak_mb(), "rows": rows,
            "feature_mb": sum(s.features.nbytes for s in (fold.train, fold.vali, fold.test)) / 2**20}


def part_epoch(args) -> dict:
    import torch

    from gaprank.losses import LambdaRankLoss
    from training.cv import QueryBatches

    torch.set_num_threads(args.threads)
    fold = _load(args.data)
    feature_mb = sum(s.features.nbytes for s in (fold.train, fold.vali, fold.test)) / 2**20
    device = args.device
    batches = QueryBatches(fold.train, args.batch, torch.float32, device=device)
    torch.manual_seed(1)
    model = torch.nn.Sequential(torch.nn.Linear(136, 256), torch.nn.ReLU(), torch.nn.Linear(256, 1),
                                torch.nn.Flatten(-2)).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    if args.loss == "gaprank":
        loss_fn = LambdaRankLoss("gap", g=G, sigma=1.0, validate=False)
    else:
        sys.path.insert(0, str(HERE))
        from bench_losses import _allrank

        lambda_loss, _ = _allrank()

        def loss_fn(scores, labels, mask):
            return lambda_loss(scores, labels.masked_fill(~mask, -1).float(), weighing_scheme="lambdaRank_scheme")
    order = torch.randperm(len(batches), generator=torch.Generator().manual_seed(1)).tolist()
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    sync()
    start = time.perf_counter()
    for index in order:
        batch = batches[index]
        optimizer.zero_grad()
        loss_fn(model(batch.features), batch.labels, batch.mask).backward()
        optimizer.step()
    sync()
    seconds = time.perf_counter() - start
    result = {"seconds": seconds, "peak_mb": _peak_mb(), "feature_mb": feature_mb, "batches": len(batches),
              "queries": fold.train.num_queries}
    if device == "cuda":
        result["cuda_peak_mb"] = torch.cuda.max_memory_allocated() / 2**20
    return result


def part_lambdamart(args) -> dict:
    import lightgbm as lgb

    from gaprank.lightgbm import lambdarank_objective

    fold = _load(args.data)
    features, labels, group = fold.train.to_flat()
    params = {"num_leaves": 31, "learning_rate": 0.1, "min_data_in_leaf": 20, "num_threads": args.threads,
              "verbose": -1, "force_row_wise": True}
    out = {}
    for case in ("native", "gap"):
        dataset = lgb.Dataset(features, labels, group=group, params={"verbose": -1}).construct()
        objective = "lambdarank" if case == "native" else lambdarank_objective("gap", g=G, truncation_level=30, norm=True)
        start = time.perf_counter()
        lgb.train({**params, "objective": objective}, dataset, num_boost_round=args.rounds)
        out[f"{case}_s_per_round"] = (time.perf_counter() - start) / args.rounds
    out["peak_mb"] = _peak_mb()
    return out


PARTS = {"load": part_load, "epoch": part_epoch, "lambdamart": part_lambdamart}


def _child(args, part: str, env: dict | None = None, **extra) -> dict:
    command = [sys.executable, __file__, "--data", args.data, "--worker", part, "--threads", str(args.threads),
               "--batch", str(args.batch), "--rounds", str(args.rounds), "--device", args.device]
    for key, value in extra.items():
        command += [f"--{key}", str(value)]
    done = subprocess.run(command, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        raise SystemExit(f"{part} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", required=True, help="the data directory holding MSLR-WEB30K/Fold1")
    parser.add_argument("--parts", default="load,epoch,lambdamart")
    parser.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--loss", choices=("gaprank", "allrank"), default="gaprank", help=argparse.SUPPRESS)
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        print(json.dumps(PARTS[args.worker](args)))
        return 0
    print(f"# {platform.machine()}, {args.threads} threads, device {args.device}, data {args.data}")
    parts = args.parts.split(",")
    with tempfile.TemporaryDirectory() as empty:
        # the load part starts from an empty cache; without it, the user's cache serves the other parts
        env = {**os.environ, "GAPRANK_CACHE": empty} if "load" in parts else dict(os.environ)
        if "load" in parts:
            cold = _child(args, "load", env)
            cached = _child(args, "load", env)
            print(f"load MSLR-WEB30K Fold1 ({cold['rows']:,} rows, float32 features {cold['feature_mb']:.0f} MB): "
                  f"cold {cold['seconds']:.1f} s (peak RSS {cold['peak_mb']:.0f} MB), cached {cached['seconds']:.1f} s "
                  f"(peak RSS {cached['peak_mb']:.0f} MB): cached / cold = {cached['seconds'] / cold['seconds']:.3f}")
        else:
            _child(args, "load", env)  # fill the cache if it is empty: the other parts load from it
        if "epoch" in parts:
            ours = _child(args, "epoch", env, loss="gaprank")
            theirs = _child(args, "epoch", env, loss="allrank")
            for name, r in (("gaprank LambdaRank-GAP", ours), ("allRank lambdaLoss", theirs)):
                cuda = f", CUDA peak {r['cuda_peak_mb']:.0f} MB" if "cuda_peak_mb" in r else ""
                print(f"epoch, {name}: {r['seconds']:.1f} s for {r['queries']:,} queries in {r['batches']:,} batches of "
                      f"{args.batch}; peak RSS {r['peak_mb']:.0f} MB = {r['peak_mb'] / r['feature_mb']:.2f}x the float32 "
                      f"feature matrix{cuda}")
            print(f"epoch time gaprank / allRank = {ours['seconds'] / theirs['seconds']:.2f}x")
        if "lambdamart" in parts:
            r = _child(args, "lambdamart", env)
            print(f"LambdaMART, {args.rounds} rounds: native {r['native_s_per_round']:.2f} s/round, gaprank GAP "
                  f"{r['gap_s_per_round']:.2f} s/round ({r['gap_s_per_round'] / r['native_s_per_round']:.2f}x); "
                  f"peak RSS {r['peak_mb']:.0f} MB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
