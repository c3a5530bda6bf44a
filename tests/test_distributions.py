"""SoftRank's pairwise probabilities and rank distributions: exact identities, Monte Carlo, gradcheck.

Private units on purpose: the engine's rank laws and their compiled kernels' working arrays, below the public
``gaprank.distributions``."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import gaprank._engine.rank_laws as rank_laws
from gaprank.distributions import pairwise_probs, rank_distribution


def test_pairwise_probs_formula_and_complement():
    s = torch.tensor([[0.3, -1.2, 2.0, 0.3]], dtype=torch.float64)
    pi = pairwise_probs(s, sigma=0.7)
    for m in range(4):
        for n in range(4):
            expected = 0.0 if m == n else 0.5 * (1 + math.erf((s[0, m] - s[0, n]).item() / (0.7 * 2)))
            assert pi[0, m, n].item() == pytest.approx(expected, abs=1e-12)
    off = ~torch.eye(4, dtype=torch.bool)
    torch.testing.assert_close((pi + pi.transpose(1, 2))[0][off], torch.ones(12, dtype=torch.float64))


def test_rank_distribution_sums_expected_rank_and_masking():
    rng = np.random.default_rng(0)
    s = torch.tensor(rng.normal(size=(3, 9)))
    mask = torch.tensor(rng.random((3, 9)) > 0.25)
    p = rank_distribution(s, sigma=0.8, mask=mask)
    pi = pairwise_probs(s, sigma=0.8, mask=mask)
    torch.testing.assert_close(p.sum(-1), mask.double())
    ranks = torch.arange(9, dtype=torch.float64)
    torch.testing.assert_close((p * ranks).sum(-1), pi.sum(1) * mask)
    # no probability mass beyond the number of real documents
    n_real = mask.sum(-1)
    for b in range(3):
        assert torch.all(p[b, :, n_real[b]:] == 0)


def test_rank_distribution_is_softrank_poisson_binomial():
    """SoftRank's recursion is the law of sum_m Bernoulli(pi_mn) with the events taken as independent
    (an approximation of the true Gaussian rank law, which couples them through s_n; both have mean
    sum_m pi_mn). Check it against sampled independent Bernoullis."""
    rng = np.random.default_rng(1)
    mean = rng.normal(size=6)
    s = torch.tensor(mean)
    p = rank_distribution(s, sigma=0.9).numpy()
    pi = pairwise_probs(s, sigma=0.9).numpy()
    draws = 200_000
    for n in range(6):
        above = (rng.random((draws, 6)) < pi[:, n]).sum(1)
        freq = np.bincount(above, minlength=6) / draws
        se = np.sqrt(p[n] * (1 - p[n]) / draws)
        assert np.all(np.abs(freq - p[n]) <= 4 * se + 1e-9)
    # the true Gaussian rank law differs (same mean): the approximation is SoftRank's, by design
    true_ranks = np.argsort(np.argsort(-(mean + 0.9 * rng.normal(size=(draws, 6))), axis=1), axis=1)
    np.testing.assert_allclose(true_ranks.mean(0), (p * np.arange(6)).sum(1), atol=0.01)


def test_gradcheck_and_small_sigma_limit():
    s = torch.tensor([[0.4, -0.3, 1.1, 0.0]], dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda x: pairwise_probs(x, sigma=0.6), (s,))
    assert torch.autograd.gradcheck(lambda x: rank_distribution(x, sigma=0.6), (s,))
    hard = rank_distribution(s.detach(), sigma=1e-6)[0]
    expected_rank = torch.argsort(torch.argsort(-s.detach()[0]))
    torch.testing.assert_close(hard, torch.nn.functional.one_hot(expected_rank, 4).double())


def test_bad_input():
    with pytest.raises(ValueError, match="sigma"):
        pairwise_probs(torch.zeros(3), sigma=0.0)
    with pytest.raises(ValueError, match="NaN"):
        rank_distribution(torch.tensor([0.0, float("inf")]), sigma=1.0)
    with pytest.raises(ValueError, match="torch tensor"):
        pairwise_probs(np.zeros(3), sigma=1.0)
    with pytest.raises(ValueError, match="mask"):
        pairwise_probs(torch.zeros(3), sigma=1.0, mask=torch.ones(3))


# compiled: the CPU's path; the whole-tensor path serves every other device and is selected here on the CPU
@pytest.mark.parametrize("compiled", [True, False])
def test_rank_laws_and_gradient_equal_the_autograd_recursion(monkeypatch, compiled):
    """Both paths against autograd through the plain recursion (a history-keeping oracle), on
    probabilities that include 0 (the pivot, padding), exactly 1/2 (ties), 1 and values near both ends."""
    monkeypatch.setattr(rank_laws, "runs_compiled", lambda pi: compiled)
    rng = np.random.default_rng(3)
    pi = torch.tensor(rng.random((3, 11, 11)))
    pi[:, [2, 5], 4] = torch.tensor([0.5, 1.0], dtype=torch.float64)
    pi[0, 7, :] = 1e-12
    pi[1, 8, :] = 1.0 - 1e-12
    pi[2, :, 9] = 0.0  # a pivot alone
    idx = torch.arange(11)
    pi[:, idx, idx] = 0.0
    pi[:, 10, :] = 0.0  # a padding document
    leaf = pi.clone().requires_grad_(True)
    laws = rank_laws.rank_recursion(leaf)
    weights = torch.tensor(rng.normal(size=laws.shape))
    (laws * weights).sum().backward()

    oracle_leaf = pi.clone().requires_grad_(True)
    state = torch.zeros(3, 11, 12, dtype=torch.float64)
    state[..., 0] = 1.0
    for m in range(11):
        beat = oracle_leaf[:, m, :, None]
        shifted = torch.nn.functional.pad(state[..., :-1], (1, 0))
        state = state * (1.0 - beat) + shifted * beat
    oracle = state[..., :11]
    (oracle * weights).sum().backward()
    torch.testing.assert_close(laws, oracle, rtol=0, atol=1e-14)
    torch.testing.assert_close(leaf.grad, oracle_leaf.grad, rtol=0, atol=1e-12)


@pytest.mark.parametrize("compiled", [True, False])
def test_rank_distribution_gradcheck_on_both_paths(monkeypatch, compiled):
    monkeypatch.setattr(rank_laws, "runs_compiled", lambda pi: compiled)
    rng = np.random.default_rng(4)
    s = torch.tensor(rng.normal(size=(2, 7)), requires_grad=True)
    mask = torch.tensor([[True] * 7, [True, False, True, True, False, True, True]])
    assert torch.autograd.gradcheck(lambda x: rank_distribution(x, sigma=0.7, mask=mask), (s,))
    far = torch.tensor([[0.0, 0.1, 40.0, -40.0]], dtype=torch.float64, requires_grad=True)  # pi at 0 and 1
    assert torch.autograd.gradcheck(lambda x: rank_distribution(x, sigma=0.5), (far,))


def test_compiled_rank_laws_do_not_depend_on_the_thread_count():
    numba = pytest.importorskip("numba")
    rng = np.random.default_rng(5)
    s = torch.tensor(rng.normal(size=(3, 40)), requires_grad=True)
    results = []
    before = numba.get_num_threads()
    try:
        for threads in (1, before):
            numba.set_num_threads(threads)
            x = s.detach().clone().requires_grad_(True)
            p = rank_distribution(x, sigma=0.8)
            (p * torch.arange(40.0, dtype=torch.float64)).sum().backward()
            results.append((p, x.grad))
    finally:
        numba.set_num_threads(before)
    assert torch.equal(results[0][0], results[1][0]) and torch.equal(results[0][1], results[1][1])


def test_float32_rank_laws_are_computed_in_float64_on_the_cpu():
    rng = np.random.default_rng(6)
    s64 = torch.tensor(rng.normal(size=(2, 60)))
    p32 = rank_distribution(s64.float(), sigma=0.6)
    assert p32.dtype == torch.float32
    torch.testing.assert_close(p32.double(), rank_distribution(s64, sigma=0.6), rtol=0, atol=1e-6)


def _expected_values_cases():
    rng = np.random.default_rng(7)
    s = torch.tensor(rng.normal(size=(3, 13)))
    s[0, :4] = 0.25  # ties
    s[1, 5], s[1, 6] = 60.0, -60.0  # pairs whose erfc underflows: pi exactly 0 and 1
    mask = torch.tensor(rng.random((3, 13)) > 0.3)
    mask[2, :] = False
    mask[2, 3] = True  # a lone document
    return s.masked_fill(~mask, 0.0), mask, torch.tensor(rng.normal(size=(3, 13)))


@pytest.mark.parametrize("kept", [True, False])
def test_expected_score_rank_values_equal_the_laws_times_the_values(monkeypatch, kept):
    """The compiled expectation from the scores (pair probabilities, laws kept for the backward pass or
    made again, gradient taken back to the scores in the kernel) against autograd through the pair
    matrix and the whole-tensor recursion: values and score gradients."""
    s, mask, weights = _expected_values_cases()
    values = 1.0 / torch.log2(torch.arange(13, dtype=torch.float64) + 2.0)
    if not kept:
        monkeypatch.setattr(rank_laws, "SAVED_LAW_ELEMENTS", 0)
    for sigma in (0.8, 0.05):
        leaf = s.clone().requires_grad_(True)
        got = rank_laws.expected_score_rank_values(leaf, mask, sigma, values)
        (got * weights).sum().backward()
        oracle_leaf = s.clone().requires_grad_(True)
        with monkeypatch.context() as patch:
            patch.setattr(rank_laws, "runs_compiled", lambda pi: False)
            laws = rank_laws._RankRecursion.apply(
                rank_laws.pairwise_matrix(oracle_leaf, mask, sigma))
            expected = laws @ values
            (expected * weights).sum().backward()
        torch.testing.assert_close(got, expected, rtol=0, atol=1e-14)
        torch.testing.assert_close(leaf.grad, oracle_leaf.grad, rtol=0, atol=1e-13)
        assert leaf.grad[~mask].abs().max() == 0  # padding gets no gradient
        assert torch.autograd.gradcheck(
            lambda x: rank_laws.expected_score_rank_values(x, mask, sigma, values), (s.clone().requires_grad_(True),))


@pytest.mark.parametrize("kept", [True, False])
def test_expected_score_rank_values_over_several_blocks_equal_the_oracle(monkeypatch, kept):
    """Lists longer than the kernels' blocks (32 x 32 pairs for the probabilities, 16 pivots a task for the
    gradient), with a ragged last block and padding spread over them: values and score gradients against
    autograd through the pair matrix and the whole-tensor recursion."""
    pytest.importorskip("numba")
    from gaprank._engine import soft_compiled as _compiled
    size = 2 * _compiled.TILE + 7
    assert size % _compiled.PIVOT_BLOCK and size > 4 * _compiled.PIVOT_BLOCK
    rng = np.random.default_rng(11)
    mask = torch.tensor(rng.random((2, size)) > 0.2)
    s = torch.tensor(rng.normal(size=(2, size))).masked_fill(~mask, 0.0)
    s[0, 40:44] = 0.5  # ties across a block's edge
    weights = torch.tensor(rng.normal(size=(2, size)))
    values = 1.0 / torch.log2(torch.arange(size, dtype=torch.float64) + 2.0)
    if not kept:
        monkeypatch.setattr(rank_laws, "SAVED_LAW_ELEMENTS", 0)
    leaf = s.clone().requires_grad_(True)
    got = rank_laws.expected_score_rank_values(leaf, mask, 0.7, values)
    (got * weights).sum().backward()
    oracle_leaf = s.clone().requires_grad_(True)
    with monkeypatch.context() as patch:
        patch.setattr(rank_laws, "runs_compiled", lambda pi: False)
        expected = rank_laws._RankRecursion.apply(
            rank_laws.pairwise_matrix(oracle_leaf, mask, 0.7)) @ values
        (expected * weights).sum().backward()
    torch.testing.assert_close(got, expected, rtol=0, atol=1e-13)
    torch.testing.assert_close(leaf.grad, oracle_leaf.grad, rtol=0, atol=1e-12)
    assert leaf.grad[~mask].abs().max() == 0


def test_expected_score_rank_values_keep_the_dtype_and_do_not_depend_on_threads():
    numba = pytest.importorskip("numba")
    rng = np.random.default_rng(9)
    s = torch.tensor(rng.normal(size=(3, 70)))
    mask = torch.ones(3, 70, dtype=torch.bool)
    values = 1.0 / torch.log2(torch.arange(70, dtype=torch.float64) + 2.0)
    out32 = rank_laws.expected_score_rank_values(s.float(), mask, 0.6, values)
    assert out32.dtype == torch.float32
    results = []
    before = numba.get_num_threads()
    try:
        for threads in (1, before):
            numba.set_num_threads(threads)
            x = s.clone().requires_grad_(True)
            out = rank_laws.expected_score_rank_values(x, mask, 0.6, values)
            out.sum().backward()
            results.append((out.detach(), x.grad))
    finally:
        numba.set_num_threads(before)
    torch.testing.assert_close(out32.double(), results[0][0], rtol=0, atol=1e-6)
    assert torch.equal(results[0][0], results[1][0]) and torch.equal(results[0][1], results[1][1])


def _expectation_and_gradient(s, mask, values, weights, buffers):
    leaf = s.clone().requires_grad_(True)
    out = rank_laws.expected_score_rank_values(leaf, mask, 0.7, values, buffers)
    (out * weights).sum().backward()
    return out.detach(), leaf.grad


@pytest.mark.parametrize("kept", [True, False])
def test_rank_law_buffers_reuse_arrays_and_change_no_result(monkeypatch, kept):
    """A holder of working arrays gives, bit for bit, what fresh arrays give: over batches of one shape (the
    arrays reused), another shape, and the laws kept or made again; it keeps no more than its bound."""
    pytest.importorskip("numba")
    if not kept:
        monkeypatch.setattr(rank_laws, "SAVED_LAW_ELEMENTS", 0)
    s, mask, weights = _expected_values_cases()
    values = 1.0 / torch.log2(torch.arange(13, dtype=torch.float64) + 2.0)
    holder = rank_laws.RankLawBuffers()
    batches = [(s, mask, weights), (s * 2.0 - 0.5, mask, -weights), (s[:2, :9], mask[:2, :9], weights[:2, :9])]
    for index, (scores, m, w) in enumerate(batches):
        reused = [array.data_ptr() for array in holder._free]
        got = _expectation_and_gradient(scores, m, values[:scores.shape[1]], w, holder)
        fresh = _expectation_and_gradient(scores, m, values[:scores.shape[1]], w, None)
        assert torch.equal(got[0], fresh[0]) and torch.equal(got[1], fresh[1])
        per_batch = 2 if kept else 1  # the pair probabilities, and the laws when kept
        assert len(holder._free) == (1, 1, 2)[index] * per_batch  # a new shape: the old arrays stay, up to KEPT_ARRAYS
        assert all(array.shape == (scores.shape[0], scores.shape[1], scores.shape[1])
                   for array in holder._free[-per_batch:])
        if index == 1:  # same shape as before: the same two arrays came back
            assert sorted(array.data_ptr() for array in holder._free) == sorted(reused)
    monkeypatch.setattr(rank_laws, "KEPT_ARRAY_ELEMENTS", 10)
    small = rank_laws.RankLawBuffers()
    _expectation_and_gradient(s, mask, values, weights, small)
    assert small._free == []
    nothing = rank_laws.RankLawBuffers(kept=0)
    _expectation_and_gradient(s, mask, values, weights, nothing)
    assert nothing._free == []


def test_rank_law_buffers_never_share_an_array_between_live_graphs():
    """Two graphs alive at once take their own arrays; a second backward pass through a retained graph
    (its arrays already handed back and reused by another call) makes them again and gives the same
    gradient; a forward pass without gradients hands its array back at once."""
    pytest.importorskip("numba")
    s, mask, weights = _expected_values_cases()
    values = 1.0 / torch.log2(torch.arange(13, dtype=torch.float64) + 2.0)
    expected_first = _expectation_and_gradient(s, mask, values, weights, None)
    expected_second = _expectation_and_gradient(-s, mask, values, weights, None)
    holder = rank_laws.RankLawBuffers()
    first, second = s.clone().requires_grad_(True), (-s).clone().requires_grad_(True)
    out_first = rank_laws.expected_score_rank_values(first, mask, 0.7, values, holder)
    out_second = rank_laws.expected_score_rank_values(second, mask, 0.7, values, holder)
    (out_second * weights).sum().backward()
    (out_first * weights).sum().backward(retain_graph=True)
    assert torch.equal(first.grad, expected_first[1]) and torch.equal(second.grad, expected_second[1])
    _expectation_and_gradient(-s, mask, values, weights, holder)  # overwrites the arrays the first graph used
    gradient = first.grad.clone()
    first.grad = None
    (out_first * weights).sum().backward()
    assert torch.equal(first.grad, gradient)
    holder = rank_laws.RankLawBuffers()
    with torch.no_grad():
        rank_laws.expected_score_rank_values(s, mask, 0.7, values, holder)
    assert len(holder._free) == 1


def test_soft_loss_modules_keep_arrays_that_copies_do_not_share():
    pytest.importorskip("numba")
    import copy
    import pickle

    import gaprank.losses as L

    rng = np.random.default_rng(3)
    s, y = torch.tensor(rng.normal(size=(4, 20))), torch.tensor(rng.integers(0, 3, (4, 20)))
    loss = L.SoftNDCGLoss(sigma=0.5)
    for _ in range(2):
        x = s.clone().requires_grad_(True)
        loss(x, y).backward()
    assert len(loss._arrays._free) == 2
    reference = s.clone().requires_grad_(True)
    L.soft_ndcg_loss(reference, y, sigma=0.5).backward()
    assert torch.equal(x.grad, reference.grad)
    for twin in (copy.deepcopy(loss), pickle.loads(pickle.dumps(loss))):
        assert twin._arrays._free == [] and twin._arrays is not loss._arrays
        x = s.clone().requires_grad_(True)
        twin(x, y).backward()
        assert torch.equal(x.grad, reference.grad)


def test_compiled_laws_drop_only_negligible_ends(monkeypatch):
    """Long lists with spread scores: the compiled laws keep each law's numerical support (entries below
    1e-24 dropped at the ends as the law is built); what they drop is below 1e-18 in all,
    and values and gradients equal the whole-tensor path's, which drops nothing."""
    rng = np.random.default_rng(8)
    s = torch.tensor(rng.normal(size=(2, 300)) * 3.0)
    pi = rank_laws.pairwise_matrix(s, torch.ones(2, 300, dtype=torch.bool), 0.2)
    weights = torch.tensor(rng.normal(size=(2, 300, 300)))
    results = []
    for compiled in (True, False):
        monkeypatch.setattr(rank_laws, "runs_compiled", lambda pi, c=compiled: c)
        leaf = pi.clone().requires_grad_(True)
        laws = rank_laws.rank_recursion(leaf)
        (laws * weights).sum().backward()
        results.append((laws.detach(), leaf.grad))
    (windowed, grad_windowed), (whole, grad_whole) = results
    dropped = (windowed == 0) & (whole > 0)
    assert dropped.sum() > 1000  # the ends are dropped ...
    assert whole[dropped].sum() < 1e-18  # ... and hold nothing that float64 could show
    torch.testing.assert_close(windowed, whole, rtol=0, atol=1e-14)
    torch.testing.assert_close(grad_windowed, grad_whole, rtol=0, atol=1e-12)
