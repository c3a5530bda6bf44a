"""Swap deltas (FORMULAS.md result 2) against brute-force recomputation of the metric for every pair.

Private units on purpose: the engine's factor plans and slot layouts, checked against the per-pair factors they
compute in one product."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch

import gaprank.metrics as M
from gaprank.losses import swap_deltas

G = [0.2, 0.3, 0.5]
EXACT = {
    "gap": lambda s, y, **kw: M.gap(s, y, g=G, **kw),
    "xgap": lambda s, y, **kw: M.xgap(s, y, g=G, **kw),
    "egap": lambda s, y, **kw: M.egap(s, y, g=G, **kw),
    "ap": lambda s, y, **kw: M.average_precision(s, y, **kw),
    "ndcg": lambda s, y, **kw: M.ndcg(s, y, **kw),
}


def _brute_force(metric, scores, labels, mask, grade_counts, k):
    kw = dict(mask=mask, grade_counts=grade_counts, k=k, reduction="none", empty_value=0.0)
    base = EXACT[metric](scores, labels, **kw)
    b, n = scores.shape
    out = torch.zeros(b, n, n, dtype=torch.float64)
    for i, j in itertools.combinations(range(n), 2):
        swapped = scores.clone()
        swapped[:, [i, j]] = swapped[:, [j, i]]  # exchanging scores exchanges the two documents' places
        delta = EXACT[metric](swapped, labels, **kw) - base
        both_real = mask[:, i] & mask[:, j]
        out[:, i, j] = out[:, j, i] = torch.where(both_real, delta, torch.zeros_like(delta))
    return out


@pytest.mark.parametrize("metric", list(EXACT))
@pytest.mark.parametrize("seed, k, with_counts", [(0, None, False), (1, 3, False), (2, None, True), (3, 5, True)])
def test_swap_deltas_equal_recomputation(metric, seed, k, with_counts):
    rng = np.random.default_rng(seed)
    b, n = 4, 11
    scores = torch.tensor(rng.normal(size=(b, n)))
    labels = torch.tensor(rng.integers(0, 4, size=(b, n)))
    labels[0] = 0  # a query without relevant documents
    mask = torch.tensor(rng.random((b, n)) > 0.2)
    counts = None
    if with_counts:
        in_list = torch.stack([torch.bincount(labels[i][mask[i]], minlength=4) for i in range(b)])
        counts = in_list + torch.tensor(rng.integers(0, 3, size=(b, 4)))
    ours = swap_deltas(scores, labels, measure=metric, g=G if "gap" in metric else None, mask=mask,
                       grade_counts=counts, k=k)
    expected = _brute_force(metric, scores, labels, mask, counts, k)
    torch.testing.assert_close(ours, expected, rtol=0, atol=1e-10)
    assert torch.equal(ours, ours.transpose(1, 2))
    same_label = labels[:, :, None] == labels[:, None, :]
    assert torch.all(ours[same_label] == 0)
    padding = ~(mask[:, :, None] & mask[:, None, :])
    assert torch.all(ours[padding] == 0)


def test_general_diagonal_kernel_erap():
    rng = np.random.default_rng(9)
    scores = torch.tensor(rng.normal(size=(3, 8)))
    labels = torch.tensor(rng.integers(0, 3, size=(3, 8)))
    p = torch.tensor([0.1, 0.5, 0.9], dtype=torch.float64)
    ours = swap_deltas(scores, labels, measure="eRAP(p=[0.1,0.5,0.9])")
    base = M.erap(scores, labels, p=p, reduction="none")
    for i, j in itertools.combinations(range(8), 2):
        swapped = scores.clone()
        swapped[:, [i, j]] = swapped[:, [j, i]]
        torch.testing.assert_close(ours[:, i, j], M.erap(swapped, labels, p=p, reduction="none") - base,
                                   rtol=0, atol=1e-12)


def test_one_query_input_and_errors():
    d = swap_deltas(torch.tensor([3.0, 2.0, 1.0]), torch.tensor([0, 1, 0]), measure="ap")
    assert d.shape == (3, 3) and d[0, 1].item() == pytest.approx(0.5)
    with pytest.raises(ValueError, match="measure: unknown measure 'dcg2'"):
        swap_deltas(torch.zeros(3), torch.zeros(3), measure="dcg2")
    with pytest.raises(ValueError, match="sets cutoff 5; k=3 disagrees"):
        swap_deltas(torch.zeros(3), torch.zeros(3), measure="nDCG@5", k=3)
    with pytest.raises(ValueError, match="g applies"):
        swap_deltas(torch.zeros(3), torch.zeros(3), measure="ndcg", g=[1.0])
    with pytest.raises(ValueError, match="NaN"):
        swap_deltas(torch.tensor([0.0, float("nan")]), torch.tensor([0, 1]), measure="gap")


@pytest.mark.parametrize("metric", ["gap", "xgap", "egap", "ap", "ndcg", "ERR", "Q", "RBP(p=0.5)", "vG"])
def test_a_factor_plan_serves_every_ranking_of_its_lists(metric):
    """LambdaMART builds a plan once and re-ranks every round: its kept tables must not go stale."""
    from gaprank._engine.factors import pair_factors, plan_pair_factors, rank_for_measure
    from gaprank.metrics import objective_measure

    rng = np.random.default_rng(4)
    labels = torch.tensor(rng.integers(0, 3, size=(3, 12)))
    mask = torch.tensor(rng.random((3, 12)) > 0.25)
    mask[:, :2] = True
    labels[:, :2] = torch.tensor([0, 2])
    g = (0.5, 0.5) if metric in ("gap", "xgap", "egap") else None
    measure = objective_measure(metric).with_params(g=g)
    first, params = rank_for_measure(torch.zeros(3, 12), labels, measure, mask=mask)
    plan = plan_pair_factors(measure, first, params, k=5)
    for _ in range(3):
        ranked, _ = rank_for_measure(torch.tensor(rng.normal(size=(3, 12))), labels, measure, mask=mask)
        fresh = pair_factors(measure, ranked, params, k=5)
        kept = plan.factors(ranked.grades.reshape(-1))
        torch.testing.assert_close(kept.block(0, 12), fresh.block(0, 12), rtol=0, atol=1e-15)
        assert fresh.block(0, 12).abs().max() > 1e-3


def test_slot_layout_packs_blocks_end_to_end():
    """Blocks [2, 3] and [1, 4] with list sizes 3, 1, 0 (an empty list) and 4: slots, validity, views."""
    from gaprank._engine.slots import SlotLayout

    layout = SlotLayout([(2, 3), (2, 4)], torch.tensor([3, 1, 0, 4]))
    assert layout.num_slots == 14 and layout.num_queries == 4
    assert [(b.offset, b.batch, b.width, b.first_query) for b in layout.blocks] == [(0, 2, 3, 0), (6, 2, 4, 2)]
    assert layout.valid.tolist() == [1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1]
    assert layout.first_slot.tolist() == [0, 3, 6, 10] and layout.last_slot.tolist() == [2, 3, 6, 13]
    assert layout.position.tolist() == [0, 1, 2, 0, 1, 2, 0, 1, 2, 3, 0, 1, 2, 3]
    assert layout.list_start.tolist() == [0] * 3 + [3] * 3 + [6] * 4 + [10] * 4
    assert layout.real.tolist() == [0, 1, 2, 3, 10, 11, 12, 13]
    flat = torch.arange(14)
    assert layout.view(flat, layout.blocks[1]).tolist() == [[6, 7, 8, 9], [10, 11, 12, 13]]
    rows = torch.stack([flat, -flat])
    assert layout.list_major(rows, layout.blocks[0]).shape == (2, 2, 3)
    assert layout.list_major(rows, layout.blocks[0])[1].tolist() == [[3, 4, 5], [-3, -4, -5]]
    with pytest.raises(ValueError):
        SlotLayout([(1, 2)], torch.tensor([3]))
