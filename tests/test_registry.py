"""The measure registry: every entry against its independent oracle (an entry without one fails), with its
swap deltas, LambdaRank loss, LambdaMART gradients and smooth forms checked by brute force on the oracle
(:func:`gaprank.testing.check_measure`); toy measures of each form become metrics, measure strings,
LambdaRank losses and LambdaMART objectives from one entry; bad entries are refused.

The oracles are tests/oracles.py: plain loops from the papers' definitions, sharing no code with gaprank.
Private units on purpose: the modules the built-in metrics are written in and ``metric_signature``, which a
written-out metric must match.
"""

from __future__ import annotations

import numpy as np
import oracles as O
import pytest
import torch

import gaprank
import gaprank.metrics as M
from gaprank import GaprankInputError
from gaprank.lightgbm import lambdarank_objective
from gaprank.losses import LambdaRankLoss, lambdarank_loss, soft_metric
from gaprank.metrics import (
    GainDiscountForm,
    Kernel,
    KernelForm,
    ListForm,
    MeasureInfo,
    ParamInfo,
    parse_measure,
    register,
    unregister,
)
from gaprank.testing import check_measure

# oracle(grades in ranked order, counts R(0..c), k, **the measure's parameters) -> value or None
ORACLES = {
    "AP": lambda r, c, k, threshold: O.ap(r, c, threshold, k),
    "GAP": lambda r, c, k, g: O.gap(r, c, g, k),
    "xGAP": lambda r, c, k, g: O.xgap(r, c, g, k),
    "eGAP": lambda r, c, k, g: O.egap(r, c, g, k),
    "nDCG": lambda r, c, k, gain, discount, short_list: O.ndcg(r, c, k, gain, discount, short_list),
    "P": lambda r, c, k, threshold, short_list: O.precision(r, k, threshold, short_list),
    "RBP": lambda r, c, k, persistence, threshold: O.rbp(r, persistence, threshold, k),
    "ERR": lambda r, c, k, max_grade: O.err(r, max_grade, k),
    "Q": lambda r, c, k, beta: O.q_measure(r, c, beta),
    "SR": lambda r, c, k: O.sliding_ratio(r, c, k),
    "vG": lambda r, c, k: O.kishida_vg(r, c, k),
    "eRAP": lambda r, c, k, p: O.erap(r, c, p, k),
    "eRRBP": lambda r, c, k, p, persistence: O.errbp(r, p, persistence, k),
    "RR": lambda r, c, k, threshold: O.reciprocal_rank(r, c, threshold, k),
    "R": lambda r, c, k, threshold: O.recall(r, c, k, threshold),
    "Rprec": lambda r, c, k, threshold: O.r_precision(r, c, threshold),
    "Success": lambda r, c, k, threshold: O.success(r, k, threshold),
    "DCG": lambda r, c, k, gain, discount: O.dcg(r, k, gain, discount),
}
STRINGS = {
    "AP": ["AP", "AP(rel=2)", "MAP@5"],
    "GAP": ["GAP", "GAP(g=[0.3,0.7])@5"],
    "xGAP": ["xGAP", "xGAP(g=[0.2,0.3,0.5])"],
    "eGAP": ["eGAP", "eGAP@4"],
    "nDCG": ["nDCG", "nDCG@5", "nDCG(gain=linear,discount=jk)@6", "nDCG(short_list=zero)@10"],
    "P": ["P@5", "P(rel=2)@3", "P(short_list=zero)@10"],
    "RBP": ["RBP", "RBP(p=0.5,rel=2)@6"],
    "ERR": ["ERR", "ERR(max_grade=4)@5"],
    "Q": ["Q", "Q(beta=0.5)"],
    "SR": ["SR", "SR@5"],
    "vG": ["vG", "vG@5"],
    "eRAP": ["eRAP(p=[0,0.5,1])", "eRAP(p=[0.1,0.4,0.7,1])@6"],
    "eRRBP": ["eRRBP(p=[0,0.5,1])", "eRRBP(p=[0,0.3,0.6,1],q=0.5)@5"],
    "RR": ["RR", "MRR(rel=2)", "RR@3", "RR(rel=2)@5"],
    "R": ["R@5", "R(rel=2)@3", "R@20"],
    "Rprec": ["Rprec", "Rprec(rel=2)"],
    "Success": ["Success@1", "Success@5", "Success(rel=2)@3"],
    "DCG": ["DCG", "DCG@5", "DCG(gain=linear,discount=jk)@6"],
}


