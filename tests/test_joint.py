"""Propensities estimated with the ranker (Unbiased LambdaMART's estimator, gaprank.clicks.JointPropensities):
each step against a loop over the sessions' pairs, its weights against click_training_set's, the examination curve
recovered from a log, the LightGBM objective's rounds moving the estimate the caller holds, and bad input."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from gaprank import GaprankInputError
from gaprank.clicks import ClickLog, ClickModel, JointPropensities, click_training_set, simulate_clicks
from gaprank.data import RankingSplit

lgb = pytest.importorskip("lightgbm")


def _split(sizes: list[int], seed: int = 0) -> RankingSplit:
    rng = np.random.default_rng(seed)
    rows = sum(sizes)
    return RankingSplit(features=rng.normal(size=(rows, 3)), labels=rng.integers(0, 3, rows),
                        qids=np.repeat([str(q) for q in range(len(sizes))], sizes),
                        docids=np.array([f"d{i}" for i in range(rows)]))


def _log(split: RankingSplit, sessions: int, seed: int) -> ClickLog:
    """Sessions of random orders and random events 0..3 (more at the top), some lists shorter than others."""
    return simulate_clicks(split, np.zeros(len(split.labels)), sessions,
                           ClickModel(eta=1.0, epsilon_minus=0.2, cart=[0.0, 0.5, 0.8], purchase=[0.0, 0.4, 0.6]),
                           shown=5, randomise=5, seed=seed)


def _loop_step(logs, joint, scores, t_plus, t_minus, bias_norm, sigma=1.0):
    """Eqs. 30-31 by a loop over every session's pairs (sums per session showing the position)."""
    positions, levels = t_plus.shape
    index = {int(r): i for i, r in enumerate(joint.data.rows)}
    by_high, by_low = np.zeros((positions, levels)), np.zeros((positions, levels))
    slots = np.zeros(positions)
    for log in logs:
        for s in np.unique(log.session):
            rows = np.flatnonzero(log.session == s)
            for r in rows:
                slots[log.position[r] - 1] += 1
            for a in range(1, levels + 1):
                for i in rows:
                    for j in rows:
                        if log.event[i] >= a > log.event[j]:
                            p, q = log.position[i] - 1, log.position[j] - 1
                            diff = scores[index[int(log.document[i])]] - scores[index[int(log.document[j])]]
                            cost = np.log1p(np.exp(-sigma * diff))
                            by_high[p, a - 1] += cost / t_minus[q, a - 1]
                            by_low[q, a - 1] += cost / t_plus[p, a - 1]
    new_plus, new_minus = t_plus.copy(), t_minus.copy()
    for sums, curve in ((by_high, new_plus), (by_low, new_minus)):
        sums = sums / slots[:, None]
        for a in range(levels):
            if sums[0, a] > 0:
                for k in range(positions):
                    if sums[k, a] > 0:
                        curve[k, a] = (sums[k, a] / sums[0, a]) ** (1 / (1 + bias_norm))
    return new_plus, new_minus


@pytest.mark.parametrize("bias_norm", [0.0, 2.0])
def test_each_step_is_the_loop_over_the_sessions_pairs(bias_norm):
    split = _split([5, 3, 5, 4])
    logs = [_log(split, 60, seed=1), _log(split, 25, seed=2)]
    joint = JointPropensities(split, logs, bias_norm=bias_norm, sigma=1.5)
    rng = np.random.default_rng(3)
    t_plus, t_minus = joint.propensities.copy(), joint.negatives.copy()
    for _ in range(3):  # the second and third steps read the first's t+ and t-
        scores = rng.normal(size=joint.data.rows.size)
        t_plus, t_minus = _loop_step(logs, joint, scores, t_plus, t_minus, bias_norm, sigma=1.5)
        joint.update(scores)
        np.testing.assert_allclose(joint.propensities, t_plus, rtol=1e-12)
        np.testing.assert_allclose(joint.negatives, t_minus, rtol=1e-12)
    assert not np.allclose(t_plus, 1.0)


