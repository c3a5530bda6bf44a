"""One parse, one check for every use of a measure string: a cutoff of 0 or one too large for any list is refused
by the metric, every objective, ``swap_deltas``, ``soft_metric`` and a training config alike (before, ``@0``
objectives trained nothing and a huge cutoff overflowed in some uses while the metric returned 0); registry
refusals are one line."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import gaprank
import gaprank.metrics as M
from gaprank import GaprankInputError
from gaprank.lightgbm import lambdarank_objective, sklearn_objective
from gaprank.losses import LambdaRankLoss, lambdarank_loss, soft_metric, swap_deltas

ZERO_CUTOFFS = ["nDCG@0", "GAP@0", "AP@0", "P@0", "RR@0", "RBP@0", "ERR@0", "SR@0", "R@0", "Success@0"]
HUGE = "P@99999999999999999999999"

SCORES = torch.tensor([[0.3, 0.9, 0.1, 0.5]], dtype=torch.float64)
LABELS = torch.tensor([[2, 0, 1, 0]])


def _uses(measure: str):
    """Every way a measure string is used, each a zero-argument call."""
    flat_scores, flat_labels = SCORES.reshape(-1).numpy(), LABELS.reshape(-1).numpy().astype(float)
    uses = {
        "parse_measure": lambda: M.parse_measure(measure),
        "LambdaRankLoss": lambda: LambdaRankLoss(measure)(SCORES.clone().requires_grad_(True), LABELS),
        "lambdarank_loss": lambda: lambdarank_loss(SCORES.clone().requires_grad_(True), LABELS, measure=measure),
        "lightgbm": lambda: lambdarank_objective(measure).gradients(flat_scores, flat_labels, [4]),
        "lightgbm sklearn": lambda: sklearn_objective(measure),
        "swap_deltas": lambda: swap_deltas(SCORES, LABELS, measure=measure),
        "soft_metric": lambda: soft_metric(SCORES, LABELS, measure=measure, sigma=0.1),
        "ranking_feval": lambda: gaprank.ranking_feval([measure]),
    }
    try:
        import gaprank.xgboost as gx

        uses["xgboost"] = lambda: gx.objective(measure)
    except ImportError:  # the xgboost extra is not installed
        pass
    return uses


@pytest.mark.parametrize("measure", [*ZERO_CUTOFFS, HUGE])
def test_a_cutoff_outside_1_to_max_count_is_refused_by_every_use(measure):
    for use, call in _uses(measure).items():
        with pytest.raises(GaprankInputError, match=r"cutoff @k must be a positive integer of at most 2147483647") as caught:
            call()
        assert "\n" not in str(caught.value), use
        assert measure in str(caught.value), use


def test_the_largest_cutoff_is_accepted_and_equals_the_whole_list():
    big = "P@2147483647"
    assert float(M.parse_measure(big)(SCORES, LABELS)) < 1e-9  # P@k divides by k
    whole = lambdarank_loss(SCORES, LABELS, measure="nDCG@2147483647")
    assert float(whole) == pytest.approx(float(lambdarank_loss(SCORES, LABELS, measure="nDCG")), rel=0, abs=1e-12)


@pytest.mark.parametrize("k", [0, -1, 2**31, 10**30, 2.0, True])
def test_a_keyword_cutoff_follows_the_same_rule(k):
    for call in (lambda: gaprank.ndcg(SCORES, LABELS, k=k), lambda: swap_deltas(SCORES, LABELS, measure="ap", k=k),
                 lambda: lambdarank_loss(SCORES.clone().requires_grad_(True), LABELS, truncation_level=k)):
        # LambdaRank's truncation level is not a cutoff, but a positive integer by the same rule
        with pytest.raises(GaprankInputError, match="(k|truncation_level) must be a positive integer of at most 2147483647"):
            call()


def test_a_training_config_with_a_zero_cutoff_fails_when_loaded(tmp_path):
    from training.lambdamart import ObjectiveConfig

    with pytest.raises(GaprankInputError, match="cutoff @k must be a positive integer"):
        ObjectiveConfig(measure="GAP@0")


def test_unregister_of_an_unknown_name_is_one_line():
    with pytest.raises(GaprankInputError, match="no measure is registered as 'nope'") as caught:
        M.unregister("nope")
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize("name", ["GAP", "nDCG", "AP", "DCG"])
def test_unregister_refuses_a_built_in_measure_and_leaves_it_registered(name):
    """unregister is for measures added with register: gaprank's own stay (before, GAP could be removed)."""
    with pytest.raises(GaprankInputError, match="gaprank's own measures") as caught:
        M.unregister(name)
    assert "\n" not in str(caught.value)
    assert M.find_measure(name) is not None
    M.parse_measure(name)


@pytest.mark.parametrize("name", ["Té", "ÄP", "gap2é", "_x", "1x"])
def test_register_refuses_a_name_no_measure_string_can_parse(name):
    form = M.GainDiscountForm(lambda c, params: torch.arange(c + 1, dtype=torch.float64),
                              lambda positions, params: 1.0 / positions)
    with pytest.raises(GaprankInputError, match="ASCII letter") as caught:
        M.register(M.MeasureInfo(name, form))
    assert "\n" not in str(caught.value)
    with pytest.raises(GaprankInputError, match="ASCII letter"):
        M.register(M.MeasureInfo("Fine", form, aliases=(name,)))
    assert M.find_measure("Fine") is None


def test_a_registered_ascii_name_parses_and_trains():
    info = M.register(M.MeasureInfo("Top2x", M.GainDiscountForm(
        lambda c, params: torch.arange(c + 1, dtype=torch.float64), lambda positions, params: 1.0 / positions)))
    try:
        assert M.parse_measure("top2x@3").k == 3
        loss = lambdarank_loss(SCORES.clone().requires_grad_(True), LABELS, measure="Top2x")
        assert np.isfinite(float(loss.detach())) and float(loss.detach()) > 0
    finally:
        M.unregister(info.name)
