"""One switch between the engine's two backends: ``backend=`` on the LambdaRank and RankNet losses and on the
LightGBM and XGBoost objectives, one rule for "auto", and "compiled" refused in one line where it cannot serve."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import gaprank
from gaprank import GaprankInputError
from gaprank.boosting import LambdaMARTObjective
from gaprank.lightgbm import lambdarank_objective


def _batch(seed=0, b=5, n=17):
    rng = np.random.default_rng(seed)
    scores = torch.tensor(rng.normal(size=(b, n)))
    labels = torch.tensor(rng.integers(0, 4, size=(b, n)))
    mask = torch.tensor(rng.random((b, n)) < 0.85)
    return scores, labels, mask


@pytest.mark.parametrize("metric", ["gap", "eGAP(g=[0.2,0.3,0.5])@7", "AP(rel=2)", "nDCG@5", "RBP(p=0.7)"])
def test_the_two_backends_give_the_same_loss_and_gradient(metric):
    scores, labels, mask = _batch()
    results = {}
    for backend in ("compiled", "torch", "auto"):
        s = scores.clone().requires_grad_(True)
        value = gaprank.LambdaRankLoss(metric, sigma=0.9, max_grade=3, backend=backend, reduction="none")(s, labels, mask)
        value.sum().backward()
        results[backend] = (value.detach(), s.grad)
    torch.testing.assert_close(results["compiled"][0], results["torch"][0], rtol=0, atol=1e-12)
    torch.testing.assert_close(results["compiled"][1], results["torch"][1], rtol=0, atol=1e-12)
    assert torch.equal(results["auto"][1], results["compiled"][1])  # on the CPU "auto" is the compiled kernel
    assert results["torch"][1].abs().max() > 1e-3


def test_the_objectives_take_the_same_switch():
    scores, labels, mask = _batch(1)
    flat_scores, flat_labels = scores[mask].numpy(), labels[mask].numpy().astype(float)
    sizes = mask.sum(1).numpy()
    compiled = LambdaMARTObjective("gap", precision="float64", backend="compiled").gradients(flat_scores, flat_labels, sizes)
    torch_engine = LambdaMARTObjective("gap", precision="float64", backend="torch").gradients(flat_scores, flat_labels, sizes)
    for a, b in zip(compiled, torch_engine, strict=True):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-12)
    assert lambdarank_objective("gap", backend="torch").settings.backend == "torch"


@pytest.mark.parametrize("call", [
    lambda: gaprank.LambdaRankLoss("ERR", backend="compiled")(torch.zeros(2, 3), torch.ones(2, 3, dtype=torch.long)),
    lambda: gaprank.lambdarank_loss(torch.zeros(3), torch.tensor([1, 0, 2]), measure="Q", backend="compiled"),
    lambda: gaprank.RankNetLoss(backend="compiled")(torch.zeros(3), torch.tensor([1, 0, 2])),
    lambda: lambdarank_objective("RR", backend="compiled"),
    lambda: LambdaMARTObjective("Success@3", backend="compiled"),
])
def test_compiled_where_it_cannot_serve_is_refused_in_one_line(call):
    with pytest.raises(GaprankInputError, match="backend='compiled' cannot serve this call") as caught:
        call()
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize("call", [
    lambda: gaprank.LambdaRankLoss(backend="numba"),
    lambda: gaprank.RankNetLoss(backend="gpu"),
    lambda: lambdarank_objective("gap", backend="fast"),
    lambda: gaprank.lambdarank_loss(torch.zeros(3), torch.tensor([1, 0, 2]), backend=None),
])
def test_an_unknown_backend_is_refused(call):
    with pytest.raises(GaprankInputError, match="backend must be one of 'auto', 'compiled', 'torch'"):
        call()


def test_ranknet_and_the_list_measures_run_on_torch_under_auto():
    scores, labels, mask = _batch(2)
    for loss in (gaprank.RankNetLoss(), gaprank.LambdaRankLoss("ERR", max_grade=3)):
        s = scores.clone().requires_grad_(True)
        loss(s, labels, mask).backward()
        assert torch.isfinite(s.grad).all() and s.grad.abs().max() > 0
