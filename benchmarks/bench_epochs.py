"""Training throughput of the PyTorch rankers, and what running trials side by side does to it.

Run by hand, with nothing else running:  python benchmarks/bench_epochs.py [--data ohsumed,mq2008]
    [--epochs 10] [--layouts 1x2,2x1,2x2]

One epoch is what ``training.cv`` does per epoch: Adam over the fold's training queries in batches of 8
(batched by length), LambdaRank-GAP (g = (0.5, 0.5), sigma 1), then the vali fold scored with GAP.
Models: the linear ranker and an MLP with one hidden layer of 256 units and dropout 0.2 (what tuning
chose for most LambdaRank objectives on OHSUMED). Throughput is training queries per second of wall
time, the median epoch after one warm-up epoch.

A layout ``PxT`` runs P processes at once, each with T torch threads, and reports their summed
throughput: ``1x2`` is one trial on both cores, ``2x1`` two trials splitting them, ``2x2`` two trials
that each take both cores (oversubscribed: threads x processes > cores).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time

DATASETS = {"ohsumed": ("OHSUMED", [0.5, 0.5]), "mq2008": ("MQ2008", [0.5, 0.5])}
MODELS = {"linear": {"kind": "linear"}, "mlp 256": {"kind": "mlp", "hidden": [256], "dropout": 0.2}}


def worker(dataset: str, model_name: str, epochs: int, threads: int) -> dict[str, float]:
    """Median seconds per epoch and training queries of one (data, model) on Fold 1."""
    import torch

    from gaprank.data import load_fold
    from training.config import build_config
    from training.cv import LossConfig, ModelConfig, length_batches, predict

    torch.set_num_threads(threads)
    name, g = DATASETS[dataset]
    fold = load_fold(name, 1)
    train = length_batches(fold.train, 8, torch.float32)
    torch.manual_seed(1)
    model = build_config(ModelConfig, MODELS[model_name]).build(fold.train.num_features)
    loss_fn = build_config(LossConfig, {"kind": "lambdarank", "measure": "gap", "g": g}).build()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    vali_features = torch.as_tensor(fold.vali.features, dtype=torch.float32)
    from gaprank.lightgbm import ranking_feval

    scorer = ranking_feval(["GAP"], g=g)
    seconds = []
    for _ in range(epochs + 1):
        start = time.perf_counter()
        model.train()
        for batch in train:
            optimizer.zero_grad()
            loss_fn(model(batch.features), batch.labels, batch.mask).backward()
            optimizer.step()
        scorer.evaluate(predict(model, vali_features), fold.vali.labels, fold.vali.group_sizes)
        seconds.append(time.perf_counter() - start)
    return {"epoch_s": statistics.median(seconds[1:]), "queries": int(fold.train.group_sizes.size)}


def run_layout(dataset: str, model_name: str, epochs: int, processes: int, threads: int) -> dict[str, float]:
    command = [sys.executable, __file__, "--worker", dataset, model_name, str(epochs), str(threads)]
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # training/ lives beside benchmarks/
    env = {**os.environ, "OMP_NUM_THREADS": str(threads),
           "PYTHONPATH": os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")]))}
    started = [subprocess.Popen(command, stdout=subprocess.PIPE, text=True, env=env) for _ in range(processes)]
    results = []
    for process in started:
        out, _ = process.communicate()
        if process.returncode:
            raise SystemExit(f"worker failed ({dataset}, {model_name})")
        results.append(json.loads(out.strip().splitlines()[-1]))
    return {"epoch_s": statistics.median(r["epoch_s"] for r in results),
            "queries_per_s": sum(r["queries"] / r["epoch_s"] for r in results)}


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        dataset, model_name, epochs, threads = sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
        print(json.dumps(worker(dataset, model_name, epochs, threads)))
        return
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default="ohsumed,mq2008")
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--layouts", default="1x2,2x1,2x2", help="PxT: P processes of T torch threads each")
    args = parser.parse_args()
    import torch

    print(f"# {platform.machine()}, {os.cpu_count()} cores, torch {torch.__version__}; LambdaRank-GAP, batch 8, "
          f"median of {args.epochs} epochs after a warm-up, vali scored each epoch")
    print("| data | model | layout (processes x threads) | ms per epoch | train queries/s (all processes) |"
          " vs 1 process |")
    print("|---|---|---|---:|---:|---:|")
    for dataset in args.data.split(","):
        for model_name in MODELS:
            base = None
            for layout in args.layouts.split(","):
                processes, threads = (int(v) for v in layout.split("x"))
                r = run_layout(dataset, model_name, args.epochs, processes, threads)
                base = base or r["queries_per_s"]
                print(f"| {DATASETS[dataset][0]} | {model_name} | {processes} x {threads} | {1000 * r['epoch_s']:.0f} | "
                      f"{r['queries_per_s']:.0f} | {r['queries_per_s'] / base:.2f}x |", flush=True)


if __name__ == "__main__":
    main()
