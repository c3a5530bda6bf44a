"""LETOR mode against the LETOR evaluation tools' conventions, implemented independently here
(a line-by-line reading of Eval-Score-3.0.pl / Eval-Score-4.0.pl), on real OHSUMED files with ties."""

from __future__ import annotations

import gzip
import json
import math
import re
from pathlib import Path

import numpy as np
import pytest

from gaprank.cli.main import main
from gaprank.data import fold_files, read_letor
from gaprank.metrics import evaluate_letor

NDCG_GAIN = {0: 0, 1: 1, 2: 3}


def _tool(lines, preds, version=3, top=10):
    """Per-query (NDCG@1..10, P@1..10, MAP) the way the Perl tools compute them."""
    queries: dict[str, list] = {}
    for line_num, (line, pred) in enumerate(zip(lines, preds, strict=True), 1):
        label, qid = line.split()[:2]
        queries.setdefault(qid[4:], []).append((int(label), float(pred), line_num))
    out = {}
    for qid, docs in queries.items():
        docs = sorted(docs, key=lambda d: d[2])  # by line number ...
        docs = sorted(docs, key=lambda d: -d[1])  # ... then a stable sort by prediction
        rates = [d[0] for d in docs]
        n = len(rates)
        prec = []
        hits = 0
        for i in range(top):
            if i < n:
                hits += rates[i] >= 1
            elif version == 3:
                break  # LETOR 3.0 leaves P@k unset for short lists
            prec.append(hits / (i + 1))
        rel, ap = 0, 0.0
        for i, r in enumerate(rates):
            if r >= 1:
                rel += 1
                ap += rel / (i + 1)
        ap = ap / rel if rel else 0.0

        def dcg(rs):
            out_d, total = [], 0.0
            for i in range(min(top, n)):
                total += NDCG_GAIN[rs[i]] * (1 if i < 2 else math.log(2) / math.log(i + 1))
                out_d.append(total)
            return out_d

        real, best = dcg(rates), dcg(sorted(rates, reverse=True))
        ndcg = [r / b if b else 0.0 for r, b in zip(real, best, strict=True)]
        pad = lambda v: v + [0.0] * (top - len(v))  # noqa: E731 - unset entries add 0 to the sums
        out[qid] = pad(ndcg) + pad(prec) + [ap]
    return out


def _ohsumed_test_lines(fold=1):
    path = fold_files("OHSUMED", fold)["test"][0]
    return path, gzip.open(path, "rt").read().splitlines()


@pytest.mark.parametrize("fold, decimals", [(1, 1), (3, 0), (5, None)])
def test_letor3_conventions_on_real_ohsumed_with_ties(fold, decimals):
    path, lines = _ohsumed_test_lines(fold)
    split = read_letor(path)
    rng = np.random.default_rng(fold)
    preds = split.features[:, 10] + rng.normal(scale=0.3, size=len(lines))
    if decimals is not None:
        preds = np.round(preds, decimals)  # lots of ties: file order decides
    ours = evaluate_letor(preds, split.labels, split.group_sizes, conventions="letor3")
    tool = _tool(lines, preds, version=3)
    names = [f"NDCG@{k}" for k in range(1, 11)] + [f"P@{k}" for k in range(1, 11)] + ["MAP"]
    for i, qid in enumerate(split.query_ids):
        np.testing.assert_allclose([ours[n][i] for n in names], tool[qid], rtol=1e-12, atol=1e-15)


def _short_queries_file(tmp_path: Path) -> tuple[Path, list[str], np.ndarray]:
    rng = np.random.default_rng(7)
    lines = []
    for q, n in enumerate([3, 12, 7, 1, 10], 1):
        for d in range(n):
            label = int(rng.integers(0, 3)) if q != 4 else 0
            lines.append(f"{label} qid:{q} 1:{rng.random():.3f} 2:{rng.random():.3f} #docid = d{q}_{d}")
    path = tmp_path / "short.txt"
    path.write_text("\n".join(lines) + "\n")
    preds = np.round(rng.random(len(lines)), 1)
    return path, lines, preds


