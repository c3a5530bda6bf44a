"""One vocabulary: ``measure=`` is the one word for a measure-string argument, the training configs'
``loss.measure`` / ``objective.measure``, ``objective_kind=`` and ``smoothing=``, and GAP's ``g`` as an ordinary
parameter of the measure. No deprecated aliases before 1.0: the old words (``metric=``, ``mode=``, ``.metric``,
the config keys ``metric:`` and ``mode:``) are refused like any unknown name, and nothing in gaprank raises a
DeprecationWarning."""

from __future__ import annotations

import inspect
import json
import pickle
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml

import gaprank
import gaprank.lightgbm
from gaprank import GaprankInputError
from gaprank.boosting import LambdaMARTSettings, RankingEval
from gaprank.losses import (
    LambdaRankLoss,
    SoftMetricLoss,
    lambdarank_loss,
    soft_metric,
    soft_metric_loss,
    swap_deltas,
)
from gaprank.metrics import Measure, evaluate_letor, evaluate_trec, objective_measure, parse_measure

ROOT = Path(__file__).resolve().parents[1]
G = [0.2, 0.8]
SCORES = torch.tensor([[0.3, 1.2, -0.4, 0.9, 0.1], [2.0, 0.5, 0.5, -1.0, 0.7]], dtype=torch.float64)
LABELS = torch.tensor([[2, 0, 1, 2, 0], [0, 1, 2, 0, 1]])

# every public callable that takes a measure string, called with a given keyword for it
TAKERS = {
    "lambdarank_loss": lambda kw: lambdarank_loss(SCORES, LABELS, **kw, g=G),
    "soft_metric": lambda kw: soft_metric(SCORES, LABELS, **kw, g=G, sigma=0.5),
    "soft_metric_loss": lambda kw: soft_metric_loss(SCORES, LABELS, **kw, g=G),
    "swap_deltas": lambda kw: swap_deltas(SCORES, LABELS, **kw, g=G),
    "LambdaRankLoss": lambda kw: LambdaRankLoss(**kw, g=G)(SCORES, LABELS),
    "SoftMetricLoss": lambda kw: SoftMetricLoss(**kw, g=G, smoothing="approx")(SCORES, LABELS),
    "objective_measure": lambda kw: objective_measure(**kw).name,
    "LambdaMARTSettings": lambda kw: LambdaMARTSettings(**kw, g=G).measure,
    "lightgbm.lambdarank_objective": lambda kw: gaprank.lightgbm.lambdarank_objective(**kw, g=G).gradients(
        SCORES.reshape(-1).numpy(), LABELS.reshape(-1).numpy().astype(float), [5, 5]),
    "lightgbm.sklearn_objective": lambda kw: gaprank.lightgbm.sklearn_objective(**kw, g=G)(
        LABELS.reshape(-1).numpy().astype(float), SCORES.reshape(-1).numpy(), None, [5, 5]),
}


def _same(a, b) -> bool:
    if isinstance(a, tuple):
        return all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, torch.Tensor):
        return torch.equal(a, b)
    if isinstance(a, np.ndarray):
        return np.array_equal(a, b)
    return a == b


@pytest.mark.parametrize("name", list(TAKERS))
def test_the_old_word_metric_is_refused_like_any_unknown_keyword(name):
    TAKERS[name]({"measure": "gap"})
    with pytest.raises(TypeError, match="unexpected keyword argument 'metric'"):
        TAKERS[name]({"metric": "gap"})


def test_signatures_and_attributes_say_measure():
    for function in (lambdarank_loss, soft_metric, soft_metric_loss, swap_deltas, LambdaRankLoss, SoftMetricLoss,
                     LambdaMARTSettings,
                     gaprank.lightgbm.lambdarank_objective, gaprank.lightgbm.sklearn_objective, objective_measure):
        parameters = inspect.signature(function).parameters
        assert "measure" in parameters and "metric" not in parameters, function
        assert all(p.kind is not p.VAR_KEYWORD for p in parameters.values()), function
    loss = LambdaRankLoss("egap", g=G)
    assert loss.measure == "egap" and "measure='egap'" in repr(loss)
    assert LambdaMARTSettings("nDCG@10").measure == "nDCG@10"
    for owner in (loss, LambdaMARTSettings("nDCG@10"), SoftMetricLoss("nDCG@10"), gaprank.losses.SoftGAPLoss()):
        assert not hasattr(owner, "metric"), owner


