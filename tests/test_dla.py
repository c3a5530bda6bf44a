"""Dual learning (gaprank.clicks.DualLearningLoss): its two gradients against a loop oracle and the weighted
LambdaRank loss, the position model recovering the examination curve by Monte Carlo (with an oracle ranker, and
trained jointly with a ranker), the sessions' lists, and bad input."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from gaprank import GaprankInputError
from gaprank.clicks import ClickLog, ClickModel, DualLearningLoss, session_lists, simulate_clicks
from gaprank.data import RankingSplit
from gaprank.losses import LambdaRankLoss


def _split(queries: int, size: int, seed: int) -> RankingSplit:
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 3, queries * size)
    features = np.stack([labels + rng.normal(0, 0.5, labels.size), rng.normal(size=labels.size)], axis=1)
    return RankingSplit(features=features, labels=labels, qids=np.repeat(np.arange(queries).astype(str), size),
                        docids=np.arange(labels.size).astype(str))


def test_session_lists_put_each_row_at_its_session_and_slot():
    split = _split(30, 8, 1)
    log = simulate_clicks(split, np.zeros(len(split.labels)), 500, ClickModel(eta=1.0), shown=5, seed=2)
    rows, events, positions, mask = session_lists(log, width=6)
    assert rows.shape == (500, 6) and not mask[:, 5].any() and mask[:, :5].all()
    np.testing.assert_array_equal(rows[mask], log.document)
    np.testing.assert_array_equal(events[mask], log.event)
    np.testing.assert_array_equal(positions[mask], log.position)
    assert (positions[mask].reshape(500, 5) == np.arange(1, 6)).all()  # in position order
    with pytest.raises(GaprankInputError, match="width 4 is less than the 5 documents a session shows"):
        session_lists(log, width=4)


def _oracle_losses(logits, relevance, events, positions, mask, levels):
    """By loops: the position model's loss, -sum over sessions, levels a and documents with e >= a of
    exp(v_top,a - v_i,a) log softmax_k(o_a)_{p_i} over the session's positions, over the sum of the weights; and the
    relevance model's, -sum of exp(o_a(1) - o_a(p_i)) log softmax_j(v_a)_i over the session's documents, over
    theirs."""
    position_total = position_weights = relevance_total = relevance_weights = 0.0
    for b in range(relevance.shape[0]):
        shown = [n for n in range(relevance.shape[1]) if mask[b, n]]
        top = next(n for n in shown if positions[b, n] == 1)
        for a in range(1, levels + 1):
            norm_v = torch.logsumexp(torch.stack([relevance[b, n, a - 1] for n in shown]), 0)
            norm_o = torch.logsumexp(torch.stack([logits[positions[b, n] - 1, a - 1] for n in shown]), 0)
            for n in shown:
                if events[b, n] >= a:
                    w = torch.exp(relevance[b, top, a - 1] - relevance[b, n, a - 1]).detach()
                    position_total = position_total - w * (logits[positions[b, n] - 1, a - 1] - norm_o)
                    position_weights = position_weights + w
                    u = torch.exp(logits[0, a - 1] - logits[positions[b, n] - 1, a - 1]).detach()
                    relevance_total = relevance_total - u * (relevance[b, n, a - 1] - norm_v)
                    relevance_weights = relevance_weights + u
    return position_total / position_weights, relevance_total / relevance_weights


def test_each_model_s_gradient_is_its_own_loss_s():
    """Random position logits, scores and relevance logits, sessions of different lengths and position orders,
    padding anywhere and holding NaN and infinities: the ranker's gradient is LambdaRank's with per-level weights
    1/theta-hat = exp(o(1) - o(p)); the relevance logits' and the position logits' are the loop oracles'."""
    rng = np.random.default_rng(3)
    sessions, width, levels = 5, 6, 2
    dla = DualLearningLoss("gap", positions=6, levels=levels, g=[0.4, 0.6])
    with torch.no_grad():
        dla.position_logits.copy_(torch.tensor(rng.normal(size=(6, levels))))
    positions = np.stack([rng.permutation(6) + 1 for _ in range(sessions)])
    mask = np.ones((sessions, width), dtype=bool)
    mask[1, 4:] = mask[3, [0, 2, 4]] = False  # padding at the end, and between shown documents
    positions[1, :4], positions[3, [1, 3, 5]] = rng.permutation(4) + 1, rng.permutation(3) + 1
    events = rng.integers(0, levels + 1, (sessions, width))
    events[:, 0] = events[3, 1] = 2
    values = rng.normal(size=(1 + levels, sessions, width))
    values[:, 1, 4], values[:, 3, 0], values[:, 3, 2] = np.nan, -np.inf, np.inf  # padding holds anything
    scores = torch.tensor(values[0], requires_grad=True)
    relevance = torch.tensor(np.moveaxis(values[1:], 0, -1), requires_grad=True)  # [S, N, levels]
    total = dla(scores, events, positions, mask, relevance=relevance)
    assert torch.isfinite(total)
    total.backward()
    padding = ~torch.tensor(mask)
    for grad in (scores.grad, relevance.grad):
        assert torch.isfinite(grad).all() and bool((grad[padding] == 0).all())
    assert bool((relevance.grad[..., 1] != 0).any())  # each level's logits have a gradient of their own

    logits = dla.position_logits.detach()
    weights = torch.exp(logits[:1] - logits)[torch.tensor(positions - 1)]  # [S, N, levels]
    plain = torch.tensor(np.where(mask, values[0], 0.0), requires_grad=True)
    LambdaRankLoss("gap", g=[0.4, 0.6], max_grade=levels)(plain, torch.tensor(events), torch.tensor(mask),
                                                         weights=weights * torch.tensor(mask)[..., None]).backward()
    torch.testing.assert_close(scores.grad, plain.grad, rtol=1e-12, atol=1e-12)

    oracle_logits = logits.clone().requires_grad_(True)
    oracle_relevance = torch.tensor(np.where(mask[..., None], np.moveaxis(values[1:], 0, -1), 0.0), requires_grad=True)
    position_loss, relevance_loss = _oracle_losses(oracle_logits, oracle_relevance, events, positions, mask, levels)
    (position_loss + relevance_loss).backward()
    torch.testing.assert_close(dla.position_logits.grad, oracle_logits.grad, rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(relevance.grad, oracle_relevance.grad, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(dla.propensities().numpy(), torch.exp(logits - logits[:1]).numpy(), rtol=1e-15)


def test_the_position_model_recovers_the_examination_curve_with_an_oracle_relevance_model_by_monte_carlo():
    """A fixed logger (every document always at one position): with relevance logits that know each document's
    click probability (their log), the position model alone, trained to its minimum, gives (1/k) within Monte Carlo
    error; the click rates per position (a naive estimate) do not."""
    split = _split(400, 6, 4)
    model = ClickModel(eta=1.0)
    log = simulate_clicks(split, split.features[:, 0], 60_000, model, shown=6, seed=5)
    rows, events, positions, mask = session_lists(log)
    relevance = model.click_probabilities(split.labels[None, :], 2)[0]  # examined click probability per row
    scores = torch.tensor(np.log(relevance)[rows])
    dla = DualLearningLoss(positions=6, levels=1)
    optimiser = torch.optim.LBFGS([dla.position_logits], lr=1.0, max_iter=100, line_search_fn="strong_wolfe")
    clicks = torch.tensor(np.minimum(events, 1))

    def step():
        optimiser.zero_grad()
        loss = dla.terms(scores, clicks, positions, mask)["propensity"]
        loss.backward()
        return loss

    optimiser.step(step)
    estimate = dla.propensities()[:, 0].numpy()
    np.testing.assert_allclose(estimate, 1 / np.arange(1, 7), atol=0.03)
    rates = np.array([(events[positions == k] >= 1).mean() for k in range(1, 7)])
    assert np.abs(rates / rates[0] - 1 / np.arange(1, 7)).max() > 0.1  # the logger puts the relevant ones high


@pytest.mark.parametrize("logger", ["shuffled", "fixed"])
def test_a_gap_ranker_a_relevance_model_and_the_propensities_learned_together(logger):
    """A model with two linear heads (a GAP score, a relevance logit) on one-hot grades (so that the relevance head
    can hold the log of each grade's click probability) and the position model trained jointly (Adam) on sessions
    whose top 5 are shuffled, or shown in the fixed order of a logger: the propensities approach (1/k)^1.5, and the
    GAP head orders the grades."""
    torch.manual_seed(0)
    split = _split(300, 8, 6)
    onehot = np.eye(3)[split.labels]
    logger_scores = np.zeros(len(split.labels)) if logger == "shuffled" else split.features[:, 0]
    log = simulate_clicks(split, logger_scores, 10_000, ClickModel(eta=1.5), shown=5,
                          randomise=5 if logger == "shuffled" else 0, seed=7)
    rows, events, positions, mask = session_lists(log)
    features = torch.tensor(onehot[rows])
    heads = torch.nn.Linear(3, 4, dtype=torch.float64)  # the GAP score, a relevance logit per level
    dla = DualLearningLoss("gap", positions=5, levels=3, g=[0.2, 0.3, 0.5], truncation_level=5)
    optimiser = torch.optim.Adam([*heads.parameters(), dla.position_logits], lr=0.1)
    for _ in range(150):
        optimiser.zero_grad()
        outputs = heads(features)
        dla(outputs[..., 0], events, positions, mask, relevance=outputs[..., 1:]).backward()
        optimiser.step()
    np.testing.assert_allclose(dla.propensities()[:, 0].numpy(), np.arange(1, 6) ** -1.5, atol=0.05)
    gap_head = heads.weight.detach()[0]
    assert float(gap_head[0]) < float(gap_head[1]) < float(gap_head[2])


def test_max_weight_clips_the_weights_and_sum_adds_the_sessions():
    """max_weight caps the inverse propensities (of the ranker's and the relevance model's losses) and the inverse
    relevances (of the position model's); reduction="sum" is the sessions' sum of the ranking loss."""
    scores = torch.tensor([[3.0, 0.0, -2.0], [0.5, 1.0, 0.0]], dtype=torch.float64)
    events = torch.tensor([[0, 1, 1], [1, 0, 1]])
    positions = torch.tensor([[1, 2, 3], [1, 2, 3]])
    clipped = DualLearningLoss("gap", positions=3, levels=1, g=[1.0], max_weight=2.0)
    with torch.no_grad():
        clipped.position_logits.copy_(torch.tensor([[0.0], [-3.0], [-1.0]]))  # 1/theta: 1, e^3, e^1
    terms = clipped.terms(scores, events, positions, relevance=scores[..., None])
    weights = torch.tensor([1.0, 2.0, 2.0], dtype=torch.float64)[None, :, None].expand(2, 3, 1)
    expected = LambdaRankLoss("gap", g=[1.0], max_grade=1)(scores, events, None, weights=weights)
    torch.testing.assert_close(terms["ranking"], expected, rtol=1e-12, atol=0)
    log_p = torch.log_softmax(clipped.position_logits.detach()[:, 0], 0)
    w = torch.tensor([[0.0, 2.0, 2.0], [1.0, 0.0, np.exp(0.5)]], dtype=torch.float64)  # e^3, e^5 clipped to 2
    torch.testing.assert_close(terms["propensity"], -(w * log_p).sum() / w.sum(), rtol=1e-12, atol=0)
    u = torch.tensor([[0.0, 2.0, 2.0], [1.0, 0.0, 2.0]], dtype=torch.float64)
    log_share = torch.log_softmax(scores, 1)
    torch.testing.assert_close(terms["relevance"], -(u * log_share).sum() / u.sum(), rtol=1e-12, atol=0)
    summed = DualLearningLoss("gap", positions=3, levels=1, g=[1.0], reduction="sum")
    mean = DualLearningLoss("gap", positions=3, levels=1, g=[1.0])
    torch.testing.assert_close(summed.terms(scores, events, positions, relevance=scores)["ranking"],
                               2 * mean.terms(scores, events, positions, relevance=scores)["ranking"], rtol=1e-12,
                               atol=0)  # one level: relevance [sessions, list] too


@pytest.mark.parametrize("call, message", [
    (lambda d: d(torch.zeros(2, 3), [[1, 0, 0]], [[1, 2, 3]]), r"must be \[sessions, list\] of one shape"),
    (lambda d: DualLearningLoss("gap")(torch.zeros(1, 3), [[1, 0, 0]], [[1, 2, 3]]), "relevance= is required with"),
    (lambda d: d(torch.zeros(1, 3), [[1, 0, 0]], [[1, 2, 3]], relevance=torch.zeros(1, 3)),
     "relevance= is for a measure's ranker"),
    (lambda d: DualLearningLoss("gap", levels=2)(torch.zeros(1, 3), [[1, 0, 0]], [[1, 2, 3]],
                                                 relevance=torch.zeros(1, 3)), r"relevance \[sessions, list, 2\]"),
    (lambda d: DualLearningLoss(levels=3), "without a measure the scores are one relevance model, of clicks"),
    (lambda d: DualLearningLoss(g=[1.0]), "g: settings of the LambdaRank loss, which needs a measure"),
    (lambda d: d(torch.zeros(1, 3), [[2, 0, 0]], [[1, 2, 3]]), r"events must be 0..1 \(levels\); got 0..2"),
    (lambda d: d(torch.zeros(1, 3), [[1, 0, 0]], [[1, 2, 4]]), "positions must be 1..3; got 1..4"),
    (lambda d: d(torch.zeros(1, 3), [[1, 0, 0]], [[2, 3, 2]]), "session 0 shows position 1 0 times"),
    (lambda d: d(torch.zeros(1, 3), [[1, 0, 0]], [[1, 2, 3]], [[1, 1, 0]]), "mask must be boolean"),
    (lambda d: d(torch.zeros(1, 3), [[1.0, 0, 0]], [[1, 2, 3]]), "events and positions must be integers"),
    (lambda d: DualLearningLoss(positions=0), "positions must be a positive integer"),
    (lambda d: DualLearningLoss(max_weight=0.5), "max_weight must be a number >= 1"),
    (lambda d: DualLearningLoss(reduction="none"), "reduction must be 'mean' or 'sum'"),
    (lambda d: DualLearningLoss("err"), "ERR does not take weights"),
])
def test_bad_input_is_one_line(call, message):
    with pytest.raises(GaprankInputError, match=message) as caught:
        call(DualLearningLoss(positions=3, levels=1))
    assert "\n" not in str(caught.value)


def test_session_lists_of_a_hand_made_log():
    log = ClickLog(np.array([0, 0, 1]), np.array([0, 0, 1]), np.array([4, 7, 2]), np.array([1, 2, 1]),
                   np.array([1, 0, 0], dtype=np.int8))
    rows, events, positions, mask = session_lists(log)
    np.testing.assert_array_equal(positions, [[1, 2], [1, 0]])
    np.testing.assert_array_equal(events, [[1, 0], [0, 0]])
    np.testing.assert_array_equal(mask, [[True, True], [True, False]])


def test_session_lists_order_each_session_by_position_whatever_the_rows_order():
    log = ClickLog(np.array([1, 0, 0, 1]), np.array([1, 0, 0, 1]), np.array([3, 7, 4, 2]), np.array([2, 2, 1, 1]),
                   np.array([0, 1, 0, 1], dtype=np.int8))
    rows, events, positions, mask = session_lists(log)
    np.testing.assert_array_equal(rows, [[4, 7], [2, 3]])
    np.testing.assert_array_equal(positions, [[1, 2], [1, 2]])
    np.testing.assert_array_equal(events, [[0, 1], [1, 0]])


def test_session_lists_refuse_a_negative_session():
    log = ClickLog(np.array([0, -1]), np.array([0, 0]), np.array([1, 2]), np.array([1, 2]), np.array([0, 1], np.int8))
    with pytest.raises(GaprankInputError, match="sessions are numbered 0, 1, ...; got a negative session"):
        session_lists(log)