@pytest.mark.parametrize("version", [3, 4])
def test_short_lists_follow_each_tool(tmp_path, version):
    path, lines, preds = _short_queries_file(tmp_path)
    split = read_letor(path)
    ours = evaluate_letor(preds, split.labels, split.group_sizes, conventions=f"letor{version}")
    tool = _tool(lines, preds, version=version)
    names = [f"NDCG@{k}" for k in range(1, 11)] + [f"P@{k}" for k in range(1, 11)] + ["MAP"]
    for i, qid in enumerate(split.query_ids):
        np.testing.assert_allclose([ours[n][i] for n in names], tool[qid], rtol=1e-12, atol=1e-15)


def test_cli_letor_mode_json_matches_library(tmp_path, capsys):
    path, lines = _ohsumed_test_lines(2)
    split = read_letor(path)
    preds = np.round(split.features[:, 5], 2)
    pred_file = tmp_path / "pred.txt"
    pred_file.write_text("\n".join(f"{p}" for p in preds) + "\n")
    assert main(["eval", "--letor", str(path), "--scores", str(pred_file), "--format", "json", "--per-query",
                 "--g", "0.5,0.5"]) == 0
    out = json.loads(capsys.readouterr().out)
    expected_keys = [f"NDCG@{k}" for k in range(1, 11)] + [f"P@{k}" for k in range(1, 11)] + ["MAP", "GAP", "xGAP", "eGAP"]
    assert [k for k in out if k != "per_query"] == expected_keys
    tool = _tool(lines, preds)
    means = np.mean(list(tool.values()), axis=0)
    np.testing.assert_allclose([out[k] for k in expected_keys[:21]], means, rtol=1e-12)
    assert set(out["per_query"]) == set(split.query_ids)
    ours = evaluate_letor(preds, split.labels, split.group_sizes, g=[0.5, 0.5])
    assert out["GAP"] == pytest.approx(float(np.mean(ours["GAP"])))
    # text mode prints every measure too
    assert main(["eval", "--letor", str(path), "--scores", str(pred_file)]) == 0
    text = capsys.readouterr().out
    assert "NDCG@10" in text and "eGAP" in text


def test_cli_letor_mode_errors(tmp_path, capsys):
    path, lines = _ohsumed_test_lines(2)
    short = tmp_path / "short_pred.txt"
    short.write_text("0.1\n0.2\n")
    assert main(["eval", "--letor", str(path), "--scores", str(short)]) == 2
    assert "has 2 scores but the ranking file has" in capsys.readouterr().err
    bad = tmp_path / "bad_pred.txt"
    bad.write_text("0.1\nabc\n")
    assert main(["eval", "--letor", str(path), "--scores", str(bad)]) == 2
    assert "line 2" in capsys.readouterr().err
    nan = tmp_path / "nan_pred.txt"
    nan.write_text("0.1\nnan\n")
    assert main(["eval", "--letor", str(path), "--scores", str(nan)]) == 2
    assert "not finite" in capsys.readouterr().err
    assert main(["eval", "--letor", str(tmp_path / "missing.txt"), "--scores", str(short)]) == 2
    assert "no such file" in capsys.readouterr().err
    assert main(["eval", "--letor", str(path)]) == 2
    assert "exactly one of --scores" in capsys.readouterr().err
    assert main(["eval", "--letor", str(path), "--feature", "3", "--g", "0.5,0.6"]) == 2
    assert "must sum to 1" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        main(["eval", "--format", "xml"])
    assert exc.value.code == 2