def test_other_integrations_take_measure_and_refuse_metric():
    pytest.importorskip("xgboost")
    import xgboost as xgb

    import gaprank.xgboost

    data = xgb.DMatrix(np.zeros((10, 1)), label=LABELS.reshape(-1).numpy(), qid=np.repeat([1, 2], 5))
    gaprank.xgboost.objective(measure="gap", g=G)(SCORES.reshape(-1).numpy(), data)
    with pytest.raises(TypeError, match="metric"):
        gaprank.xgboost.objective(metric="gap", g=G)


def test_the_sentence_transformers_scheme_takes_measure():
    pytest.importorskip("sentence_transformers")
    from gaprank.sentence_transformers import DeltaScheme

    ranked = torch.tensor([[0, 2, 1, 0]])
    DeltaScheme(measure="gap", g=[0.5, 0.5])(None, None, ranked)
    with pytest.raises(TypeError, match="metric"):
        DeltaScheme(metric="gap", g=[0.5, 0.5])
    with pytest.raises(GaprankInputError, match="sets g; do not pass g as well"):
        DeltaScheme("GAP(g=[0.5,0.5])", g=[0.5, 0.5])


def test_mode_is_gone_from_every_public_signature():
    import gaprank.extend
    import gaprank.losses

    with_mode = []
    for module in (gaprank, gaprank.losses, gaprank.extend, gaprank.metrics, gaprank.lightgbm):
        for name in getattr(module, "__all__", []):
            target = getattr(module, name)
            if callable(target):
                try:
                    parameters = inspect.signature(target).parameters
                except (TypeError, ValueError):
                    continue
                if "mode" in parameters:
                    with_mode.append(f"{module.__name__}.{name}")
    assert not with_mode
    with pytest.raises(TypeError, match="mode"):
        gaprank.losses.SoftAPLoss(sigma=0.5, mode="paper")


def test_nothing_in_gaprank_raises_a_deprecation_warning():
    source = ROOT / "src" / "gaprank"
    raising = [str(path.relative_to(source)) for path in source.rglob("*.py")
               if "DeprecationWarning" in path.read_text() or "FutureWarning" in path.read_text()]
    assert not raising


# GAP's g: one path, whether in the string or a keyword
G_TAKERS = {
    "lambdarank_loss": lambda measure, **g: lambdarank_loss(SCORES, LABELS, measure=measure, reduction="none", **g),
    "lambdarank_loss torch": lambda measure, **g: lambdarank_loss(SCORES, LABELS, measure=measure, reduction="none",
                                                                  backend="torch", **g),
    "soft_metric softrank": lambda measure, **g: soft_metric(SCORES, LABELS, measure=measure, sigma=0.5, **g),
    "soft_metric expected": lambda measure, **g: soft_metric(SCORES, LABELS, measure=measure, sigma=0.5,
                                                             smoothing="expected", **g),
    "soft_metric approx": lambda measure, **g: soft_metric(SCORES, LABELS, measure=measure, sigma=0.5,
                                                           smoothing="approx", **g),
    "swap_deltas": lambda measure, **g: swap_deltas(SCORES, LABELS, measure=measure, **g),
    "objective": lambda measure, **g: gaprank.lightgbm.lambdarank_objective(measure, precision="float64", **g).gradients(
        SCORES.reshape(-1).numpy(), LABELS.reshape(-1).numpy().astype(float), [5, 5]),
}


@pytest.mark.parametrize("name", list(G_TAKERS))
@pytest.mark.parametrize("family", ["GAP", "xGAP", "eGAP"])
def test_g_in_the_string_and_g_as_a_keyword_give_the_same_numbers(name, family):
    take = G_TAKERS[name]
    from_string = take(f"{family}(g=[0.2,0.8])")
    from_keyword = take(family, g=G)
    assert _same(from_string, from_keyword)
    assert not _same(from_keyword, take(family, g=[0.5, 0.5]))  # g reaches the numbers
    with pytest.raises(GaprankInputError, match=rf"measure '{family}\(g=\[0.2,0.8\]\)' sets g; do not pass g as well"):
        take(f"{family}(g=[0.2,0.8])", g=G)
    with pytest.raises(GaprankInputError, match="^g applies to gap, xgap, egap, not 'ap'$"):
        take("ap", g=G)


