"""Training sanity on real data: a linear model trained on OHSUMED Fold1 with each loss improves the
metric that loss targets, on the training queries, over the initial model."""

from __future__ import annotations

import pytest
import torch
from shared import g_for

import gaprank
import gaprank.losses as L
from gaprank.data import load_fold

G = (0.5, 0.5)  # the GAP paper's user model for 3-grade OHSUMED
TARGETS = {
    "gap": lambda s, y, m: gaprank.gap(s, y, g=G, mask=m),
    "xgap": lambda s, y, m: gaprank.xgap(s, y, g=G, mask=m),
    "egap": lambda s, y, m: gaprank.egap(s, y, g=G, mask=m),
    "ap": lambda s, y, m: gaprank.average_precision(s, y, mask=m),
    "ndcg": lambda s, y, m: gaprank.ndcg(s, y, mask=m),
}


def _soft(metric, smoothing):
    # the expectation's cost grows with (score range / sigma): a wider sigma keeps this test quick
    # approx at 0.1 starts on a plateau for nDCG here (its loss falls, the metric only after ~20 steps)
    sigma = 0.3 if smoothing in ("expected", "approx") else 0.1
    return lambda s, y, k: L.soft_metric_loss(s, y, measure=metric, g=g_for(metric, G), sigma=sigma, smoothing=smoothing, mask=k)


def _lambdarank(metric):
    return lambda s, y, k: L.lambdarank_loss(s, y, measure=metric, g=g_for(metric, G), mask=k)


CASES = {  # name: (loss, the metric it targets, train on the 16 shortest queries only -- O(N^3) losses)
    **{f"soft_{m}": (_soft(m, "softrank"), m, m == "ndcg") for m in TARGETS},
    **{f"exact_{m}": (_soft(m, "expected"), m, True) for m in ("gap", "xgap", "egap", "ap")},
    **{f"lambdarank_{m}": (_lambdarank(m), m, False) for m in TARGETS},
    **{f"{smoothing}_{m}": (_soft(m, smoothing), m, False)
       for smoothing in ("approx", "neuralsort", "softsort", "fast_soft_rank") for m in ("gap", "ndcg")},
    "ranknet": (lambda s, y, k: L.ranknet_loss(s, y, mask=k), "ap", False),
    "listnet": (lambda s, y, k: L.listnet_loss(s, y, mask=k), "ndcg", False),
}


@pytest.fixture(scope="module")
def ohsumed_train():
    fold = load_fold("OHSUMED", 1)
    batch = fold.train.to_padded(dtype=torch.float32)
    sizes = batch.mask.sum(-1)
    short = torch.argsort(sizes)[:16]
    width = int(sizes[short].max())
    return (batch.features, batch.labels, batch.mask), (
        batch.features[short, :width], batch.labels[short, :width], batch.mask[short, :width])


@pytest.mark.parametrize("name", list(CASES))
def test_training_improves_the_target_metric(name, ohsumed_train):
    loss_fn, metric, shortest = CASES[name]
    features, labels, mask = ohsumed_train[1] if shortest else ohsumed_train[0]
    torch.manual_seed(0)
    model = torch.nn.Linear(features.shape[-1], 1)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.05)

    def target():
        with torch.no_grad():
            return TARGETS[metric](model(features).squeeze(-1), labels, mask).item()

    before = target()
    losses = []
    for _ in range(12):
        optimizer.zero_grad()
        loss = loss_fn(model(features).squeeze(-1), labels, mask)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    after = target()
    assert after > before + 0.005, (before, after)
    if not name.startswith("lambdarank"):  # LambdaRank's cost is re-weighted by Delta M at every step
        assert losses[-1] < losses[0]
