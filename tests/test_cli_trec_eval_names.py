"""trec_eval's measure names in TREC mode (``gaprank eval -m ndcg_cut.10``, ``evaluate_trec(..., "P.10")``),
checked against trec_eval's own test files and printed outputs (tests/data/trec_eval) and against pytrec_eval
on graded qrels; run lines with fields after the run tag; "did you mean" hints.

One private unit on purpose: the table of trec_eval's names (``gaprank.metrics._trec_names``), read whole."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from gaprank import GaprankInputError
from gaprank.cli.main import main
from gaprank.data import read_qrels, read_run
from gaprank.metrics import evaluate_trec

TREC_EVAL = Path(__file__).parent / "data" / "trec_eval"
# every trec_eval name gaprank accepts, at the cutoffs trec_eval's -m all_trec prints
ALIASES = ["map", "Rprec", "recip_rank", "ndcg"] + [
    f"{name}_{k}" for name in ("P", "recall", "ndcg_cut", "map_cut") for k in (5, 10, 15, 20, 30, 100, 200, 500, 1000)
] + [f"success_{k}" for k in (1, 5, 10)]


def _trec_eval_output(name: str) -> dict[tuple[str, str], float]:
    """``{(measure, query or "all"): value}`` from a trec_eval output file."""
    values = {}
    for line in (TREC_EVAL / name).read_text().splitlines():
        measure, query, value = line.split()
        if measure not in ("runid", "relstring"):
            values[measure, query] = float(value)
    return values


def _plain_run(path: Path) -> dict[str, dict[str, float]]:
    """A run read as trec_eval reads it (qid, Q0, docid, rank, score; the rest ignored), for pytrec_eval."""
    import gzip

    run: dict[str, dict[str, float]] = {}
    with gzip.open(path, "rt") as fh:
        for line in fh:
            qid, _, docid, _, score = line.split()[:5]
            run.setdefault(qid, {})[docid] = float(score)
    return run


def test_every_alias_equals_trec_eval_s_printed_output(capsys):
    """``trec_eval -m all_trec qrels.test results.test`` (trec_eval's test/out.test.a): each trec_eval name,
    given with a dot (the command line's ``P.10``) and with an underscore (the output's ``P_10``)."""
    expected = _trec_eval_output("out.test.a")
    cut = [name for name in ALIASES if name[-1].isdigit()]
    dotted = [re.sub(r"_(\d+)$", r".\1", name) for name in cut]
    assert "ndcg_cut.10" in dotted and "P.10" in dotted and "map_cut.1000" in dotted
    argv = ["eval", "--qrels", str(TREC_EVAL / "qrels.test.gz"), "--run", str(TREC_EVAL / "results.test.gz"),
            "--format", "json"]
    assert main([*argv, *[a for name in ALIASES + dotted for a in ("-m", name)]]) == 0
    out = json.loads(capsys.readouterr().out)
    for name in ALIASES:
        assert out[name] == pytest.approx(expected[name, "all"], abs=5e-5), name  # trec_eval prints 4 decimals
    for name, as_typed in zip(cut, dotted, strict=True):
        assert out[as_typed] == out[name], as_typed
    assert out["settings"]["ndcg_cut.10"] == {"measure": "nDCG(gain=linear,discount=log2p1)@10", "gain": "grade (linear)",
                                              "discount": "1/log2(r+1)"}
    assert out["settings"]["P.10"] == {"measure": "P@10"}
    assert len({round(out[name], 4) for name in ALIASES}) > 20  # the values differ: the check is not vacuous


def test_a_run_with_fields_after_the_tag_reads_as_trec_eval_reads_it(capsys):
    """``trec_eval -m all_trec -q -c qrels.test results.trunc`` (out.test.aqc): results.trunc has lines of 7 to
    9 fields; query 302 is absent from it and scores 0 with -c (``--complete``)."""
    assert max(len(line.split()) for line in _lines(TREC_EVAL / "results.trunc.gz")) == 9
    expected = _trec_eval_output("out.test.aqc")
    names = ["map", "P_10", "ndcg", "ndcg_cut_10", "recip_rank", "Rprec", "recall_100", "success_5", "map_cut_10"]
    assert main(["eval", "--qrels", str(TREC_EVAL / "qrels.test.gz"), "--run", str(TREC_EVAL / "results.trunc.gz"),
                 "--complete", "--per-query", "--format", "json", *[a for name in names for a in ("-m", name)]]) == 0
    out = json.loads(capsys.readouterr().out)
    assert sorted(out["per_query"]) == ["301", "302", "303"]
    for name in names:
        for query in ("301", "302", "303"):
            assert out["per_query"][query][name] == pytest.approx(expected[name, query], abs=5e-5), (name, query)
        assert out[name] == pytest.approx(expected[name, "all"], abs=5e-5), name


def _lines(path: Path) -> list[str]:
    import gzip

    with gzip.open(path, "rt") as fh:
        return [line for line in fh if line.strip()]


@pytest.mark.parametrize("run_file", ["results.test.gz", "results.trunc.gz"])
def test_every_alias_equals_pytrec_eval_per_query_on_graded_qrels(run_file):
    """Graded qrels (trec_eval's qrels.rel_level: grades -1..4): per query, to 1e-12, at trec_eval's default
    relevance level 1; nDCG with the grade as gain."""
    pytrec_eval = pytest.importorskip("pytrec_eval")
    qrels = read_qrels(TREC_EVAL / "qrels.rel_level.gz")
    run = read_run(TREC_EVAL / run_file)
    assert run == _plain_run(TREC_EVAL / run_file)
    assert max(v for judged in qrels.values() for v in judged.values()) == 4
    raw = {}  # pytrec_eval gets the grades as in the file, -1 included
    for line in _lines(TREC_EVAL / "qrels.rel_level.gz"):
        qid, _, docid, grade = line.split()
        raw.setdefault(qid, {})[docid] = int(grade)
    theirs = pytrec_eval.RelevanceEvaluator(raw, {"map", "map_cut", "P", "ndcg", "ndcg_cut", "recip_rank", "Rprec",
                                                  "recall", "success"}).evaluate(run)
    ours = evaluate_trec(qrels, run, ALIASES)
    assert ours.query_ids == sorted(theirs)
    for name in ALIASES:
        expected = [theirs[q][name] for q in ours.query_ids]
        np.testing.assert_allclose(ours.per_query[name], expected, rtol=1e-12, atol=1e-12, err_msg=name)


@pytest.mark.parametrize("name, message", [
    ("ndgc@10", r"unknown measure 'ndgc' in 'ndgc@10' \(did you mean 'nDCG'\?\)"),
    ("recip_rnak", r"did you mean 'recip_rank'\?"),
    ("GAPP", r"did you mean 'GAP'"),
    ("bpref", r"'bpref' is trec_eval's bpref; gaprank has no equal of it"),
    ("iprec_at_recall_0.10", "trec_eval's iprec_at_recall; gaprank has no equal"),
    ("P.5,10", "give one cutoff per measure"),
    ("ndcg_cut", "give trec_eval's ndcg_cut one cutoff, e.g. ndcg_cut.10"),
    ("map.10", "trec_eval's map takes no parameter"),
    ("rbp", r"write RBP\(p=0.9\)"),
    ("P", "needs a cutoff"),
])
def test_unknown_and_unsupported_names_are_one_line_with_a_hint(name, message, tmp_path, capsys):
    with pytest.raises(GaprankInputError, match=message) as caught:
        evaluate_trec({"1": {"a": 1}}, {"1": {"a": 1.0}}, name)
    assert "\n" not in str(caught.value)
    (tmp_path / "qrels").write_text("1 0 a 1\n")
    (tmp_path / "run").write_text("1 Q0 a 1 1.0 t\n")
    assert main(["eval", "--qrels", str(tmp_path / "qrels"), "--run", str(tmp_path / "run"), "-m", name]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("gaprank eval: error: ")


def test_gaprank_names_are_unchanged_and_results_keep_the_name_given():
    qrels = {"1": {"a": 2, "b": 0, "c": 1}}
    run = {"1": {"a": 0.2, "b": 0.9, "c": 0.5}}
    result = evaluate_trec(qrels, run, ["RR", "recip_rank", "MAP", "map", "RBP", "P@2", "P_2"])
    assert list(result.means) == ["RR", "recip_rank", "MAP", "map", "RBP", "P@2", "P_2"]
    assert result.means["RR"] == result.means["recip_rank"] == 0.5
    assert result.means["MAP"] == result.means["map"] and result.means["P@2"] == result.means["P_2"] == 0.5
    assert "RR" not in result.settings and result.settings["recip_rank"] == {"measure": "RR"}


def test_a_grade_above_a_measure_s_scale_in_a_query_the_run_lacks(tmp_path, capsys):
    """Issue 42.13: the qrels' grade 3 is in query 2, which the run lacks; GAP(g of 2 grades) says so as it
    does when the query is evaluated, naming the judgment (it said "grade_counts must have shape ...")."""
    qrels = {"1": {"a": 1, "b": 0}, "2": {"c": 3}}
    run = {"1": {"a": 1.0, "b": 0.5}}
    message = (r"^measure 'GAP\(g=\[0.5,0.5\]\)': qrels query 2, document c: label 3 is above the grade scale 0..2 "
               r"set by g \(c = 2 grades\)$")
    for complete in (False, True):
        with pytest.raises(GaprankInputError, match=message):
            evaluate_trec(qrels, run, "GAP(g=[0.5,0.5])", complete=complete)
    with pytest.raises(GaprankInputError, match=r"label 3 is above the grade scale 0..2 set by max_grade=2$"):
        evaluate_trec(qrels, run, "ERR(max_grade=2)")
    with pytest.raises(GaprankInputError, match=r"label 3 is above the grade scale 0..2 set by g \(c = 2 grades\)$"):
        evaluate_trec(qrels, run, "GAP", g=[0.5, 0.5])
    # the query evaluated: the same words
    with pytest.raises(GaprankInputError, match=r"label 3 is above the grade scale 0..2 set by g \(c = 2 grades\)$"):
        evaluate_trec(qrels, {**run, "2": {"c": 1.0}}, "GAP(g=[0.5,0.5])")
    (tmp_path / "qrels").write_text("1 0 a 1\n1 0 b 0\n2 0 c 3\n")
    (tmp_path / "run").write_text("1 Q0 a 1 1.0 t\n1 Q0 b 2 0.5 t\n")
    assert main(["eval", "--qrels", str(tmp_path / "qrels"), "--run", str(tmp_path / "run"), "-m", "GAP",
                 "--g", "0.5,0.5"]) == 2
    assert "qrels query 2, document c: label 3 is above the grade scale 0..2" in capsys.readouterr().err
    # a scale above the qrels' top grade is still fine (the judged documents are counted on it)
    assert evaluate_trec(qrels, run, "ERR(max_grade=4)").means["ERR(max_grade=4)"] > 0


def test_the_cli_page_s_alias_table_is_what_gaprank_computes():
    from gaprank.metrics._trec_names import TREC_EVAL_ALIASES, trec_measure

    page = (Path(__file__).resolve().parents[1] / "docs" / "cli.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| `([^`]+)` \| `([^`]+)` \|$", page, flags=re.M)
    assert {re.sub(r"[._]\d+$", "", trec_eval) for trec_eval, _ in rows} == set(TREC_EVAL_ALIASES)
    for trec_eval, gaprank_string in rows:
        assert trec_measure(trec_eval).name == gaprank_string, trec_eval
