r"""LambdaMART's gradients and hessians in one compiled pass per query (numba), for the AP family (kernel
measures) and the discounted-gain family; the same arithmetic as :class:`~gaprank._engine.pairs.PairwiseEngine`
on the same factor plan, in float64.

Per query: sort by score (descending, ties in row order; an insertion sort from the last call's ranking, which
boosting moves little, or a merge sort for a new batch), build O(Nc) tables of the kernel's swap deltas
(docs: The maths, "Swap deltas in O(c) per pair"): with 1/n zero beyond the cutoff,
``A[n, u] = sum_{m<n} K[r_m, u]``, ``Q[n, u] = sum_{m<=n} K[u, r_m] / m``,
``V[n, u] = Q[n-1, u] - (D_u + A[n, u]) / n`` and, per upper rank, ``U_a[u] = (D_u + A[a, u]) / a - Q[a, u]``.
The three groups of changed pivots (between a and b, at a, at b) then sum to

.. math::

    \Delta = U_a[y] - U_a[x] + W[x, b], \qquad W[x, b] = V[b, y] - V[b, x] + \tfrac1b (K[y, x] - K[x, x])

for x, y the grades at ranks a < b, with ``W`` built per query in O(Nc): two table reads per pair, whatever the
number of grades (a discounted-gain measure's is :math:`(g_y - g_x)(d_a - d_b)/Z`). Every pair of different grades with its upper
rank within the truncation level then takes its sigmoid -- :math:`\rho = e_{worse} / (e_a + e_b)` with
:math:`e_n = e^{\sigma (s_n - s_1)}` computed once per rank -- LightGBM's ``lambdarank_norm`` when asked, and
its lambda and hessian term (the hessian only when asked for), summed into the query's rows. A pair of equal
grades weighs exactly 0, so an upper rank of the query's most common grade takes only the ranks of the other
grades (gathered, in rank order) when they are under half of its lower ranks: the same sums in the same order,
without their zero terms (for finite scores, which validation admits: a zero weight times an infinite score's
term would be NaN). The PyTorch loss also asks for the cost,
:math:`\sum |\Delta M| (\log(e_a + e_b) - \log e_{better})`. A row of pairs (one upper rank) runs as passes over
its lower ranks that the compiler vectorises (a gathered row's stay scalar) -- the weights, then the lambdas and
hessians added to the lower ranks, then the cost's logarithms and terms -- and one scalar pass that sums the
upper rank's terms in the pairs' order, so the result is the same on any machine. Queries are dealt to
lanes of about equal pair counts (:func:`balanced_lanes`), one per thread, run on numba's threads by a
``numba.prange`` driver (:func:`gaprank._compiled_setup.run_lanes`), or to one lane on the calling thread when
they hold fewer than ``THREADED_PAIRS`` pairs; a query is one lane's, start to end, so the result does not
depend on the number of threads.
Compiled on first use and cached on disk (numba's cache; :mod:`gaprank._compiled_setup`).
"""

from __future__ import annotations

import dataclasses
import math
import threading
import time
from dataclasses import dataclass, field

import numpy as np

from .._compiled_setup import compiled, numba, run_lanes, thread_count
from .._elementwise import log_into
from .._inputs import GaprankInputError
from .factors import GainDiscountInputs, KernelInputs
from .norm import NORM_OFFSET

KERNEL, GAIN_DISCOUNT = 0, 1

# A plan with fewer pairs runs on the calling thread: waking numba's threads costs more than sharing out so
# little work (docs/benchmarks.md, "Constants chosen by measurement").
THREADED_PAIRS = 1 << 16

COMPILE_SECONDS: list[float] = []  # the first call's compile (or cache load) time, once per process


