"""The first compile of a process is said, once; ``gaprank warmup`` compiles every kernel ahead, so that a later
process loads them all from numba's cache and compiles (and says) nothing. Each check runs in a fresh interpreter
with an empty cache of its own."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from gaprank._compiled_setup import COMPILE_NOTICE

PACKAGE_ROOT = Path(__file__).resolve().parents[1] / "src"
USE = ("import torch, gaprank.losses as L\n"
       "s = torch.randn(3, 12, requires_grad=True)\n"
       "L.LambdaRankLoss('gap', backend='compiled')(s, torch.randint(0, 3, (3, 12))).backward()\n"
       "L.SoftNDCGLoss()(s, torch.randint(0, 3, (3, 12))).backward()\n")


def _run(args: list[str], cache: Path) -> subprocess.CompletedProcess:
    environment = {**os.environ, "NUMBA_CACHE_DIR": str(cache), "PYTHONPATH": str(PACKAGE_ROOT)}
    return subprocess.run(args, capture_output=True, text=True, timeout=600, env=environment, check=True)


def test_a_cold_process_says_once_that_it_compiles_and_a_warm_one_says_nothing(tmp_path):
    cold = _run([sys.executable, "-c", USE], tmp_path / "cache")
    assert cold.stderr.count(COMPILE_NOTICE) == 1, cold.stderr
    warm = _run([sys.executable, "-c", USE], tmp_path / "cache")
    assert COMPILE_NOTICE not in warm.stderr, warm.stderr


def test_warmup_compiles_what_a_later_process_uses(tmp_path):
    done = _run([sys.executable, "-m", "gaprank", "warmup"], tmp_path / "cache")
    assert done.stdout.startswith("compiled gaprank's kernels in ") and str(tmp_path / "cache") in done.stdout
    assert COMPILE_NOTICE not in done.stderr  # the command itself says what it does
    after = _run([sys.executable, "-c", USE + "from gaprank.lightgbm import lambdarank_objective\n"
                  "import numpy as np, lightgbm as lgb\n"
                  "data = lgb.Dataset(np.random.rand(40, 2), np.random.randint(0, 3, 40), group=[20, 20]).construct()\n"
                  "lambdarank_objective('gap')(np.zeros(40), data)\n"], tmp_path / "cache")
    assert COMPILE_NOTICE not in after.stderr, after.stderr
