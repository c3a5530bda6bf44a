"""Loss speed and memory: gaprank's objectives vs allRank's lambdaLoss / neuralNDCG and a naive
Delta-GAP that recomputes the metric for every swap, forward + backward on the same batches.

Run by hand:  python benchmarks/bench_losses.py [--sizes 256x128,64x1000] [--timeout 300] [--device cuda]

Needs allRank's loss modules: ``pip install allrank --no-deps`` (its loss code needs only torch once
the stand-ins below replace ``allrank.data.dataset_loading`` and ``allrank.utils.file_utils``).
Every case runs in its own processes: the time is the best of ``--repeat`` forward+backward passes
after one warm-up; memory is the growth of the peak resident set over its value before the first pass,
taken in a second process (after one call on a tiny batch, so that loading code is not counted) with
glibc's mmap threshold at 128 KB (``MALLOC_MMAP_THRESHOLD_``), so that
freed tensors go back to the system and the peak follows the live tensors, not the allocator's cache
(timing that run would count page faults, so it is not timed). A case that passes ``--timeout``
seconds or ``--memory-gb`` is reported as such.
With ``--device cuda`` the tensors live on the GPU: the time is taken after ``torch.cuda.synchronize()``
and the memory is the peak of PyTorch's CUDA allocator over the pass (``max_memory_allocated``, less
what the inputs held before).
Scores: float32 N(0, 1); labels uniform on {0, 1, 2}; sigma = 1 for the soft objectives; g = (0.5, 0.5).
"LambdaRank gap trusted" passes ``validate=False`` (on a GPU: nothing read back, so no synchronisation);
"LambdaRank gap tensor engine" runs the tensor engine that other devices take, on the CPU.
"SoftGAP <smoothing>" is ``SoftGAPLoss(smoothing=...)`` at sigma = 1 (issue 41); its ratio column gives its time
and peak memory against "SoftGAP paper". The issue's targets, run as

    python benchmarks/bench_losses.py --sizes 16x1024 --cases "SoftGAP paper,SoftGAP fast_soft_rank"
    python benchmarks/bench_losses.py --sizes 1x10000 --cases "SoftGAP fast_soft_rank,SoftNDCG fast_soft_rank"
    python benchmarks/bench_losses.py --sizes 16x200 --cases "SoftGAP paper,SoftGAP approx,SoftGAP neuralsort,SoftGAP softsort"

are: at 16x1024 fast_soft_rank within 0.2x SoftGAP paper's peak memory and 0.5x its time; one list of 10,000
documents under 1 GB; approx, NeuralSort and SoftSort at 16x200 within 2x of SoftGAP paper's time.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import time
import types

import torch

G = (0.5, 0.5)


def _allrank():
    """Import allRank's losses with stand-ins for its data-loading and file modules (torchvision, gcsfs)."""
    for name, attrs in {
        "allrank.data.dataset_loading": {"PADDED_Y_VALUE": -1},
        "allrank.utils.file_utils": {"is_gs_path": lambda path: False, "copy_file_to_local": lambda *a, **k: None},
    }.items():
        module = types.ModuleType(name)
        module.__dict__.update(attrs)
        sys.modules[name] = module
    from allrank.models.losses import lambdaLoss, neuralNDCG

    return lambdaLoss, neuralNDCG


def naive_delta_gap_loss(scores, labels):
    """LambdaRank-GAP with Delta GAP from recomputing GAP after every swap: for each document i, one
    metric call on the batch of all lists with i swapped with a later document j."""
    import gaprank

    batch, size = scores.shape
    s = scores.detach()
    base = gaprank.gap(s, labels, g=G, reduction="none")
    weight = torch.zeros(batch, size, size, device=scores.device)
    for i in range(size - 1):
        others = torch.arange(i + 1, size)
        swapped = s[:, None, :].repeat(1, others.numel(), 1)  # [B, J, N]
        rows = torch.arange(others.numel())
        swapped[:, rows, i], swapped[:, rows, others] = s[:, others], s[:, i, None].expand(-1, others.numel())
        values = gaprank.gap(swapped.reshape(-1, size), labels.repeat_interleave(others.numel(), 0), g=G,
                             reduction="none").reshape(batch, -1)
        weight[:, i, i + 1:] = weight[:, i + 1:, i] = (values - base[:, None]).abs()
    better = (labels[:, :, None] > labels[:, None, :]).to(scores.dtype)
    diff = scores[:, :, None] - scores[:, None, :]
    return (weight * better * torch.nn.functional.softplus(-diff)).sum()