@dataclass
class CompiledPlan:
    """What a data set's kernel pass reads besides the scores (built once per data set).

    ``rows`` holds each query's rows, query after query (``starts``); the query's swap deltas come from
    ``kernel``/``diag`` (``[Q, C, C]``, ``[Q, C]``, kernel measures) or ``gains``/``discounts``/``inverse_norm``
    (``[C]``, per 0-based rank, ``[Q]``, discounted-gain measures); ``inverse_ranks`` is 1/n per rank, 0
    beyond the cutoff. ``lane_queries`` and ``lane_starts`` deal the queries to lanes (one per thread, or one
    lane on the calling thread). ``orders`` is rewritten by each call that holds ``lock``; a call made meanwhile
    (another thread, a signal handler) sorts afresh into its own (the same ranking)."""

    mode: int
    rows: np.ndarray
    starts: np.ndarray
    labels: np.ndarray
    kernel: np.ndarray
    diag: np.ndarray
    gains: np.ndarray
    discounts: np.ndarray
    inverse_norm: np.ndarray
    inverse_ranks: np.ndarray
    lane_queries: np.ndarray
    lane_starts: np.ndarray
    sigma: float
    truncation: int
    norm: bool
    orders: np.ndarray  # each query's last ranking (local indices), where the next call's sort starts
    warm_start: bool = True  # sort from the last call's ranking (boosting); False: sort afresh (a new batch)
    weights: np.ndarray | None = None  # each planned row's weight, as ``labels``; None: every document weighs 1
    # held by the call that sorts from (and rewrites) ``orders``
    lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False, compare=False)


def balanced_lanes(pairs: np.ndarray, lanes: int) -> tuple[np.ndarray, np.ndarray]:
    """Deal queries to ``lanes`` lanes of about equal pair counts: ``(queries, starts)`` with lane i's queries
    ``queries[starts[i]:starts[i+1]]``, the largest queries first. numba gives each thread an equal run of
    lanes, so with one lane per thread each thread's share of the pairs is about equal."""
    lanes = max(1, min(lanes, pairs.size))
    largest_first = np.argsort(-pairs, kind="stable").astype(np.int64)
    bounds = np.arange(1, lanes) / lanes * pairs.sum()  # where each lane's pairs should end
    done_before = np.cumsum(pairs[largest_first]) - pairs[largest_first]  # pairs dealt before each query
    # increasing bounds in a sorted array: the starts never decrease (a lane may be empty)
    starts = np.concatenate([[0], np.searchsorted(done_before, bounds, side="left"), [pairs.size]])
    return largest_first, starts.astype(np.int64)


