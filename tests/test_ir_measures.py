"""gaprank.ir_measures: gaprank's measures inside ir_measures and PyTerrier, equal to ``gaprank eval``'s TREC mode
on the same files (tie rule included) and, where ir_measures computes the same measure, to ir_measures."""

from __future__ import annotations

import json

import numpy as np
import pytest

ir_measures = pytest.importorskip("ir_measures")
pd = pytest.importorskip("pandas")

import gaprank.ir_measures as gim  # noqa: E402
from gaprank import GaprankInputError  # noqa: E402
from gaprank.cli.main import main  # noqa: E402

MEASURES = {  # ir_measures spelling -> gaprank's measure string
    "GAP(g={1:0.5,2:0.5})": "GAP(g=[0.5,0.5])",
    "GAP(g={1:0.3,2:0.7})@10": "GAP(g=[0.3,0.7])@10",
    "xGAP(g={1:0.5,2:0.5})": "xGAP(g=[0.5,0.5])",
    "eGAP(g={1:0.2,2:0.8})@5": "eGAP(g=[0.2,0.8])@5",
    "vG": "vG",
    "eRAP(p={1:0.5,2:1.0})": "eRAP(p=[0,0.5,1])",
    "eRRBP(p={0:0.1,1:0.5,2:1.0},q=0.5)@10": "eRRBP(p=[0.1,0.5,1],q=0.5)@10",
    "Q(beta=0.5)": "Q(beta=0.5)",
    "SR@10": "SR@10",
    "DCG@10": "DCG@10",
}


@pytest.fixture()
def trec(tmp_path):
    """Qrels graded 0..2 (some negative) and a run with ties, unjudged documents, a query without judgments
    and a judged query the run lacks."""
    rng = np.random.default_rng(3)
    qrels, run, qrel_lines, run_lines = {}, {}, [], []
    for q in range(1, 11):
        qid = str(q)
        judged = {f"D{q}-{d}": int(rng.choice([0, 0, 1, 2, -1])) for d in range(25)}
        qrels[qid] = judged
        qrel_lines += [f"{qid} 0 {d} {v}" for d, v in judged.items()]
        if q == 10:
            continue  # judged, not retrieved
        docs = list(judged)[:15] + [f"U{q}-{d}" for d in range(4)]
        scores = np.round(rng.random(len(docs)), 1)  # ties
        run[qid] = dict(zip(docs, scores.tolist(), strict=True))
        run_lines += [f"{qid} Q0 {d} {i} {s} tag" for i, (d, s) in enumerate(zip(docs, scores, strict=True))]
    run["77"] = {"X": 1.0}
    run_lines.append("77 Q0 X 1 1.0 tag")
    (tmp_path / "qrels").write_text("\n".join(qrel_lines) + "\n")
    (tmp_path / "run").write_text("\n".join(run_lines) + "\n")
    return tmp_path / "qrels", tmp_path / "run", qrels, run


def _cli(trec, capsys, measures):
    qrels_path, run_path, _, _ = trec
    assert main(["eval", "--qrels", str(qrels_path), "--run", str(run_path), "--complete", "--per-query",
                 "--format", "json", *[a for m in measures for a in ("-m", m)]]) == 0
    return json.loads(capsys.readouterr().out)


def test_values_equal_gaprank_eval_trec_mode(trec, capsys):
    """Every gaprank measure through ir_measures equals the CLI's TREC mode (with -c, as ir_measures scores
    judged queries the run lacks) per query, ties broken as trec_eval breaks them."""
    _, _, qrels, run = trec
    ours = _cli(trec, capsys, list(MEASURES.values()))
    parsed = {ir_measures.parse_measure(text): gaprank for text, gaprank in MEASURES.items()}
    per_query = {}
    for metric in ir_measures.iter_calc(list(parsed), qrels, run):
        per_query[(str(metric.measure), metric.query_id)] = metric.value
    assert {q for _, q in per_query} == set(ours["per_query"]) == {str(q) for q in range(1, 11)}
    for measure, gaprank in parsed.items():
        for q, values in ours["per_query"].items():
            assert per_query[(str(measure), q)] == pytest.approx(values[gaprank], abs=1e-12), (measure, q)
    aggregate = ir_measures.calc_aggregate(list(parsed), qrels, run)
    for measure, gaprank in parsed.items():
        assert aggregate[measure] == pytest.approx(ours[gaprank], abs=1e-12)
    assert len({round(v, 6) for (name, _), v in per_query.items() if name.startswith("GAP")}) > 5


