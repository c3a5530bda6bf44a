"""gaprank.torchmetrics: RetrievalGAP, RetrievalXGAP, RetrievalEGAP equal gaprank's metrics per query, torchmetrics'
RetrievalMAP where GAP is binary AP, keep torchmetrics' conventions (empty targets, ignore_index, aggregation,
forward) and synchronise across processes."""

from __future__ import annotations

import numpy as np
import pytest
import torch

torchmetrics = pytest.importorskip("torchmetrics")

import gaprank  # noqa: E402
from gaprank import GaprankInputError  # noqa: E402
from gaprank.torchmetrics import RetrievalEGAP, RetrievalGAP, RetrievalXGAP  # noqa: E402

CLASSES = {"gap": RetrievalGAP, "xgap": RetrievalXGAP, "egap": RetrievalEGAP}


def _queries(seed, num_queries=40, grades=3, tie_free=True):
    """Flat preds, targets and shuffled query ids (documents of a query arrive in several batches), and the
    same queries padded in the order of arrival."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 30, num_queries)
    sizes[:3] = [1, 2, 60]
    indexes = np.repeat(rng.permutation(1000)[:num_queries], sizes)
    order = rng.permutation(indexes.size)
    preds = rng.random(indexes.size) if tie_free else rng.integers(0, 4, indexes.size) / 4
    target = rng.integers(0, grades, indexes.size)
    target[indexes == indexes[0]] = 0  # a query without relevant documents
    return (torch.tensor(preds[order]), torch.tensor(target[order]), torch.tensor(indexes[order]))


def _padded(preds, target, indexes):
    ids = sorted(set(indexes.tolist()))
    rows = [[i for i in range(indexes.numel()) if indexes[i] == q] for q in ids]  # arrival order
    width = max(map(len, rows))
    s = torch.zeros(len(ids), width, dtype=torch.float64)
    y = torch.zeros(len(ids), width, dtype=torch.int64)
    mask = torch.zeros(len(ids), width, dtype=torch.bool)
    for b, row in enumerate(rows):
        s[b, : len(row)], y[b, : len(row)], mask[b, : len(row)] = preds[row].double(), target[row], True
    return s, y, mask


@pytest.mark.parametrize("name", list(CLASSES))
@pytest.mark.parametrize("g, top_k", [(None, None), ([0.3, 0.7], None), ([0.5, 0.5], 5)])
def test_values_equal_gaprank_per_query(name, g, top_k):
    preds, target, indexes = _queries(1, tie_free=False)  # ties: kept in order of arrival, as ties="stable"
    metric = CLASSES[name](g=g, top_k=top_k, empty_target_action="skip")
    for chunk in torch.arange(indexes.numel()).chunk(4):  # several updates
        metric.update(preds[chunk].float(), target[chunk], indexes=indexes[chunk])
    s, y, mask = _padded(preds.float(), target, indexes)
    per_query = getattr(gaprank, name)(s, y, mask=mask, g=g, k=top_k, reduction="none", empty_value=float("nan"))
    expected = per_query[~torch.isnan(per_query)].mean()
    assert metric.compute().item() == pytest.approx(expected.item(), rel=1e-6)
    assert metric.compute().dtype == torch.float32
    for action, fill in (("neg", 0.0), ("pos", 1.0)):
        other = CLASSES[name](g=g, top_k=top_k, empty_target_action=action)
        other.update(preds.float(), target, indexes=indexes)
        assert other.compute().item() == pytest.approx(torch.nan_to_num(per_query, nan=fill).mean().item(), rel=1e-6)


def test_binary_gap_equals_torchmetrics_map_and_ndcg_equals_theirs():
    """On binary targets GAP and eGAP are AP: equal to torchmetrics' RetrievalMAP; with all weight on grade 1,
    GAP of graded targets is their MAP of the binarised ones. gaprank's nDCG (gain = grade) equals
    RetrievalNormalizedDCG. Tie-free positive scores (torchmetrics breaks ties arbitrarily)."""
    from torchmetrics.retrieval import RetrievalMAP, RetrievalNormalizedDCG

    preds, target, indexes = _queries(2, num_queries=200, grades=3)
    binary = (target >= 1).long()
    theirs = RetrievalMAP()
    theirs.update(preds.float(), binary, indexes=indexes)
    for ours in (RetrievalGAP(), RetrievalEGAP(), RetrievalXGAP()):
        ours.update(preds.float(), binary, indexes=indexes)
        assert ours.compute().item() == pytest.approx(theirs.compute().item(), abs=1e-6)
    as_bool = RetrievalGAP()  # a bool target, as torchmetrics takes it, is grades 0 and 1
    as_bool.update(preds.float(), binary.bool(), indexes=indexes)
    assert as_bool.compute().item() == pytest.approx(theirs.compute().item(), abs=1e-6)
    graded = RetrievalGAP(g=[1.0, 0.0])
    graded.update(preds.float(), target, indexes=indexes)
    assert graded.compute().item() == pytest.approx(theirs.compute().item(), abs=1e-6)
    s, y, mask = _padded(preds, target, indexes)
    ndcg = RetrievalNormalizedDCG()
    ndcg.update(preds, target, indexes=indexes)
    ours = gaprank.ndcg(s, y, mask=mask, gain="linear", reduction="none")
    assert ndcg.compute().item() == pytest.approx(ours.mean().item(), abs=1e-6)


def test_forward_reset_ignore_index_aggregation_and_float_targets():
    preds, target, indexes = _queries(3)
    metric = RetrievalGAP(g=[0.5, 0.5], ignore_index=-1, aggregation="max")
    batch = metric(preds.float(), target.float(), indexes=indexes)  # forward: the batch's value, kept in the state
    assert batch.item() == pytest.approx(metric.compute().item())
    assert batch.item() == pytest.approx(1.0)  # some query ranks perfectly
    metric.reset()
    noisy = torch.cat([target, torch.full((5,), -1)])
    metric.update(torch.cat([preds, torch.ones(5, dtype=preds.dtype)]).float(), noisy, torch.cat([indexes, indexes[:5]]))
    plain = RetrievalGAP(g=[0.5, 0.5], aggregation="max")
    plain.update(preds.float(), target, indexes)
    assert metric.compute().item() == plain.compute().item()
    with pytest.raises(GaprankInputError, match="no relevant document"):
        strict = RetrievalGAP(empty_target_action="error")
        strict.update(preds.float(), target, indexes)
        strict.compute()


@pytest.mark.parametrize("call, message", [
    (lambda m: m.update(torch.rand(3), torch.tensor([0.0, 1.5, 2.0]), torch.tensor([0, 0, 1])),
     r"^target must hold integer grades 0..30; got 1.5$"),
    (lambda m: m.update(torch.rand(3), torch.tensor([0, 1, 2]), torch.tensor([0.0, 0.0, 1.0])),
     "^indexes must be an integer tensor"),
    (lambda m: m.update(torch.rand(3), torch.tensor([0j, 1j, 2j]), torch.tensor([0, 0, 1])),
     "^target must hold integer grades, in an integer or a float tensor; got torch.complex64"),
    (lambda m: m.update(torch.rand(3), torch.tensor([0, 1]), torch.tensor([0, 0, 1])), "same shape"),
    (lambda m: m.update(torch.tensor([0.1, float("nan"), 0.3]), torch.tensor([0, 1, 2]), torch.tensor([0, 0, 1])),
     "preds must be finite"),
    (lambda m: m.update([0.1, 0.2], torch.tensor([0, 1]), torch.tensor([0, 0])), "^preds must be a tensor"),
    (lambda m: (m.update(torch.rand(3), torch.tensor([0, 3, 2]), torch.tensor([0, 0, 1])), m.compute()),
     r"label 3 is above the grade scale 0..2 set by g"),
])
def test_bad_input_is_one_line(call, message):
    metric = RetrievalGAP(g=[0.5, 0.5])
    with pytest.raises(GaprankInputError, match=message) as caught:
        call(metric)
    assert "\n" not in str(caught.value)


def _binary_queries(rng):
    """Binary targets of a random number of queries (sometimes one without a relevant document), in three
    batches, scores of both signs (torchmetrics counts a score <= 0 as not retrieved), no ties."""
    num_queries = int(rng.integers(1, 30))
    sizes = rng.integers(1, 25, num_queries)
    indexes = np.repeat(rng.permutation(10 * num_queries)[:num_queries], sizes)
    order = rng.permutation(indexes.size)
    preds = rng.normal(size=indexes.size) if rng.random() < 0.7 else rng.random(indexes.size)
    target = (rng.random(indexes.size) < rng.uniform(0.05, 0.6)).astype(np.int64)
    if rng.random() < 0.6:
        target[indexes == indexes[0]] = 0
    batches = np.array_split(np.arange(indexes.size), 3)
    as_bool = rng.random() < 0.3
    return [(torch.tensor(preds[order][b], dtype=torch.float32),
             torch.tensor(target[order][b], dtype=torch.bool if as_bool else torch.int64),
             torch.tensor(indexes[order][b])) for b in batches if b.size]


@pytest.mark.parametrize("action", ["neg", "pos", "skip", "error"])
@pytest.mark.parametrize("top_k", [None, 1, 3, 10])
def test_normalize_by_retrieved_gives_torchmetrics_map_values_on_binary_targets(top_k, action):
    """RetrievalGAP, RetrievalXGAP and RetrievalEGAP with g=[1] and normalize_by="retrieved" in place of
    torchmetrics' RetrievalMAP (computed here on the same batches) give its values, with and without top_k,
    under each empty_target_action (with "error" both raise ValueError when a query has no relevant document),
    on int and bool targets, for each aggregation."""
    from torchmetrics.retrieval import RetrievalMAP

    rng = np.random.default_rng([top_k or 0, ["neg", "pos", "skip", "error"].index(action)])
    compared = raised = 0
    for _ in range(25):
        batches = _binary_queries(rng)
        aggregation = str(rng.choice(["mean", "median", "min", "max"]))
        theirs = RetrievalMAP(top_k=top_k, empty_target_action=action, aggregation=aggregation)
        ours = [cls(g=[1.0], top_k=top_k, empty_target_action=action, aggregation=aggregation, normalize_by="retrieved")
                for cls in CLASSES.values()]
        for batch in batches:
            for metric in (theirs, *ours):
                metric.update(*batch)
        try:
            expected = theirs.compute()
        except ValueError:
            for metric in ours:
                with pytest.raises(ValueError, match="no relevant document"):
                    metric.compute()
            raised += 1
            continue
        for metric in ours:
            assert metric.compute().item() == pytest.approx(expected.item(), abs=1e-6), (type(metric).__name__, top_k)
        compared += 1
    assert (compared >= 1 and raised >= 3) if action == "error" else (compared == 25 and raised == 0)


@pytest.mark.parametrize("name", list(CLASSES))
@pytest.mark.parametrize("top_k", [None, 5])
def test_normalize_by_retrieved_is_the_measure_of_the_retrieved_documents_alone(name, top_k):
    """On graded targets, normalize_by="retrieved" gives each query the measure of its documents scored above 0
    and ranked within top_k (ties in order of arrival), the others left out; 0 where relevant documents exist but
    none is retrieved; the whole query decides whether empty_target_action applies."""
    preds, target, indexes = _queries(5, tie_free=False)
    preds = preds - 0.3  # some scores <= 0
    metric = CLASSES[name](g=[0.3, 0.7], top_k=top_k, empty_target_action="skip", normalize_by="retrieved")
    metric.update(preds.float(), target, indexes=indexes)
    expected = []
    for q in sorted(set(indexes.tolist())):
        s, y = preds[indexes == q].float().double(), target[indexes == q]
        if not bool((y > 0).any()):
            continue  # skipped
        order = torch.sort(s, descending=True, stable=True).indices[: top_k or s.numel()]
        kept = order[s[order] > 0]
        value = getattr(gaprank, name)(s[kept], y[kept], g=[0.3, 0.7]) if bool((y[kept] > 0).any()) else 0.0
        expected.append(float(value))
    assert 0.0 in expected and len(set(expected)) > 5
    assert metric.compute().item() == pytest.approx(float(np.mean(expected)), rel=1e-6)


def test_normalize_by_all_divides_by_every_relevant_document():
    """One query, relevant documents at ranks 1 and 4 (the one at 4 scored below 0): AP@2 is 1/2 by trec_eval's
    rule (normalize_by="all"), 1 by torchmetrics' (only the relevant document retrieved counts); without top_k,
    torchmetrics' rule also leaves out the document scored below 0."""
    from torchmetrics.retrieval import RetrievalMAP

    preds, target, indexes = torch.tensor([0.9, 0.5, 0.2, -0.1]), torch.tensor([1, 0, 0, 1]), torch.zeros(4, dtype=torch.long)
    for top_k, trec, retrieved in [(2, 0.5, 1.0), (None, 0.75, 1.0)]:
        values = {}
        for name, metric in [("all", RetrievalGAP(top_k=top_k)),
                             ("retrieved", RetrievalGAP(top_k=top_k, normalize_by="retrieved")),
                             ("theirs", RetrievalMAP(top_k=top_k))]:
            metric.update(preds, target, indexes)
            values[name] = metric.compute().item()
        assert values == pytest.approx({"all": trec, "retrieved": retrieved, "theirs": retrieved})