def test_the_weights_are_click_training_set_s_under_the_current_propensities():
    split = _split([5, 3, 5, 4])
    logs = [_log(split, 50, seed=4), _log(split, 30, seed=5)]
    joint = JointPropensities(split, logs)
    counts = logs[0].count(len(split.labels), 5)
    counts.counts[:] += logs[1].count(len(split.labels), 5).counts
    theta = np.stack([ClickModel(eta=eta).examined(5) for eta in (0.5, 1.0, 2.0)], axis=1)
    joint.propensities[:] = theta
    expected = click_training_set(split, counts, theta)
    np.testing.assert_array_equal(joint.data.rows, expected.rows)
    np.testing.assert_array_equal(joint.data.split.labels, expected.split.labels)
    np.testing.assert_allclose(joint.weights(), expected.weights, rtol=1e-12)


def test_the_estimate_on_a_randomised_log_follows_the_examination_curve():
    """With every order random and equal scores, t+ is the events per shown slot at each position against the top
    one: the examination curve, up to how many unclicked documents the others leave (a few per cent here)."""
    split = _split([10] * 200, seed=6)
    model = ClickModel(eta=1.0)
    log = simulate_clicks(split, np.zeros(len(split.labels)), 100_000, model, randomise=10, seed=7)
    joint = JointPropensities(split, log, bias_norm=0.0)
    joint.update(np.zeros(joint.data.rows.size))
    np.testing.assert_allclose(joint.propensities[:, 0], model.examined(10), rtol=0.08)


def test_lightgbm_rounds_update_the_estimate_the_caller_holds():
    split = _split([8] * 40, seed=8)
    log = _log(split, 3000, seed=9)
    joint = JointPropensities(split, log)
    from gaprank.lightgbm import lambdarank_objective

    objective = joint.objective(lambdarank_objective("gap", row_weights="measure"))
    data = joint.data.split
    lgb.train({"objective": objective, "verbosity": -1, "min_data_in_leaf": 5, "num_threads": 1},
              lgb.Dataset(data.features, data.labels, group=data.group_sizes), num_boost_round=3)
    assert joint.propensities[0, 0] == 1.0 and not np.allclose(joint.propensities, 1.0)
    np.testing.assert_array_equal(objective.objective.level_weights, joint.weights())


def test_xgboost_rounds_update_the_estimate_as_lightgbm_rounds_do():
    """The first round's scores are constant in both boosters, so one round of each gives the same estimate; later
    rounds move it, and the objective trains on the weights it gives."""
    xgb = pytest.importorskip("xgboost")
    import gaprank.xgboost
    from gaprank.lightgbm import lambdarank_objective

    split = _split([8] * 40, seed=8)
    log = _log(split, 3000, seed=9)
    lightgbm_joint, xgboost_joint = JointPropensities(split, log), JointPropensities(split, log)
    data = lightgbm_joint.data.split
    lgb.train({"objective": lightgbm_joint.objective(lambdarank_objective("gap", row_weights="measure")),
               "verbosity": -1, "min_data_in_leaf": 5, "num_threads": 1},
              lgb.Dataset(data.features, data.labels, group=data.group_sizes), num_boost_round=1)
    objective = xgboost_joint.objective(gaprank.xgboost.objective("gap", row_weights="measure"))
    train = xgb.DMatrix(data.features, label=data.labels, qid=data.query_index)
    xgb.train({"nthread": 1, "max_depth": 3}, train, 1, obj=objective)
    first = xgboost_joint.propensities.copy()
    np.testing.assert_allclose(first, lightgbm_joint.propensities, rtol=1e-12)
    assert not np.allclose(first, 1.0)
    xgb.train({"nthread": 1, "max_depth": 3}, train, 3, obj=objective)
    assert not np.allclose(xgboost_joint.propensities, first)
    np.testing.assert_array_equal(objective.objective.level_weights, xgboost_joint.weights())


