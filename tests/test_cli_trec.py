"""TREC mode of ``gaprank eval`` against pytrec_eval on the same qrels and run files."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from gaprank.cli.main import main
from gaprank.metrics import gap, parse_measure

pytrec_eval = pytest.importorskip("pytrec_eval")


@pytest.fixture()
def trec_files(tmp_path):
    rng = np.random.default_rng(11)
    qrels, run = {}, {}
    qrel_lines, run_lines = [], []
    for q in range(1, 9):
        qid = str(q)
        judged = {f"D{q}-{d}": int(rng.choice([0, 0, 1, 2, -2])) for d in range(30)}
        qrels[qid] = {d: max(v, 0) for d, v in judged.items()}
        qrel_lines += [f"{qid} 0 {d} {v}" for d, v in judged.items()]
        # the run retrieves 20 judged and 5 unjudged documents, with ties
        docs = list(judged)[:20] + [f"U{q}-{d}" for d in range(5)]
        scores = np.round(rng.random(len(docs)), 1)
        run[qid] = dict(zip(docs, scores.tolist(), strict=True))
        run_lines += [f"{qid} Q0 {d} {i} {s} tag" for i, (d, s) in enumerate(zip(docs, scores, strict=True))]
    run_lines += ["99 Q0 X 1 1.0 tag"]  # a query without judgments is ignored, as trec_eval does
    (tmp_path / "qrels").write_text("\n".join(qrel_lines) + "\n")
    (tmp_path / "run").write_text("\n".join(run_lines) + "\n")
    return tmp_path / "qrels", tmp_path / "run", qrels, {q: v for q, v in run.items()}


def test_trec_mode_matches_pytrec_eval(trec_files, capsys):
    qrels_path, run_path, qrels, run = trec_files
    code = main(["eval", "--qrels", str(qrels_path), "--run", str(run_path), "-m", "AP", "-m", "nDCG@10",
                 "-m", "P@10", "-m", "nDCG(gain=linear)", "-m", "GAP", "--per-query", "--format", "json"])
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    theirs = pytrec_eval.RelevanceEvaluator(qrels, {"map", "P", "ndcg", "ndcg_cut"}).evaluate(run)
    assert sorted(out["per_query"], key=int) == sorted(theirs, key=int)
    for q, values in out["per_query"].items():
        assert values["AP"] == pytest.approx(theirs[q]["map"], rel=1e-9)
        assert values["P@10"] == pytest.approx(theirs[q]["P_10"], rel=1e-9)
        assert values["nDCG(gain=linear)"] == pytest.approx(theirs[q]["ndcg"], rel=1e-9)
    assert out["AP"] == pytest.approx(np.mean([theirs[q]["map"] for q in theirs]), rel=1e-9)


def test_trec_mode_gap_uses_the_full_recall_base(trec_files, capsys):
    qrels_path, run_path, qrels, run = trec_files
    assert main(["eval", "--qrels", str(qrels_path), "--run", str(run_path), "-m", "GAP(g=[0.3,0.7])",
                 "--per-query"]) == 0
    lines = [line.split("\t") for line in capsys.readouterr().out.strip().splitlines()]
    per_query = {q: float(v) for name, q, v in lines if q != "all"}
    for q, value in per_query.items():
        ranked = sorted(run[q].items(), key=lambda item: (item[1], item[0]), reverse=True)
        labels = np.array([qrels[q].get(d, 0) for d, _ in ranked])
        counts = np.bincount(list(qrels[q].values()), minlength=3)
        expected = gap(-np.arange(len(ranked), dtype=float), labels, g=[0.3, 0.7], grade_counts=counts)
        assert value == pytest.approx(round(float(expected), 4), abs=1e-4)


def test_trec_mode_errors(tmp_path, trec_files, capsys):
    qrels_path, run_path, _, _ = trec_files
    assert main(["eval", "--qrels", str(qrels_path), "--run", str(run_path)]) == 2
    assert "at least one -m" in capsys.readouterr().err
    assert main(["eval", "--qrels", str(qrels_path), "--run", str(run_path), "-m", "FOO@3"]) == 2
    assert "unknown measure" in capsys.readouterr().err
    assert main(["eval", "--qrels", str(qrels_path), "--run", str(run_path), "-m", "P"]) == 2
    assert "needs a cutoff" in capsys.readouterr().err
    bad_run = tmp_path / "bad_run"
    bad_run.write_text("1 Q0 D1 1 0.5 tag\n1 Q0 D2 2 oops tag\n")
    assert main(["eval", "--qrels", str(qrels_path), "--run", str(bad_run), "-m", "AP"]) == 2
    assert "line 2" in capsys.readouterr().err
    bad_qrels = tmp_path / "bad_qrels"
    bad_qrels.write_text("1 0 D1\n")
    assert main(["eval", "--qrels", str(bad_qrels), "--run", str(run_path), "-m", "AP"]) == 2
    assert "4 fields" in capsys.readouterr().err
    assert main(["eval", "--qrels", str(qrels_path), "-m", "AP"]) == 2
    assert main(["eval", "--qrels", str(qrels_path), "--run", str(run_path), "--letor", "x", "-m", "AP"]) == 2


def test_measure_names_parse_like_ir_measures():
    assert parse_measure("nDCG@10").kwargs == {"k": 10}
    assert parse_measure("P(rel=2)@5").kwargs == {"threshold": 2, "k": 5}
    assert parse_measure("GAP(g=[0.5,0.5])").kwargs == {"g": [0.5, 0.5]}
    assert parse_measure("RBP(p=0.9)").kwargs == {"persistence": 0.9}
    assert parse_measure("eRAP(p=[0,0.5,1])@20").kwargs == {"p": [0, 0.5, 1], "k": 20}
    for bad in ["", "nDCG@", "nDCG(foo=1)@10", "Q@10", "2AP"]:
        with pytest.raises(ValueError):
            parse_measure(bad)


def test_trec_mode_ndcg_means_gaprank_s_and_trec_eval_s_names_mean_trec_eval_s(trec_files, capsys):
    """nDCG in TREC mode is gaprank's (gain 2^grade - 1), as everywhere; trec_eval's ndcg and ndcg_cut.10, or
    --conventions trec, give trec_eval's and ir_measures' (the grade as gain); the output says which it used."""
    qrels_path, run_path, qrels, run = trec_files
    assert max(v for judged in qrels.values() for v in judged.values()) == 2  # graded: exp2 would differ
    assert main(["eval", "--qrels", str(qrels_path), "--run", str(run_path), "-m", "ndcg", "-m", "ndcg_cut.10",
                 "-m", "nDCG@10", "-m", "nDCG(gain=linear)@10", "--per-query", "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    theirs = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg", "ndcg_cut"}).evaluate(run)
    for q, values in out["per_query"].items():
        assert values["ndcg"] == pytest.approx(theirs[q]["ndcg"], rel=1e-9)
        assert values["ndcg_cut.10"] == pytest.approx(theirs[q]["ndcg_cut_10"], rel=1e-9)
        assert values["nDCG(gain=linear)@10"] == pytest.approx(theirs[q]["ndcg_cut_10"], rel=1e-9)
    assert out["nDCG@10"] != pytest.approx(out["ndcg_cut.10"], rel=1e-3)
    assert out["settings"]["nDCG@10"] == {"gain": "2^grade - 1 (exp2)", "discount": "1/log2(r+1)"}
    assert out["settings"]["ndcg_cut.10"]["gain"] == "grade (linear)"
    assert main(["eval", "--qrels", str(qrels_path), "--run", str(run_path), "-m", "nDCG@10", "-m", "AP",
                 "--conventions", "trec", "--per-query", "--format", "json"]) == 0
    trec = json.loads(capsys.readouterr().out)
    for q, values in trec["per_query"].items():
        assert values["nDCG@10"] == pytest.approx(theirs[q]["ndcg_cut_10"], rel=1e-9)
    assert main(["eval", "--qrels", str(qrels_path), "--run", str(run_path), "-m", "nDCG@10", "-m", "AP"]) == 0
    captured = capsys.readouterr()
    assert "# nDCG@10: gain 2^grade - 1 (exp2), discount 1/log2(r+1)" in captured.err
    assert captured.out.startswith("nDCG@10\tall\t")


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full on this system")
def test_output_to_a_full_device_is_one_line(tmp_path):
    (tmp_path / "qrels").write_text("1 0 d1 2\n1 0 d2 1\n")
    (tmp_path / "run").write_text("1 Q0 d1 1 2.0 r\n1 Q0 d2 2 1.0 r\n")
    with open("/dev/full", "w") as full:
        done = subprocess.run([sys.executable, "-m", "gaprank", "eval", "--qrels", str(tmp_path / "qrels"), "--run",
                               str(tmp_path / "run"), "-m", "GAP", "--per-query"], stdout=full, stderr=subprocess.PIPE,
                              text=True)
    assert done.returncode == 2 and done.stderr == "gaprank eval: error: cannot write the output: No space left on device\n"


def test_a_measure_scale_above_the_qrels_top_grade(tmp_path, capsys):
    """ERR(max_grade=4), GAP(g of 4 grades), eRAP(p of grades 0..4) on qrels graded 0..2: the judged
    documents are counted on the measure's scale (grades 3 and 4 have none), as the functions do."""
    from gaprank.metrics import erap, err

    (tmp_path / "qrels").write_text("".join(f"1 0 d{i} {y}\n" for i, y in enumerate([2, 1, 0, 2, 1], 1)))
    (tmp_path / "run").write_text("".join(f"1 Q0 d{i} {i} {6 - i} r\n" for i in range(1, 6)))
    measures = ["ERR(max_grade=4)@20", "GAP(g=[0.25,0.25,0.25,0.25])", "eRAP(p=[0,0.25,0.5,0.75,1])"]
    assert main(["eval", "--qrels", str(tmp_path / "qrels"), "--run", str(tmp_path / "run"), "--format", "json",
                 *[a for m in measures for a in ("-m", m)]]) == 0
    out = json.loads(capsys.readouterr().out)
    s, y = np.array([5.0, 4, 3, 2, 1]), np.array([2, 1, 0, 2, 1])
    assert out[measures[0]] == pytest.approx(float(err(s, y, max_grade=4, k=20)), abs=1e-12)
    assert out[measures[1]] == pytest.approx(float(gap(s, y, g=[0.25] * 4)), abs=1e-12)
    assert out[measures[2]] == pytest.approx(float(erap(s, y, p=[0, 0.25, 0.5, 0.75, 1])), abs=1e-12)