def make_case(name):
    import gaprank.losses as L

    if name.startswith("allRank"):
        lambda_loss, neural_ndcg = _allrank()
        if name == "allRank lambdaLoss":
            return lambda s, y: lambda_loss(s, y.float(), weighing_scheme="lambdaRank_scheme")
        return lambda s, y: neural_ndcg(s, y.float())
    if name == "naive Delta-GAP":
        return naive_delta_gap_loss
    if name == "LambdaRank gap tensor engine":  # the path other devices take, timed on the CPU
        return L.LambdaRankLoss("gap", g=G, backend="torch")
    cases = {
        "LambdaRank gap": L.LambdaRankLoss("gap", g=G),
        "LambdaRank gap trusted": L.LambdaRankLoss("gap", g=G, validate=False),
        "LambdaRank egap": L.LambdaRankLoss("egap", g=G),
        "LambdaRank ndcg": L.LambdaRankLoss("ndcg"),
        "SoftGAP paper": L.SoftGAPLoss(g=G, sigma=1.0),
        "SoftGAP exact": L.SoftGAPLoss(g=G, sigma=1.0, smoothing="expected"),
        "SoftNDCG": L.SoftNDCGLoss(sigma=1.0),
        **{f"SoftGAP {s}": L.SoftGAPLoss(g=G, sigma=1.0, smoothing=s) for s in SMOOTHING_CASES},
        "SoftNDCG fast_soft_rank": L.SoftNDCGLoss(sigma=1.0, smoothing="fast_soft_rank"),
        "RankNet": L.RankNetLoss(),
    }
    return cases[name]


SMOOTHING_CASES = ("approx", "neuralsort", "softsort", "fast_soft_rank")  # SoftGAPLoss's other smoothings
CASES = ("LambdaRank gap", "LambdaRank gap trusted", "LambdaRank gap tensor engine",
         "LambdaRank egap", "LambdaRank ndcg", "allRank lambdaLoss", "naive Delta-GAP",
         "SoftGAP paper", "SoftGAP exact", "SoftNDCG", *(f"SoftGAP {s}" for s in SMOOTHING_CASES),
         "SoftNDCG fast_soft_rank", "allRank neuralNDCG", "RankNet")


def worker(name, batch, size, repeat, device):
    torch.manual_seed(0)
    scores = torch.randn(batch, size).to(device)
    labels = torch.randint(0, 3, (batch, size)).to(device)
    fn = make_case(name)
    cuda = device == "cuda"
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    # calls on a tiny batch and on two lists of 400 first, so that loading code (numba's compiled kernels, the one
    # for the calling thread and the one for its threads; allRank's modules) is not counted as the pass's memory
    for shape in ((2, 4), (2, 400)):
        grades = torch.arange(shape[1]).remainder(3).expand(shape)
        fn(torch.randn(shape).to(device).requires_grad_(True), grades.to(device)).backward()
    baseline = torch.cuda.memory_allocated() if cuda else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    times = []
    for _ in range(repeat + 1):
        s = scores.clone().requires_grad_(True)
        sync()
        start = time.perf_counter()
        fn(s, labels).backward()
        sync()
        times.append(time.perf_counter() - start)
        assert torch.isfinite(s.grad).all()
    if cuda:
        megabytes = (torch.cuda.max_memory_allocated() - baseline) / 2**20
    else:
        megabytes = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - baseline) / 1024
    best = min(times[1:]) if repeat else times[0]
    print(json.dumps({"ms": 1000 * best, "mb": megabytes}))


