"""Evaluation in length buckets: every query once, padded at most to twice its length, bounded buckets;
the values equal one padded evaluation (whole-set grade scale included); memory follows the data.

One private unit on purpose: ``length_buckets``, the one bucketing rule, checked on its own bounds."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from shared import pad_by_group

from gaprank import metrics as M
from gaprank._grouped import length_buckets
from gaprank.lightgbm import ranking_feval
from gaprank.metrics import evaluate_letor

ROOT = Path(__file__).resolve().parents[1]


def test_every_query_once_padded_at_most_twice():
    rng = np.random.default_rng(0)
    sizes = np.concatenate([rng.integers(1, 300, 500), [20_000], rng.integers(1, 5, 50)])
    buckets = length_buckets(sizes, max_cells=4096)
    seen = np.sort(np.concatenate([b.queries for b in buckets]))
    assert seen.tolist() == list(range(sizes.size))
    for b in buckets:
        assert (b.mask.sum(1) == sizes[b.queries]).all()
        assert b.mask.shape[1] <= 2 * sizes[b.queries].min()  # lengths within a factor of two
        assert b.queries.size == 1 or b.mask.size <= 4096
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    b = buckets[0]
    np.testing.assert_array_equal(b.rows[b.mask], np.concatenate([np.arange(starts[q], starts[q] + sizes[q])
                                                                  for q in b.queries]))


def _data(seed=1):
    rng = np.random.default_rng(seed)
    sizes = np.concatenate([rng.integers(1, 8, 40), rng.integers(50, 120, 10), [700]])
    labels = rng.integers(0, 2, sizes.sum())
    labels[-700:] = rng.integers(0, 4, 700)  # grade 3 only in the longest query: its bucket alone sees it
    scores = rng.normal(size=sizes.sum()).round(1)  # ties
    return scores, labels, sizes


def test_bucketed_evaluation_equals_one_padded_evaluation():
    scores, labels, sizes = _data()
    s, mask = pad_by_group(scores, sizes)
    y, _ = pad_by_group(labels, sizes)
    out = evaluate_letor(scores, labels, sizes)
    np.testing.assert_allclose(out["GAP"], M.gap(s, y, mask=mask, reduction="none"), rtol=0, atol=1e-15)
    np.testing.assert_allclose(out["NDCG@10"], M.ndcg(s, y, k=10, mask=mask, reduction="none", gain="exp2",
                                                     discount="jk", short_list="zero"), rtol=0, atol=1e-15)
    feval = ranking_feval(["GAP", "ERR", "eGAP", "nDCG@10"])
    values = feval.per_query(scores, labels, sizes)
    np.testing.assert_allclose(values["ERR"], M.err(s, y, mask=mask, reduction="none"), rtol=0, atol=1e-15)
    np.testing.assert_allclose(values["eGAP"], M.egap(s, y, mask=mask, reduction="none"), rtol=0, atol=1e-15)
    assert feval.evaluate(scores, labels, sizes)["GAP"] == pytest.approx(float(M.gap(s, y, mask=mask)), rel=1e-14)


def test_a_skewed_trec_run_takes_memory_of_the_data_not_of_the_longest_query(tmp_path):
    """2,000 queries of 10 documents and one of 20,000: padded, 2,001 x 20,000 slots (gigabytes)."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from bench_trec_eval import PEAK, write_case

    qrels, run = write_case(tmp_path, [10] * 2000 + [20_000])
    script = (PEAK + "import contextlib, io, json, sys\nfrom gaprank.cli.main import main\n"
              "out = io.StringIO()\nwith contextlib.redirect_stdout(out):\n"
              f"    status = main(['eval', '--qrels', {str(qrels)!r}, '--run', {str(run)!r}, '-m', 'ndcg_cut.10', '-m', 'GAP',"
              " '--format', 'json', '--per-query'])\n"
              "print(json.dumps({'status': status, 'peak_mb': _peak_mb(), 'out': json.loads(out.getvalue())}))\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    result = json.loads(done.stdout)
    assert result["status"] == 0 and result["peak_mb"] < 600, result["peak_mb"]  # padded: over 5 GB
    pytrec_eval = pytest.importorskip("pytrec_eval")
    with qrels.open() as fq, run.open() as fr:
        theirs = pytrec_eval.RelevanceEvaluator(pytrec_eval.parse_qrel(fq), {"ndcg_cut_10"}).evaluate(
            pytrec_eval.parse_run(fr))
    ours = result["out"]["per_query"]
    assert len(ours) == 2001
    for qid, values in theirs.items():
        assert ours[qid]["ndcg_cut.10"] == pytest.approx(values["ndcg_cut_10"], abs=1e-12)