def test_with_params_makes_a_new_measure_whose_own_parameters_include_g():
    plain = parse_measure("GAP@3")
    given = plain.with_params(g=G)
    assert given.kwargs == {"k": 3, "g": G} and plain.kwargs == {"k": 3}
    assert given.name == "GAP@3" and plain.with_params(g=None) is plain
    assert pickle.loads(pickle.dumps(given)).kwargs == given.kwargs  # a worker gets the g too
    assert given.settings()[1:] == (2, "g (c = 2 grades)")
    with pytest.raises(GaprankInputError, match="^measure 'nDCG': nDCG has no parameter 'p'; parameters: "):
        parse_measure("nDCG").with_params(p=0.5)
    with pytest.raises(GaprankInputError, match=r"measure 'RBP\(p=0.8\)' sets persistence; do not pass persistence"):
        parse_measure("RBP(p=0.8)").with_params(persistence=0.5)
    # evaluators give one g to several measures: it reaches those that take it and whose strings set none
    assert parse_measure("nDCG@3").with_defaults(g=G).kwargs == {"k": 3}
    assert parse_measure("GAP(g=[0.5,0.5])").with_defaults(g=G).kwargs == {"g": [0.5, 0.5]}
    assert parse_measure("eGAP").with_defaults(g=G).kwargs == {"g": G}
    for method in (Measure.settings, Measure.whole_set_keywords, Measure.__call__):
        assert "g" not in inspect.signature(method).parameters, method  # no side channel


def test_evaluators_read_g_from_the_measure():
    scores, labels, sizes = SCORES.reshape(-1).numpy(), LABELS.reshape(-1).numpy(), [5, 5]
    keyword = RankingEval(["GAP", "eGAP", "NDCG@3"], g=G).evaluate(scores, labels, sizes)
    string = RankingEval(["GAP(g=[0.2,0.8])", "eGAP(g=[0.2,0.8])", "NDCG@3"]).evaluate(scores, labels, sizes)
    assert list(keyword.values()) == list(string.values())
    kept = RankingEval(["GAP(g=[0.5,0.5])"], g=G).evaluate(scores, labels, sizes)  # the string's own g wins
    assert kept["GAP(g=[0.5,0.5])"] == RankingEval(["GAP"], g=[0.5, 0.5]).evaluate(scores, labels, sizes)["GAP"]
    letor = evaluate_letor(scores, labels, sizes, g=G)
    assert np.array_equal(letor["GAP"], gaprank.gap(SCORES, LABELS, g=G, reduction="none").numpy())
    qrels = {"1": {"a": 2, "b": 0, "c": 1}}
    run = {"1": {"a": 0.2, "b": 0.9, "c": 0.5}}
    assert (evaluate_trec(qrels, run, ["GAP", "RR"], g=G).means["GAP"]
            == evaluate_trec(qrels, run, ["GAP(g=[0.2,0.8])"]).means["GAP(g=[0.2,0.8])"])


# training configs: loss.measure and objective.measure; the old key accepted, held records with it still stand
def _cv_data(**loss) -> dict:
    return {"name": "x", "data": {"dataset": "OHSUMED", "folds": [1]}, "output_dir": "out", "loss": loss}


def _lambdamart_data(**objective) -> dict:
    return {"name": "x", "data": {"dataset": "OHSUMED", "folds": [1]}, "output_dir": "out", "objective": objective}


def test_config_files_that_say_metric_or_mode_are_refused_by_name(tmp_path):
    from training.config import ConfigError, load_config
    from training.cv import CVConfig
    from training.lambdamart import LambdaMARTConfig

    for cls, make, section in ((CVConfig, lambda **kw: _cv_data(kind="lambdarank", g=[0.5, 0.5], **kw), "loss"),
                               (LambdaMARTConfig, lambda **kw: _lambdamart_data(g=[0.5, 0.5], **kw), "objective")):
        path = tmp_path / f"{section}.yaml"
        path.write_text(yaml.safe_dump(make(measure="egap")))
        assert getattr(load_config(path, cls), section).measure == "egap"
        path.write_text(yaml.safe_dump(make(metric="egap")))
        with pytest.raises(ConfigError, match=rf"{section}: unknown key 'metric'") as caught:
            load_config(path, cls)
        assert "\n" not in str(caught.value)
    path = tmp_path / "mode.yaml"
    path.write_text(yaml.safe_dump(_cv_data(kind="soft", measure="gap", mode="paper")))
    with pytest.raises(ConfigError, match="loss: unknown key 'mode'"):
        load_config(path, CVConfig)