@pytest.mark.parametrize("info", M.measures(), ids=lambda info: info.name)
def test_every_entry_has_an_oracle_and_agrees_with_it(info):
    assert info.name in ORACLES, f"measure {info.name} has no oracle in tests/test_registry.py"
    assert STRINGS.get(info.name), f"measure {info.name} has no measure strings to check"
    for seed, measure in enumerate(STRINGS[info.name]):
        check_measure(measure, ORACLES[info.name], seed=seed)


@pytest.mark.parametrize("measure", ["AP(rel=2)", "nDCG@10", "RBP(p=0.8)", "P@5", "ERR", "Q", "vG",
                                     "eRAP(p=[0,0.5,1])"])
def test_the_issue_s_measure_strings_are_objectives_everywhere(measure):
    """LambdaRankLoss, lambdarank_loss, the LightGBM and the XGBoost objective by measure string."""
    xgb = pytest.importorskip("xgboost")
    import gaprank.xgboost as gx

    rng = np.random.default_rng(5)
    scores, labels = torch.tensor(rng.normal(size=(3, 12))), torch.tensor(rng.integers(0, 3, size=(3, 12)))
    leaf = scores.clone().requires_grad_(True)
    LambdaRankLoss(measure, reduction="sum")(leaf, labels).backward()
    functional = scores.clone().requires_grad_(True)
    lambdarank_loss(functional, labels, measure=measure, reduction="sum").backward()
    torch.testing.assert_close(leaf.grad, functional.grad, rtol=0, atol=0)
    assert leaf.grad.abs().max() > 1e-3
    flat_scores, flat_labels = scores.reshape(-1).numpy(), labels.reshape(-1).numpy().astype(float)
    grad, hess = lambdarank_objective(measure, precision="float64").gradients(flat_scores, flat_labels, [12] * 3)
    np.testing.assert_allclose(grad, leaf.grad.reshape(-1).numpy(), rtol=0, atol=1e-12)
    dtrain = xgb.DMatrix(np.zeros((36, 1)), label=flat_labels, qid=np.repeat([1, 2, 3], 12))
    xgb_grad, xgb_hess = gx.objective(measure, precision="float64")(flat_scores, dtrain)
    np.testing.assert_allclose(xgb_grad, grad, rtol=0, atol=1e-12)
    np.testing.assert_allclose(xgb_hess, 2 * hess, rtol=0, atol=1e-12)


# Toy measures, one per form. Their oracles are written independently of the entries below.


def _ap2_kernel(ranked):
    """Binary AP with grades >= 2 relevant, as a kernel: K[t, u] = 1[t >= 2] 1[u >= 2] / RB(2)."""
    relevant = (torch.arange(ranked.num_grades + 1) >= 2).to(torch.float64)
    rb = ranked.recall_base[:, 2] if ranked.num_grades >= 2 else ranked.counts.new_zeros(ranked.batch)
    matrix = torch.outer(relevant, relevant)[None] / torch.clamp(rb, min=1)[:, None, None]
    return Kernel.with_diagonal(matrix, rb > 0)


def _linear_value(ranked, k, params):
    """sum_n w r_n / n: a linear-gain DCG with discount 1/n, weight w."""
    terms = params["weight"] * ranked.grades * ranked.valid / ranked.positions()
    return (terms if k is None else terms[:, :k]).sum(-1), None


def _linear_factors(ranked, k, params):
    """(y - x)(1/a - 1/b) w = w [y/a - y/b - x/a + x/b]."""
    inv = 1.0 / ranked.positions().expand(ranked.batch, -1)
    if k is not None:
        inv = inv.masked_fill(ranked.positions() > k, 0.0)
    x = params["weight"] * ranked.grades.to(torch.float64)
    one = torch.ones_like(inv)
    return torch.stack([inv, -one, -x * inv, x]), torch.stack([x, x * inv, one, inv])


def _linear_oracle(r, c, k, weight):
    return weight * sum(grade / n for n, grade in enumerate(r, 1) if k is None or n <= k)


