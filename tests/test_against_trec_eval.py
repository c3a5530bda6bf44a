"""AP, P@k and nDCG against trec_eval (pytrec_eval) on real OHSUMED with random scores."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from shared import pad_by_group

import gaprank.metrics as M

pytrec_eval = pytest.importorskip("pytrec_eval")


@pytest.fixture(scope="module")
def ohsumed(ohsumed_fold1):
    from gaprank.data import RankingSplit

    fold = ohsumed_fold1
    return RankingSplit.concatenate([fold.train, fold.vali, fold.test])  # all 106 queries


def _trec_eval(split, scores, measures):
    qrels, run = {}, {}
    for q, d, y, s in zip(split.qids, split.docids, split.labels, scores, strict=True):
        qrels.setdefault(q, {})[d] = int(y)
        run.setdefault(q, {})[d] = float(s)
    return pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run)


def _trec_order(split, scores):
    """Reorder rows within each query as trec_eval ranks ties: score desc, then docid desc (as strings)."""
    docid_rank = np.unique(split.docids, return_inverse=True)[1]  # lexicographic order of the docid strings
    return np.lexsort((-docid_rank, -scores, np.repeat(np.arange(split.num_queries), split.group_sizes)))


@pytest.mark.parametrize("seed, decimals", [(0, None), (1, None), (2, 1)])
def test_ap_p10_ndcg_match_trec_eval(ohsumed, seed, decimals):
    rng = np.random.default_rng(seed)
    scores = rng.normal(size=len(ohsumed.labels))
    if decimals is not None:  # many ties: ranked as trec_eval does after reordering rows
        scores = np.round(scores, decimals)
    order = _trec_order(ohsumed, scores)
    feats_order_scores = scores[order]
    labels = ohsumed.labels[order]

    s, mask = pad_by_group(feats_order_scores, ohsumed.group_sizes)
    y, _ = pad_by_group(labels, ohsumed.group_sizes)
    ours = {
        "map": M.average_precision(s, y, mask=mask, reduction="none"),
        "P_10": M.precision(s, y, k=10, mask=mask, reduction="none"),
        "P_5": M.precision(s, y, k=5, mask=mask, reduction="none"),
        "ndcg_cut_10": M.ndcg(s, y, k=10, gain="linear", mask=mask, reduction="none"),
        "ndcg": M.ndcg(s, y, gain="linear", mask=mask, reduction="none"),
        "recip_rank": None,
    }
    theirs = _trec_eval(ohsumed, scores, {"map", "P", "ndcg_cut", "ndcg"})
    qids = ohsumed.query_ids
    assert len(qids) == 106
    for measure, values in ours.items():
        if values is None:
            continue
        expected = np.array([theirs[q][measure] for q in qids])
        np.testing.assert_allclose(values, expected, rtol=1e-9, atol=1e-12, err_msg=measure)


def test_ap_with_recall_base_beyond_the_list_matches_trec_eval(ohsumed):
    """Truncate each run to its top 20: trec_eval still divides AP by all judged relevant documents."""
    rng = np.random.default_rng(5)
    scores = rng.normal(size=len(ohsumed.labels))

    s, mask = pad_by_group(scores, ohsumed.group_sizes)
    y, _ = pad_by_group(ohsumed.labels, ohsumed.group_sizes)
    counts = np.stack([np.bincount(y[i][mask[i]], minlength=3) for i in range(len(y))])
    # keep the top 20 of each query in the list, but the full recall base in grade_counts
    rank = np.argsort(np.argsort(-np.where(mask, s, -np.inf), axis=1, kind="stable"), axis=1)
    top = mask & (rank < 20)
    ours = M.average_precision(torch.tensor(s), torch.tensor(y), mask=torch.tensor(top),
                               grade_counts=torch.tensor(counts), reduction="none").numpy()
    qrels, run = {}, {}
    for i, q in enumerate(ohsumed.query_ids):
        qrels[q] = {str(j): int(y[i, j]) for j in np.flatnonzero(mask[i])}
        run[q] = {str(j): float(s[i, j]) for j in np.flatnonzero(top[i])}
    theirs = pytrec_eval.RelevanceEvaluator(qrels, {"map", "ndcg"}).evaluate(run)
    np.testing.assert_allclose(ours, [theirs[q]["map"] for q in ohsumed.query_ids], rtol=1e-9)
    ours_ndcg = M.ndcg(s, y, mask=top, grade_counts=counts, gain="linear", reduction="none")
    np.testing.assert_allclose(ours_ndcg, [theirs[q]["ndcg"] for q in ohsumed.query_ids], rtol=1e-9)
