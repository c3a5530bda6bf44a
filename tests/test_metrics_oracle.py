"""Every metric against a loop implementation of its definition (tests/oracles.py), on random batches
with ties, padding, all-zero queries, missing grades and recall bases beyond the list.

One private unit on purpose: ``gaprank.metrics._formulas``, whose formulas are checked one by one."""

from __future__ import annotations

import numpy as np
import oracles as O
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gaprank.metrics as M

EMPTY = -7.0  # a sentinel empty_value, so undefined queries are recognisable


@st.composite
def batches(draw):
    c = draw(st.integers(1, 4))
    b = draw(st.integers(1, 4))
    n = draw(st.integers(1, 9))
    scores = np.array(draw(st.lists(st.integers(0, 3), min_size=b * n, max_size=b * n)), float).reshape(b, n)
    labels = np.array(draw(st.lists(st.integers(0, c), min_size=b * n, max_size=b * n))).reshape(b, n)
    if draw(st.booleans()):  # an all-zero query
        labels[draw(st.integers(0, b - 1))] = 0
    if draw(st.booleans()):  # a grade that no document has
        labels[labels == draw(st.integers(1, c))] = 0
    mask = np.array(draw(st.lists(st.booleans(), min_size=b * n, max_size=b * n))).reshape(b, n)
    mask[:, 0] |= draw(st.booleans())  # sometimes a fully padded query, usually not
    # padding holds junk that must never be read
    scores[~mask] = np.nan
    labels[~mask] = 99
    raw_g = np.array(draw(st.lists(st.integers(0, 4), min_size=c, max_size=c)), float)
    if raw_g.sum() == 0:
        raw_g[-1] = 1
    g = raw_g / raw_g.sum()
    in_list = np.stack([np.bincount(labels[i][mask[i]], minlength=c + 1)[: c + 1] for i in range(b)])
    extra = np.array(draw(st.lists(st.integers(0, 3), min_size=b * (c + 1), max_size=b * (c + 1)))).reshape(b, c + 1)
    grade_counts = in_list + extra if draw(st.booleans()) else None
    ties = draw(st.sampled_from(["stable", "pessimistic", "optimistic"]))
    return scores, labels, mask, g, grade_counts, ties


def _per_query(scores, labels, mask, grade_counts, ties, c):
    for i in range(scores.shape[0]):
        s = [float(x) for x in scores[i][mask[i]]]
        y = [int(x) for x in labels[i][mask[i]]]
        counts = list(grade_counts[i]) if grade_counts is not None else list(np.bincount(y, minlength=c + 1)[: c + 1])
        if len(counts) < c + 1:
            counts += [0] * (c + 1 - len(counts))
        yield O.rank(s, y, ties), counts


def _check(ours, expected):
    expected = np.array([EMPTY if e is None else e for e in expected], float)
    np.testing.assert_allclose(ours, expected, rtol=1e-10, atol=1e-12)


SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(batches(), st.sampled_from([None, 1, 3]))
def test_ap_family_matches_definitions(batch, k):
    scores, labels, mask, g, gc, ties = batch
    c = len(g)
    kw = dict(mask=mask, grade_counts=gc, ties=ties, empty_value=EMPTY, reduction="none")
    queries = list(_per_query(scores, labels, mask, gc, ties, c))
    _check(M.gap(scores, labels, g=g, k=k, **kw), [O.gap(r, cnt, list(g), k) for r, cnt in queries])
    _check(M.xgap(scores, labels, g=g, k=k, **kw), [O.xgap(r, cnt, list(g), k) for r, cnt in queries])
    _check(M.egap(scores, labels, g=g, k=k, **kw), [O.egap(r, cnt, list(g), k) for r, cnt in queries])
    if gc is None and labels[mask].max(initial=0) > 0 or gc is not None:
        for th in range(1, c + 1):
            ours = M.average_precision(scores, labels, threshold=th, k=k, **{**kw, "grade_counts": gc})
            _check(ours, [O.ap(r, cnt, th, k) for r, cnt in queries])
    p = [0.05] + list(np.linspace(0.3, 1.0, c))
    _check(M.erap(scores, labels, p=p, k=k, **kw), [O.erap(r, cnt, p, k) for r, cnt in queries])
    _check(M.errbp(scores, labels, p=p, persistence=0.7, k=k, **kw), [O.errbp(r, p, 0.7, k) for r, cnt in queries])