_WEIGHT = ParamInfo("w", "weight", float, 1.0, "a weight")
TOYS = {
    "AP2": (lambda: MeasureInfo("AP2", KernelForm(_ap2_kernel), aliases=("MAP2",), reference="AP at grade 2 (a test)"),
            lambda r, c, k: O.ap(r, c, 2, k)),
    "LDCG": (lambda: MeasureInfo("LDCG", GainDiscountForm(lambda c, params: torch.arange(c + 1) * params["weight"],
                                                          lambda positions, params: 1.0 / positions), (_WEIGHT,)),
             _linear_oracle),
    "LinearList": (lambda: MeasureInfo("LinearList", ListForm(_linear_value, _linear_factors), (_WEIGHT,)),
                   _linear_oracle),
}


@pytest.fixture(params=list(TOYS))
def toy(request):
    build, oracle = TOYS[request.param]
    info = register(build())
    yield info, oracle
    unregister(info.name)


def test_a_toy_of_each_form_is_a_metric_an_objective_and_a_training_setting(toy):
    from training.cv import LossConfig
    from training.lambdamart import ObjectiveConfig

    info, oracle = toy
    params = "(w=0.5)" if info.parameters else ""
    for measure in (info.name + params, info.name.lower() + params + "@5"):
        check_measure(measure, oracle)
    assert parse_measure(info.name).function is info.function
    LossConfig(kind="lambdarank", measure=info.name + params).validate()
    if info.soft:
        LossConfig(kind="soft", measure=info.name + params).validate()
    if info.expected:
        LossConfig(kind="soft", measure=info.name + params, smoothing="expected").validate()
    ObjectiveConfig(measure=info.name + params).validate()
    with pytest.raises(GaprankInputError, match="g applies to gap, xgap, egap"):
        LossConfig(kind="lambdarank", measure=info.name, g=[0.5, 0.5]).validate()
    if not info.soft:
        with pytest.raises(GaprankInputError, match="has no smooth"):
            soft_metric(torch.zeros(3), torch.tensor([0, 1, 2]), measure=info.name, sigma=1.0)


def test_the_registry_is_the_one_list_of_measures():
    # the AP family, the discounted-gain measures, the measures of a whole list
    assert M.objective_names() == ("ap", "gap", "xgap", "egap", "vg", "erap", "ndcg", "p", "rbp", "sr", "errbp", "r",
                                   "dcg", "err", "q", "rr", "rprec", "success")
    assert M.objective_names(objective_kind="soft") == ("ap", "gap", "xgap", "egap", "vg", "erap", "ndcg", "p", "rbp",
                                                        "sr", "errbp", "r", "dcg")
    assert M.objective_names(objective_kind="expected") == ("ap", "gap", "xgap", "egap", "vg", "erap")
    assert [i.name for i in M.user_model_measures()] == ["GAP", "xGAP", "eGAP"]
    assert str(M.g_not_taken("ndcg")) == "g applies to gap, xgap, egap, not 'ndcg'"
    for refuse in (lambda: gaprank.lambdarank_objective("ndcg", g=[0.5, 0.5]),
                   lambda: gaprank.swap_deltas([0.2, 0.1], [1, 0], measure="ap", g=[1.0])):
        with pytest.raises(GaprankInputError, match="^g applies to gap, xgap, egap, not"):
            refuse()
    assert M.letor_measure_names(1)[-3:] == ["GAP", "xGAP", "eGAP"]
    for info in M.measures():
        required = ",".join(f"{p.name}={p.example}" for p in info.params if p.required)
        name = info.name + (f"({required})" if required else "") + ("@10" if info.needs_cutoff else "")
        assert parse_measure(name).function is info.function and info.reference
        assert info.function.__module__.startswith("gaprank.metrics") and "Parameters\n" in info.function.__doc__
    with pytest.raises(GaprankInputError, match="unknown measure 'AP2'"):
        parse_measure("AP2")  # the toy is registered only inside its tests
    with pytest.raises(GaprankInputError, match="measure: unknown measure 'dcg2'"):
        gaprank.lambdarank_objective("dcg2")
    with pytest.raises(GaprankInputError, match=r"nDCG has no exact expectation \(smoothing='expected', the AP family\)"):
        gaprank.soft_metric(torch.zeros(3), torch.tensor([0, 1, 2]), measure="ndcg", sigma=1.0, smoothing="expected")
    with pytest.raises(GaprankInputError, match="take no cutoff"):
        gaprank.soft_metric(torch.zeros(3), torch.tensor([0, 1, 2]), measure="GAP@2", sigma=1.0)