def test_baseline_hint_reproduces_the_data_sets_own_conventions(tmp_path, capsys):
    import shlex

    from gaprank.data import read_letor, read_scores

    out = tmp_path / "mq2008_fold1.txt"
    assert main(["baseline", "--dataset", "MQ2008", "--fold", "1", "--out", str(out)]) == 0
    hint = [line for line in capsys.readouterr().out.splitlines() if line.startswith("evaluate with: ")][0]
    argv = shlex.split(hint.removeprefix("evaluate with: gaprank "))
    assert argv[-2:] == ["--conventions", "letor4"]
    assert main([*argv, "--format", "json"]) == 0
    followed = json.loads(capsys.readouterr().out)
    split = read_letor(argv[argv.index("--letor") + 1], null="nan")
    scores = read_scores(out)
    letor4 = evaluate_letor(scores, split.labels, split.group_sizes, conventions="letor4")
    letor3 = evaluate_letor(scores, split.labels, split.group_sizes, conventions="letor3")
    assert followed["P@10"] == pytest.approx(letor4["P@10"].mean(), abs=1e-12)
    assert followed["P@10"] > letor3["P@10"].mean() + 0.05  # MQ2008's short lists: what the old hint got wrong


@pytest.mark.parametrize("argv, message", [
    (["--alpha", "-1", "--out", "{tmp}/x.txt"], "--alpha must be a finite number >= 0; got -1.0"),
    (["--alpha", "nan", "--out", "{tmp}/x.txt"], "--alpha must be a finite number >= 0; got nan"),
    (["--out", "{tmp}"], "is a directory; give a file name"),
    (["--out", "{tmp}/a_file/x.txt"], "cannot write .*a_file/x.txt: .*a_file is not a directory"),
])
def test_baseline_bad_arguments_are_one_line_and_exit_2(tmp_path, capsys, argv, message):
    (tmp_path / "a_file").write_text("")
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    assert main(["baseline", "--dataset", "OHSUMED", *argv]) == 2
    err = capsys.readouterr().err
    assert re.search(message, err) and err.count("\n") == 1


def test_a_label_above_the_scale_is_exit_2_not_nan(tmp_path, capsys):
    letor = tmp_path / "big.txt"
    letor.write_text("1024 qid:1 1:0.5\n0 qid:1 1:0.1\n")
    scores = tmp_path / "s.txt"
    scores.write_text("0.5\n0.1\n")
    assert main(["eval", "--letor", str(letor), "--scores", str(scores), "--format", "json"]) == 2
    captured = capsys.readouterr()
    assert "line 1: label 1024 is above 30" in captured.err and "NaN" not in captured.out


def test_conventions_apply_by_parameter_name_to_a_registered_measure():
    """A newly registered measure with nDCG's parameters follows letor3 / letor4 / trec like nDCG (before, the
    conventions dispatched on nDCG's, DCG's and P@k's functions, and a new measure silently ignored them); a
    binary one with short_list follows P@k's rule."""
    import torch

    from gaprank.extend import GainDiscountForm, MeasureInfo, ParamInfo, register, unregister
    from gaprank.metrics import get_conventions, parse_measure

    ndcg = parse_measure("nDCG").info
    graded = register(MeasureInfo("ToyNDCG", ndcg.form, ndcg.params))
    binary = register(MeasureInfo("ToyP", GainDiscountForm(
        lambda c, params: (torch.arange(c + 1) >= 1).to(torch.float64), lambda positions, params: 1.0 / positions),
        (ParamInfo("short_list", "short_list", str, "pad", "as P@k's"),)))
    try:
        for name in ("letor3", "letor4", "trec"):
            conventions = get_conventions(name)
            assert conventions.keywords(graded) == conventions.keywords(ndcg.function)
            assert conventions.keywords(parse_measure("ToyNDCG@10")) == conventions.keywords(ndcg)
            assert conventions.keywords(binary.function) == conventions.keywords(parse_measure("P@5"))
        assert get_conventions("letor4").keywords(binary)["short_list"] == "pad"
        assert get_conventions("letor3").keywords(graded)["gain"] == "exp2"
        assert get_conventions("trec").keywords(graded) == {"ties": "stable", "empty_value": 0.0, "gain": "linear",
                                                            "discount": "log2p1", "short_list": "pad"}
    finally:
        unregister("ToyNDCG")
        unregister("ToyP")