@SETTINGS
@given(batches(), st.sampled_from([None, 1, 2, 5]), st.sampled_from(["exp2", "linear"]),
       st.sampled_from(["log2p1", "jk"]), st.sampled_from(["pad", "zero"]))
def test_gain_measures_match_definitions(batch, k, gain, discount, short_list):
    scores, labels, mask, g, gc, ties = batch
    c = len(g)
    if gc is None:
        c = int(labels[mask].max(initial=0))
    kw = dict(mask=mask, grade_counts=gc, ties=ties, empty_value=EMPTY, reduction="none")
    queries = list(_per_query(scores, labels, mask, gc, ties, c))
    _check(M.ndcg(scores, labels, k=k, gain=gain, discount=discount, short_list=short_list, **kw),
           [O.ndcg(r, cnt, k, gain, discount, short_list) for r, cnt in queries])
    if k is not None:
        _check(M.precision(scores, labels, k=k, short_list=short_list, **kw),
               [O.precision(r, k, 1, short_list) for r, cnt in queries])
    _check(M.rbp(scores, labels, persistence=0.6, k=k, **kw), [O.rbp(r, 0.6, 1, k) for r, cnt in queries])
    _check(M.err(scores, labels, max_grade=max(c, 1), k=k, **kw), [O.err(r, max(c, 1), k) for r, cnt in queries])
    _check(M.generalized_ap(scores, labels, k=k, **kw), [O.kishida_vg(r, cnt, k) for r, cnt in queries])
    _check(M.sliding_ratio(scores, labels, k=k, **kw), [O.sliding_ratio(r, cnt, k) for r, cnt in queries])
    for beta in (0.0, 1.0, 2.5):
        _check(M.q_measure(scores, labels, beta=beta, **kw), [O.q_measure(r, cnt, beta) for r, cnt in queries])


@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_reductions_and_types(reduction):
    rng = np.random.default_rng(0)
    scores = rng.normal(size=(5, 12))
    labels = rng.integers(0, 3, size=(5, 12))
    per_query = M.gap(scores, labels, reduction="none")
    reduced = M.gap(scores, labels, reduction=reduction)
    assert isinstance(reduced, np.float64)
    assert reduced == pytest.approx(getattr(per_query, reduction)())
    t = M.gap(torch.tensor(scores, dtype=torch.float32), torch.tensor(labels), reduction="none")
    assert isinstance(t, torch.Tensor) and t.dtype == torch.float32 and t.shape == (5,)
    np.testing.assert_allclose(t.numpy(), per_query, rtol=1e-6)
    one = M.gap(scores[0], labels[0])
    assert np.ndim(one) == 0 and one == pytest.approx(per_query[0])
    one_t = M.gap(torch.tensor(scores[0]), torch.tensor(labels[0]), reduction="none")
    assert one_t.ndim == 0


def test_default_g_is_uniform_over_observed_grades():
    rng = np.random.default_rng(1)
    scores = rng.normal(size=(4, 20))
    labels = rng.integers(0, 4, size=(4, 20))
    np.testing.assert_allclose(M.gap(scores, labels, reduction="none"),
                               M.gap(scores, labels, g=[1 / 3] * 3, reduction="none"))