def _kernel(ranked):
    return Kernel.with_diagonal(ranked.counts.new_zeros(ranked.batch, 2, 2), ranked.counts[:, 0] > 0)


@pytest.mark.parametrize("build, message", [
    (lambda: MeasureInfo("map", KernelForm(_kernel)), "measure name 'map' is already registered"),
    (lambda: MeasureInfo("X", KernelForm(_kernel), aliases=("gap",)), "measure name 'gap' is already registered"),
    (lambda: MeasureInfo("X", KernelForm(_kernel), aliases=("x",)), "a name appears twice"),
    (lambda: MeasureInfo("X", None), "form must be a KernelForm, GainDiscountForm or ListForm"),
    (lambda: MeasureInfo("X", M.ndcg), "form must be"),
    (lambda: MeasureInfo("X", KernelForm(None)), r"KernelForm.kernel must be a function"),
    (lambda: MeasureInfo("X", GainDiscountForm(lambda c, p: None, None)), r"GainDiscountForm.discount must be"),
    (lambda: MeasureInfo("X", ListForm(None)), r"ListForm.value_of must be a function"),
    (lambda: MeasureInfo("X", ListForm(_linear_value, swap_factors="yes")), r"ListForm.swap_factors must be"),
    (lambda: MeasureInfo("X", KernelForm(_kernel), (ParamInfo("w", "weight", None, 1.0, "a weight"),)),
     "parameter 'w': dtype must be one of int, float, str, list"),
    (lambda: MeasureInfo("X", KernelForm(_kernel), (ParamInfo("w", "weight", dict, 1.0, "a weight"),)),
     "dtype must be"),
    (lambda: MeasureInfo("X", KernelForm(_kernel), (ParamInfo("w", "weight", float, 1.0, ""),)), "desc is empty"),
    (lambda: MeasureInfo("X", KernelForm(_kernel), (ParamInfo("k", "k", int, 1, "a cutoff"),)),
     "keyword 'k' is one every metric has"),
    (lambda: MeasureInfo("X", KernelForm(_kernel), (_WEIGHT, _WEIGHT)), "a parameter name appears twice"),
    (lambda: MeasureInfo("X", KernelForm(_kernel), ("w",)), "params must be ParamInfo"),
    (lambda: MeasureInfo("my measure", KernelForm(_kernel)), "must be an ASCII letter followed by"),
    (lambda: MeasureInfo("X", KernelForm(_kernel), needs_cutoff=True, takes_cutoff=False), "needs_cutoff"),
])
def test_bad_registry_entries_are_refused_in_one_line(build, message):
    with pytest.raises(GaprankInputError, match=message) as caught:
        register(build())
    assert "\n" not in str(caught.value)
    assert "X" not in {info.name for info in M.measures()}


def test_the_issue_s_toy_is_no_longer_silently_ndcg():
    """A measure registered with a relevance rule of its own trains with its own deltas, never nDCG's."""
    info = register(MeasureInfo("TOYRR", GainDiscountForm(
        lambda c, params: (torch.arange(c + 1) >= 1).to(torch.float64), lambda positions, params: 1.0 / positions)))
    try:
        scores, labels = torch.tensor([[0.3, 0.9, 0.1, 0.5]]), torch.tensor([[2, 0, 1, 0]])
        toy_loss = lambdarank_loss(scores.clone().requires_grad_(True), labels, measure="toyrr")
        ndcg_loss = lambdarank_loss(scores.clone().requires_grad_(True), labels, measure="ndcg")
        assert abs(toy_loss.item() - ndcg_loss.item()) > 1e-3
        check_measure("TOYRR", lambda r, c, k: sum(1 / n for n, grade in enumerate(r, 1) if grade >= 1))
    finally:
        unregister(info.name)