def test_the_pairs_are_the_same_whatever_the_chunks_and_logs_the_sessions_come_in():
    """150,000 sessions of ten documents: two chunks as one log, against two logs of 75,000 (one chunk each)."""
    split = _split([10] * 30, seed=10)
    log = simulate_clicks(split, np.zeros(len(split.labels)), 150_000, ClickModel(eta=1.0), randomise=10, seed=11)
    first, second = log.sessions_between(0, 75_000), log.sessions_between(75_000, 150_000)
    second = dataclasses.replace(second, session=second.session - 75_000)
    whole, parts = JointPropensities(split, log), JointPropensities(split, [first, second])
    scores = np.random.default_rng(12).normal(size=whole.data.rows.size)
    whole.update(scores)
    parts.update(scores)
    np.testing.assert_allclose(parts.propensities, whole.propensities, rtol=1e-12)
    np.testing.assert_allclose(parts.negatives, whole.negatives, rtol=1e-12)


def test_a_level_without_pairs_at_the_top_keeps_its_curve():
    """Two sessions by hand: clicks at positions 1 and 2 with an unclicked document below, no cart at position 1 (so
    the cart curve stays 1) and the purchase level never reached."""
    split = _split([3])
    log = ClickLog(np.array([0, 0, 0, 1, 1, 1]), np.zeros(6, dtype=np.int64), np.array([0, 1, 2, 1, 0, 2]),
                   np.array([1, 2, 3, 1, 2, 3]), np.array([1, 0, 0, 0, 2, 0], dtype=np.int8))
    joint = JointPropensities(split, log)
    joint.update(np.zeros(3))
    # clicks: position 1 has two pairs in session 0, position 2 two in session 1: equal costs, 1 / 1
    np.testing.assert_allclose(joint.propensities[:, 0], [1.0, 1.0, 1.0])
    np.testing.assert_array_equal(joint.propensities[:, 1:], 1.0)
    # below: the unclicked documents at 2 (session 0) and at 1 (session 1), and at 3 in both
    np.testing.assert_allclose(joint.negatives[:, 0], [1.0, 1.0, 2.0])


def _shifted(log: ClickLog, column: str, values) -> ClickLog:
    return ClickLog(**{c: (np.asarray(values, dtype=getattr(log, c).dtype) if c == column else getattr(log, c))
                       for c in ("session", "query", "document", "position", "event")})


@pytest.mark.parametrize("call, message", [
    (lambda s, log: JointPropensities(s, log.count(len(s.labels), 5)), "logs must be ClickLog"),
    (lambda s, log: JointPropensities(s, _shifted(log, "position", log.position - 1)), r"logs\[0\]: positions start"),
    (lambda s, log: JointPropensities(s, _shifted(log, "session", log.session[::-1])), "sessions must be numbered"),
    (lambda s, log: JointPropensities(s, log, levels=2), r"events must be 0..levels-1 = 0..1; got 3"),
    (lambda s, log: JointPropensities(s, log, bias_norm="x"), "bias_norm must be a number; got 'x'"),
    (lambda s, log: JointPropensities(s, ClickLog(*(np.zeros(0, dtype=np.int64),) * 5)), "empty log"),
    (lambda s, log: JointPropensities(s, log, bias_norm=-1.0), "bias_norm must be a finite number >= 0"),
    (lambda s, log: JointPropensities(s, log, sigma=0.0), "sigma must be a finite number > 0"),
    (lambda s, log: JointPropensities(s, log).update(np.zeros(3)), "scores has 3 values"),
    (lambda s, log: JointPropensities(s, log).update(np.full(len(s.labels), np.nan)[:JointPropensities(s, log)
                                                     .data.rows.size]), "scores must be finite"),
    (lambda s, log: JointPropensities(s, log).objective(__import__("gaprank.lightgbm").lightgbm
                                                        .lambdarank_objective("gap")), "row_weights='measure'"),
    (lambda s, log: JointPropensities(s, log).objective(__import__("gaprank.boosting").boosting.LambdaMARTObjective(
        "gap", row_weights="measure")), "takes a gaprank.lightgbm or gaprank.xgboost objective"),
])
def test_bad_input_is_one_line(call, message):
    split = _split([5, 3])
    with pytest.raises(GaprankInputError, match=message) as raised:
        call(split, _log(split, 20, seed=1))
    assert "\n" not in str(raised.value)
