"""Multi-process training (torchrun, DistributedDataParallel over gloo): the same run as one process,
each rank on its own share, a lost rank a clear error that keeps finished folds."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch

from gaprank import GaprankInputError
from gaprank.data import load_fold
from training._distributed import Ranks, balanced_shares, join
from training.config import available_cores
from training.cv import QueryBatches

REPO = Path(__file__).resolve().parents[1]
CONFIG = """\
name: ddp_check
data: {{dataset: OHSUMED, folds: [1, 2]}}
loss: {loss}
model: {{kind: mlp, hidden: [16]}}
training: {{epochs: {epochs}, batch_size: 8, learning_rates: {rates}, seed: 3, dtype: float64, num_threads: 1,
           patience: null}}
evaluation: {{selection: GAP, measures: [NDCG@10, MAP, P@10, GAP], g: [0.5, 0.5], conventions: letor3}}
output_dir: {out}
"""


def _env() -> dict[str, str]:
    path = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)
    return {**os.environ, "TQDM_DISABLE": "1", "PYTHONPATH": path, "OMP_NUM_THREADS": "1"}


LAMBDARANK = "{kind: lambdarank, measure: gap, g: [0.5, 0.5]}"
# SoftGAP's gradient is continuous in the scores; LambdaRank's jumps where two scores tie (which of two equal
# scores ranks first decides the pair's |dGAP|), and OHSUMED holds duplicate documents whose equal scores
# float rounding splits either way
SMOOTH = "{kind: soft, measure: gap, g: [0.5, 0.5], sigma: 1.0}"


def _config(tmp_path: Path, epochs: int, rates: str = "[0.01, 0.001]", loss: str = LAMBDARANK) -> Path:
    path = tmp_path / "config.yaml"
    path.write_text(CONFIG.format(epochs=epochs, rates=rates, out=tmp_path / "unused", loss=loss))
    return path


def test_shares_are_balanced_by_documents():
    rng = np.random.default_rng(0)
    for _ in range(50):
        sizes = rng.integers(1, 300, size=rng.integers(1, 40))
        world = int(rng.integers(1, 6))
        shares = balanced_shares(sizes, world)
        together = np.sort(np.concatenate(shares))
        assert together.tolist() == list(range(sizes.size))  # every query once
        assert all(np.all(np.diff(s) > 0) for s in shares)  # batch order kept
        loads = [int(sizes[s].sum()) for s in shares]
        if sizes.size >= world:
            # largest-first greedy: no rank carries more than the even share plus one query
            assert max(loads) <= sizes.sum() / world + sizes.max()
            assert min(loads) > 0
    assert [s.tolist() for s in balanced_shares(np.array([5, 100, 7, 90]), 2)] == [[1], [0, 2, 3]]
    assert [s.size for s in balanced_shares(np.array([3]), 3)] == [1, 0, 0]


def test_batches_are_built_per_bucket_and_equal_the_padded_split():
    split = load_fold("OHSUMED", 1).train
    batches = QueryBatches(split, 8, torch.float64)
    assert batches.features.shape == (split.features.shape[0], split.num_features)  # held flat, once
    order = np.argsort(split.group_sizes, kind="stable")
    padded = split.to_padded(dtype=torch.float64)
    for index, batch in enumerate(batches):
        queries = order[8 * index: 8 * index + 8]
        width = int(split.group_sizes[queries].max())
        assert batch.features.shape == (queries.size, width, split.num_features)
        torch.testing.assert_close(batch.features, padded.features[queries, :width], rtol=0, atol=0)
        assert torch.equal(batch.labels, padded.labels[queries, :width])
        assert torch.equal(batch.mask, padded.mask[queries, :width])
    two = [QueryBatches(split, 8, torch.float64, ranks=Ranks(2, rank)) for rank in (0, 1)]
    for index in range(len(batches)):
        (first, total), (second, _) = two[0].share(index), two[1].share(index)
        assert first.mask.shape[0] + second.mask.shape[0] == total == len(batches.plan[index])
    totals = two[0].rank_totals()
    assert sum(t["documents"] for t in totals) == split.features.shape[0]
    assert sum(t["queries"] for t in totals) == split.num_queries


def test_more_ranks_than_queries_and_oversubscribed_cores_are_refused(monkeypatch):
    split = load_fold("OHSUMED", 1).train
    with pytest.raises(GaprankInputError, match="64 processes but only 63 training queries"):
        QueryBatches(split, 8, torch.float32, ranks=Ranks(64, 0))
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "2")
    with pytest.raises(GaprankInputError, match="training.num_threads 64 >"):
        join("cpu", 64)


# two ranks of one thread each: training refuses to start them on fewer cores (they would wait on each other)
needs_two_cores = pytest.mark.skipif(available_cores() < 2, reason="two training ranks need two cores")


def _record(out: Path, fold: int = 1) -> dict:
    return json.loads((out / "folds" / f"Fold{fold}.json").read_text())


@needs_two_cores
def test_two_processes_report_like_one(tmp_path):
    config = _config(tmp_path, epochs=5)
    one, two = tmp_path / "one", tmp_path / "two"
    command = ["-m", "training.cv", "--config", str(config), "--folds", "1"]
    subprocess.run([sys.executable, *command, "--out", str(one)], cwd=REPO, env=_env(), check=True, capture_output=True)
    done = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
                           *command, "--out", str(two)], cwd=REPO, env=_env(), capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.count("| Fold1 |") == 1  # rank 0 alone reports
    alone, together = _record(one), _record(two)
    assert alone["vali"].keys() == together["vali"].keys()
    assert alone["world_size"] == 1 and together["world_size"] == 2
    shares = together["rank_shares"]
    assert [s["rank"] for s in shares] == [0, 1]
    assert sum(s["queries"] for s in shares) == alone["rank_shares"][0]["queries"] == 63
    assert all(0 < s["documents"] < alone["rank_shares"][0]["documents"] for s in shares)


NEAR_TIE = 1e-6  # scores this close may be ordered either way by float rounding


def _flipped_pairs(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Pairs (i, j) of one query that two score vectors order differently, and their score gaps in ``a``."""
    order_a, order_b = np.sign(a[:, None] - a[None, :]), np.sign(b[:, None] - b[None, :])
    flipped = np.argwhere(np.triu(order_a != order_b, 1))
    return flipped, np.abs(a[flipped[:, 0]] - a[flipped[:, 1]]) if flipped.size else np.zeros(0)