@pytest.mark.parametrize("text, message", [
    ("eRAP", r"eRAP needs p \(probability of relevance of each grade 0..c\), e.g. eRAP\(p=\[0,0.5,1\]\)"),
    ("eRRBP(q=0.5)", r"eRRBP needs p"),
    ("eRAP(p=0.5)", r"p is a list .* e.g. eRAP\(p=\[0,0.5,1\]\); got 0.5"),
    ("GAP(g=0.5)", r"g is a list"),
    ("nDCG(gain=exp2,gain=linear)@10", "parameter gain given twice"),
])
def test_measure_strings_are_checked_when_parsed(text, message):
    with pytest.raises(GaprankInputError, match=message):
        parse_measure(text)


def test_required_measure_parameters_fail_before_any_evaluation(capsys):
    from gaprank.cli.main import main
    from gaprank.lightgbm import ranking_feval
    from gaprank.metrics import erap

    assert main(["eval", "--qrels", "q", "--run", "r", "-m", "eRAP"]) == 2  # before the files are read
    assert "eRAP needs p" in capsys.readouterr().err
    with pytest.raises(GaprankInputError, match="eRAP needs p"):
        ranking_feval(["eRAP"])
    with pytest.raises(GaprankInputError, match=r"at least p_0 and p_1 .*got \[0.5\]"):
        erap(np.array([1.0, 2.0]), np.array([0, 1]), p=[0.5])


@pytest.mark.parametrize("call, message", [
    (lambda: M.objective_measure(5), "measure must be a measure string such as 'gap'"),
    (lambda: M.objective_measure("gap", objective_kind="pairs"),
     "objective_kind must be one of 'swap_deltas', 'soft', 'expected'"),
    (lambda: M.objective_names(objective_kind="pairs"), "objective_kind must be one of"),
    (lambda: M.objective_measure("GAP(g=[0.5,0.5])", objective_kind="expected").with_params(g=[0.5, 0.5]),
     "sets g; do not pass g"),
    (lambda: check_measure("nope", lambda r, c, k: 0.0), "unknown measure 'nope'"),
    (lambda: gaprank.boosting.LambdaMARTSettings("gap", sigma=0), "sigma must be a positive finite number"),
    (lambda: gaprank.boosting.LambdaMARTSettings("gap", truncation_level=0), "truncation_level must be a positive"),
    (lambda: gaprank.boosting.LambdaMARTObjective(gaprank.boosting.LambdaMARTSettings("gap"), sigma=2.0), "not both"),
    (lambda: gaprank.boosting.LambdaMARTObjective("ndcg", block_elements=0), "block_elements must be a positive"),
    (lambda: gaprank.boosting.RankingEval([]), "at least one"),
    (lambda: gaprank.boosting.RankingEval(["GAP"]).evaluate([0.1, 0.2], [1, 0], [3]), "group"),
])
def test_new_public_entry_points_refuse_garbage_in_one_line(call, message):
    with pytest.raises(GaprankInputError, match=message) as caught:
        call()
    assert "\n" not in str(caught.value)


def test_every_built_in_metric_is_a_plain_def_with_its_entry_s_signature():
    """The built-in metric functions are written out (a ``def`` to grep, real signatures for IDEs and type
    checkers) and cannot drift from their registry entries: same parameters, kinds and defaults, each own
    parameter documented, no ``**kwargs``."""
    import inspect

    from gaprank.metrics import _ap_family, _gain_discount, _list_measures
    from gaprank.metrics._registry import metric_signature

    for info in M.measures():
        function = info.function
        # written out beside its entry, in the module of its form
        module = {"KernelForm": _ap_family, "GainDiscountForm": _gain_discount, "ListForm": _list_measures}[
            type(info.form).__name__]
        assert inspect.getmodule(function) is module, info.name
        assert f"def {function.__name__}(" in inspect.getsource(module)
        written = [(p.name, p.kind, p.default) for p in inspect.signature(function).parameters.values()]
        declared = [(p.name, p.kind, p.default) for p in metric_signature(info).parameters.values()]
        assert written == declared, info.name
        assert all(p.kind is not p.VAR_KEYWORD for p in inspect.signature(function).parameters.values())
        for param in info.params:
            assert f"\n{param.keyword} : " in inspect.getdoc(function), (info.name, param.keyword)
        assert getattr(gaprank, function.__name__) is function