def test_gap_at_one_threshold_equals_ir_measures_ap(trec):
    """GAP with all weight on grade t is binary AP with grades >= t relevant: equal to ir_measures' (pytrec_eval's)
    AP(rel=t) per query, ties and the recall base beyond the run included."""
    _, _, qrels, run = trec
    pairs = [(gim.GAP(g={1: 1.0, 2: 0.0}), ir_measures.AP), (gim.eGAP(g={2: 1.0}), ir_measures.AP(rel=2)),
             (gim.GAP(g={1: 1.0, 2: 0.0}) @ 10, ir_measures.AP @ 10)]
    values = {(str(m.measure), m.query_id): m.value
              for m in ir_measures.iter_calc([m for pair in pairs for m in pair], qrels, run)}
    for ours, theirs in pairs:
        for q in qrels:
            assert values[(str(ours), q)] == pytest.approx(values[(str(theirs), q)], abs=1e-12), (ours, q)


def test_evaluate_trec_equals_ir_measures_own_ndcg_ap_and_rr(trec):
    """The TREC evaluation gaprank's ir_measures measures run on equals ir_measures' own nDCG@10, nDCG, AP and RR
    (pytrec_eval) per query, on graded qrels with ties: ir_measures' nDCG under trec's conventions (gain = the grade),
    and as gaprank spells that nDCG."""
    from gaprank.metrics import evaluate_trec

    _, _, qrels, run = trec
    pairs = {"nDCG@10": ir_measures.nDCG @ 10, "nDCG": ir_measures.nDCG, "AP": ir_measures.AP, "RR": ir_measures.RR,
             "AP(rel=2)": ir_measures.AP(rel=2)}
    ours = evaluate_trec(qrels, run, list(pairs), complete=True, conventions="trec")
    spelt = evaluate_trec(qrels, run, ["nDCG(gain=linear)@10", "nDCG(gain=linear)"], complete=True)
    theirs = {(str(m.measure), m.query_id): m.value for m in ir_measures.iter_calc(list(pairs.values()), qrels, run)}
    for name, measure in pairs.items():
        for q, value in zip(ours.query_ids, ours.per_query[name], strict=True):
            assert value == pytest.approx(theirs[(str(measure), q)], abs=1e-12), (name, q)
    for name, measure in (("nDCG(gain=linear)@10", ir_measures.nDCG @ 10), ("nDCG(gain=linear)", ir_measures.nDCG)):
        for q, value in zip(spelt.query_ids, spelt.per_query[name], strict=True):
            assert value == pytest.approx(theirs[(str(measure), q)], abs=1e-12), (name, q)


def test_measure_strings_and_dataframes(trec):
    _, _, qrels, run = trec
    qrels_df = pd.DataFrame([(q, d, v) for q, judged in qrels.items() for d, v in judged.items()],
                            columns=["query_id", "doc_id", "relevance"])
    run_df = pd.DataFrame([(q, d, s) for q, docs in run.items() for d, s in docs.items()],
                          columns=["query_id", "doc_id", "score"])
    measure = ir_measures.parse_measure("GAP(g={1:0.5,2:0.5})@10")
    assert measure == gim.GAP(g={1: 0.5, 2: 0.5}) @ 10
    assert measure.gaprank_measure().name == "GAP(g=[0.5,0.5])@10"
    assert ir_measures.calc_aggregate([measure], qrels_df, run_df)[measure] == pytest.approx(
        ir_measures.calc_aggregate([measure], qrels, run)[measure], abs=1e-15)
    result = measure.calc(qrels, run)
    assert len(result.per_query) == 10
    # the peers' own measures still come from their providers, and ours beside them
    both = ir_measures.calc_aggregate([ir_measures.nDCG @ 10, gim.eGAP], qrels, run)
    assert set(map(str, both)) == {"nDCG@10", "eGAP"}


