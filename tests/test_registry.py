"""The measure registry: one entry per measure, read by everything; a new kernel measure is one entry.

The toy measure is binary AP with grades >= 2 relevant, registered only through its kernel; its oracle is
``average_precision(threshold=2)``, written independently of the kernel engine's registration.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch

import gaprank
import gaprank.metrics as M
from gaprank import GaprankInputError
from gaprank.lightgbm import lambdarank_objective
from gaprank.losses import lambdarank_loss, soft_metric, swap_deltas
from gaprank.metrics import MeasureInfo, ParamInfo, kernel_metric, parse_measure, register, unregister
from gaprank.metrics._kernels import ap_kernel


def _ap2_kernel(ranked, g):
    return ap_kernel(ranked, 2)


def _oracle(scores, labels, **kw):
    return M.average_precision(scores, labels, threshold=2, **kw)


@pytest.fixture()
def toy():
    info = register(MeasureInfo("AP2", kernel_metric(_ap2_kernel, "ap2"), kernel=_ap2_kernel, aliases=("MAP2",),
                                swap_deltas=True, soft=True, exact=True, reference="binary AP at grade 2 (a test)"))
    yield info
    unregister("AP2")


def _data(seed=0, b=3, n=9):
    rng = np.random.default_rng(seed)
    scores = torch.tensor(rng.normal(size=(b, n)))
    labels = torch.tensor(rng.integers(0, 4, size=(b, n)))
    labels[:, 0] = 3  # every query has a document of grade >= 2
    return scores, labels


def test_a_new_kernel_measure_is_a_metric_by_name(toy):
    scores, labels = _data()
    for name, k in (("AP2", None), ("map2@5", 5)):
        measure = parse_measure(name)
        assert measure.function is toy.function
        got = measure(scores, labels, reduction="none")
        torch.testing.assert_close(got, _oracle(scores, labels, k=k, reduction="none"), rtol=0, atol=1e-12)


def test_a_new_kernel_measure_has_swap_deltas(toy):
    scores, labels = _data(1)
    base = _oracle(scores, labels, reduction="none")
    deltas = swap_deltas(scores, labels, metric="ap2")
    for i, j in itertools.combinations(range(scores.shape[1]), 2):
        swapped = scores.clone()
        swapped[:, [i, j]] = swapped[:, [j, i]]
        torch.testing.assert_close(deltas[:, i, j], _oracle(swapped, labels, reduction="none") - base,
                                   rtol=0, atol=1e-12)


def test_a_new_kernel_measure_has_soft_and_exact_modes(toy):
    scores, labels = _data(2)
    metric = _oracle(scores, labels, reduction="none")
    for mode in ("paper", "exact"):
        smooth = soft_metric(scores, labels, metric="ap2", sigma=1e-4, mode=mode)
        torch.testing.assert_close(smooth, metric, rtol=0, atol=1e-6)


def test_a_new_kernel_measure_is_a_lambdarank_and_lambdamart_objective(toy):
    scores, labels = _data(3)
    leaf = scores.clone().requires_grad_(True)
    lambdarank_loss(leaf, labels, metric="ap2", reduction="sum").backward()
    flat_scores, flat_labels = scores.reshape(-1).numpy(), labels.reshape(-1).numpy().astype(float)
    grad, _ = lambdarank_objective("ap2", precision="float64").gradients(flat_scores, flat_labels, [9, 9, 9])
    np.testing.assert_allclose(grad, leaf.grad.reshape(-1).numpy(), rtol=0, atol=1e-12)


def test_a_new_kernel_measure_is_a_training_objective(toy):
    from training.cv import LossConfig
    from training.lambdamart import ObjectiveConfig

    for kind in ("soft", "exact", "lambdarank"):
        LossConfig(kind=kind, metric="ap2").validate()
    ObjectiveConfig(metric="ap2").validate()
    with pytest.raises(GaprankInputError, match="loss.g is only for gap, xgap, egap"):
        LossConfig(kind="lambdarank", metric="ap2", g=[0.5, 0.5]).validate()


def test_the_registry_is_the_one_list_of_measures():
    assert M.objective_names() == ("ap", "gap", "xgap", "egap", "ndcg")
    assert M.objective_names(mode="exact") == ("ap", "gap", "xgap", "egap")
    assert [i.name for i in M.measures() if i.uses_g] == ["GAP", "xGAP", "eGAP"]
    assert [i.name for i in M.user_model_measures()] == ["GAP", "xGAP", "eGAP"]
    assert str(M.g_not_taken("ndcg")) == "g applies to gap, xgap, egap, not 'ndcg'"
    for refuse in (lambda: gaprank.lambdarank_objective("ndcg", g=[0.5, 0.5]),
                   lambda: gaprank.swap_deltas([0.2, 0.1], [1, 0], metric="ap", g=[1.0])):
        with pytest.raises(GaprankInputError, match="^g applies to gap, xgap, egap, not"):
            refuse()
    assert M.letor_measure_names(1)[-3:] == ["GAP", "xGAP", "eGAP"]
    for info in M.measures():
        required = ",".join(f"{p.name}={p.example}" for p in info.params if p.required)
        name = info.name + (f"({required})" if required else "") + ("@10" if info.needs_cutoff else "")
        assert parse_measure(name).function is info.function and info.reference
        for param in info.params:
            assert isinstance(param, ParamInfo) and param.desc
    with pytest.raises(GaprankInputError, match="unknown measure 'AP2'"):
        parse_measure("AP2")  # the toy is registered only inside its tests
    with pytest.raises(GaprankInputError, match="already registered"):
        register(MeasureInfo("map", M.average_precision))
    with pytest.raises(GaprankInputError, match="metric must be one of 'ap', 'gap', 'xgap', 'egap', 'ndcg'; got 'err'"):
        gaprank.lambdarank_objective("err")
    with pytest.raises(GaprankInputError, match="an exact mode needs a kernel"):
        MeasureInfo("x", M.ndcg, exact=True)


@pytest.mark.parametrize("text, message", [
    ("eRAP", r"eRAP needs p \(probability of relevance of each grade 0..c\), e.g. eRAP\(p=\[0,0.5,1\]\)"),
    ("eRRBP(q=0.5)", r"eRRBP needs p"),
    ("eRAP(p=0.5)", r"p is a list .* e.g. eRAP\(p=\[0,0.5,1\]\); got 0.5"),
    ("GAP(g=0.5)", r"g is a list"),
    ("nDCG(gain=exp2,gain=linear)@10", "parameter gain given twice"),
])
def test_measure_strings_are_checked_when_parsed(text, message):
    from gaprank.metrics import parse_measure

    with pytest.raises(GaprankInputError, match=message):
        parse_measure(text)


def test_required_measure_parameters_fail_before_any_evaluation(capsys):
    import numpy as np

    from gaprank.cli.main import main
    from gaprank.lightgbm import ranking_feval
    from gaprank.metrics import erap

    assert main(["eval", "--qrels", "q", "--run", "r", "-m", "eRAP"]) == 2  # before the files are read
    assert "eRAP needs p" in capsys.readouterr().err
    with pytest.raises(GaprankInputError, match="eRAP needs p"):
        ranking_feval(["eRAP"])
    with pytest.raises(GaprankInputError, match=r"at least p_0 and p_1 .*got \[0.5\]"):
        erap(np.array([1.0, 2.0]), np.array([0, 1]), p=[0.5])