def build_plan(inputs: KernelInputs | GainDiscountInputs, *, sizes: np.ndarray, rows: np.ndarray, labels: np.ndarray,
               discounts: np.ndarray | None, sigma: float, truncation: int | None, norm: bool,
               warm_start: bool = True, weights: np.ndarray | None = None) -> CompiledPlan:
    """The kernel's plan for queries of ``sizes`` documents whose rows (into the scores) and labels come
    query after query in ``rows`` and ``labels``, from the same score-independent inputs as the torch
    engine's factor plan (``discounts``: a discounted-gain measure's discount per 0-based rank, as long as
    the longest query). Queries are dealt to one lane per thread, or to one (the calling thread) below
    ``THREADED_PAIRS`` pairs. ``warm_start``: each call's sort starts from the last call's ranking (boosting's
    rounds move few documents); False for a plan used once. ``weights``: each row's weight, as ``labels`` (the
    inputs then from the weighted lists); the deltas are the weighted measure's."""
    longest = max(1, int(sizes.max()) if sizes.size else 1)
    inverse_ranks = 1.0 / np.arange(1, longest + 1, dtype=np.float64)
    if inputs.k is not None:
        inverse_ranks[inputs.k:] = 0.0
    empty1, empty2, empty3 = np.zeros(1), np.zeros((1, 1)), np.zeros((1, 1, 1))
    if isinstance(inputs, KernelInputs):
        mode, kernel, diag = KERNEL, inputs.kernel.matrix.numpy(), inputs.kernel.diag.numpy()
        gains = inverse_norm = per_rank = empty1
    else:
        assert discounts is not None, "a discounted-gain measure's plan needs its discounts"
        mode, kernel, diag = GAIN_DISCOUNT, empty3, empty2
        gains, inverse_norm, per_rank = inputs.gains.numpy(), inputs.inverse_norm.numpy(), discounts
    # the kernel reads its tables by grade without bounds checks: a label off the scale (which validate=False
    # lets through, unread on a device) must stop here, not read outside them
    grades = kernel.shape[1] if mode == KERNEL else gains.size
    low, high = (int(labels.min()), int(labels.max())) if labels.size else (0, 0)
    if low < 0 or high >= grades:
        raise GaprankInputError(f"label {low if low < 0 else high} is outside the grade scale 0..{grades - 1} (labels "
                                "are read on the CPU even with validate=False)")
    cut = longest if truncation is None else int(truncation)
    upper = np.minimum(cut, sizes)  # upper ranks that take part: sum_{a < t} (n - 1 - a) pairs
    pairs = (upper * (sizes - 1) - upper * (upper - 1) // 2).astype(np.float64)
    lanes = thread_count() if pairs.sum() >= THREADED_PAIRS else 1
    lane_queries, lane_starts = balanced_lanes(pairs, lanes)
    starts = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    return CompiledPlan(
        mode=mode, rows=rows.astype(np.int64), starts=starts, labels=labels.astype(np.int64),
        kernel=np.ascontiguousarray(kernel, dtype=np.float64), diag=np.ascontiguousarray(diag, dtype=np.float64),
        gains=np.ascontiguousarray(gains, dtype=np.float64), discounts=np.ascontiguousarray(per_rank, dtype=np.float64),
        inverse_norm=np.ascontiguousarray(inverse_norm, dtype=np.float64), inverse_ranks=inverse_ranks,
        lane_queries=lane_queries, lane_starts=lane_starts, sigma=float(sigma), truncation=cut, norm=bool(norm),
        orders=np.arange(int(starts[-1]), dtype=np.int64) - np.repeat(starts[:-1], sizes),  # 0..n-1 per query
        warm_start=bool(warm_start),
        weights=None if weights is None else np.ascontiguousarray(weights, dtype=np.float64))


if numba is not None:

    @compiled(nogil=True, error_model="numpy")
    def _sort(orders, start, keys, n):
        """Write ``0..n-1`` ordered by ``keys`` descending, ties by index, to ``orders[start:start + n]``: a stable
        merge sort."""
        negated = np.empty(n)
        for m in range(n):
            negated[m] = -keys[m]
        ranked = np.argsort(negated, kind="mergesort")
        for m in range(n):
            orders[start + m] = ranked[m]

    @compiled(nogil=True, error_model="numpy")
    def _sort_from(orders, start, keys, n):
        """:func:`_sort`, starting from last round's order in ``orders[start:start + n]``: insertion sort, linear in
        the few places boosting moved; past ``16 n`` moves, the merge sort."""
        moves = 0
        for i in range(1, n):
            current = orders[start + i]
            key = keys[current]
            j = i - 1
            while j >= 0 and (keys[orders[start + j]] < key or (keys[orders[start + j]] == key
                                                                 and orders[start + j] > current)):
                orders[start + j + 1] = orders[start + j]
                j -= 1
            moves += i - 1 - j
            orders[start + j + 1] = current
            if moves > 16 * n:
                _sort(orders, start, keys, n)
                return

    @compiled(nogil=True, error_model="numpy")
    def _lane(lane, lane_queries, lane_starts, starts, scores, plan_rows, labels, mode, kernel, diag, gains, discounts,
              inverse_norm, inv, sigma, truncation, norm, grad, hess, orders, warm_start, keys, table_a, table_q, table_v,
              v_own, u_a, s_rank, e_rank, g_rank, gain_rank, grad_rank, hess_rank, table_w, weights, lambdas, hessians,
              pair_sums, pair_logs, log_scratch, counts, others, cost, doc_weights, w_rank, ups):
        """One lane's queries, one after another, in the thread's workspace. The loop over them is here, not
        around a call per query: such a call passes some forty arrays, which cost more than a short query. Nothing
        here takes a slice of an array: each view costs two atomic updates of its parent's reference count, on a
        cache line the threads share. ``doc_weights`` None (the unweighted kernel, its branches pruned) or each
        row's weight: then the tables sum ``w_m K``, a pair's delta is
        ``w_b U_a[y] - w_a U_a[x] + w_b V[b, y] - w_a V[b, x] + w_a w_b K[y, x] / b - w_a^2 K[x, x] / b``, every pair
        of different documents counts (equal grades too), and its direction is the delta's: the upper document is
        the better one when the swap lowers the measure."""
        for position in range(lane_starts[lane], lane_starts[lane + 1]):
            q = lane_queries[position]
            start = starts[q]
            n = starts[q + 1] - start
            for i in range(n):
                keys[i] = scores[plan_rows[start + i]]
            if warm_start:  # descending scores, ties in row order
                _sort_from(orders, start, keys, n)
            else:
                _sort(orders, start, keys, n)
            c1 = kernel.shape[1]
            for i in range(n):
                s_rank[i] = scores[plan_rows[start + orders[start + i]]]
                g_rank[i] = labels[start + orders[start + i]]
                if doc_weights is not None:
                    w_rank[i] = doc_weights[start + orders[start + i]]
                grad_rank[i] = 0.0
                if hess is not None:
                    hess_rank[i] = 0.0
            if mode == 0:
                # A[n, u] = sum_{m<n} K[r_m, u]; Q[n, u] = sum_{m<=n} K[u, r_m] / m; V[n, u] = Q[n-1, u] - (D_u + A[n, u]) / n
                for u in range(c1):
                    above = 0.0
                    weighted = 0.0
                    for i in range(n):
                        t = g_rank[i]
                        if i > 0:
                            table_v[i, u] = weighted - inv[i] * (diag[q, u] + above)
                        table_a[i, u] = above
                        if doc_weights is None:
                            above += kernel[q, t, u]
                            weighted += inv[i] * kernel[q, u, t]
                        else:
                            above += w_rank[i] * kernel[q, t, u]
                            weighted += inv[i] * w_rank[i] * kernel[q, u, t]
                        table_q[i, u] = weighted
                if doc_weights is None:
                    for i in range(1, n):
                        v_own[i] = table_v[i, g_rank[i]]
                    # W[x, b] = V[b, r_b] - V[b, x] + (K[r_b, x] - K[x, x]) / b: the lower rank's part of the delta
                    # for an upper grade x, contiguous in b (exactly 0 when r_b = x)
                    for u in range(c1):
                        for i in range(1, n):
                            table_w[u, i] = ((v_own[i] - table_v[i, u])
                                             + inv[i] * (kernel[q, g_rank[i], u] - kernel[q, u, u]))
                else:  # v_own[b] = w_b V[b, r_b]; W[x, b] = w_b K[r_b, x] / b - V[b, x], read times w_a
                    for i in range(1, n):
                        v_own[i] = w_rank[i] * table_v[i, g_rank[i]]
                    for u in range(c1):
                        for i in range(1, n):
                            table_w[u, i] = w_rank[i] * inv[i] * kernel[q, g_rank[i], u] - table_v[i, u]
            # exp(sigma (s_n - s_1)) per rank, once: a pair's rho = 1 / (1 + e^{sigma (s_better - s_worse)}) is then
            # e_worse / (e_a + e_b), one division instead of an exp per pair (the exp where e_a underflows)
            for i in range(n):
                e_rank[i] = math.exp(sigma * s_rank[i] - sigma * s_rank[0])
            top = min(truncation, n)
            weight_sum = 0.0
            query_cost = 0.0
            for i in range(n):
                s_rank[i] *= sigma  # sigma s from here on
                gain_rank[i] = gains[g_rank[i]] if mode == 1 else 0.0
                if doc_weights is not None:
                    gain_rank[i] *= w_rank[i]
            # A pair of equal grades weighs exactly 0 and adds exactly 0 to every sum. The query's most common
            # grade (most pairs of equal grades are of it) then pairs only with the ranks of the other grades,
            # in rank order (``others``): the same sums in the same order, without the zero terms.
            for u in range(counts.size):
                counts[u] = 0
            for i in range(n):
                counts[g_rank[i]] += 1
            common = np.argmax(counts)
            m = 0
            for i in range(n):
                if g_rank[i] != common:
                    others[m] = i
                    m += 1
            p = 0  # others[p:] are the ranks of other grades below the upper rank
            s_top = s_rank[0] if n > 0 else 0.0
            offset = NORM_OFFSET * sigma
            z_q = inverse_norm[q] if mode == 1 else 0.0
            for a in range(top):
                x = g_rank[a]
                e_a = e_rank[a]
                s_a = s_rank[a]
                count = n - a - 1
                # the lower ranks are b = lo + j, j < count, indexed unsigned: the compiler then knows the indices in
                # bounds (no wraparound of negative ones), and the passes over j vectorise
                lo = np.uint64(a + 1)
                lower = range(np.uint64(count))
                while p < m and others[p] <= a:
                    p += 1
                # the common grade's row over the other grades' ranks b = others[p + j] (gathered, a scalar loop),
                # when they are under half the lower ranks; else over every lower rank b = a + 1 + j (contiguous,
                # vectorised)
                # (never where e_a underflowed: that branch reads the weights of every lower rank)
                # (weighted documents: every pair counts, equal grades too, so no row is gathered)
                sparse = doc_weights is None and x == common and e_a > 1e-290 and 2 * (m - p) < count
                pairs = m - p if sparse else count
                # the row's weights |delta| (normalised) in a pass of their own; equal grades give exactly 0
                if doc_weights is not None:  # weighted: the signed delta first, its sign the pair's direction
                    if mode == 0:
                        for u in range(c1):
                            u_a[u] = inv[a] * (diag[q, u] + table_a[a, u]) - table_q[a, u]
                        w_a = w_rank[a]
                        up = w_a * u_a[x]
                        own = w_a * w_a * kernel[q, x, x]
                        for j in lower:  # the upper document is the better one when swapping lowers the measure
                            b = lo + j
                            delta = (w_rank[b] * u_a[np.uint64(g_rank[b])] - up + v_own[b] + w_a * table_w[x, b]
                                     - own * inv[b])
                            ups[j] = 1.0 if delta < 0.0 else 0.0
                            weights[j] = abs(delta)
                    else:
                        gain_x = gain_rank[a]
                        disc_a = discounts[a]
                        for j in lower:
                            delta = (gain_rank[lo + j] - gain_x) * (disc_a - discounts[lo + j]) * z_q
                            ups[j] = 1.0 if delta < 0.0 else 0.0
                            weights[j] = abs(delta)
                elif mode == 0:  # U_a[u] = (D_u + A[a, u]) / a - Q[a, u]
                    for u in range(c1):
                        u_a[u] = inv[a] * (diag[q, u] + table_a[a, u]) - table_q[a, u]
                    up = u_a[x]
                    if sparse:
                        for j in range(pairs):
                            b = others[p + j]
                            weights[j] = abs((u_a[g_rank[b]] - up) + table_w[x, b])
                    else:
                        for j in lower:
                            weights[j] = abs((u_a[np.uint64(g_rank[lo + j])] - up) + table_w[x, lo + j])
                else:
                    gain_x = gain_rank[a]
                    disc_a = discounts[a]
                    if sparse:
                        for j in range(pairs):
                            b = others[p + j]
                            weights[j] = abs((gain_rank[b] - gain_x) * (disc_a - discounts[b]) * z_q)
                    else:
                        for j in lower:
                            weights[j] = abs((gain_rank[lo + j] - gain_x) * (disc_a - discounts[lo + j]) * z_q)
                if norm:
                    if sparse:
                        for j in range(pairs):
                            weights[j] = weights[j] / (abs(s_rank[others[p + j]] - s_a) + offset)
                    else:
                        for j in lower:
                            weights[j] = weights[j] / (abs(s_rank[lo + j] - s_a) + offset)
                sum_grad = 0.0
                sum_hess = 0.0
                sum_lambda = 0.0
                sum_cost = 0.0
                if e_a > 1e-290:
                    # the row's lambdas, hessians and costs in vectorised passes (rho = e_worse / (e_a + e_b)), then
                    # the upper rank's sums in a scalar pass, pair after pair: the same result on any machine
                    if sparse:
                        for j in range(pairs):
                            b = others[p + j]
                            e_b = e_rank[b]
                            better_up = x > g_rank[b]
                            sign = 1.0 if better_up else -1.0
                            total = e_a + e_b
                            rho = (e_b if better_up else e_a) / total
                            lam = weights[j] * rho
                            lambdas[j] = sign * lam
                            grad_rank[b] += sign * lam
                            pair_sums[j] = total
                            if hess is not None:
                                h = lam - lam * rho
                                hessians[j] = h
                                hess_rank[b] += h
                    else:
                        for j in lower:
                            e_b = e_rank[lo + j]
                            better_up = ups[j] > 0.5 if doc_weights is not None else x > g_rank[lo + j]
                            sign = 1.0 if better_up else -1.0
                            total = e_a + e_b
                            rho = (e_b if better_up else e_a) / total
                            lam = weights[j] * rho
                            lambdas[j] = sign * lam
                            grad_rank[lo + j] += sign * lam
                            pair_sums[j] = total
                            if hess is not None:  # (pruned when None: the loss asks for the gradient alone)
                                h = lam - lam * rho
                                hessians[j] = h
                                hess_rank[lo + j] += h
                    if cost is not None:
                        # log(1 + e^{sigma (s_worse - s_better)}) = log(e_a + e_b) - log(e_better); the logarithms
                        # over whole blocks of eight (the arrays have room; the entries past the row are not read)
                        log_into(pair_sums, pair_logs, log_scratch, (pairs + 7) & ~7)
                        if sparse:
                            for j in range(pairs):
                                b = others[p + j]
                                better = s_a if x > g_rank[b] else s_rank[b]
                                pair_logs[j] = weights[j] * (pair_logs[j] - (better - s_top))
                        else:
                            for j in lower:
                                s_b = s_rank[lo + j]  # (loaded on both arms of the select, which then vectorises)
                                upper_better = ups[j] > 0.5 if doc_weights is not None else x > g_rank[lo + j]
                                better = s_a if upper_better else s_b
                                pair_logs[j] = weights[j] * (pair_logs[j] - (better - s_top))
                    for j in range(pairs):
                        sum_grad -= lambdas[j]
                        if hess is not None:
                            sum_hess += hessians[j]
                        if norm:
                            sum_lambda += abs(lambdas[j])
                        if cost is not None:
                            sum_cost += pair_logs[j]
                else:  # the top score is so far above this one that e_a underflowed: the sigmoid itself
                    for j in range(count):
                        b = a + 1 + j
                        upper_better = ups[j] > 0.5 if doc_weights is not None else x > g_rank[b]
                        sign = 1.0 if upper_better else -1.0
                        diff = s_rank[b] - s_a
                        weight = weights[j]
                        rho = 1.0 / (1.0 + math.exp(-diff * sign))  # z = -sigma (s_better - s_worse)
                        lam = weight * rho
                        h = lam - lam * rho
                        sum_lambda += lam
                        sum_grad -= sign * lam
                        if hess is not None:
                            sum_hess += h
                        grad_rank[b] += sign * lam
                        if hess is not None:
                            hess_rank[b] += h
                        if cost is not None and weight != 0.0:  # log(1 + e^z), z = sigma (s_worse - s_better), no overflow
                            z = diff * sign
                            sum_cost += weight * (max(z, 0.0) + math.log1p(math.exp(-abs(z))))
                grad_rank[a] += sum_grad
                if hess is not None:
                    hess_rank[a] += sum_hess
                weight_sum += sum_lambda
                query_cost += sum_cost
            factor = 1.0
            if norm:
                unscale = NORM_OFFSET * sigma if s_rank[n - 1] == s_rank[0] else sigma
                lambda_sum = 2.0 * sigma * weight_sum * unscale
                factor = (math.log2(1.0 + lambda_sum) / lambda_sum if lambda_sum > 0 else 1.0) * unscale
            for i in range(n):
                row = plan_rows[start + orders[start + i]]
                grad[row] = grad_rank[i] * factor * sigma
                if hess is not None:
                    hess[row] = hess_rank[i] * factor * (sigma * sigma)
            if cost is not None:
                cost[q] = query_cost

    @compiled(nogil=True, error_model="numpy")
    def _run_lane(scores, plan_rows, starts, labels, mode, kernel, diag, gains, discounts, inverse_norm, inv, sigma,
                  truncation, norm, lane_queries, lane_starts, orders, warm_start, grad, hess, cost, doc_weights, lane,
                  lanes):
        """Lane ``lane`` of the plan's ``lanes`` (a lane kernel), in a workspace of its own, as long as the
        longest query."""
        c1 = kernel.shape[1]
        longest = 0
        for q in range(starts.size - 1):
            longest = max(longest, starts[q + 1] - starts[q])
        keys = np.empty(longest)
        table_a = np.empty((longest, c1))
        table_q = np.empty((longest, c1))
        table_v = np.empty((longest, c1))
        v_own = np.empty(longest)
        table_w = np.empty((c1, longest))
        u_a = np.empty(c1)
        s_rank = np.empty(longest)
        e_rank = np.empty(longest)
        g_rank = np.empty(longest, dtype=np.int64)
        gain_rank = np.empty(longest)
        grad_rank = np.empty(longest)
        hess_rank = np.empty(longest)
        weights = np.empty(longest)
        lambdas = np.empty(longest)
        hessians = np.empty(longest)
        pair_sums = np.ones(longest + 8)  # + 8: the logarithms run over whole blocks of eight
        pair_logs = np.empty(longest + 8)
        log_scratch = np.empty(longest + 8, dtype=np.int64)
        counts = np.empty(c1 if mode == 0 else gains.size, dtype=np.int64)
        others = np.empty(longest, dtype=np.int64)
        w_rank = np.empty(longest if doc_weights is not None else 0)
        ups = np.empty(longest if doc_weights is not None else 0)
        _lane(lane, lane_queries, lane_starts, starts, scores, plan_rows, labels, mode, kernel, diag, gains, discounts,
              inverse_norm, inv, sigma, truncation, norm, grad, hess, orders, warm_start, keys, table_a, table_q,
              table_v, v_own, u_a, s_rank, e_rank, g_rank, gain_rank, grad_rank, hess_rank, table_w, weights, lambdas,
              hessians, pair_sums, pair_logs, log_scratch, counts, others, cost, doc_weights, w_rank, ups)


    @compiled(parallel=True, nogil=True)
    def _plan_lanes(scores, plan_rows, starts, labels, mode, kernel, diag, gains, discounts, inverse_norm, inv, sigma,
                    truncation, norm, lane_queries, lane_starts, orders, warm_start, grad, hess, cost, doc_weights,
                    done, lanes):
        """Every lane of the plan on numba's threads, each marked done once it returned (the driver of
        :func:`_run_lane`)."""
        for lane in numba.prange(lanes):
            _run_lane(scores, plan_rows, starts, labels, mode, kernel, diag, gains, discounts, inverse_norm, inv,
                      sigma, truncation, norm, lane_queries, lane_starts, orders, warm_start, grad, hess, cost,
                      doc_weights, lane, lanes)
            done[lane] = 1


def lambdamart_gradients(plan: CompiledPlan, scores: np.ndarray, grad: np.ndarray, hess: np.ndarray | None,
                         cost: np.ndarray | None = None) -> None:
    r"""Write every planned query's gradients and hessians into ``grad`` and ``hess`` (float64, one per row;
    rows of other queries are left as they are; ``hess`` None: the gradient alone), and, when ``cost`` (one per
    query) is given, each query's
    pairwise logistic cost :math:`\sum |\Delta M| \log(1 + e^{-\sigma (s_{better} - s_{worse})})` (the
    weight with ``norm`` being LightGBM's normalised one)."""
    first = not COMPILE_SECONDS
    start = time.perf_counter()
    if not plan.lock.acquire(blocking=False):
        # another call holds the plan's rankings: a sort from scratch into rankings of this call's own gives the
        # same ranking (descending scores, ties in row order) whatever it starts from
        plan = dataclasses.replace(plan, orders=np.empty_like(plan.orders), warm_start=False)
        plan.lock.acquire()
    try:
        # hess or cost None: numba compiles a version without their branches (pruned on the None type)
        run_lanes(_run_lane, _plan_lanes, (scores, plan.rows, plan.starts, plan.labels, plan.mode, plan.kernel,
                                          plan.diag, plan.gains, plan.discounts, plan.inverse_norm, plan.inverse_ranks,
                                          plan.sigma, plan.truncation, plan.norm, plan.lane_queries, plan.lane_starts,
                                          plan.orders, plan.warm_start, grad, hess, cost, plan.weights),
                  plan.lane_starts.size - 1)
    finally:
        plan.lock.release()
    if first:
        COMPILE_SECONDS.append(time.perf_counter() - start)
