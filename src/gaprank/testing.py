"""Check a measure against an oracle you write: the metric, its swap deltas, its LambdaRank loss and
LambdaMART gradients, its smooth forms.

:func:`check_measure` is what the test suite runs for every registered measure, and what a new measure's
author runs once its entry is registered (docs: "Adding a measure"). The oracle is the measure written
the plainest way, over one ranked list of grades; everything else is compared with brute force built on it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from .metrics import objective_measure, parse_measure

Oracle = Callable[..., "float | None"]


def _plain(value: Any) -> Any:
    return value.tolist() if isinstance(value, torch.Tensor) else value


def _batch(seed: int, top: int, batch: int, size: int) -> tuple[torch.Tensor, torch.Tensor]:
    rng = np.random.default_rng(seed)
    scores = torch.tensor(rng.normal(size=(batch, size)))
    labels = torch.tensor(rng.integers(0, top + 1, size=(batch, size)))
    labels[:, 0], labels[:, 1] = top, 0  # every query has two grades, one of them the top
    labels[-1] = 0  # and one query has nothing relevant: its measure may be undefined, its deltas 0
    return scores, labels


def _oracle_values(oracle: Oracle, scores: torch.Tensor, labels: torch.Tensor, num_grades: int, k: int | None,
                   params: dict[str, Any]) -> np.ndarray:
    values = []
    for s, y in zip(scores.tolist(), labels.tolist(), strict=True):
        order = sorted(range(len(s)), key=lambda i: (-s[i], i))  # higher score first, ties in input order
        counts = [y.count(grade) for grade in range(num_grades + 1)]
        value = oracle([y[i] for i in order], counts, k, **params)
        values.append(0.0 if value is None else float(value))  # undefined: the metric's empty_value 0
    return np.array(values)


def check_measure(measure: str, oracle: Oracle, *, seed: int = 0, batch: int = 4, size: int = 8,
                  atol: float = 1e-10) -> None:
    r"""Compare a registered measure with its oracle, and everything built on it with brute force.

    * the metric, per query, against ``oracle``;
    * its swap deltas (when it has them) against the oracle after swapping each pair;
    * the LambdaRank loss and its gradient, and the LambdaMART gradients and hessians
      (:func:`gaprank.lightgbm.lambdarank_objective` in float64), against
      :math:`\sum_{l_i > l_j} |\Delta M_{ij}| \log(1 + e^{-(s_i - s_j)})` and its derivatives with the
      oracle's :math:`\Delta M`;
    * its smooth form (``soft_metric``, and ``smoothing="expected"`` where it has one) at a tiny sigma against the
      metric.

    Parameters
    ----------
    measure : str
        A measure string (``"nDCG@5"``, ``"AP(rel=2)"``).
    oracle : callable
        ``oracle(grades, counts, k, **params) -> float or None``: the measure of one list, from its grades in
        ranked order, R(0)..R(c) (the judged documents of each grade) and the cutoff (None: none), with the
        measure's own parameters by keyword (checked and filled, lists as Python lists); None where it is
        undefined.
    seed : int
        The random lists' seed.
    batch, size : int
        Lists per batch and documents per list.
    atol : float
        The absolute tolerance of every comparison (the smooth forms get 1e-6).

    Raises
    ------
    AssertionError
        At the first disagreement, naming it.

    Examples
    --------
    >>> from gaprank.testing import check_measure
    >>> def precision_oracle(grades, counts, k, threshold, short_list):
    ...     return sum(g >= threshold for g in grades[:k]) / k
    >>> check_measure("P@3", precision_oracle)
    """
    from .losses import lambdarank_loss, soft_metric, swap_deltas

    parsed = parse_measure(measure)
    info = parsed.info
    values, scale, _ = parsed.settings()
    top = scale if scale is not None else 3
    scores, labels = _batch(seed, top, batch, size)
    num_grades = top if scale is None else scale
    params = {key: _plain(value) for key, value in info.fill(values, num_grades, torch.device("cpu")).items()}
    k = parsed.k
    base = _oracle_values(oracle, scores, labels, num_grades, k, params)
    got = np.asarray(parsed(scores.numpy(), labels.numpy(), reduction="none"))
    np.testing.assert_allclose(got, base, rtol=0, atol=atol, err_msg=f"{measure}: the metric against the oracle")
    if parsed.serves("soft"):
        smooth = soft_metric(scores, labels, measure=measure, sigma=1e-4)
        np.testing.assert_allclose(smooth.numpy(), base, rtol=0, atol=1e-6, err_msg=f"{measure}: its smooth form")
    if parsed.serves("expected"):
        smooth = soft_metric(scores, labels, measure=measure, sigma=1e-4, smoothing="expected")
        np.testing.assert_allclose(smooth.numpy(), base, rtol=0, atol=1e-6, err_msg=f"{measure}: smoothing='expected'")
    if not info.swap_deltas:
        return
    objective_measure(measure)
    pairs = [(i, j) for i in range(size) for j in range(i + 1, size)]
    deltas = np.zeros((batch, size, size))
    for i, j in pairs:
        swapped = scores.clone()
        swapped[:, [i, j]] = swapped[:, [j, i]]
        deltas[:, i, j] = deltas[:, j, i] = _oracle_values(oracle, swapped, labels, num_grades, k, params) - base
    np.testing.assert_allclose(swap_deltas(scores, labels, measure=measure).numpy(), deltas, rtol=0, atol=atol,
                               err_msg=f"{measure}: swap deltas against the oracle after each swap")
    # brute-force LambdaRank: pairs with l_i > l_j, rho = 1 / (1 + exp(s_i - s_j)), sigma 1
    s, y = scores.numpy(), labels.numpy()
    cost, grad, hess = np.zeros(batch), np.zeros((batch, size)), np.zeros((batch, size))
    for b in range(batch):
        for i in range(size):
            for j in range(size):
                if y[b, i] > y[b, j]:
                    weight = abs(deltas[b, i, j])
                    rho = 1.0 / (1.0 + np.exp(s[b, i] - s[b, j]))
                    cost[b] += weight * np.log1p(np.exp(-(s[b, i] - s[b, j])))
                    grad[b, i] -= weight * rho
                    grad[b, j] += weight * rho
                    hess[b, i] += weight * rho * (1 - rho)
                    hess[b, j] += weight * rho * (1 - rho)
    leaf = scores.clone().requires_grad_(True)
    loss = lambdarank_loss(leaf, labels, measure=measure, reduction="none")
    loss.sum().backward()
    assert leaf.grad is not None
    np.testing.assert_allclose(loss.detach().numpy(), cost, rtol=0, atol=atol, err_msg=f"{measure}: LambdaRank loss")
    np.testing.assert_allclose(leaf.grad.numpy(), grad, rtol=0, atol=atol, err_msg=f"{measure}: LambdaRank gradient")
    from .lightgbm import lambdarank_objective

    # LambdaMART fills data-dependent settings from the whole data set, as the metric did from the batch
    objective = lambdarank_objective(measure, precision="float64")
    lgb_grad, lgb_hess = objective.gradients(s.reshape(-1), y.reshape(-1).astype(float), [size] * batch)
    np.testing.assert_allclose(lgb_grad, grad.reshape(-1), rtol=0, atol=atol, err_msg=f"{measure}: LambdaMART gradient")
    np.testing.assert_allclose(lgb_hess, hess.reshape(-1), rtol=0, atol=atol, err_msg=f"{measure}: LambdaMART hessian")