def test_a_record_held_with_the_old_key_is_another_run():
    from training._runner import run_config_key, same_run_config
    from training.config import build_config
    from training.cv import CVConfig
    from training.lambdamart import LambdaMARTConfig

    for config, section in ((build_config(CVConfig, _cv_data(kind="lambdarank", measure="gap", g=[0.5, 0.5])), "loss"),
                            (build_config(LambdaMARTConfig, _lambdamart_data(measure="gap")), "objective")):
        held = json.loads(json.dumps(run_config_key(config)))
        assert same_run_config(held, config)
        held[section] = {("metric" if key == "measure" else key): value for key, value in held[section].items()}
        assert not same_run_config(held, config)


COMMITTED_RECORDS = sorted((ROOT / "results").glob("*-untuned/*/folds/Fold*.json"))


@pytest.mark.parametrize("record", COMMITTED_RECORDS, ids=lambda p: f"{p.parents[2].name}/{p.parents[1].name}/{p.stem}")
def test_every_committed_fold_record_stands_for_its_shipped_config(record):
    """The records and the shipped configs say ``measure:``; the thread count is how a run ran (the shipped
    ``num_threads: auto`` differs between machines), so it is the record's."""
    from training._trainers import TRAINERS
    from training.config import load_config

    text = record.read_text()
    assert '"metric":' not in text and '"mode":' not in text
    held = json.loads(text)["provenance"]["config"]
    trainer = TRAINERS["cv" if "loss" in held else "lambdamart"]
    shipped = ROOT / "configs" / record.parents[2].name.replace("-untuned", "") / f"{record.parents[1].name}.yaml"
    assert "\n  measure:" in shipped.read_text() or record.parents[1].name in ("ranknet", "listnet")
    assert trainer.same_run(held, load_config(shipped, trainer.config_class))


def test_delta_scheme_keeps_the_g_of_a_parsed_measure():
    """A Measure that carries its g (Measure.with_params) weighs pairs with that g, as the keyword does: the
    scheme passed its name on and the g was lost (uniform g, no error)."""
    pytest.importorskip("sentence_transformers")
    from gaprank.metrics import parse_measure
    from gaprank.sentence_transformers import DeltaScheme

    labels = torch.tensor([[0.0, 2.0, 1.0]])
    by_keyword = DeltaScheme("GAP", g=[0.9, 0.1])(None, None, labels)
    carried = DeltaScheme(parse_measure("GAP").with_params(g=[0.9, 0.1]))(None, None, labels)
    uniform = DeltaScheme("GAP")(None, None, labels)
    assert torch.equal(carried, by_keyword) and not torch.allclose(carried, uniform)
    assert "g=[0.9, 0.1]" in repr(DeltaScheme(parse_measure("GAP").with_params(g=[0.9, 0.1])))


def test_objective_kind_is_the_word():
    from gaprank.extend import objective_measure, objective_names
    assert objective_names(objective_kind="expected") == ("ap", "gap", "xgap", "egap", "vg", "erap")
    assert objective_measure("nDCG@10", objective_kind="soft").k == 10
    for call in (lambda: objective_names(mode="exact"), lambda: objective_measure("gap", mode="soft"),
                 lambda: objective_measure("gap").serves(mode="exact")):
        with pytest.raises(TypeError, match="mode"):
            call()
    with pytest.raises(GaprankInputError, match="^measure 'ERR': ERR has no smooth"):
        objective_measure("ERR", objective_kind="soft")
    assert objective_measure("gap").serves(objective_kind="expected")
    assert not objective_measure("ERR").serves(objective_kind="soft")
    with pytest.raises(GaprankInputError, match="objective_kind must be one of"):
        objective_measure("gap").serves("pairs")
