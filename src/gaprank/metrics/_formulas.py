r"""The formulas the built-in entries are made of: gains, discounts, normalisers, ERR, Q, RR, Rprec and Success.

Each is written once here and named by its registry entry (:mod:`._measures`); the forms
(:mod:`._forms`) evaluate them. ERR and Q have swap deltas of their own, constant per pair from prefix
sums over the ranking (docs: The maths, "Swap deltas of ERR, Q, RR, R-precision and Success"); RR, Rprec and Success@k have
swap deltas of rank 2 to 4.
"""

from __future__ import annotations

import math
from typing import Any

import torch

from .._inputs import GaprankInputError, check_choice, check_positive_int, check_probability, checked_tensor
from ._forms import Params, Values, cut, ideal_sum
from ._kernels import safe_divide
from ._ranking import RankedLists, default_g, resolve_g

GAINS = ("exp2", "linear")
DISCOUNTS = ("log2p1", "jk")
SHORT_LIST_RULES = ("pad", "zero")
CPU = torch.device("cpu")


# ---------------------------------------------------------------------------------------------
# Parameter checks


def check_g(g: Any) -> torch.Tensor:
    checked = resolve_g(g, CPU)
    assert checked is not None
    return checked


def uniform_g(num_grades: int) -> torch.Tensor:
    return default_g(num_grades, CPU)


def check_threshold(value: Any) -> int:
    return check_positive_int(value, "threshold", allow_none=False)


def check_relevance_probabilities(p: Any) -> torch.Tensor:
    pt = checked_tensor(p, "p", CPU).to(torch.float64)
    if pt.ndim != 1 or pt.numel() < 2:
        raise GaprankInputError("p must list the probability that a document of each grade 0..c is relevant, at least "
                                f"p_0 and p_1 (e.g. p=[0, 0.5, 1] for grades 0..2); got {pt.tolist()}")
    if not bool(torch.isfinite(pt).all()) or bool((pt < 0).any()) or bool((pt > 1).any()):
        raise GaprankInputError(f"p must hold probabilities in [0, 1]; got {pt.tolist()}")
    return pt


def check_persistence(value: Any) -> float:
    return check_probability(value, "persistence", open_interval=True)


def check_beta(beta: Any) -> float:
    try:
        value = float(beta)
    except (TypeError, ValueError) as exc:
        raise GaprankInputError(f"beta must be a number; got {beta!r}") from exc
    if not (math.isfinite(value) and value >= 0):
        raise GaprankInputError(f"beta must be finite and >= 0; got {beta!r}")
    return value


def choice(name: str, choices: tuple[str, ...]):
    """A check that ``value`` is one of ``choices``."""
    return lambda value: check_choice(value, name, choices)


# ---------------------------------------------------------------------------------------------
# Gains, discounts and normalisers of the discounted-gain family


def rank_discount(positions: torch.Tensor, discount: str) -> torch.Tensor:
    """``1/log2(n+1)`` ("log2p1") or ``1/max(1, log2 n)`` ("jk") at 1-based ranks n."""
    if (positions.device.type == "cpu" and positions.dtype == torch.float64 and positions.numel()
            and not positions.requires_grad and not torch.compiler.is_compiling()):
        # On the CPU, torch's log2 (MKL's) starts an OpenMP team even for a few ranks, whose threads then keep
        # spinning on the cores the compiled kernels are about to use: whole ranks read a table of the same values
        # instead, made once per length
        ranks = positions.to(torch.int64)
        if bool((ranks >= 1).all()) and torch.equal(ranks.to(torch.float64), positions):
            longest = int(ranks.max())
            if longest <= TABLED_RANKS:
                return _discount_table(discount, longest)[ranks - 1]
    return _discount_formula(positions, discount)


def _discount_formula(positions: torch.Tensor, discount: str) -> torch.Tensor:
    if discount == "log2p1":
        return 1.0 / torch.log2(positions + 1.0)
    return 1.0 / torch.clamp(torch.log2(positions), min=1.0)


TABLED_RANKS = 1 << 16  # ranks the tables reach (longer lists: the team's start is a small part of their time)
_DISCOUNT_TABLES: dict[str, torch.Tensor] = {}  # discount -> its value at ranks 1, 2, ... (CPU, float64)


def _discount_table(discount: str, longest: int) -> torch.Tensor:
    """The discount at ranks 1..at least ``longest``, grown by doubling (a table is never changed, only replaced)."""
    table = _DISCOUNT_TABLES.get(discount)
    if table is None or table.numel() < longest:
        length = min(TABLED_RANKS, max(64, longest, 2 * (0 if table is None else table.numel())))
        ranks = torch.arange(1, length + 1, dtype=torch.float64, device="cpu")  # not the default device's
        table = _DISCOUNT_TABLES[discount] = _discount_formula(ranks, discount)
    return table


