"""gaprank.losses.build: a loss module from a kind, a measure string and settings, checked against the registry."""

import pytest
import torch

import gaprank.losses as L
from gaprank import GaprankInputError
from gaprank.losses import (
    LambdaRankLoss,
    ListNetLoss,
    RankNetLoss,
    SoftMetricLoss,
    build,
    lambdarank_loss,
    listnet_loss,
    ranknet_loss,
    soft_metric_loss,
)

G = [0.5, 0.5]

# (kind, measure, settings) -> the module built directly and the function form that training.cv called before
CASES = [
    ("soft", "gap", {"g": G, "sigma": 0.7}, lambda: SoftMetricLoss("gap", g=G, sigma=0.7),
     lambda s, y, m: soft_metric_loss(s, y, measure="gap", g=G, sigma=0.7, mask=m)),
    ("soft", "nDCG@5", {"smoothing": "approx", "sigma": 0.3}, lambda: SoftMetricLoss("nDCG@5", sigma=0.3, smoothing="approx"),
     lambda s, y, m: soft_metric_loss(s, y, measure="nDCG@5", sigma=0.3, smoothing="approx", mask=m)),
    ("soft", "ndcg", {}, lambda: SoftMetricLoss("ndcg"),
     lambda s, y, m: soft_metric_loss(s, y, measure="ndcg", mask=m)),
    ("soft", "egap", {"g": G, "smoothing": "fast_soft_rank", "sigma": 0.2},
     lambda: SoftMetricLoss("egap", g=G, sigma=0.2, smoothing="fast_soft_rank"),
     lambda s, y, m: soft_metric_loss(s, y, measure="egap", g=G, sigma=0.2, smoothing="fast_soft_rank", mask=m)),
    ("soft", "gap", {"g": G, "smoothing": "expected"}, lambda: SoftMetricLoss("gap", g=G, smoothing="expected"),
     lambda s, y, m: soft_metric_loss(s, y, measure="gap", g=G, smoothing="expected", mask=m)),
    ("soft", "ap", {"sigma": 0.5, "smoothing": "expected"}, lambda: SoftMetricLoss("ap", sigma=0.5, smoothing="expected"),
     lambda s, y, m: soft_metric_loss(s, y, measure="ap", sigma=0.5, smoothing="expected", mask=m)),
    ("lambdarank", "gap", {"g": G, "truncation_level": 4}, lambda: LambdaRankLoss("gap", g=G, truncation_level=4),
     lambda s, y, m: lambdarank_loss(s, y, measure="gap", g=G, truncation_level=4, mask=m)),
    ("lambdarank", "ERR", {"sigma": 2.0, "backend": "torch"}, lambda: LambdaRankLoss("ERR", sigma=2.0, backend="torch"),
     lambda s, y, m: lambdarank_loss(s, y, measure="ERR", sigma=2.0, backend="torch", mask=m)),
    ("ranknet", None, {"sigma": 0.5}, lambda: RankNetLoss(sigma=0.5),
     lambda s, y, m: ranknet_loss(s, y, sigma=0.5, mask=m)),
    ("listnet", None, {"reduction": "sum"}, lambda: ListNetLoss(reduction="sum"),
     lambda s, y, m: listnet_loss(s, y, reduction="sum", mask=m)),
]


@pytest.mark.parametrize("kind, measure, settings, direct, function", CASES,
                         ids=[f"{c[0]}-{c[1]}-{c[2].get('smoothing', '')}" for c in CASES])
def test_build_gives_the_directly_constructed_module_and_its_numbers(kind, measure, settings, direct, function):
    built, made = build(kind, measure, **settings), direct()
    assert type(built) is type(made) and repr(built) == repr(made)
    generator = torch.Generator().manual_seed(3)
    scores = torch.randn(3, 7, dtype=torch.float64, generator=generator)
    labels = torch.randint(0, 3, (3, 7), generator=generator)
    mask = torch.ones(3, 7, dtype=torch.bool)
    mask[1, 5:] = False
    values, grads = [], []
    for loss in (built, made, lambda s, y, m: function(s, y, m)):
        leaf = scores.clone().requires_grad_(True)
        value = loss(leaf, labels, mask)
        value.backward()
        values.append(value.detach())
        grads.append(leaf.grad)
    assert torch.isfinite(values[0]) and grads[0].abs().sum() > 0
    for value, grad in zip(values[1:], grads[1:], strict=True):
        assert torch.equal(values[0], value) and torch.equal(grads[0], grad)