@pytest.mark.parametrize("rel", [1, 2])
def test_trec_mode_rr_recall_rprec_success_match_trec_eval(tmp_path, trec_files, capsys, rel):
    """recip_rank, recall_k, Rprec and success_k on graded qrels (relevance_level = rel), a query without any
    relevant document included (trec_eval scores it 0)."""
    qrels_path, run_path, qrels, run = trec_files
    qrels = {**qrels, "50": {"N1": 0, "N2": 0}}
    run = {**run, "50": {"N1": 0.5, "N2": 0.7, "N3": 0.1}}
    (tmp_path / "qrels2").write_text(qrels_path.read_text() + "50 0 N1 0\n50 0 N2 0\n")
    (tmp_path / "run2").write_text(run_path.read_text() + "50 Q0 N1 1 0.5 t\n50 Q0 N2 2 0.7 t\n50 Q0 N3 3 0.1 t\n")
    cutoffs = {"recall": (5, 10, 15), "success": (1, 5, 10)}
    ours = [f"RR(rel={rel})", f"Rprec(rel={rel})"] + [f"R(rel={rel})@{k}" for k in cutoffs["recall"]] + \
        [f"Success(rel={rel})@{k}" for k in cutoffs["success"]]
    assert main(["eval", "--qrels", str(tmp_path / "qrels2"), "--run", str(tmp_path / "run2"), "--per-query",
                 "--format", "json", *[a for m in ours for a in ("-m", m)]]) == 0
    out = json.loads(capsys.readouterr().out)
    theirs = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank", "Rprec", "recall", "success"},
                                            relevance_level=rel).evaluate(run)
    names = ["recip_rank", "Rprec"] + [f"recall_{k}" for k in cutoffs["recall"]] + \
        [f"success_{k}" for k in cutoffs["success"]]
    assert sorted(out["per_query"], key=int) == sorted(theirs, key=int)
    for ours_name, their_name in zip(ours, names, strict=True):
        expected = {q: theirs[q][their_name] for q in theirs}
        assert {q: out["per_query"][q][ours_name] for q in theirs} == pytest.approx(expected, rel=1e-12, abs=1e-12), \
            ours_name
        assert out[ours_name] == pytest.approx(np.mean(list(expected.values())), rel=1e-9)
    assert len({v for q in theirs for v in [theirs[q]["recip_rank"]]}) > 3  # the test is not vacuous