@pytest.mark.parametrize("kwargs", [{"empty_target_action": "zero"}, {"ignore_index": "a"}, {"aggregation": "sum"},
                                    {"top_k": -1.0}])
def test_bad_arguments_raise_what_torchmetrics_raises(kwargs):
    """Where RetrievalMAP refuses an argument with ValueError, so do gaprank's classes (GaprankInputError is a
    ValueError)."""
    from torchmetrics.retrieval import RetrievalMAP

    for make in (RetrievalMAP, RetrievalGAP):
        with pytest.raises(ValueError):
            make(**kwargs)


@pytest.mark.parametrize("batch", [
    (torch.rand(3), torch.tensor([1, 0, 1]), torch.tensor([0, 0])),  # shapes differ
    (torch.tensor([1, 2, 3]), torch.tensor([1, 0, 1]), torch.tensor([0, 0, 1])),  # integer scores
    (torch.rand(0), torch.tensor([], dtype=torch.long), torch.tensor([], dtype=torch.long)),  # nothing
    (torch.rand(3), torch.tensor([1, 0, 1]), None),  # no indexes
])
def test_bad_batches_raise_what_torchmetrics_raises(batch):
    from torchmetrics.retrieval import RetrievalMAP

    for metric in (RetrievalMAP(), RetrievalGAP()):
        with pytest.raises(ValueError):
            metric.update(*batch)


