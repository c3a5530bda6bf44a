"""``gaprank eval`` (TREC mode) against pytrec_eval on the same files: wall time and peak memory.

Run by hand, with nothing else running:
    python benchmarks/bench_trec_eval.py [--cases skewed,uniform] [--repeats 3]

Each side runs in its own process (file reading included, interpreter start and imports not), measuring
nDCG@10, AP and P@10 (trec_eval's ndcg_cut_10, map, P_10), and reports the process's peak resident set.

* ``skewed``: 2,000 queries of 10 documents and one of 20,000 (a padded evaluation would hold
  2,001 x 20,000 slots). Targets: peak under 300 MB, time within 3x pytrec_eval's.
* ``uniform``: a 2,000,000-line run (20,000 queries of 100 documents). Target: within 2x pytrec_eval's
  time and memory.
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

MEASURES = {"gaprank": ["nDCG@10", "AP", "P@10"], "pytrec_eval": ["ndcg_cut_10", "map", "P_10"]}

PEAK = """
def _peak_mb():
    # peak resident memory in MB: /proc/self/status VmHWM (reset by exec, unlike ru_maxrss, which keeps
    # the size of the process that forked this one), else ru_maxrss
    try:
        with open("/proc/self/status") as fh:
            return next(int(line.split()[1]) for line in fh if line.startswith("VmHWM:")) / 1024
    except (OSError, StopIteration):
        import resource
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
"""

GAPRANK = PEAK + """
import json, sys, time
from gaprank.cli.main import main
import contextlib, io
start = time.perf_counter()
with contextlib.redirect_stdout(io.StringIO()):
    status = main(["eval", "--qrels", sys.argv[1], "--run", sys.argv[2]] + [a for m in {measures!r} for a in ("-m", m)])
seconds = time.perf_counter() - start
assert status == 0
print(json.dumps({{"seconds": seconds, "peak_mb": _peak_mb()}}))
"""

PYTREC = PEAK + """
import json, sys, time
import pytrec_eval
start = time.perf_counter()
with open(sys.argv[1]) as fh:
    qrels = pytrec_eval.parse_qrel(fh)
with open(sys.argv[2]) as fh:
    run = pytrec_eval.parse_run(fh)
results = pytrec_eval.RelevanceEvaluator(qrels, set({measures!r})).evaluate(run)
means = {{m: sum(q[m] for q in results.values()) / len(results) for m in {measures!r}}}
seconds = time.perf_counter() - start
print(json.dumps({{"seconds": seconds, "peak_mb": _peak_mb()}}))
"""


def write_case(folder: Path, sizes: list[int], seed: int = 0) -> tuple[Path, Path]:
    """A qrels file (every run document judged, grades 0..2) and a run file for queries of ``sizes``."""
    rng = np.random.default_rng(seed)
    qrels, run = folder / "qrels.txt", folder / "run.txt"
    with qrels.open("w") as fq, run.open("w") as fr:
        for q, n in enumerate(sizes, 1):
            grades = rng.choice(3, size=n, p=[0.7, 0.2, 0.1])
            scores = rng.normal(size=n) + grades
            fq.write("".join(f"{q} 0 d{d} {grades[d]}\n" for d in range(n)))
            fr.write("".join(f"{q} Q0 d{d} {d + 1} {scores[d]:.6f} bench\n" for d in range(n)))
    return qrels, run


def measure(script: str, qrels: Path, run: Path) -> dict[str, float]:
    done = subprocess.run([sys.executable, "-c", script, str(qrels), str(run)], capture_output=True, text=True,
                          check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


CASES = {"skewed": [10] * 2000 + [20_000], "uniform": [100] * 20_000}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", default="skewed,uniform")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print(f"# {platform.processor() or platform.machine()}, python {platform.python_version()}; best of "
          f"{args.repeats} runs each")
    for name in args.cases.split(","):
        with tempfile.TemporaryDirectory() as tmp:
            qrels, run = write_case(Path(tmp), CASES[name])
            ours = [measure(GAPRANK.format(measures=MEASURES["gaprank"]), qrels, run) for _ in range(args.repeats)]
            theirs = [measure(PYTREC.format(measures=MEASURES["pytrec_eval"]), qrels, run) for _ in range(args.repeats)]
        a = min(r["seconds"] for r in ours), max(r["peak_mb"] for r in ours)
        b = min(r["seconds"] for r in theirs), max(r["peak_mb"] for r in theirs)
        print(f"{name}: {sum(CASES[name]):,} run lines, {len(CASES[name]):,} queries | gaprank {a[0]:.2f} s, "
              f"peak {a[1]:.0f} MB | pytrec_eval {b[0]:.2f} s, peak {b[1]:.0f} MB | time {a[0] / b[0]:.2f}x, "
              f"memory {a[1] / b[1]:.2f}x")


if __name__ == "__main__":
    main()
