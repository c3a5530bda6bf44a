"""The grouped-lists layer (gaprank._grouped): one bucketing rule, every query once, values per query in the
input's order, from flat rows, query ids or a padded mask alike."""

from __future__ import annotations

import numpy as np
import pytest

import gaprank
from gaprank import GaprankInputError
from gaprank._grouped import GroupedLists, MeasureCall, length_buckets


def _flat(seed=0):
    """Flat rows of 60 queries of 1..40 documents, a few of them long, labels 0..2, tied scores."""
    rng = np.random.default_rng(seed)
    sizes = np.concatenate([rng.integers(1, 40, 57), [1, 300, 1]])
    rng.shuffle(sizes)
    labels = rng.integers(0, 3, sizes.sum())
    scores = rng.normal(size=sizes.sum()).round(1)
    return scores, labels, sizes


def _one_by_one(function, scores, labels, sizes, **keywords):
    """The oracle: each query alone, as one list."""
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    return np.array([float(function(scores[None, s:s + n], labels[None, s:s + n], **keywords))
                     for s, n in zip(starts, sizes, strict=True)])


CALLS = [MeasureCall("GAP", gaprank.gap, {"g": [0.5, 0.5]}), MeasureCall("nDCG@3", gaprank.ndcg, {"k": 3}),
         MeasureCall("P@5", gaprank.precision, {"k": 5, "short_list": "pad"})]


def test_every_query_once_including_empty_ones():
    sizes = np.array([3, 0, 1, 7, 0, 2, 16, 1])
    buckets = length_buckets(sizes, max_cells=8)
    seen = np.sort(np.concatenate([b.queries for b in buckets]))
    assert seen.tolist() == list(range(sizes.size))
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    for b in buckets:
        assert (b.mask.sum(1) == sizes[b.queries]).all()
        for query, rows, mask in zip(b.queries, b.rows, b.mask, strict=True):
            assert rows[mask].tolist() == list(range(starts[query], starts[query] + sizes[query]))
    assert len(length_buckets(sizes)) == 5  # empty; 1; 2..3; 7; 16: one bucket per length class present


def test_values_come_back_in_the_queries_order():
    scores, labels, sizes = _flat()
    out = GroupedLists(sizes).evaluate(CALLS, scores, labels)
    assert list(out) == ["GAP", "nDCG@3", "P@5"]
    for call in CALLS:
        np.testing.assert_allclose(out[call.name], _one_by_one(call.function, scores, labels, sizes, **call.keywords),
                                   rtol=0, atol=1e-12)


def test_a_mask_leaves_documents_out():
    scores, labels, sizes = _flat(1)
    keep = np.random.default_rng(1).random(scores.size) < 0.7
    kept_sizes = np.add.reduceat(keep, np.concatenate([[0], np.cumsum(sizes)[:-1]]))
    call = MeasureCall("GAP", gaprank.gap, {"g": [0.5, 0.5], "empty_value": -1.0}, mask=keep)
    out = GroupedLists(sizes).evaluate([call, MeasureCall("all", gaprank.gap, {"g": [0.5, 0.5]})], scores, labels)
    alone = GroupedLists(kept_sizes).evaluate([MeasureCall("GAP", gaprank.gap, call.keywords)], scores[keep], labels[keep])
    np.testing.assert_allclose(out["GAP"], alone["GAP"], rtol=0, atol=1e-12)
    assert not np.allclose(out["GAP"], out["all"])  # the mask did leave documents out


def test_one_document_and_empty_queries():
    scores = np.array([0.3, 0.9, 0.1, 0.5])
    labels = np.array([2, 1, 0, 1])
    sizes = np.array([1, 0, 3, 0])
    calls = [MeasureCall("GAP", gaprank.gap, {"g": [0.5, 0.5], "empty_value": 0.25}),
             MeasureCall("nDCG", gaprank.ndcg, {"empty_value": 0.75})]
    out = GroupedLists(sizes).evaluate(calls, scores, labels)
    assert out["GAP"][[0, 1, 3]].tolist() == [1.0, 0.25, 0.25]
    assert out["nDCG"][[0, 1, 3]].tolist() == [1.0, 0.75, 0.75]
    assert out["GAP"][2] == pytest.approx(float(gaprank.gap(scores[None, 1:], labels[None, 1:], g=[0.5, 0.5])))


def test_a_padded_input_and_a_flat_input_give_the_same_values():
    scores, labels, sizes = _flat(2)
    rng = np.random.default_rng(2)
    width = int(sizes.max()) + 5
    # each query's documents at random slots of its row (holes in the mask), in their order
    mask = np.zeros((sizes.size, width), dtype=bool)
    for i, n in enumerate(sizes):
        mask[i, np.sort(rng.choice(width, n, replace=False))] = True
    mask = np.vstack([mask, np.zeros((1, width), dtype=bool)])  # and a query without documents
    padded_scores = np.full(mask.shape, 9.0)
    padded_labels = np.full(mask.shape, 2)
    padded_scores[mask], padded_labels[mask] = scores, labels
    grouped = GroupedLists.from_padded(mask)
    assert grouped.group_sizes.tolist() == sizes.tolist() + [0]
    padded = grouped.evaluate(CALLS, padded_scores, padded_labels)
    flat = GroupedLists(sizes).evaluate(CALLS, scores, labels)
    for call in CALLS:
        np.testing.assert_allclose(padded[call.name][:-1], flat[call.name], rtol=0, atol=1e-12)
        direct = call.function(padded_scores, padded_labels, mask=mask, reduction="none", **call.keywords)
        np.testing.assert_allclose(padded[call.name], direct, rtol=0, atol=1e-12)