def test_evaluate_trec_is_the_cli_s_path_and_refuses_garbage_in_one_line(trec_files, capsys):
    from gaprank import GaprankInputError
    from gaprank.metrics import evaluate_trec

    qrels_path, run_path, qrels, run = trec_files
    assert main(["eval", "--qrels", str(qrels_path), "--run", str(run_path), "-m", "GAP", "-m", "MRR",
                 "--format", "json"]) == 0
    cli = json.loads(capsys.readouterr().out)
    result = evaluate_trec(qrels, {**run, "99": {"X": 1.0}}, ["GAP", "MRR"])
    assert result.means == pytest.approx({"GAP": cli["GAP"], "MRR": cli["MRR"]}, abs=1e-15)
    assert result.query_ids == [str(q) for q in range(1, 9)]
    cases = [
        (lambda: evaluate_trec(qrels, run, []), "non-empty list"),
        (lambda: evaluate_trec(qrels, run, ["GAP", "GAP"]), "unique"),
        (lambda: evaluate_trec(qrels, run, [3]), "measure strings"),
        (lambda: evaluate_trec({"1": {"a": 1.5}}, {"1": {"a": 1.0}}, "GAP"),
         r"^qrels: query 1, document a: grade 1.5 is not an integer"),
        (lambda: evaluate_trec({"1": {"a": "x"}}, {"1": {"a": 1.0}}, "GAP"), "grade 'x' is not an integer"),
        (lambda: evaluate_trec({"1": {"a": 1}}, {"1": {"a": float("nan")}}, "GAP"),
         r"^run: query 1, document a: score nan is not a finite number"),
        (lambda: evaluate_trec({"1": {"a": 1}}, {"2": {"a": 1.0}}, "GAP"), "no query of the run has judgments"),
        (lambda: evaluate_trec([("1", "a", 1)], run, "GAP"), "must be mappings"),
        (lambda: evaluate_trec(qrels, run, "GAP", ties="random"), "ties"),
    ]
    for call, message in cases:
        with pytest.raises(GaprankInputError, match=message) as caught:
            call()
        assert "\n" not in str(caught.value)