def gain_table(num_grades: int, gain: str) -> torch.Tensor:
    """``2^l - 1`` ("exp2") or ``l`` ("linear") for grades 0..c."""
    grades = torch.arange(num_grades + 1, dtype=torch.float64)
    return torch.pow(2.0, grades) - 1.0 if gain == "exp2" else grades


def graded_gain(num_grades: int, params: Params) -> torch.Tensor:
    return gain_table(num_grades, params["gain"])


def graded_discount(positions: torch.Tensor, params: Params) -> torch.Tensor:
    return rank_discount(positions, params["discount"])


def ideal_dcg(ranked: RankedLists, gains: torch.Tensor, k: int | None, params: Params) -> torch.Tensor:
    return ideal_sum(ranked, gains, graded_discount, k, params)


def binary_gain(num_grades: int, params: Params) -> torch.Tensor:
    """1 for grades >= the threshold, else 0."""
    return (torch.arange(num_grades + 1) >= params["threshold"]).to(torch.float64)


def relevance_gain(num_grades: int, params: Params) -> torch.Tensor:
    """p_l: the probability that a document of grade l is relevant."""
    return params["p"]


def linear_gain(num_grades: int, params: Params) -> torch.Tensor:
    return torch.arange(num_grades + 1, dtype=torch.float64)


def flat_discount(positions: torch.Tensor, params: Params) -> torch.Tensor:
    return torch.ones_like(positions)


def cutoff_norm(ranked: RankedLists, gains: torch.Tensor, k: int | None, params: Params) -> torch.Tensor:
    """P@k divides by k."""
    assert k is not None, "P needs a cutoff"
    return ranked.counts.new_full((ranked.batch,), float(k))


def geometric_discount(positions: torch.Tensor, params: Params) -> torch.Tensor:
    """RBP's ``(1 - q) q^(n-1)``."""
    q = params["persistence"]
    return (1 - q) * torch.pow(q, positions - 1)


def reciprocal_discount(positions: torch.Tensor, params: Params) -> torch.Tensor:
    return 1.0 / positions


def ideal_within_list(ranked: RankedLists, gains: torch.Tensor, k: int | None, params: Params) -> torch.Tensor:
    """The sliding ratio's normaliser: the ideal list's sum of grade / rank, truncated at the list's length."""
    return ideal_sum(ranked, gains, reciprocal_discount, k, params, within_list=True)


# ---------------------------------------------------------------------------------------------
# ERR