@pytest.mark.parametrize("make, message", [
    (lambda: RetrievalGAP(top_k=1.5), "top_k"),
    (lambda: RetrievalGAP(top_k=-1), "top_k"),  # torchmetrics 1.9: RuntimeError at compute(); 0 means every document
    (lambda: RetrievalGAP(normalize_by="relevant"), "^normalize_by must be one of all, retrieved; got 'relevant'$"),
    (lambda: RetrievalGAP(g=[0.5, 0.6]), "g must sum to 1"),
    (lambda: RetrievalGAP(top_k=0), "top_k"),
    (lambda: RetrievalGAP(empty_target_action="zero"), "empty_target_action must be one of"),
])
def test_bad_settings_are_one_line(make, message):
    with pytest.raises(GaprankInputError, match=message):
        make()


def _ddp_worker(rank, world, init_file, shares, result_file):
    torch.distributed.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=world)
    try:
        metric = RetrievalGAP(g=[0.5, 0.5])
        preds, target, indexes = shares[rank]
        metric.update(preds, target, indexes)
        value = metric.compute()  # gathers every rank's documents, as torchmetrics does
        if rank == 0:
            torch.save(value, result_file)
    finally:
        torch.distributed.destroy_process_group()


def test_state_is_synchronised_across_processes(tmp_path):
    """Two gloo processes, each with its own share of the documents (a query split between them, uneven
    shares): compute() on every rank equals one process holding everything."""
    preds, target, indexes = _queries(4, num_queries=30)
    cut = indexes.numel() // 3
    shares = [(preds[:cut].float(), target[:cut], indexes[:cut]), (preds[cut:].float(), target[cut:], indexes[cut:])]
    torch.multiprocessing.spawn(_ddp_worker, args=(2, str(tmp_path / "init"), shares, str(tmp_path / "value.pt")),
                                nprocs=2, join=True)
    whole = RetrievalGAP(g=[0.5, 0.5])
    whole.update(preds.float(), target, indexes)
    assert torch.load(tmp_path / "value.pt").item() == pytest.approx(whole.compute().item(), rel=1e-6)
    alone = RetrievalGAP(g=[0.5, 0.5])
    alone.update(*shares[0])
    assert abs(alone.compute().item() - whole.compute().item()) > 1e-3  # rank 0's share alone gives another value