@needs_two_cores
def test_two_processes_train_like_one(tmp_path):
    """What DDP promises: each rank's share of a batch is summed into one gradient, so training with a loss
    whose gradient is continuous in the scores equals one process's up to the order of float64 sums (the
    model's matrix products round differently for other batch shapes). Losses, parameters and scores agree
    within a float tolerance; a rank measure agrees exactly on every query whose documents keep their order,
    and two documents change order only when their scores are within NEAR_TIE (on another CPU, other sums
    may flip other near-ties). A loss whose gradient jumps at ties (LambdaRank) makes those rounding
    differences into different steps wherever documents tie, one process or two alike: same statistics,
    not the same numbers."""
    config = _config(tmp_path, epochs=5, loss=SMOOTH)
    helper = str(REPO / "tests" / "ddp_fit.py")
    subprocess.run([sys.executable, helper, str(config), str(tmp_path / "one.npz")], cwd=REPO, env=_env(), check=True,
                   capture_output=True)
    done = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
                           helper, str(config), str(tmp_path / "two.npz")], cwd=REPO, env=_env(), capture_output=True,
                          text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    alone, together = np.load(tmp_path / "one.npz"), np.load(tmp_path / "two.npz")
    sizes, labels = alone["group_sizes"], alone["labels"]
    starts = np.concatenate([[0], np.cumsum(sizes)])
    for number in range(2):  # the two learning rates
        key = f"{number}_"
        np.testing.assert_allclose(together[key + "train_loss"], alone[key + "train_loss"], rtol=1e-9)
        if together[key + "epoch"] != alone[key + "epoch"]:  # vali's own near-ties chose another epoch
            np.testing.assert_allclose(together[key + "vali"], alone[key + "vali"], atol=0.05)
            continue
        np.testing.assert_allclose(together[key + "parameters"], alone[key + "parameters"], rtol=1e-7, atol=1e-9)
        a, b = alone[key + "scores"], together[key + "scores"]
        np.testing.assert_allclose(b, a, rtol=1e-7, atol=1e-9)
        import gaprank

        for q in range(sizes.size):
            rows = slice(starts[q], starts[q + 1])
            flipped, gaps = _flipped_pairs(a[rows], b[rows])
            assert np.all(gaps <= NEAR_TIE), (q, gaps.max())
            if flipped.size == 0:
                y = labels[rows]
                assert gaprank.gap(b[rows], y, g=[0.5, 0.5]) == gaprank.gap(a[rows], y, g=[0.5, 0.5])
                assert gaprank.ndcg(b[rows], y, k=10) == gaprank.ndcg(a[rows], y, k=10)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@needs_two_cores
def test_a_lost_rank_fails_the_run_clearly_and_keeps_finished_folds(tmp_path):
    config = _config(tmp_path, epochs=150, rates="[0.01]")  # a fold takes seconds: fold 2 is cut in its middle
    out = tmp_path / "run"
    port = _free_port()
    processes = []
    for rank in (0, 1):
        env = {**_env(), "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port), "WORLD_SIZE": "2", "RANK": str(rank),
               "LOCAL_RANK": str(rank), "LOCAL_WORLD_SIZE": "2"}
        processes.append(subprocess.Popen([sys.executable, "-m", "training.cv", "--config", str(config), "--out", str(out)],
                                          cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    try:
        deadline = time.monotonic() + 600
        while not (out / "folds" / "Fold1.json").exists():
            assert time.monotonic() < deadline and processes[0].poll() is None, processes[0].communicate()
            time.sleep(0.2)
        time.sleep(1.0)  # into fold 2
        processes[1].kill()
        _, stderr = processes[0].communicate(timeout=300)
    finally:
        for process in processes:
            process.kill()
    assert processes[0].returncode == 1
    last = stderr.strip().splitlines()[-1]
    assert last.startswith("error: ddp_check Fold2 (rank 0): a process of the 2-process run stopped"), stderr[-2000:]
    assert "folds finished before it are kept" in last
    assert _record(out, 1)["world_size"] == 2
    assert not (out / "folds" / "Fold2.json").exists()