def _err_tables(ranked: RankedLists, k: int | None, params: Params) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(stop probability of each grade ``[c+1]``, of each rank ``[B, N]`` (0 at padding), the probability of
    reaching each rank ``[B, N]``)."""
    top = max(int(params["max_grade"]), 1)
    grades = torch.arange(ranked.num_grades + 1, dtype=torch.float64, device=ranked.grades.device)
    stop_of_grade = (torch.pow(2.0, grades) - 1.0) / 2.0**top
    stop = stop_of_grade[ranked.grades] * ranked.valid  # [B, N]
    reach = torch.cumprod(torch.cat([stop.new_ones(ranked.batch, 1), 1.0 - stop[:, :-1]], -1), -1)
    return stop_of_grade, stop, reach


def err_value(ranked: RankedLists, k: int | None, params: Params) -> Values:
    _, stop, reach = _err_tables(ranked, k, params)
    values = stop * reach / ranked.positions()
    return (values if k is None else values[:, :k]).sum(-1), None


def err_swap_factors(ranked: RankedLists, k: int | None, params: Params) -> tuple[torch.Tensor, torch.Tensor]:
    r"""ERR's swap deltas, rank 4. With stop probabilities :math:`R`, :math:`v = 1 - R` of each grade,
    :math:`P_n` the probability of reaching rank n, :math:`T_n = P_n R_n / n` and :math:`C` its prefix sums,
    swapping ranks a < b (grades x, y) changes ERR by

    .. math::

        \frac{P_a}{a}(v_x - v_y) + \Big(\frac{v_y}{v_x} - 1\Big)\Big(C_{b-1} - C_a + \frac{P_b}{b}\Big)

    (the term at a, the terms between, whose reach changes by :math:`v_y / v_x`, and the term at b). Every
    1/n is 0 beyond the cutoff."""
    stop_of_grade, stop, reach = _err_tables(ranked, k, params)
    inv = cut(1.0 / ranked.positions(), ranked.positions(), k)
    term = inv * reach * stop
    below = torch.cumsum(term, -1)  # C_n, through rank n
    before_b = below - term + inv * reach  # C_{n-1} + P_n / n
    v = (1.0 - stop_of_grade)[ranked.grades]  # [B, N]
    left = torch.stack([inv * reach * v + below, -inv * reach - below / v, 1.0 / v, -torch.ones_like(v)])
    right = torch.stack([torch.ones_like(v), v, v * before_b, before_b]) * ranked.valid
    return left, right


# ---------------------------------------------------------------------------------------------
# Q-measure


def _q_tables(ranked: RankedLists, params: Params) -> tuple[torch.Tensor, ...]:
    """(relevant [B, N], grade [B, N], n + beta cig_n [B, N], number of relevant documents [B])."""
    beta = params["beta"]
    x = (ranked.grades * ranked.valid).to(torch.float64)
    relevant = (x > 0).to(torch.float64)
    ideal = ranked.ideal_grades().to(torch.float64)
    length = max(ideal.shape[1], ranked.list_size)
    ideal_gain = torch.cumsum(torch.nn.functional.pad(ideal, (0, length - ideal.shape[1])), -1)[:, : ranked.list_size]
    den = ranked.positions() + beta * ideal_gain
    num_relevant = ranked.recall_base[:, 1] if ranked.num_grades else x.new_zeros(ranked.batch)
    return relevant, x, den, num_relevant


def q_value(ranked: RankedLists, k: int | None, params: Params) -> Values:
    relevant, x, den, num_relevant = _q_tables(ranked, params)
    ratio = (torch.cumsum(relevant, -1) + params["beta"] * torch.cumsum(x, -1)) / den
    values = (relevant * ratio).sum(-1) / torch.clamp(num_relevant, min=1.0)
    return values, num_relevant > 0


def q_swap_factors(ranked: RankedLists, k: int | None, params: Params) -> tuple[torch.Tensor, torch.Tensor]:
    r"""Q's swap deltas, rank 7. With :math:`\rho_t = 1[t > 0]`, :math:`\sigma_t = \rho_t + \beta t`,
    :math:`d_n = 1 / (n + \beta\, cig_n)`, :math:`h_n` the sum of :math:`\sigma` above rank n and :math:`W`
    the prefix sums of :math:`\rho_n d_n`, swapping ranks a < b (grades x, y) changes :math:`R \cdot Q` by

    .. math::

        d_a\big[\rho_y(h_a + \sigma_y) - \rho_x(h_a + \sigma_x)\big] + (\sigma_y - \sigma_x)(W_{b-1} - W_a)
        + (\rho_x - \rho_y)\, d_b (h_b + \sigma_y)

    (the pivot at a, the pivots between, whose counts above change, and the pivot at b)."""
    beta = params["beta"]
    relevant, x, den, num_relevant = _q_tables(ranked, params)
    d = 1.0 / den
    sigma = relevant + beta * x  # sigma of each rank's grade
    phi = relevant * sigma
    h = torch.cumsum(sigma, -1) - sigma  # above rank n
    w = torch.cumsum(relevant * d, -1)  # W_n
    w_before = w - relevant * d  # W_{n-1}
    one = torch.ones_like(d)
    left = torch.stack([-d * h * relevant - d * phi + sigma * w, d * h, d, -w, -sigma, relevant, one])
    right = torch.stack([one, relevant, phi, sigma, w_before, d * (h + sigma),
                         sigma * w_before - d * h * relevant - d * phi])
    scale = safe_divide(torch.ones_like(num_relevant), num_relevant)[:, None] * ranked.valid
    return left, right * scale


# ---------------------------------------------------------------------------------------------
# Binary measures of the first relevant documents and of the recall base: RR, Rprec, Success, R@k


def relevant_at(ranked: RankedLists, params: Params) -> torch.Tensor:
    """``[B, N]`` float64: 1 at a real document whose grade reaches the threshold."""
    return ((ranked.grades >= params["threshold"]) & ranked.valid).to(torch.float64)


def judged_relevant(ranked: RankedLists, params: Params) -> torch.Tensor:
    """``[B]`` float64: the judged documents whose grade reaches the threshold (the recall base)."""
    return ranked.counts[:, params["threshold"]:].sum(-1)


def recall_norm(ranked: RankedLists, gains: torch.Tensor, k: int | None, params: Params) -> torch.Tensor:
    """Recall divides by the judged relevant documents."""
    return judged_relevant(ranked, params)


def _rr_tables(ranked: RankedLists, k: int | None, params: Params) -> tuple[torch.Tensor, ...]:
    """(relevant [B, N], relevant at or above each rank [B, N], 1/n cut at k [N], 1/f [B], 1/s [B]) with f,
    s the ranks of the first and second relevant documents (1/f = 0 when there is none or it is below k)."""
    relevant = relevant_at(ranked, params)
    above = torch.cumsum(relevant, -1)
    inv = cut(1.0 / ranked.positions(), ranked.positions(), k)
    inv_first = (relevant * (above == 1) * inv).sum(-1)
    inv_second = (relevant * (above == 2) * inv).sum(-1)
    return relevant, above, inv, inv_first, inv_second


def rr_value(ranked: RankedLists, k: int | None, params: Params) -> Values:
    _, _, _, inv_first, _ = _rr_tables(ranked, k, params)
    return inv_first, judged_relevant(ranked, params) > 0


def rr_swap_factors(ranked: RankedLists, k: int | None, params: Params) -> tuple[torch.Tensor, torch.Tensor]:
    r"""RR's swap deltas, rank 2. With f and s the ranks of the first and second relevant documents, swapping
    ranks a < b changes RR only when a relevant document moves above f, or the one at f moves down:

    .. math::

        1[a < f]\,\Big(\frac{1}{a} - \frac{1}{f}\Big)\,\mathrm{rel}_b
        + 1[a = f]\,(1 - \mathrm{rel}_b)\Big(\frac{1}{\min(b, s)} - \frac{1}{f}\Big)

    (every 1/n is 0 beyond the cutoff)."""
    relevant, above, inv, inv_first, inv_second = _rr_tables(ranked, k, params)
    before_first = (above == 0).to(torch.float64)
    first = relevant * (above == 1)
    new_first = torch.where(above == 1, inv.expand_as(above), inv_second[:, None])  # 1/min(b, s) for irrelevant b
    left = torch.stack([before_first * (inv - inv_first[:, None]), first])
    right = torch.stack([relevant, (1.0 - relevant) * ranked.valid * (new_first - inv_first[:, None])])
    return left, right


def _rprec_tables(ranked: RankedLists, params: Params) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(relevant [B, N], 1[n <= R] / R [B, N], R [B])."""
    relevant = relevant_at(ranked, params)
    num_relevant = judged_relevant(ranked, params)
    within = (ranked.positions()[None, :] <= num_relevant[:, None]).to(torch.float64)
    return relevant, within * safe_divide(torch.ones_like(num_relevant), num_relevant)[:, None], num_relevant