def test_evaluate_trec_compares_integer_and_string_ids_as_text():
    """Ids are text, as trec_eval reads them: int ids on both sides, or int against str, give the numbers of
    string ids (before: a raw AttributeError, or 0 for a perfect ranking); an id of another type is one line."""
    import pytest

    from gaprank import GaprankInputError
    from gaprank.metrics import evaluate_trec

    qrels = {"7": {"d1": 2, "d2": 0, "d3": 1}, "8": {"d4": 1, "d5": 0}}
    run = {"7": {"d1": 0.9, "d2": 0.1, "d3": 0.5}, "8": {"d4": 0.2, "d5": 0.4}}
    expected = evaluate_trec(qrels, run, ["GAP", "nDCG@2"]).means
    int_qrels = {int(q): docs for q, docs in qrels.items()}
    int_run = {int(q): docs for q, docs in run.items()}
    for a, b in ((int_qrels, int_run), (int_qrels, run), (qrels, int_run)):
        assert evaluate_trec(a, b, ["GAP", "nDCG@2"]).means == expected
    for bad in ({7.0: {"d1": 1}}, {True: {"d1": 1}}, {"7": {3.5: 1}}):
        with pytest.raises(GaprankInputError, match="ids must be strings or integers") as caught:
            evaluate_trec(bad, run, ["GAP"])
        assert "\n" not in str(caught.value)
    with pytest.raises(GaprankInputError, match="appears both as a string and as an integer"):
        evaluate_trec({"7": {"d1": 1}, 7: {"d2": 1}}, run, ["GAP"])
