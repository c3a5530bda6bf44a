"""README's main job on a shared machine: its time alone and beside busy processes, and the ratio.

Run by hand, with nothing else running:  python benchmarks/bench_shared_machine.py [--config CONFIG]
    [--folds 1,2,3,4,5] [--busy 2] [--cores 2] [--repeat 1] [--env KEY=VALUE ...]

The job is ``python -m training.cv --config configs/ohsumed/lambdarank_gap.yaml`` (README's), trained afresh
into a temporary folder each time (no fold record reused). It runs once on the idle machine, then beside
``--busy`` processes that spin (``python -c "while True: pass"``); with ``--cores N`` the job and the busy
processes are all pinned to the first N cores this process may use (a two-core machine on a larger one;
``num_threads: auto`` then reads N). The cases take turns, ``--repeat`` times; the table gives the best wall
time of each and their ratio. Target (issue 39): at most 3x on two cores beside two busy processes. Both
cases must print the same means (the threads change the time, never a number); the script says so, or
exits 1.

``--env KEY=VALUE`` runs the job with that variable set. The training scripts ask OpenMP's idle threads to
spin briefly, then sleep (``GOMP_SPINCOUNT=20000``) unless a wait policy is set. ``--env GOMP_SPINCOUNT=300000``
gives GNU OpenMP's default spinning instead, ``--env OMP_WAIT_POLICY=PASSIVE`` threads that always sleep,
``--env OMP_WAIT_POLICY=ACTIVE`` threads that always spin. The training scripts run gaprank's kernels on
numba's ``workqueue`` layer unless one is named: ``--env NUMBA_THREADING_LAYER=omp`` (or ``tbb``) times another.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BUSY = "while True: pass"


def _pinned(cores: list[int] | None):
    if cores is None:
        return None
    return lambda: os.sched_setaffinity(0, cores)


def run_job(config: str, folds: str | None, env: dict[str, str], cores: list[int] | None) -> tuple[float, dict]:
    """One fresh run of the job: (wall seconds, the summary's means)."""
    with tempfile.TemporaryDirectory(prefix="bench-shared-") as out:
        command = [sys.executable, "-m", "training.cv", "--config", config, "--out", out]
        if folds:
            command += ["--folds", folds]
        start = time.perf_counter()
        done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, preexec_fn=_pinned(cores))
        seconds = time.perf_counter() - start
        if done.returncode != 0:
            raise SystemExit(f"the job failed (exit {done.returncode}): {done.stderr.strip().splitlines()[-1:]}")
        return seconds, json.loads((Path(out) / "summary.json").read_text())["mean"]


def beside_busy(count: int, cores: list[int] | None):
    """Start ``count`` processes that spin on the same cores; returns them (terminate when done)."""
    return [subprocess.Popen([sys.executable, "-c", BUSY], preexec_fn=_pinned(cores)) for _ in range(count)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", default="configs/ohsumed/lambdarank_gap.yaml")
    parser.add_argument("--folds", default=None, help="a subset of the config's folds, e.g. 1 (default: all five)")
    parser.add_argument("--busy", type=int, default=2, help="busy processes beside the job")
    parser.add_argument("--cores", type=int, default=None, help="pin everything to this many cores")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--env", action="append", default=[], metavar="KEY=VALUE")
    args = parser.parse_args(argv)
    env = {**os.environ, "TQDM_DISABLE": "1"}
    for item in args.env:
        key, _, value = item.partition("=")
        env[key] = value
    allowed = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    cores = allowed[: args.cores] if args.cores and allowed else None
    print(f"# {platform.processor() or platform.machine()}, {os.cpu_count()} cpus, job on "
          f"{len(cores) if cores else len(allowed or []) or os.cpu_count()} cores; {args.config} folds "
          f"{args.folds or 'all'}; {args.busy} busy processes; env {' '.join(args.env) or '(as is)'}")
    best = {"idle": float("inf"), "busy": float("inf")}
    means = {}
    for _ in range(args.repeat):
        seconds, means["idle"] = run_job(args.config, args.folds, env, cores)
        best["idle"] = min(best["idle"], seconds)
        busy = beside_busy(args.busy, cores)
        try:
            time.sleep(1.0)  # the busy processes are running before the job starts
            seconds, means["busy"] = run_job(args.config, args.folds, env, cores)
        finally:
            for process in busy:
                process.terminate()
                process.wait()
        best["busy"] = min(best["busy"], seconds)
    print("| case | wall s | x idle |")
    print("|---|---:|---:|")
    print(f"| idle | {best['idle']:.1f} | 1.00 |")
    print(f"| beside {args.busy} busy processes | {best['busy']:.1f} | {best['busy'] / best['idle']:.2f} |")
    same = means["idle"] == means["busy"]
    print(f"same means in both cases: {'yes' if same else 'NO'} ({json.dumps(means['idle'])})")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