@pytest.mark.parametrize(
    "kind, measure, settings, message",
    [
        ("softmax", "gap", {}, "kind must be one of 'soft', 'lambdarank', 'ranknet', 'listnet'; got 'softmax'"),
        ("listnet", "gap", {}, "kind 'listnet' takes no measure; got measure 'gap'"),
        ("ranknet", "ndcg", {}, "kind 'ranknet' takes no measure"),
        ("lambdarank", None, {}, "kind 'lambdarank' needs a measure: one of .*gap"),
        ("soft", None, {}, "kind 'soft' needs a measure"),
        ("soft", "ndcg", {"smoothing": "expected"}, "kind 'soft': .*'ndcg'.*no exact expectation"),
        ("soft", "ERR", {}, "kind 'soft': .*'ERR'"),
        ("soft", "gap@5", {"g": G}, "kind 'soft': .*no cutoff @k"),
        ("soft", "vG", {"smoothing": "approx"}, "kind 'soft': .*'vG'.*threshold identity"),
        ("lambdarank", "nope", {}, "kind 'lambdarank': .*unknown measure 'nope'"),
        ("soft", "gap", {"truncation_level": 5},
         "kind 'soft' takes no setting 'truncation_level' .*kinds that take it: lambdarank"),
        ("listnet", None, {"sigma": 0.5}, "kind 'listnet' takes no setting 'sigma' \\(its settings: reduction\\)"),
        ("lambdarank", "gap", {"mode": "paper"}, "kind 'lambdarank' takes no setting 'mode'"),
        ("soft", "gap", {"smoothing": "sinkhorn"}, "kind 'soft': smoothing must be one of"),
        ("lambdarank", "ap", {"g": G}, "kind 'lambdarank': g applies to gap, xgap, egap, not 'ap'"),
        ("soft", "gap", {"g": [0.5, 0.6]}, "kind 'soft': g must sum to 1"),
        ("lambdarank", "gap", {"sigma": 0}, "kind 'lambdarank': sigma must be a positive finite number; got 0"),
        ("lambdarank", "gap", {"truncation_level": 0}, "kind 'lambdarank': truncation_level must be a positive integer"),
        ("lambdarank", "gap", {"g": G, "max_grade": 3}, "kind 'lambdarank': max_grade=3 disagrees with the grade scale 0..2"),
        ("soft", "ndcg", {"reduction": "avg"}, "kind 'soft': reduction must be one of"),
        ("soft", "ndcg", {"validate": "yes"}, "kind 'soft': validate must be True or False"),
        ("lambdarank", "ERR", {"backend": "compiled"}, "kind 'lambdarank': backend='compiled' cannot serve"),
        ("ranknet", None, {"backend": "gpu"}, "kind 'ranknet': backend must be one of"),
        # one validation for every setting: max_grade within gaprank's scale, sigma a number like k an integer
        ("soft", "gap", {"max_grade": 31}, "kind 'soft': max_grade must be an integer from 1 to 30; got 31"),
        ("soft", "gap", {"max_grade": -1}, "kind 'soft': max_grade must be an integer from 1 to 30; got -1"),
        ("lambdarank", "gap", {"max_grade": True}, "kind 'lambdarank': max_grade must be an integer from 1 to 30"),
        ("soft", "gap", {"sigma": "0.5"}, "kind 'soft': sigma must be a positive number; got '0.5'"),
        ("lambdarank", "gap", {"sigma": True}, "kind 'lambdarank': sigma must be a positive number; got True"),
        ("lambdarank", "gap", {"truncation_level": True},
         "kind 'lambdarank': truncation_level must be a positive integer"),
    ],
)
def test_a_bad_kind_measure_or_setting_is_refused_in_one_line(kind, measure, settings, message):
    with pytest.raises(GaprankInputError, match=message) as caught:
        build(kind, measure, **settings)
    assert "\n" not in str(caught.value)


def test_every_kind_builds_with_every_smoothing():
    for smoothing in L.SMOOTHINGS:
        assert build("soft", "gap", g=G, smoothing=smoothing).smoothing == smoothing
    assert isinstance(build("lambdarank", "nDCG@10"), LambdaRankLoss)
    assert isinstance(build("ranknet"), RankNetLoss) and isinstance(build("listnet"), ListNetLoss)


def test_build_stays_out_of_the_top_level():
    import gaprank

    assert "build" not in gaprank.__all__ and not hasattr(gaprank, "build") and len(gaprank.__all__) <= 45


@pytest.mark.parametrize("make, message", [
    (lambda: L.LambdaRankLoss("gap", sigma=-1), "sigma"),
    (lambda: L.LambdaRankLoss("gap", truncation_level=0), "truncation_level must be"),
    (lambda: L.LambdaRankLoss("gap", reduction="avg"), "reduction"),
    (lambda: L.LambdaRankLoss("gap", validate=3), "validate must be True or False"),
    (lambda: L.LambdaRankLoss("gap", g=[0.5, 0.5], max_grade=3), "max_grade=3 disagrees with the grade scale 0..2"),
    (lambda: L.LambdaRankLoss("GAP(g=[0.5,0.5])", g=[0.5, 0.5]), "sets g"),
    (lambda: L.LambdaRankLoss("ERR", backend="compiled"), "compiled"),
    (lambda: L.LambdaRankLoss("nosuch"), "nosuch"),
    (lambda: L.RankNetLoss(sigma=0), "sigma"),
    (lambda: L.ListNetLoss(reduction="avg"), "reduction"),
    (lambda: L.SoftMetricLoss("gap", g=[0.5, 0.6]), "g"),
    (lambda: L.SoftMetricLoss(""), "cannot parse measure ''"),
    (lambda: L.SoftMetricLoss(None), "measure must be a measure string"),
    (lambda: build("soft", ""), "^kind 'soft': measure: cannot parse measure ''"),
    (lambda: build("soft", "", smoothing="expected"), "^kind 'soft': measure: cannot parse measure ''"),
    (lambda: L.SoftMetricLoss("ERR", smoothing="approx"), "not such a sum"),
    (lambda: L.SoftGAPLoss(sigma=0), "sigma"),
    (lambda: L.SoftNDCGLoss(max_grade=0), "max_grade"),
])
def test_loss_modules_refuse_bad_settings_when_made(make, message):
    """A module checks its measure and settings when it is made (the same checks build's refusals come from),
    not at its first batch."""
    with pytest.raises(GaprankInputError, match=message):
        make()