def test_query_ids_in_any_order():
    scores, labels, sizes = _flat(3)
    ids = np.repeat(np.arange(sizes.size) * 10 + 5, sizes)
    shuffle = np.random.default_rng(3).permutation(scores.size)
    grouped = GroupedLists.from_query_ids(ids[shuffle])
    assert grouped.query_ids.tolist() == (np.arange(sizes.size) * 10 + 5).tolist()
    assert grouped.group_sizes.tolist() == sizes.tolist()
    # a query's documents keep their input order (ties)
    out = grouped.evaluate(CALLS, scores[shuffle], labels[shuffle])
    restored = np.concatenate([shuffle[ids[shuffle] == q] for q in grouped.query_ids])
    expected = GroupedLists(sizes).evaluate(CALLS, scores[restored], labels[restored])
    for call in CALLS:
        np.testing.assert_array_equal(out[call.name], expected[call.name])


def test_bad_input_is_named():
    grouped = GroupedLists([2, 3])
    with pytest.raises(GaprankInputError, match=r"scores must have one entry per document \(5\)"):
        grouped.evaluate(CALLS, np.zeros(4), np.zeros(5, dtype=int))
    with pytest.raises(GaprankInputError, match="names must be unique"):
        grouped.evaluate([CALLS[0], CALLS[0]], np.zeros(5), np.zeros(5, dtype=int))
    with pytest.raises(GaprankInputError, match="non-negative integers"):
        GroupedLists([2, -1])
    with pytest.raises(GaprankInputError, match="mask's shape"):
        GroupedLists.from_padded(np.ones((2, 3), dtype=bool)).evaluate(CALLS, np.zeros((2, 4)), np.zeros((2, 3), dtype=int))
    out = GroupedLists(np.zeros(0, dtype=np.int64)).evaluate(CALLS, np.zeros(0), np.zeros(0, dtype=int))
    assert {name: values.size for name, values in out.items()} == {"GAP": 0, "nDCG@3": 0, "P@5": 0}


def test_training_batches_are_length_sorted_runs_padded_like_buckets():
    """Training batches: the queries sorted by length (stable), runs of a fixed number of queries, each padded
    to its longest with the rows of its queries' documents; a split's grouped lists are its own."""
    from gaprank.data import load_fold

    sizes = np.array([3, 1, 2, 3, 0, 2])
    grouped = GroupedLists(sizes)
    runs = grouped.batches(4)
    assert [run.tolist() for run in runs] == [[4, 1, 2, 5], [0, 3]]
    bucket = grouped.padded(runs[1])
    assert bucket.rows.tolist() == [[0, 1, 2], [6, 7, 8]] and bucket.mask.all()
    first = grouped.padded(runs[0])
    assert first.mask.tolist() == [[False, False], [True, False], [True, True], [True, True]]
    assert first.rows[first.mask].tolist() == [3, 4, 5, 9, 10]
    assert grouped.padded([4]).mask.tolist() == [[False]]
    with pytest.raises(GaprankInputError, match="at least one query"):
        grouped.batches(0)
    for garbage in ([6], [-1], [[0, 1]], [0.5], ["a"]):
        with pytest.raises(GaprankInputError, match=r"queries must be a 1-D array of query indices 0\.\.5"):
            grouped.padded(garbage)
    split = load_fold("OHSUMED", 1).train
    assert np.array_equal(split.grouped.group_sizes, split.group_sizes)
    every = np.concatenate(split.grouped.batches(8))
    assert sorted(every.tolist()) == list(range(split.num_queries))
    assert np.all(np.diff(split.group_sizes[every]) >= 0)


def test_query_runs_and_group_pointers_are_the_same_groups():
    """A LETOR file's runs of query ids and XGBoost's group pointer give the groups their sizes say; a query whose
    rows are apart, or a pointer that does not cover the rows, is one line."""
    runs = GroupedLists.from_query_runs([5, 5, 6, 6, 6, 9])
    assert runs.group_sizes.tolist() == [2, 3, 1] and runs.query_ids.tolist() == [5, 6, 9]
    assert runs.starts.tolist() == [0, 2, 5]
    pointer = GroupedLists.from_pointer(np.array([0, 2, 5, 6], dtype=np.uint32), 6)
    assert pointer.group_sizes.tolist() == [2, 3, 1]
    with pytest.raises(GaprankInputError, match="rows of query 5 are not contiguous"):
        GroupedLists.from_query_runs([5, 6, 5])
    with pytest.raises(GaprankInputError, match="qid must be a non-empty 1-D array"):
        GroupedLists.from_query_runs([], what="qid")
    for bad in ([0, 2, 2, 6], [1, 6], [0, 5]):
        with pytest.raises(GaprankInputError, match="do not cover the 6 rows"):
            GroupedLists.from_pointer(np.array(bad), 6)


def test_pair_buckets_hold_each_query_once_sorted_by_length_with_the_padding_row_given():
    grouped = GroupedLists([4, 1, 3, 0, 2])
    buckets = grouped.pair_buckets([0, 1, 2, 4], rows=None, fill=10)
    queries = np.concatenate([bucket.queries for bucket in buckets])
    assert sorted(queries.tolist()) == [0, 1, 2, 4]
    assert grouped.group_sizes[queries].tolist() == sorted(grouped.group_sizes[queries].tolist())
    for bucket in buckets:
        assert (bucket.rows[~bucket.mask] == 10).all()
        for query, row, real in zip(bucket.queries, bucket.rows, bucket.mask, strict=True):
            assert row[real].tolist() == list(range(grouped.starts[query], grouped.starts[query] + grouped.group_sizes[query]))
