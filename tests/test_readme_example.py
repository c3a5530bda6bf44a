"""The README's training examples (PyTorch, LightGBM) run as written and learn."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import torch

import gaprank

README = Path(__file__).resolve().parents[1] / "README.md"


def _run_readme_example(heading: str) -> dict:
    """Execute the first python block under ``heading``; returns its namespace."""
    section = README.read_text(encoding="utf-8").split(heading, 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    namespace: dict = {}
    exec(compile(code, "README.md", "exec"), namespace)  # noqa: S102 - our own documentation
    return namespace


def test_readme_training_example_runs_and_beats_the_untrained_model(capsys, ohsumed_fold1):
    fold = ohsumed_fold1
    torch.manual_seed(0)
    _run_readme_example("## Train your PyTorch ranker for GAP")
    printed = float(capsys.readouterr().out.strip().removeprefix("tensor(").removesuffix(")"))
    test = fold.test.to_padded()
    torch.manual_seed(0)
    untrained = torch.nn.Sequential(torch.nn.Linear(45, 32), torch.nn.ReLU(), torch.nn.Linear(32, 1))
    with torch.no_grad():
        before = gaprank.gap(untrained(test.features).squeeze(-1), test.labels, g=[0.5, 0.5], mask=test.mask).item()
    assert printed > before + 0.05, (before, printed)


def test_readme_lambdamart_example_runs_and_learns(capsys, ohsumed_fold1):
    fold = ohsumed_fold1
    namespace = _run_readme_example("## LambdaMART for GAP with LightGBM")
    printed = capsys.readouterr().out
    assert "'GAP'" in printed and "'nDCG@10'" in printed
    test = fold.test
    from gaprank.lightgbm import ranking_feval

    gap = ranking_feval(["GAP"], g=[0.5, 0.5])
    rng = np.random.default_rng(0)
    random = np.mean([gap.evaluate(rng.normal(size=len(test.labels)), test.labels, test.group_sizes)["GAP"]
                      for _ in range(20)])
    file_order = gap.evaluate(np.zeros(len(test.labels)), test.labels, test.group_sizes)["GAP"]  # ties: file order
    trained = gap.evaluate(namespace["scores"], test.labels, test.group_sizes)["GAP"]
    assert namespace["booster"].best_iteration >= 1
    assert trained > random + 0.1 and trained > file_order, (random, file_order, trained)