def test_pyterrier_experiment_with_baseline_and_significance():
    """pt.Experiment on DataFrames with gaprank's measures beside ir_measures' own; the means are ir_measures'
    and the paired t-test is scipy's on the per-query values."""
    pt = pytest.importorskip("pyterrier")
    from scipy import stats

    rng = np.random.default_rng(0)
    rows = [(str(q), f"d{q}-{d}", int(rng.integers(0, 3))) for q in range(12) for d in range(10)]
    topics = pd.DataFrame({"qid": [str(q) for q in range(12)], "query": ["q"] * 12})
    qrels = pd.DataFrame(rows, columns=["qid", "docno", "label"])
    first = qrels[["qid", "docno"]].assign(score=rng.random(len(rows)))
    second = qrels[["qid", "docno"]].assign(score=qrels["label"] + rng.random(len(rows)))
    measures = [gim.GAP(g={1: 0.5, 2: 0.5}), gim.eGAP @ 5, ir_measures.nDCG @ 10]
    table = pt.Experiment([pt.Transformer.from_df(first), pt.Transformer.from_df(second)], topics, qrels,
                          eval_metrics=measures, baseline=0, names=["random", "labels"])
    ir_qrels = qrels.rename(columns={"qid": "query_id", "docno": "doc_id", "label": "relevance"})
    for name, res in [("random", first), ("labels", second)]:
        run = res.rename(columns={"qid": "query_id", "docno": "doc_id"})
        expected = ir_measures.calc_aggregate(measures, ir_qrels, run)
        row = table[table["name"] == name].iloc[0]
        for measure in measures:
            assert row[str(measure)] == pytest.approx(expected[measure], abs=1e-12)
    gap = str(measures[0])
    per_query = [{m.query_id: m.value for m in ir_measures.iter_calc([measures[0]], ir_qrels,
                                                                      res.rename(columns={"qid": "query_id",
                                                                                          "docno": "doc_id"}))}
                 for res in (first, second)]
    qids = sorted(per_query[0])
    p_value = stats.ttest_rel([per_query[1][q] for q in qids], [per_query[0][q] for q in qids]).pvalue
    labels = table[table["name"] == "labels"].iloc[0]
    assert labels[f"{gap} p-value"] == pytest.approx(p_value, rel=1e-9) and p_value < 0.01
    assert labels[gap] > table[table["name"] == "random"].iloc[0][gap]


def test_per_grade_parameters_as_lists_equal_the_dicts(trec):
    """gaprank's list form (g over grades 1..c, p over grades 0..c) is the same measure as ir_measures' dict form:
    equal, one repr (so one result and one PyTerrier column), the same values."""
    _, _, qrels, run = trec
    pairs = [(gim.GAP(g=[0.5, 0.5]), ir_measures.parse_measure("GAP(g={1:0.5,2:0.5})")),
             (gim.xGAP(g=(0.3, 0.7)) @ 10, gim.xGAP(g={1: 0.3, 2: 0.7}) @ 10),
             (gim.eGAP(g=np.array([0.0, 1.0])), gim.eGAP(g={2: 1.0})),  # a missing grade is 0
             (gim.eRAP(p=[0, 0.5, 1]), ir_measures.parse_measure("eRAP(p={1:0.5,2:1.0})")),
             (gim.eRRBP(q=0.5, p=[0.1, 0.5, 1.0]) @ 10, ir_measures.parse_measure("eRRBP(p={0:0.1,1:0.5,2:1.0},q=0.5)@10"))]
    for listed, keyed in pairs:
        assert listed == keyed and repr(listed) == repr(keyed) and hash(listed) == hash(keyed)
    assert repr(pairs[0][0]) == "GAP(g={1:0.5,2:0.5})" and repr(pairs[2][0]) == "eGAP(g={1:0.0,2:1.0})"
    assert pairs[0][0].gaprank_measure().name == "GAP(g=[0.5,0.5])"
    values = ir_measures.calc_aggregate([m for pair in pairs for m in pair], qrels, run)
    assert len(values) == len(pairs) and len(set(values.values())) == len(pairs)


