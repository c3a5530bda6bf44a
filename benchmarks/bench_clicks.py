"""Click simulation speed: sessions simulated on MQ2008 against issue 57's budget of 10 s for a million; and the
memory of counting a log from files, which follows the chunk and the sessions, not the rows.

Run by hand:  python benchmarks/bench_clicks.py [--sessions 1000000] [--repeat 3] [--count-rows 10000000]

The logging ranker is feature 1 of MQ2008 Fold 1's training split (any scores cost the same); sessions draw its
queries uniformly and show the top 10, under the position-based model at eta = 1 and under the cascade model.
Prints the best of ``--repeat`` wall times, the rows written and the ratio to the budget.

``--count-rows N`` writes a simulated log of about N rows as CSV files of about a million rows each (in a temporary
folder), then counts the first tenth of the files and all of them, each in fresh processes: the wall time of one,
and in another (traced, so slower) the peak of the memory the count itself allocates (Python's tracemalloc, which
sees NumPy's arrays too), beside the process's peak resident memory. The log's rows held whole as arrays would take
33 bytes each, as parsed text several times that.

``--joint``: LambdaMART-GAP per round with propensities estimated with the ranker (:class:`JointPropensities`: each
round's update of the estimate and the weights) against the same objective on fixed weights, on a log of
``--sessions`` sessions (a logger on feature 1, 5% of the sessions shuffled), LightGBM on two threads, k = 30 and
norm as in the comparison: the best of ``--repeat`` runs of 50 rounds each, and the time to count the sessions'
pairs once.
"""

from __future__ import annotations

import argparse
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from gaprank.clicks import ClickModel, simulate_clicks, write_click_log
from gaprank.data import load_fold

BUDGET_SECONDS = 10.0  # issue 57: 10^6 sessions on MQ2008 in under 10 s on two cores


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--count-rows", type=int, default=0, help="also count a log of about this many rows")
    parser.add_argument("--joint", action="store_true", help="time LambdaMART-GAP with joint propensities instead")
    args = parser.parse_args()
    train = load_fold("MQ2008", 1).train
    if args.joint:
        joint_rounds(train, args.sessions, args.repeat)
        return
    if args.count_rows:
        count_memory(train, args.count_rows)
        return
    print(f"# {platform.processor() or platform.machine()}, MQ2008 Fold1 train: {train.num_queries} queries, "
          f"{args.sessions} sessions, top 10 shown")
    print("| model | seconds | rows | against the budget |")
    print("|---|---:|---:|---:|")
    for name, model in (("position-based, eta 1", ClickModel(eta=1.0)), ("cascade", ClickModel(examination="cascade"))):
        times = []
        for _ in range(args.repeat):
            start = time.perf_counter()
            log = simulate_clicks(train, train.features[:, 0], args.sessions, model, seed=1)
            times.append(time.perf_counter() - start)
        scaled = min(times) * 1_000_000 / args.sessions
        print(f"| {name} | {min(times):.2f} | {len(log)} | {scaled / BUDGET_SECONDS:.2f}x |")


ROWS_PER_FILE = 1_000_000
COUNT = """
import resource, sys, time, tracemalloc
from gaprank.clicks import count_clicks
from gaprank.data import load_fold
train = load_fold("MQ2008", 1).train
traced = sys.argv[1] == "traced"
if traced:
    tracemalloc.start()
start = time.perf_counter()
counts = count_clicks(sys.argv[2:], train)
seconds = time.perf_counter() - start
allocated = tracemalloc.get_traced_memory()[1] / 2**20 if traced else 0.0
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(counts.shown.sum(), counts.sessions, seconds, peak, allocated)
"""


def count_memory(train, rows: int) -> None:
    """The table of ``--count-rows``: each count in a fresh process, so that its peak memory is its own."""
    log = simulate_clicks(train, train.features[:, 0], int(rows / 8.87) + 1, ClickModel(eta=1.0), seed=1)
    print(f"# {platform.processor() or platform.machine()}, MQ2008 Fold1 train, a log of {len(log)} rows in CSV files "
          f"of about {ROWS_PER_FILE} rows")
    print("| rows counted | files | sessions | seconds | allocated by the count, at most (MB) | process peak (MB) |")
    print("|---:|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as folder:
        # files of about ROWS_PER_FILE rows, cut between sessions
        cuts = np.unique(np.append(log.session[np.arange(0, len(log), ROWS_PER_FILE)], log.num_sessions))
        files = []
        for number, (first, last) in enumerate(zip(cuts[:-1], cuts[1:], strict=True)):
            files.append(str(Path(folder) / f"log{number:03d}.csv"))
            write_click_log(files[-1], log.sessions_between(first, last), train)
        del log
        for some in (files[:max(1, len(files) // 10)], files):
            runs = [subprocess.run([sys.executable, "-c", COUNT, mode, *some], check=True, capture_output=True,
                                   text=True).stdout.split() for mode in ("timed", "traced")]
            counted, sessions, seconds = int(runs[0][0]), int(runs[0][1]), float(runs[0][2])
            allocated, peak = float(runs[1][4]), max(float(runs[0][3]), float(runs[1][3]))
            print(f"| {counted} | {len(some)} | {sessions} | {seconds:.1f} | {allocated:.0f} | {peak:.0f} |")


def joint_rounds(train, sessions: int, repeat: int, rounds: int = 50) -> None:
    import lightgbm as lgb

    from gaprank.boosting import LambdaMARTSettings
    from gaprank.clicks import JointPropensities
    from gaprank.lightgbm import LambdaRankObjective

    model = ClickModel(eta=1.0)
    shuffled = sessions // 20
    logs = [simulate_clicks(train, train.features[:, 0], sessions - shuffled, model, seed=1),
            simulate_clicks(train, train.features[:, 0], shuffled, model, randomise=10, seed=2)]
    start = time.perf_counter()
    joint = JointPropensities(train, logs, bias_norm=0.0)
    pairs_seconds = time.perf_counter() - start
    data = joint.data.split
    settings = LambdaMARTSettings("gap", row_weights="measure", truncation_level=30, norm=True)
    params = {"verbosity": -1, "num_threads": 2, "learning_rate": 0.05, "deterministic": True,
              "force_row_wise": True}
    timed: dict[str, list[float]] = {"fixed weights": [], "joint": []}
    for _ in range(repeat):
        for name in timed:
            objective = LambdaRankObjective(settings, level_weights=joint.weights())
            if name == "joint":
                objective = joint.objective(LambdaRankObjective(settings))
            dataset = lgb.Dataset(data.features, data.labels, group=data.group_sizes, free_raw_data=False)
            start = time.perf_counter()
            lgb.train({**params, "objective": objective}, dataset, num_boost_round=rounds)
            timed[name].append((time.perf_counter() - start) / rounds)
    fixed, joint_round = min(timed["fixed weights"]), min(timed["joint"])
    print(f"# {platform.processor() or platform.machine()}, MQ2008 Fold1 train, {sessions} sessions "
          f"({len(joint.data.rows)} shown documents), counting the sessions' pairs "
          f"{pairs_seconds:.2f} s")
    print("| objective | ms per round | x fixed weights |")
    print("|---|---:|---:|")
    print(f"| fixed weights | {fixed * 1e3:.2f} | 1.00 |")
    print(f"| joint propensities | {joint_round * 1e3:.2f} | {joint_round / fixed:.2f} |")


if __name__ == "__main__":
    main()
