"""A measure string means one value in every entry point: the metric functions, ``parse_measure``, TREC evaluation
and ``gaprank eval``, ``RankingEval`` and the LightGBM and XGBoost eval adapters, a training config's scorer, and
(for the graded-AP measures) the torchmetrics and ir_measures adapters. A convention that changes a value is
named, by argument or in the string, and the output says so."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import gaprank
from gaprank.boosting import RankingEval
from gaprank.cli.main import main
from gaprank.lightgbm import ranking_feval
from gaprank.metrics import evaluate_trec, parse_measure

# one query of four documents: shorter than the cutoff 10, where LETOR's tools score nDCG@10 and P@10 as 0
SCORES = np.array([0.2, 0.9, 0.5, 0.1])
LABELS = np.array([2, 0, 1, 1])
STRINGS = ["nDCG@10", "P@10", "GAP(g=[0.5,0.5])", "AP", "nDCG"]


def _reference(text):
    return float(parse_measure(text)(SCORES, LABELS))


def _trec_files(tmp_path):
    docs = "abcd"
    qrels, run = tmp_path / "qrels", tmp_path / "run"
    qrels.write_text("".join(f"1 0 {d} {g}\n" for d, g in zip(docs, LABELS, strict=True)))
    run.write_text("".join(f"1 Q0 {d} {r + 1} {s} tag\n" for r, (d, s) in enumerate(zip(docs, SCORES, strict=True))))
    return qrels, run


def test_the_functions_and_parse_measure_agree():
    assert _reference("nDCG@10") == pytest.approx(float(gaprank.ndcg(SCORES, LABELS, k=10)), abs=0)
    assert _reference("P@10") == pytest.approx(0.3, abs=1e-15) and _reference("nDCG@10") > 0.6


@pytest.mark.parametrize("text", STRINGS)
def test_every_entry_point_gives_the_metric_function_s_value(text, tmp_path, capsys):
    import lightgbm as lgb
    import xgboost as xgb

    import gaprank.xgboost
    from training._sections import EvaluationConfig

    expected = _reference(text)
    qrels = {"1": {d: int(g) for d, g in zip("abcd", LABELS, strict=True)}}
    run = {"1": {d: float(s) for d, s in zip("abcd", SCORES, strict=True)}}
    values = {
        "evaluate_trec": evaluate_trec(qrels, run, [text]).means[text],
        "RankingEval": RankingEval([text]).evaluate(SCORES, LABELS, [4])[text],
        "ranking_feval (LGBMRanker)": ranking_feval([text])(LABELS, SCORES, None, [4])[0][1],
        "ranking_feval (lgb.train)": ranking_feval([text])(SCORES, lgb.Dataset(np.eye(4), LABELS, group=[4]))[0][1],
        "xgboost.metric": gaprank.xgboost.metric([text])(SCORES, xgb.DMatrix(np.eye(4), label=LABELS, qid=[1] * 4))[0][1],
        "training config": EvaluationConfig(selection=text, measures=[text], g=None).scorer().evaluate(
            SCORES, LABELS, [4])[text],
    }
    qrels_file, run_file = _trec_files(tmp_path)
    assert main(["eval", "--qrels", str(qrels_file), "--run", str(run_file), "-m", text]) == 0
    values["gaprank eval"] = float(capsys.readouterr().out.split()[-1])
    for entry, value in values.items():
        tolerance = 5e-5 if entry == "gaprank eval" else 1e-12  # the CLI prints four decimals
        assert value == pytest.approx(expected, abs=tolerance), entry
    names = {"ranking_feval": ranking_feval([text])(LABELS, SCORES, None, [4])[0][0],
             "xgboost.metric": gaprank.xgboost.metric([text])(
                 SCORES, xgb.DMatrix(np.eye(4), label=LABELS, qid=[1] * 4))[0][0]}
    assert set(names.values()) == {text}  # no conventions: the string itself


def test_the_graded_ap_adapters_give_the_metric_function_s_value():
    import ir_measures

    from gaprank.ir_measures import GAP
    from gaprank.torchmetrics import RetrievalGAP

    expected = _reference("GAP(g=[0.5,0.5])")
    metric = RetrievalGAP(g=[0.5, 0.5])
    metric.update(torch.tensor(SCORES), torch.tensor(LABELS), indexes=torch.zeros(4, dtype=torch.long))
    assert float(metric.compute()) == pytest.approx(expected, abs=1e-12)
    qrels = [ir_measures.Qrel("1", d, int(g)) for d, g in zip("abcd", LABELS, strict=True)]
    run = [ir_measures.ScoredDoc("1", d, float(s)) for d, s in zip("abcd", SCORES, strict=True)]
    assert ir_measures.calc_aggregate([GAP(g=[0.5, 0.5])], qrels, run)[GAP(g=[0.5, 0.5])] == pytest.approx(expected,
                                                                                                           abs=1e-12)


def test_a_named_convention_changes_a_value_and_says_so(tmp_path, capsys):
    """LETOR 3.0's tool scores a list shorter than k as 0 at k: asked for by name, reported under the name."""
    feval = ranking_feval(["nDCG@10", "GAP", "P@10"], conventions="letor3")
    assert [(name, value) for name, value, _ in feval(LABELS, SCORES, None, [4])] == [
        ("nDCG@10[letor3]", 0.0), ("GAP", pytest.approx(_reference("GAP"))), ("P@10[letor3]", 0.0)]
    trec = evaluate_trec({"1": dict(zip("abcd", LABELS.tolist(), strict=True))},
                         {"1": dict(zip("abcd", SCORES.tolist(), strict=True))}, ["nDCG@10", "ndcg_cut.10"],
                         conventions=None)
    linear = float(parse_measure("nDCG(gain=linear)@10")(SCORES, LABELS))
    assert trec.means == {"nDCG@10": pytest.approx(_reference("nDCG@10")), "ndcg_cut.10": pytest.approx(linear)}
    assert trec.settings["nDCG@10"]["gain"].startswith("2^grade") and trec.settings["ndcg_cut.10"]["gain"] == "grade (linear)"
    qrels_file, run_file = _trec_files(tmp_path)
    assert main(["eval", "--qrels", str(qrels_file), "--run", str(run_file), "-m", "nDCG@10", "--conventions", "trec"]) == 0
    captured = capsys.readouterr()
    assert float(captured.out.split()[-1]) == pytest.approx(linear, abs=5e-5)
    assert "conventions trec" in captured.err and "gain grade (linear)" in captured.err