def test_measures_that_differ_have_different_reprs():
    """ir_measures' own repr drops a dict entry whose key equals its value ({1: 1.0}), so eRAP(p={1:1,2:1}) and
    eRAP(p={2:1}) (different measures) would share a repr, a hash and a result; gaprank's measures print every
    entry, in one parameter order."""
    assert gim.eRAP(p={1: 1.0, 2: 1.0}) != gim.eRAP(p={2: 1.0})
    assert repr(gim.GAP(g={1: 1.0, 2: 0.0})) == "GAP(g={1:1.0,2:0.0})"
    assert gim.eRRBP(p=[0, 1], q=0.5) == gim.eRRBP(q=0.5, p=[0, 1])
    qrels, run = {"1": {"a": 1, "b": 2}}, {"1": {"a": 0.9, "b": 0.1}}
    both = ir_measures.calc_aggregate([gim.eRAP(p={1: 1.0, 2: 1.0}), gim.eRAP(p={2: 1.0})], qrels, run)
    assert both[gim.eRAP(p=[0, 1, 1])] == pytest.approx(1.0) and both[gim.eRAP(p=[0, 0, 1])] == pytest.approx(0.5)


@pytest.mark.parametrize("make, message", [
    (lambda: gim.GAP(g={"a": 1.0}), r"^measure GAP\(g=\{a:1.0\}\): the keys of g must be integer grades >= 1"),
    (lambda: gim.GAP(g={1: 0.5, 2: 0.6}), r"^measure GAP\(g=\{1:0.5,2:0.6\}\): g must sum to 1"),
    (lambda: gim.GAP(g=[0.5, 0.4]), r"^measure GAP\(g=\{1:0.5,2:0.4\}\): g must sum to 1 .*got sum 0.9"),
    (lambda: gim.GAP(g=[]), r"g must be a non-empty list \(grades 1..c\) or dict \{grade: value\}"),
    (lambda: gim.GAP(g="0.5,0.5"), r"g must be a non-empty list \(grades 1..c\) or dict"),
    (lambda: gim.GAP(g=[0.5, "x"]), r"the values of g must be numbers"),
    (lambda: gim.eRAP(p={0: 0.0, 1: 2.0}), r"p must hold probabilities in \[0, 1\]"),
    (lambda: gim.eRRBP(p=[0, 1], q="high"), r"q must be a number"),
    (lambda: gim.GAP @ "10", r"cutoff must be an integer"),
    (lambda: gim.GAP @ 0, r"^measure GAP@0: the cutoff must be a positive integer; got 0$"),
    (lambda: ir_measures.parse_measure("GAP(g={1:0.5,2:0.4})"), "g must sum to 1"),
    (lambda: gim.GAP(rel=2), r"^measure GAP: unsupported parameters \['rel'\]; parameters of GAP: cutoff, g"),
])
def test_bad_parameters_are_one_line_errors_when_the_measure_is_made(make, message):
    with pytest.raises(GaprankInputError, match=message) as caught:
        make()
    assert "\n" not in str(caught.value)


def test_a_missing_required_parameter_is_a_one_line_error_at_evaluation(trec):
    _, _, qrels, run = trec
    with pytest.raises(GaprankInputError, match=r"^measure eRAP: eRAP needs p .*e.g. eRAP\(p=\[0, 0.5, 1.0\]\)") as caught:
        ir_measures.calc_aggregate([gim.eRAP], qrels, run)
    assert "\n" not in str(caught.value)


def _as_frame(table, value):
    return pd.DataFrame([(q, d, v) for q, docs in table.items() for d, v in docs.items()],
                        columns=["query_id", "doc_id", value])


