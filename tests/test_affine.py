"""Trust bias estimated from randomised sessions (gaprank.clicks.estimate_affine): the slopes and offsets of the
simulator's trust-bias model recovered by Monte Carlo, the affine correction on them estimating each grade's
relevance, and bad input."""

from __future__ import annotations

import numpy as np
import pytest

from gaprank import GaprankInputError
from gaprank.clicks import ClickLog, ClickModel, click_training_set, estimate_affine, simulate_clicks
from gaprank.data import RankingSplit


def _split(queries: int, size: int, seed: int) -> RankingSplit:
    """Queries of ``size`` documents with grades 0..2, about 60% not relevant."""
    rng = np.random.default_rng(seed)
    labels = rng.choice([0, 1, 2], queries * size, p=[0.6, 0.25, 0.15])
    return RankingSplit(features=np.zeros((labels.size, 1)), labels=labels,
                        qids=np.repeat(np.arange(queries).astype(str), size),
                        docids=np.array([f"d{i}" for i in range(labels.size)]))


def _trust_model() -> ClickModel:
    """Agarwal et al.'s trust bias: noise clicks of 0.65 / rank, a ceiling that falls with the rank."""
    ranks = np.arange(1, 11)
    return ClickModel(eta=1.0, epsilon_plus=list(1.0 - (ranks - 1) / 100.0), epsilon_minus=list(0.65 / ranks))


@pytest.mark.parametrize("model", [_trust_model(), ClickModel(eta=1.0, epsilon_minus=0.1)],
                         ids=["trust bias", "noise clicks"])
def test_the_slopes_and_offsets_of_randomised_sessions_are_the_model_s(model):
    """300 queries of ten documents, every session shuffled, 200,000 sessions: three classes (the grades) give each
    rank's slope and offset within 0.02 of the simulator's; the class values are estimated too (their truth:
    relevance 0, 1/3 and 1)."""
    split = _split(300, 10, seed=1)
    log = simulate_clicks(split, np.zeros(split.labels.size), 200_000, model, randomise=10, seed=2)
    slopes, offsets = estimate_affine(log, 10, classes=3)
    true_slopes, true_offsets = model.affine(10)
    np.testing.assert_allclose(slopes, true_slopes, atol=0.02)
    np.testing.assert_allclose(offsets, true_offsets, atol=0.02)
    assert (slopes > 0).all() and (offsets >= 0).all() and (slopes + offsets < 1).all()


def test_the_affine_correction_on_the_estimate_gives_each_grade_its_relevance():
    """click_training_set with the estimated slopes and offsets: the clicks' estimates average, per grade, near the
    simulator's relevance (2^g - 1)/3 = 0, 1/3, 1; the raw click rates do not (trust bias lifts the irrelevant)."""
    split = _split(300, 10, seed=3)
    model = _trust_model()
    log = simulate_clicks(split, np.zeros(split.labels.size), 200_000, model, randomise=10, seed=4)
    slopes, offsets = estimate_affine(log, 10, classes=3)
    counts = log.count(split.labels.size)
    corrected = click_training_set(split, counts, np.stack([slopes] * 3, 1), offsets=np.stack(
        [offsets, np.zeros(10), np.zeros(10)], 1))
    raw = click_training_set(split, counts, np.ones(10))
    grades = split.labels[corrected.rows]
    means = [corrected.weights[grades == g, 0].mean() for g in range(3)]
    np.testing.assert_allclose(means, [0.0, 1 / 3, 1.0], atol=0.03)
    assert raw.weights[grades == 0, 0].mean() > 0.05


def test_two_classes_are_relevant_or_not():
    """Binary relevance (grades 0 and 2 only): the default two classes recover the slopes and offsets."""
    split = _split(300, 10, seed=5)
    split = RankingSplit(split.features, np.where(split.labels > 0, 2, 0), split.qids, split.docids)
    model = _trust_model()
    log = simulate_clicks(split, np.zeros(split.labels.size), 200_000, model, randomise=10, seed=6)
    slopes, offsets = estimate_affine(log, 10)
    np.testing.assert_allclose(slopes, model.affine(10)[0], atol=0.02)
    np.testing.assert_allclose(offsets, model.affine(10)[1], atol=0.02)


def _small_log() -> ClickLog:
    split = _split(20, 4, seed=7)
    return simulate_clicks(split, np.zeros(split.labels.size), 2000, ClickModel(eta=1.0, epsilon_minus=0.1),
                           shown=4, randomise=4, seed=8)


def test_a_slope_that_vanishes_is_refused():
    """500 shuffled sessions of MQ2008-like lists are too few at some rank: its slope comes out near 0, and the
    estimate is refused naming the rank rather than returned to weigh its events without bound."""
    split = _split(300, 10, seed=11)
    log = simulate_clicks(split, np.zeros(split.labels.size), 300, _trust_model(), randomise=10, seed=12)
    with pytest.raises(GaprankInputError, match=r"rank \d+'s slope comes out at .*too few randomised sessions"):
        estimate_affine(log, 10, classes=3)


@pytest.mark.parametrize("call, message", [
    (lambda log: estimate_affine(log, 0), "randomise must be an integer >= 1"),
    (lambda log: estimate_affine(log, 4, classes=1), "classes must be an integer >= 2"),
    (lambda log: estimate_affine(log, 4, level=0), "level must be an integer >= 1"),
    (lambda log: estimate_affine(log, 4, classes=2.5), "classes must be an integer"),
    (lambda log: estimate_affine(log, 4, tolerance=0), "tolerance must be a finite number > 0"),
    (lambda log: estimate_affine(log, 4, tolerance=np.inf), "tolerance must be a finite number > 0"),
    (lambda log: estimate_affine(log, 4, iterations=0), "iterations must be an integer >= 1"),
    (lambda log: estimate_affine(log, 4, level=9), "have no event of level 9 or above"),
    (lambda log: estimate_affine(log, 5), "no session of the log shows all 5 randomised ranks"),
    (lambda log: estimate_affine(log, 4, classes=500), "show 80 documents: too few for 500 classes"),
])
def test_bad_input_is_one_line(call, message):
    with pytest.raises(GaprankInputError, match=message) as caught:
        call(_small_log())
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize("classes", [2, 3])
def test_a_sparse_log_where_most_documents_got_no_click_still_finds_the_slopes(classes):
    """3,000 shuffled sessions over 300 queries of ten documents: each document shown about ten times, most never
    clicked (so the rates' quantiles are 0). The slopes within 25% of the simulator's and the offsets within 0.05
    (binary relevance, so both class counts fit the model)."""
    split = _split(300, 10, seed=9)
    split = RankingSplit(split.features, np.where(split.labels > 0, 2, 0), split.qids, split.docids)
    model = ClickModel(eta=1.0, epsilon_minus=0.05)
    log = simulate_clicks(split, np.zeros(split.labels.size), 3000, model, randomise=10, seed=10)
    clicked = np.bincount(log.document, weights=log.event >= 1, minlength=split.labels.size)
    assert (clicked == 0).mean() > 0.5
    slopes, offsets = estimate_affine(log, 10, classes=classes)
    true_slopes, true_offsets = model.affine(10)
    np.testing.assert_allclose(slopes, true_slopes, rtol=0.25)
    np.testing.assert_allclose(offsets, true_offsets, atol=0.05)
