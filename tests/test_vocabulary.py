"""One vocabulary (issue 39, item 3): ``measure=`` is the one word for a measure-string argument (``metric=`` a
deprecated alias for one release), the training configs' ``loss.measure`` / ``objective.measure`` (the old key
accepted, and held records with it still stand), and GAP's ``g`` as an ordinary parameter of the measure."""

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
def test_metric_is_a_deprecated_alias_of_measure(name):
    new = TAKERS[name]({"measure": "gap"})
    with pytest.warns(DeprecationWarning, match=r"metric= is deprecated; use measure="):
        old = TAKERS[name]({"metric": "gap"})
    assert _same(new, old)
    with pytest.raises(GaprankInputError, match=r"pass measure= only; metric= is its deprecated old name") as caught:
        TAKERS[name]({"measure": "gap", "metric": "gap"})
    assert "\n" not in str(caught.value)


def test_the_new_name_given_by_position_beside_the_old_one_is_refused():
    with pytest.raises(GaprankInputError, match="pass measure= only"):
        LambdaRankLoss("gap", metric="ap")
    with pytest.raises(GaprankInputError, match="pass measure= only"):
        LambdaMARTSettings("gap", metric="ap")


def test_signatures_and_attributes_say_measure():
    for function in (lambdarank_loss, soft_metric, soft_metric_loss, swap_deltas, LambdaRankLoss, SoftMetricLoss,
                     LambdaMARTSettings,
                     gaprank.lightgbm.lambdarank_objective, gaprank.lightgbm.sklearn_objective, objective_measure):
        parameters = inspect.signature(function).parameters
        assert "measure" in parameters and "metric" not in parameters, function
        assert all(p.kind is not p.VAR_KEYWORD for p in parameters.values()), function
    loss = LambdaRankLoss("egap", g=G)
    assert loss.measure == "egap" and "measure='egap'" in repr(loss)
    with pytest.warns(DeprecationWarning, match="LambdaRankLoss.metric is deprecated"):
        assert loss.metric == "egap"
    with pytest.warns(DeprecationWarning, match="LambdaRankLoss.metric is deprecated"):
        loss.metric = "gap"
    assert loss.measure == "gap"
    assert LambdaMARTSettings("nDCG@10").measure == "nDCG@10"


def test_a_lambdarank_loss_pickled_before_the_rename_still_loads():
    loss = LambdaRankLoss("egap", g=G)
    loss.__dict__["metric"] = loss.__dict__.pop("measure")  # as an older gaprank pickled it
    again = pickle.loads(pickle.dumps(loss))
    assert again.measure == "egap"
    assert torch.equal(again(SCORES, LABELS), LambdaRankLoss("egap", g=G)(SCORES, LABELS))


def test_other_integrations_take_measure_too():
    pytest.importorskip("xgboost")
    import xgboost as xgb

    import gaprank.xgboost

    data = xgb.DMatrix(np.zeros((10, 1)), label=LABELS.reshape(-1).numpy(), qid=np.repeat([1, 2], 5))
    new = gaprank.xgboost.objective(measure="gap", g=G)(SCORES.reshape(-1).numpy(), data)
    with pytest.warns(DeprecationWarning, match="metric= is deprecated"):
        old = gaprank.xgboost.objective(metric="gap", g=G)(SCORES.reshape(-1).numpy(), data)
    assert _same(new, old)


def test_the_sentence_transformers_scheme_takes_measure():
    pytest.importorskip("sentence_transformers")
    from gaprank.sentence_transformers import DeltaScheme

    ranked = torch.tensor([[0, 2, 1, 0]])
    new = DeltaScheme(measure="gap", g=[0.5, 0.5])(None, None, ranked)
    with pytest.warns(DeprecationWarning, match="metric= is deprecated"):
        old = DeltaScheme(metric="gap", g=[0.5, 0.5])(None, None, ranked)
    assert torch.equal(new, old)
    with pytest.raises(GaprankInputError, match="sets g; do not pass g as well"):
        DeltaScheme("GAP(g=[0.5,0.5])", g=[0.5, 0.5])


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


