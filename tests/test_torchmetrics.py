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
    (lambda m: m.update(torch.rand(3), torch.tensor([True, False, True]), torch.tensor([0, 0, 1])),
     "^target must hold integer grades, in an integer or a float tensor; got torch.bool"),
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


@pytest.mark.parametrize("make, message", [
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