def _subprocess(name, batch, size, repeat, args, env=None):
    def limit():
        if args.device == "cpu":  # CUDA reserves far more address space than it uses
            cap = int(args.memory_gb * 2**30)
            resource.setrlimit(resource.RLIMIT_AS, (cap, cap))

    command = [sys.executable, __file__, "--worker", name, str(batch), str(size), str(repeat), args.device]
    try:
        out = subprocess.run(command, capture_output=True, text=True, timeout=args.timeout, preexec_fn=limit,
                             env=env)
    except subprocess.TimeoutExpired:
        return {"note": f"> {args.timeout:.0f} s"}
    if out.returncode != 0:
        memory = "MemoryError" in out.stderr or "can't allocate" in out.stderr or "out of memory" in out.stderr
        return {"note": f"out of memory (> {args.memory_gb:g} GB)" if memory else "failed: " + out.stderr[-200:]}
    return json.loads(out.stdout.strip().splitlines()[-1])


def run_case(name, batch, size, args):
    timed = _subprocess(name, batch, size, args.repeat, args)
    if "ms" in timed and args.device == "cpu":  # CUDA: the allocator's own peak, taken in the timed run
        env = dict(os.environ, MALLOC_MMAP_THRESHOLD_="131072")
        measured = _subprocess(name, batch, size, 0, args, env)
        timed["mb"] = measured.get("mb", float("nan"))
    return timed


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="256x128,64x1000")
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=300.0)
    parser.add_argument("--memory-gb", type=float, default=16.0)
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--worker", nargs=5, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        name, batch, size, repeat, device = args.worker
        worker(name, int(batch), int(size), int(repeat), device)
        return
    where = (torch.cuda.get_device_name() if args.device == "cuda" else
             f"{platform.processor() or platform.machine()}, {torch.get_num_threads()} threads")
    print(f"# {where}, torch {torch.__version__}, float32 {args.device.upper()}, best of {args.repeat} after a warm-up")
    for spec in args.sizes.split(","):
        batch, size = (int(v) for v in spec.split("x"))
        results = {name: run_case(name, batch, size, args) for name in args.cases.split(",")}
        print(f"\n## batch {batch} x {size} documents")
        print("| objective | forward+backward ms | peak memory MB | ratio |")
        print("|---|---:|---:|---|")
        refs = {"LambdaRank gap": "allRank lambdaLoss", "LambdaRank gap trusted": "allRank lambdaLoss",
                "LambdaRank gap tensor engine": "allRank lambdaLoss", "SoftGAP paper": "allRank neuralNDCG",
                "SoftGAP exact": "SoftGAP paper", "SoftNDCG": "SoftGAP paper", "naive Delta-GAP": "LambdaRank gap",
                **{f"SoftGAP {s}": "SoftGAP paper" for s in SMOOTHING_CASES}, "SoftNDCG fast_soft_rank": "SoftNDCG"}
        with_memory = {f"SoftGAP {s}" for s in SMOOTHING_CASES} | {"SoftNDCG fast_soft_rank"}
        for name, res in results.items():
            if "ms" not in res:
                print(f"| {name} | {res['note']} | | |")
                continue
            ratio = ""
            ref = refs.get(name)
            if ref and "ms" in results.get(ref, {}):
                ratio = f"{res['ms'] / results[ref]['ms']:.2f}x {ref}"
                if name in with_memory and results[ref]["mb"] > 0:
                    ratio = f"{ratio} (time), {res['mb'] / results[ref]['mb']:.2f}x (memory)"
            elif ref in results:
                ratio = f"{ref}: {results[ref]['note']}"
            print(f"| {name} | {res['ms']:.1f} | {res['mb']:.0f} | {ratio} |")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