def test_config_files_may_still_say_metric(tmp_path):
    from training.config import ConfigError, load_config
    from training.cv import CVConfig
    from training.lambdamart import LambdaMARTConfig

    for cls, make, section in ((CVConfig, lambda **kw: _cv_data(kind="lambdarank", g=[0.5, 0.5], **kw), "loss"),
                               (LambdaMARTConfig, lambda **kw: _lambdamart_data(g=[0.5, 0.5], **kw), "objective")):
        path = tmp_path / f"{section}.yaml"
        path.write_text(yaml.safe_dump(make(measure="egap")))
        new = load_config(path, cls)
        path.write_text(yaml.safe_dump(make(metric="egap")))
        with pytest.warns(FutureWarning, match=rf"{section}.metric is deprecated; name the key measure"):
            old = load_config(path, cls)
        assert old == new and getattr(old, section).measure == "egap"
        path.write_text(yaml.safe_dump(make(metric="egap", measure="egap")))
        with pytest.raises(ConfigError, match=rf"{section}.metric is the old name of measure; give only measure") as caught:
            load_config(path, cls)
        assert "\n" not in str(caught.value)


def test_a_record_held_with_the_old_key_stands_for_the_new_config():
    """Fold records and tuning studies hold the config as written when they were made: ``metric: gap``."""
    from training._runner import run_config_key, same_run_config
    from training.config import build_config
    from training.cv import CVConfig
    from training.lambdamart import LambdaMARTConfig

    for config, section in ((build_config(CVConfig, _cv_data(kind="lambdarank", measure="gap", g=[0.5, 0.5])), "loss"),
                            (build_config(LambdaMARTConfig, _lambdamart_data(measure="gap")), "objective")):
        held = json.loads(json.dumps(run_config_key(config)))
        assert same_run_config(held, config)
        held[section] = {("metric" if key == "measure" else key): value for key, value in held[section].items()}
        assert "measure" not in held[section] and held[section]["metric"] == "gap"
        assert same_run_config(held, config)
        held[section]["metric"] = "ndcg"
        assert not same_run_config(held, config)  # another value is another run
        held[section].update(metric="gap", measure="gap")
        assert not same_run_config(held, config)  # both names: no record gaprank wrote


COMMITTED_RECORDS = sorted((ROOT / "results").glob("*-untuned/*/folds/Fold*.json"))


@pytest.mark.parametrize("record", COMMITTED_RECORDS, ids=lambda p: f"{p.parents[2].name}/{p.parents[1].name}/{p.stem}")
def test_every_committed_fold_record_stands_for_its_shipped_config(record):
    """The records say ``metric:``, the shipped configs ``measure:``; the thread count is how a run ran (the shipped
    ``num_threads: auto`` differs between machines), so it is the record's."""
    from training._trainers import TRAINERS
    from training.config import load_config

    held = json.loads(record.read_text())["provenance"]["config"]
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


def test_settings_and_soft_losses_pickled_before_the_rename_still_load():
    import pickle

    from gaprank.boosting import LambdaMARTSettings

    settings = LambdaMARTSettings("nDCG@10")
    state = dict(settings.__dict__)
    state["metric"] = state.pop("measure")
    old = object.__new__(LambdaMARTSettings)
    old.__setstate__(state)
    assert old.measure == "nDCG@10" and pickle.loads(pickle.dumps(old)).measure == "nDCG@10"
    with pytest.warns(DeprecationWarning, match="LambdaMARTSettings.measure"):
        assert settings.metric == "nDCG@10"
    loss = gaprank.losses.SoftMetricLoss("nDCG@10")
    with pytest.warns(DeprecationWarning, match="SoftMetricLoss.measure"):
        assert loss.metric == "nDCG@10"
    with pytest.warns(DeprecationWarning, match="SoftGAPLoss.measure"):
        assert gaprank.SoftGAPLoss().metric == "gap"


def test_objective_kind_is_the_word_and_mode_its_deprecated_alias():
    from gaprank.extend import objective_measure, objective_names
    assert objective_names(objective_kind="exact") == ("ap", "gap", "xgap", "egap", "vg", "erap")
    with pytest.warns(DeprecationWarning, match="mode= is deprecated; use objective_kind="):
        assert objective_names(mode="exact") == objective_names(objective_kind="exact")
    with pytest.warns(DeprecationWarning, match="mode= is deprecated; use objective_kind="):
        assert objective_measure("nDCG@10", mode="soft").k == 10
    with pytest.raises(GaprankInputError, match="pass objective_kind= only"):
        objective_measure("gap", objective_kind="soft", mode="soft")
    with pytest.raises(GaprankInputError, match="^measure 'ERR': ERR has no smooth"):
        objective_measure("ERR", objective_kind="soft")
    with pytest.warns(DeprecationWarning, match="mode= is deprecated; use objective_kind="):
        assert objective_measure("gap").serves(mode="exact")  # a public Measure's method, renamed alike
    assert not objective_measure("ERR").serves(objective_kind="soft")
    with pytest.raises(GaprankInputError, match="objective_kind must be one of"):
        objective_measure("gap").serves("pairs")