def rprec_value(ranked: RankedLists, k: int | None, params: Params) -> Values:
    relevant, weight, num_relevant = _rprec_tables(ranked, params)
    return (relevant * weight).sum(-1), num_relevant > 0


def rprec_swap_factors(ranked: RankedLists, k: int | None, params: Params) -> tuple[torch.Tensor, torch.Tensor]:
    r"""R-precision's swap deltas, rank 4: with :math:`u_n = 1[n \le R] / R`, swapping ranks a < b changes it by
    :math:`(\mathrm{rel}_b - \mathrm{rel}_a)(u_a - u_b)`."""
    relevant, u, _ = _rprec_tables(ranked, params)
    valid = ranked.valid.to(torch.float64)
    left = torch.stack([u, torch.ones_like(u), -relevant * u, relevant])
    right = torch.stack([relevant, -relevant * u, valid, u * valid])
    return left, right


def _success_tables(ranked: RankedLists, k: int | None, params: Params) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(relevant [B, N], within the cutoff [N], relevant documents within the cutoff [B])."""
    assert k is not None, "Success needs a cutoff"
    relevant = relevant_at(ranked, params)
    within = (ranked.positions() <= k).to(torch.float64)
    return relevant, within, (relevant * within).sum(-1)


def success_value(ranked: RankedLists, k: int | None, params: Params) -> Values:
    _, _, hits = _success_tables(ranked, k, params)
    return (hits > 0).to(torch.float64), None


def success_swap_factors(ranked: RankedLists, k: int | None, params: Params) -> tuple[torch.Tensor, torch.Tensor]:
    r"""Success@k's swap deltas, rank 2: a swap across the cutoff (a <= k < b) loses the only relevant document
    within it (-1) or brings the first one in (+1); every other swap changes nothing."""
    relevant, within, hits = _success_tables(ranked, k, params)
    beyond = (1.0 - within) * ranked.valid
    left = torch.stack([-within * relevant * (hits == 1)[:, None], within * (1.0 - relevant) * (hits == 0)[:, None]])
    right = torch.stack([beyond * (1.0 - relevant), beyond * relevant])
    return left, right