@pytest.mark.parametrize("run_ints, qrels_ints", [(True, False), (False, True), (True, True)])
def test_integer_and_string_ids_are_compared_as_text(trec, run_ints, qrels_ints):
    """Query ids as pandas int64 columns on one side or both are the same queries as their text on the other, as
    trec_eval (which reads text) sees them: the values equal those of string ids on both sides."""
    _, _, qrels, run = trec
    run = {q: docs for q, docs in run.items() if q != "77"}
    measures = [gim.GAP(g=[0.5, 0.5]), gim.eGAP @ 10]
    expected = {(str(m.measure), m.query_id): m.value for m in ir_measures.iter_calc(measures, qrels, run)}
    run_df, qrels_df = _as_frame(run, "score"), _as_frame(qrels, "relevance")
    if run_ints:
        run_df["query_id"] = run_df["query_id"].astype("int64")
    if qrels_ints:
        qrels_df["query_id"] = qrels_df["query_id"].astype("int64")
    got = {(str(m.measure), m.query_id): m.value for m in ir_measures.iter_calc(measures, qrels_df, run_df)}
    assert got == pytest.approx(expected, abs=1e-15)
    assert len({v for (name, _), v in got.items() if name.startswith("GAP")}) > 3  # not every query 0
    ideal = {q: {d: float(v) for d, v in docs.items()} for q, docs in qrels.items()}
    ideal_df = _as_frame(ideal, "score").astype({"query_id": "int64"})
    assert ir_measures.calc_aggregate([gim.GAP(g=[0.5, 0.5])], qrels, ideal_df)[gim.GAP(g=[0.5, 0.5])] == 1.0


@pytest.mark.parametrize("run, message", [
    ({1.0: {"a": 1.0}}, r"^run: query id 1.0 is a float; ids must be strings or integers"),
    ({"1": {2.5: 1.0}}, r"^run: document id 2.5 is a float"),
    ({"1": {"a": 1.0}, 1: {"b": 1.0}}, r"^run: query id '1' appears both as a string and as an integer"),
])
def test_ids_that_text_cannot_match_are_one_line_errors(run, message):
    with pytest.raises(GaprankInputError, match=message) as caught:
        ir_measures.calc_aggregate([gim.GAP], {"1": {"a": 1}}, run)
    assert "\n" not in str(caught.value)


def test_grades_wider_than_g_and_bad_qrels_are_one_line_errors(trec):
    _, _, qrels, run = trec
    with pytest.raises(GaprankInputError, match=r"label 2 is above the grade scale 0..1 set by g"):
        ir_measures.calc_aggregate([gim.GAP(g={1: 1.0})], qrels, run)
    bad = {**qrels, "1": {**qrels["1"], "D1-0": 1.5}}
    with pytest.raises(GaprankInputError, match=r"^qrels: query 1, document D1-0: grade 1.5 is not an integer"):
        ir_measures.calc_aggregate([gim.GAP], bad, run)


def test_a_measure_registered_later_joins_and_registration_is_idempotent():
    from gaprank.metrics import GainDiscountForm, MeasureInfo, register, unregister

    register(MeasureInfo("TOYDCG", GainDiscountForm(lambda c, p: np.arange(c + 1.0), lambda n, p: 1.0 / n),
                         doc="A toy.", reference="test"))
    try:
        provided = gim.register_measures()
        assert "TOYDCG" in provided and ir_measures.parse_measure("TOYDCG@2").NAME == "TOYDCG"
        qrels, run = {"1": {"a": 2, "b": 1}}, {"1": {"a": 0.1, "b": 0.9}}
        assert ir_measures.calc_aggregate([provided["TOYDCG"]], qrels, run)[provided["TOYDCG"]] == pytest.approx(2.0)
    finally:
        unregister("TOYDCG")
        ir_measures.measures.registry.pop("TOYDCG", None)
    assert gim.register_measures().keys() >= {"GAP", "xGAP", "eGAP", "vG", "eRAP", "eRRBP"}
    assert ir_measures.DefaultPipeline.providers.count(gim.provider) == 1
