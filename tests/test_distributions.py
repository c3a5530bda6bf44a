"""SoftRank's pairwise probabilities and rank distributions: exact identities, Monte Carlo, gradcheck."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

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