def test_the_package_ships_its_type_hints(tmp_path):
    """py.typed is in the package, and mypy sees the real parameters of gaprank.gap in a user's script."""
    import importlib.util
    import subprocess
    import sys
    from pathlib import Path

    assert (Path(gaprank.__file__).parent / "py.typed").is_file()
    if importlib.util.find_spec("mypy") is None:
        pytest.skip("mypy is not installed (the lint extra)")
    script = tmp_path / "user.py"
    script.write_text("import numpy as np\nimport gaprank\n"
                      "good = gaprank.gap(np.zeros(3), np.ones(3), k=10, g=[0.5, 0.5])\n"
                      "bad = gaprank.gap(np.zeros(3), np.ones(3), cutoff=10)\n"
                      "wrong = gaprank.gap(np.zeros(3), np.ones(3), k='ten')\n")
    # torch's own annotations are not what is checked here, and reading them is most of mypy's work
    (tmp_path / "mypy.ini").write_text("[mypy]\n[mypy-torch.*]\nfollow_imports = skip\n")
    result = subprocess.run([sys.executable, "-m", "mypy", "--no-incremental", "--follow-imports=silent",
                             "--ignore-missing-imports", "--config-file", str(tmp_path / "mypy.ini"), str(script)],
                            capture_output=True, text=True, cwd=tmp_path)
    assert 'user.py:4: error: Unexpected keyword argument "cutoff" for "gap"' in result.stdout, result.stdout
    assert 'user.py:5: error: Argument "k" to "gap" has incompatible type "str"' in result.stdout, result.stdout
    assert "user.py:3" not in result.stdout, result.stdout


def test_every_public_loss_and_objective_factory_is_a_plain_def_with_documented_parameters():
    """Losses and objective factories have real signatures (no ``**kwargs``) and document every parameter;
    each objective factory takes exactly the fields of LambdaMARTSettings, with the same defaults."""
    import dataclasses
    import inspect

    import gaprank.losses as L
    import gaprank.xgboost as gx
    from gaprank.boosting import LambdaMARTSettings
    from gaprank.lightgbm import lambdarank_objective, sklearn_objective

    # build(kind, measure, **settings) takes its kind's module parameters (tests/test_build.py checks them)
    functions = [getattr(L, name) for name in L.__all__ if inspect.isfunction(getattr(L, name)) and name != "build"]
    assert len(functions) >= 11
    fields = [(f.name, f.default) for f in dataclasses.fields(LambdaMARTSettings)]
    for factory in (lambdarank_objective, sklearn_objective, gx.objective):
        assert [(p.name, p.default) for p in inspect.signature(factory).parameters.values()] == fields
        functions.append(factory)
    for function in functions:
        parameters = inspect.signature(function).parameters.values()
        assert all(p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL) for p in parameters), function.__name__
        doc = inspect.getdoc(function)
        for p in parameters:
            assert f"\n{p.name} : " in doc, (function.__name__, p.name)


def test_the_public_surface_is_what_a_user_calls():
    """gaprank.__all__ holds the metrics, losses, objectives, evaluation, register and the errors (at most 50
    names); the extension API for measure authors is gaprank.extend."""
    import gaprank.extend as E

    assert len(gaprank.__all__) <= 45
    assert not {"pivot_sum", "ideal_sum", "g_not_taken", "resolve_g", "grade_indicators", "rank_lists",
                "KernelForm", "Kernel"} & set(gaprank.__all__)
    assert all(hasattr(gaprank, name) for name in gaprank.__all__)
    assert {"MeasureInfo", "ParamInfo", "KernelForm", "GainDiscountForm", "ListForm", "pivot_sum", "ideal_sum",
            "rank_lists", "register"} <= set(E.__all__)
    assert all(getattr(E, name) is getattr(M, name) for name in E.__all__)  # the same objects, as before


def test_names_moved_off_the_top_level_are_served_where_they_live_now():
    import gaprank.extend as E

    assert E.pivot_sum is M.pivot_sum and not hasattr(gaprank, "pivot_sum")
    assert not hasattr(gaprank, "CONVENTIONS") and M.CONVENTIONS
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        gaprank.nope  # noqa: B018