def test_padding_equals_unpadded_and_is_permutation_invariant():
    rng = np.random.default_rng(2)
    scores = rng.normal(size=15)
    labels = rng.integers(0, 3, size=15)
    padded_s = np.concatenate([scores, rng.normal(size=5)])
    padded_l = np.concatenate([labels, rng.integers(0, 3, size=5)])
    mask = np.arange(20) < 15
    perm = rng.permutation(15)
    for fn in (M.gap, M.egap, M.xgap, M.ndcg, M.generalized_ap, M.q_measure, M.err):
        base = fn(scores, labels)
        assert fn(padded_s, padded_l, mask=mask) == pytest.approx(base)
        assert fn(scores[perm], labels[perm]) == pytest.approx(base)
        assert fn(scores + 123.0, labels) == pytest.approx(base)  # constant shift
        assert fn(scores * 3.0, labels) == pytest.approx(base)  # positive scaling


def test_ties_rules_on_a_tied_list():
    scores = np.zeros(4)
    labels = np.array([0, 1, 0, 1])
    assert M.average_precision(scores, labels, ties="stable") == pytest.approx((1 / 2 + 2 / 4) / 2)
    assert M.average_precision(scores, labels, ties="pessimistic") == pytest.approx((1 / 3 + 2 / 4) / 2)
    assert M.average_precision(scores, labels, ties="optimistic") == pytest.approx(1.0)


@pytest.mark.parametrize("discount", ["log2p1", "jk"])
def test_discounts_read_from_the_table_are_the_formula_s_bit_for_bit(discount, monkeypatch):
    """On the CPU, whole ranks read the discount from a table made once (MKL's log2 would start an OpenMP team on
    every call); its values are those of the formula on the same ranks, in any shape and order, bit for bit.
    Ranks that are not whole, ranks past the table, positions that need a gradient and other types take the
    formula; the table is made on the CPU whatever the default device."""
    from gaprank.metrics import _formulas as F
    monkeypatch.setattr(F, "_DISCOUNT_TABLES", {})
    with torch.device("meta"):  # the first call, under another default device, makes the table
        assert F.rank_discount(torch.arange(1, 3001, dtype=torch.float64, device="cpu"), discount).device.type == "cpu"
    table = F._DISCOUNT_TABLES[discount]
    assert table.device.type == "cpu" and 3000 <= table.numel() <= F.TABLED_RANKS
    rng = np.random.default_rng(7)
    for ranks in (torch.arange(1, 148), torch.arange(1, 201)[None].expand(3, -1), torch.tensor(5.0),
                  torch.from_numpy(rng.integers(1, 5000, size=(4, 37))), torch.arange(200, 0, -1)[::3],
                  torch.tensor([F.TABLED_RANKS, 1, 2]), torch.tensor([F.TABLED_RANKS + 1, 3]),
                  torch.tensor([1.5, 2.0]), torch.tensor([0.0, 1.0]), torch.tensor([float("nan"), 2.0])):
        ranks = ranks.to(torch.float64)
        got = F.rank_discount(ranks, discount)
        assert got.shape == ranks.shape and got.dtype == torch.float64 and got.device.type == "cpu"
        torch.testing.assert_close(got, F._discount_formula(ranks, discount), rtol=0, atol=0, equal_nan=True)
    assert F._DISCOUNT_TABLES[discount] is not table  # the ranks up to 5000 grew it
    assert F._DISCOUNT_TABLES[discount].numel() <= F.TABLED_RANKS
    # a gradient asked for, and float32: the formula itself
    needs_grad = torch.arange(1, 20, dtype=torch.float64).requires_grad_(True)
    assert F.rank_discount(needs_grad, discount).requires_grad
    single = torch.arange(1, 20, dtype=torch.float32)
    assert torch.equal(F.rank_discount(single, discount), F._discount_formula(single, discount))
    # the table is what serves: a table of other values would show in the result
    monkeypatch.setitem(F._DISCOUNT_TABLES, discount, torch.zeros(F.TABLED_RANKS, dtype=torch.float64))
    assert not F.rank_discount(torch.arange(1, 10, dtype=torch.float64), discount).any()
