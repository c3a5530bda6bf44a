r"""SoftRank's rank laws and their adjoint, compiled (numba), one pivot per task.

For pivot n the law of the count above it is the coefficient vector of
:math:`P(x) = \prod_m f_m(x)`, :math:`f_m(x) = 1 - \pi_m + \pi_m x` (the others' factors; a factor with
:math:`\pi_m = 0` -- the pivot itself, padding -- is 1 and is skipped). Forward: the product, eight factors at
a time, over the law's numerical support: entries at its ends below ``NEGLIGIBLE`` (1e-24) are
dropped as it grows, at most M^2 x 1e-24 of probability in all (1e-18 at M = 1000), below float64's
rounding of any result, and the support that remains is a window of W counts, about 21 standard deviations
of the count wide (W ~ sqrt N).

Backward, without the recursion's history: :math:`\partial p / \partial \pi_m = (x - 1)\, q_m` with
:math:`q_m = P / f_m`, so with :math:`h_r = G_{r+1} - G_r` (G the incoming gradient of the law, 0 past its
end) the gradient is :math:`\langle h, q_m \rangle`. Dividing :math:`f_m` out by forward substitution
(:math:`\pi_m \le 1/2`) gives :math:`q_m[r] = \beta^{-1} \sum_{j \le r} p_j t^{r-j}` with
:math:`\beta = 1 - \pi_m`, :math:`t = -\pi_m / \beta`, hence

.. math::

    \langle h, q_m \rangle = \beta^{-1} \sum_d c_d\, t^d, \qquad c_d = \sum_j p_j h_{j+d};

by backward substitution (:math:`\pi_m > 1/2`, :math:`u = -\beta / \pi_m`),
:math:`\langle h, q_m \rangle = \pi_m^{-1} \sum_d c'_d\, u^d` with :math:`c'_d = \sum_k h_k p_{k+1+d}`.
Both ratios have modulus at most 1, so neither substitution amplifies rounding; :math:`q_m` lives on the
law's window too (:math:`q_m[r] \le 2 \max(p_r, p_{r+1})`), so the sums run over it. Per pivot: the law
again (nothing is kept from the forward pass, O(N W)), the two correlations (O(W^2)), then one Horner
evaluation of degree W per other document (O(N W)), vectorised over the others. Pivots are independent
tasks, dealt to the lanes in turn (each lane allocates its workspace once), one lane per thread, run by a
``numba.prange`` driver (:func:`gaprank._compiled_setup.lane_kernel`), so the result does not depend on the
number of threads.
Everything is float64.

Layout: the kernels read ``beats[b, n, m]`` = :math:`\pi_{mn}` (pivot-major, [B, N, M], C-contiguous), so that a
pivot's factors, its ratios and its row of the gradient are contiguous and their loops vectorise.

Two forms: the laws themselves (``rank_laws``, [B, N, M] out, any incoming gradient), and the expectation of a
per-rank value ``v`` under each law (``expected_values``: :math:`\sum_r p_n(r) v_r`, SoftNDCG's expected
discount), whose gradient :math:`G_n = w_n v` needs no [B, N, M] array of incoming gradients; its forward pass
can keep each law (over its support) so that the backward pass need not make it again. SoftNDCG's pair
probabilities from the scores (``pair_probabilities``: one erfc per pair, in square blocks of pairs) and
the gradient back to the scores (``expected_values_score_adjoint``: each pivot's row of the gradient in pi
taken to the scores where it is made, so no [B, N, M] array of it is written; ``score_gradient``) are
compiled too.
"""

from __future__ import annotations

import numpy as np

from .._compiled_setup import jit, lane_kernel, numba
from .._elementwise import erfc_into, exp_into

LEAD = 8  # zeros ahead of count 0 in a law's buffer, so that counts r - 8 .. r are read without a check
# A law's entries below this probability are dropped from its ends as it is built: at most M^2 of them over a
# law's M factors, so at most M^2 x 1e-24 of probability in all (1e-18 at M = 1000), below float64's rounding
# of the result; what remains is each law's numerical support, about 21 standard deviations of the count
# wide, which the backward pass's work scales with.
NEGLIGIBLE = 1e-24


def _quartic(p0, p1, p2, p3):  # pragma: no cover - compiled
    """The coefficients of (q0 + p0 x)(q1 + p1 x)(q2 + p2 x)(q3 + p3 x), q = 1 - p."""
    q0, q1, q2, q3 = 1.0 - p0, 1.0 - p1, 1.0 - p2, 1.0 - p3
    a0, a1, a2 = q0 * q1, q0 * p1 + p0 * q1, p0 * p1
    b0, b1, b2 = q2 * q3, q2 * p3 + p2 * q3, p2 * p3
    return (a0 * b0, a0 * b1 + a1 * b0, a0 * b2 + a1 * b1 + a2 * b0, a1 * b2 + a2 * b1, a2 * b2)


def _multiply(source, target, at, length, c0, c1, c2, c3, c4, c5, c6, c7, c8):  # pragma: no cover - compiled
    """``target[at + r] = sum_i c_i source[at + r - i]`` for r < length: one group of eight factors."""
    # views indexed from 0 by r plus a constant: no negative index, so the loop vectorises; two views, not one per
    # shift (each view costs two atomic updates of the buffer's reference count)
    window, out = source[at - 8:], target[at:]
    for r in range(length):
        out[r] = (c0 * window[r + 8] + c1 * window[r + 7] + c2 * window[r + 6] + c3 * window[r + 5]
                  + c4 * window[r + 4] + c5 * window[r + 3] + c6 * window[r + 2] + c7 * window[r + 1]
                  + c8 * window[r])


def _pivot_law(beats, b, n, factors, prev, nxt):  # pragma: no cover - compiled
    """The law of the count above pivot n of query b: ``(buffer, low, high)``, the law at counts
    ``low..high`` held at ``buffer[LEAD + low: LEAD + high + 1]``, with zeros for eight counts either side
    (the rest of the buffer is scratch). ``factors`` (M + 8), ``prev`` and ``nxt`` (``LEAD + M + 32``) are
    the lane's workspace; the result is one of the last two.

    The factors with pi > 0 are multiplied in eight at a time (the nine coefficients of their product, all
    non-negative, so the grouping costs no accuracy): nine multiply-adds per count and eight factors;
    after each group the ends below ``NEGLIGIBLE`` are dropped."""
    others = beats.shape[2]
    for i in range(prev.size):  # loops, not slice assignments: a slice is a view, two reference-count updates
        prev[i] = 0.0
        nxt[i] = 0.0
    used = 0
    for m in range(others):
        v = beats[b, n, m]
        if v != 0.0:  # the pivot itself and padding: the factor 1
            factors[used] = v
            used += 1
    for i in range(used, used + 8):
        factors[i] = 0.0
    prev[LEAD] = 1.0
    low = high = 0
    for first in range(0, used, 8):
        a0, a1, a2, a3, a4 = _quartic(factors[first], factors[first + 1], factors[first + 2], factors[first + 3])
        b0, b1, b2, b3, b4 = _quartic(factors[first + 4], factors[first + 5], factors[first + 6],
                                      factors[first + 7])
        _multiply(prev, nxt, LEAD + low, high - low + 9,
                  a0 * b0, a0 * b1 + a1 * b0, a0 * b2 + a1 * b1 + a2 * b0,
                  a0 * b3 + a1 * b2 + a2 * b1 + a3 * b0, a0 * b4 + a1 * b3 + a2 * b2 + a3 * b1 + a4 * b0,
                  a1 * b4 + a2 * b3 + a3 * b2 + a4 * b1, a2 * b4 + a3 * b3 + a4 * b2, a3 * b4 + a4 * b3, a4 * b4)
        high += 8
        while nxt[LEAD + low] < NEGLIGIBLE:
            nxt[LEAD + low] = 0.0
            low += 1
        while nxt[LEAD + high] < NEGLIGIBLE:
            nxt[LEAD + high] = 0.0
            high -= 1
        # the next group reads counts low - 8 .. high + 8 of this buffer: zero what an earlier use left there
        for i in range(8):
            nxt[LEAD + low - 8 + i] = 0.0
            nxt[LEAD + high + 1 + i] = 0.0
        prev, nxt = nxt, prev
    return prev, low, min(high, used)


def _correlations(p, h, size, low, high):  # pragma: no cover - compiled
    """``low[d] = sum_j p_j h_{j+d}`` and ``high[d] = sum_k h_k p_{k+1+d}`` for d < size, four j (k) per
    pass over d (vectorised; views indexed from 0, so no negative-index check), the order of every sum
    fixed. Reads ``h`` to index size + 2 and ``p`` to size + 3, which must be zero from size on."""
    low[:size] = 0.0
    high[:size] = 0.0
    for j in range(0, size, 4):
        p0, p1, p2, p3, h0, h1, h2, h3 = p[j], p[j + 1], p[j + 2], p[j + 3], h[j], h[j + 1], h[j + 2], h[j + 3]
        a, b = h[j:], p[j + 1:]
        for d in range(size - j):
            low[d] += p0 * a[d] + p1 * a[d + 1] + p2 * a[d + 2] + p3 * a[d + 3]
        for d in range(size - j):
            high[d] += h0 * b[d] + h1 * b[d + 1] + h2 * b[d + 2] + h3 * b[d + 3]


# rows of a lane's float workspace (each ``LEAD + M + 32`` long; M = the others)
(FACTORS, PREV, NEXT, LAW, INCOMING, STEP, LOW, HIGH, RATIOS, SCALES, LOWER, VALUES, GRADIENT, EXPONENTS, EXPS,
 ROWS) = range(16)


def _workspace(others):  # pragma: no cover - compiled
    """One lane's scratch (``ROWS`` rows), allocated once per lane, not per pivot."""
    return np.empty((ROWS, LEAD + others + 32))


def _split_horner(low, high, size, ratios, lower, count, values):  # pragma: no cover - compiled
    """``values[i] = sum_{d < size} c_d ratios[i]^d`` for i < count, with c = ``low`` where ``lower[i]`` is
    1 and ``high`` where it is 0: vectorised over i, four degrees per pass over the values (four
    multiply-adds per load and store), the coefficients chosen per lane by a select."""
    values[:count] = 0.0
    top = size
    while top % 4:
        top -= 1
        cl, ch = low[top], high[top]
        for i in range(count):
            values[i] = values[i] * ratios[i] + (cl if lower[i] != 0.0 else ch)
    for d in range(top - 4, -1, -4):
        l3, l2, l1, l0 = low[d + 3], low[d + 2], low[d + 1], low[d]
        h3, h2, h1, h0 = high[d + 3], high[d + 2], high[d + 1], high[d]
        for i in range(count):
            r = ratios[i]
            below = lower[i] != 0.0
            v = values[i] * r + (l3 if below else h3)
            v = v * r + (l2 if below else h2)
            v = v * r + (l1 if below else h1)
            values[i] = v * r + (l0 if below else h0)


def _pivot_adjoint(beats, b, n, p, h, size, out, work):  # pragma: no cover - compiled
    """``out[m] = <h, p / f_m>`` for every other m (pivot n's row of the gradient in pi), given pivot n's
    law ``p`` and ``h`` over
    the counts ``o .. o + size - 1`` (a common offset o; both zero from ``size`` on for at least four
    places, as :func:`_correlations` reads them, ``p`` zero at 0). Forward substitution's ratio where
    pi_m <= 1/2, backward's where not, every other m in one vectorised pass."""
    others = beats.shape[2]
    low, high = work[LOW], work[HIGH]
    _correlations(p, h, size, low, high)
    ratios, scales, lower, values = work[RATIOS], work[SCALES], work[LOWER], work[VALUES]
    row = beats[b, n]
    for m in range(others):
        v = row[m]
        below = v <= 0.5
        rest = 1.0 - v
        ratios[m] = -(v if below else rest) / (rest if below else v)
        scales[m] = rest if below else v
        lower[m] = 1.0 if below else 0.0
    _split_horner(low, high, size, ratios, lower, others, values)
    for m in range(others):
        out[m] = values[m] / scales[m]


def _windowed_adjoint(beats, b, n, law, low, high, incoming, out, work):  # pragma: no cover - compiled
    """The adjoint over the law's support ``low..high``: p and h taken from count ``low - 1`` on (where the
    law is zero), which both correlations then read at the offsets the module doc's sums need; ``incoming``
    gives G at each count (0 past the law's last column)."""
    size = high - low + 2
    h = work[STEP]
    h[size:size + 8] = 0.0
    h[0] = incoming[low] - incoming[low - 1] if low > 0 else 0.0
    for i in range(1, size):
        h[i] = incoming[low + i] - incoming[low - 1 + i]
    _pivot_adjoint(beats, b, n, law[LEAD + low - 1:], h, size, out, work)


def _rank_laws(beats, out, lane, lanes):  # pragma: no cover - compiled
    """``beats`` [B, N, M] (pivots x others) -> ``out`` [B, N, M]: the law of the count above each pivot."""
    batch, pivots, others = beats.shape
    work = _workspace(others)
    factors, prev, nxt = work[FACTORS], work[PREV], work[NEXT]
    for task in range(lane, batch * pivots, lanes):
        b, n = task // pivots, task % pivots
        law, low, high = _pivot_law(beats, b, n, factors, prev, nxt)
        for r in range(others):
            out[b, n, r] = law[LEAD + r] if low <= r <= high else 0.0


def _rank_laws_adjoint(beats, grad_laws, grad_beats, lane, lanes):  # pragma: no cover - compiled
    """``grad_beats`` [B, N, M]: the gradient of <grad_laws, _rank_laws(beats)>."""
    batch, pivots, others = beats.shape
    work = _workspace(others)
    incoming, row = work[INCOMING], work[GRADIENT]
    incoming[:] = 0.0
    factors, prev, nxt = work[FACTORS], work[PREV], work[NEXT]
    for task in range(lane, batch * pivots, lanes):
        b, n = task // pivots, task % pivots
        law, low, high = _pivot_law(beats, b, n, factors, prev, nxt)
        for r in range(others):
            incoming[r] = grad_laws[b, n, r]
        _windowed_adjoint(beats, b, n, law, low, high, incoming, row, work)
        for m in range(others):
            grad_beats[b, n, m] = row[m]


def _expected_values(beats, values, out, laws, bounds, lane, lanes):  # pragma: no cover - compiled
    """``out[b, n] = sum_r p_n(r) values[r]`` ([B, N]; ``values`` [M]). Unless ``laws`` is empty, each law
    is kept there ([B, N, M], its support ``bounds[b, n]``) for the adjoint."""
    batch, pivots, others = beats.shape
    keep = laws.shape[0] > 0
    work = _workspace(others)
    factors, prev, nxt = work[FACTORS], work[PREV], work[NEXT]
    for task in range(lane, batch * pivots, lanes):
        b, n = task // pivots, task % pivots
        law, low, high = _pivot_law(beats, b, n, factors, prev, nxt)
        total = 0.0
        for r in range(low, min(high + 1, others)):
            total += law[LEAD + r] * values[r]
        out[b, n] = total
        if keep:
            bounds[b, n, 0], bounds[b, n, 1] = low, high
            for r in range(low, high + 1):  # a loop: a slice of the threads' shared array is a view whose
                laws[b, n, r] = law[LEAD + r]  # reference count both cores would update


PIVOT_BLOCK = 16  # pivots per task of the score adjoint; each block sums its own part of the column sums


def _fixed_order_sum(values, count):  # pragma: no cover - compiled
    """``sum(values[:count])`` in eight interleaved partial sums (independent additions, not one chain),
    combined in a fixed order: the same result on any machine and for any number of threads."""
    s0 = s1 = s2 = s3 = s4 = s5 = s6 = s7 = 0.0
    whole = count - count % 8
    for j in range(0, whole, 8):
        s0 += values[j]
        s1 += values[j + 1]
        s2 += values[j + 2]
        s3 += values[j + 3]
        s4 += values[j + 4]
        s5 += values[j + 5]
        s6 += values[j + 6]
        s7 += values[j + 7]
    for j in range(whole, count):
        s0 += values[j]
    return ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7))


def _expected_values_score_adjoint(beats, scores, mask, c, values, weights, laws, bounds, row_totals, column_parts,
                                   lane, lanes):  # pragma: no cover - compiled
    r"""The gradient of :math:`\sum_{b, n} w_{bn} E_{bn}` (E = :func:`_expected_values`, w = ``weights``) in the
    scores, in two parts: ``row_totals[b, n]`` :math:`= \sum_m T_{nm}` and ``column_parts[b, k, m]``
    :math:`= \sum_{n \in \text{block } k} T_{nm}` (blocks of ``PIVOT_BLOCK`` pivots), with
    :math:`T_{nm} = G_{nm}\, e^{-((s_n - s_m) c)^2}` over pairs of real documents m != n, G pivot n's row of
    the gradient in pi (:func:`_windowed_adjoint`, from the law kept in ``laws``/``bounds``, or made again if
    ``laws`` is empty). Since :math:`\partial \pi_{mn} / \partial s_m = -\partial \pi_{mn} / \partial s_n
    = c\, e^{-((s_m - s_n) c)^2} / \sqrt\pi`, the gradient in :math:`s_k` is
    :math:`(c / \sqrt\pi) (\sum_n T_{nk} - \sum_m T_{km})` (:func:`_score_gradient`). Each pivot's row is
    used where it is made: no [B, N, N] array of G is written. The tasks are the blocks, dealt to the lanes
    in turn."""
    batch, pivots, others = beats.shape
    kept = laws.shape[0] > 0
    blocks = column_parts.shape[1]
    work = _workspace(others)
    incoming = work[INCOMING]
    incoming[:] = 0.0
    saved, row, exponents, exps = work[LAW], work[GRADIENT], work[EXPONENTS], work[EXPS]
    factors, prev, nxt = work[FACTORS], work[PREV], work[NEXT]
    bits = np.empty(others, dtype=np.int64)
    for task in range(lane, batch * blocks, lanes):
        b, block = task // blocks, task % blocks
        part = column_parts[b, block]
        part[:] = 0.0
        real_others = mask[b]
        for n in range(block * PIVOT_BLOCK, min(pivots, (block + 1) * PIVOT_BLOCK)):
            if kept:
                low, high = bounds[b, n, 0], bounds[b, n, 1]
                saved[:] = 0.0
                for r in range(low, high + 1):
                    saved[LEAD + r] = laws[b, n, r]
                law = saved
            else:
                law, low, high = _pivot_law(beats, b, n, factors, prev, nxt)
            weight = weights[b, n]
            for r in range(others):  # a loop, not weights[b, n] * values: no temporary array per pivot
                incoming[r] = weight * values[r]
            _windowed_adjoint(beats, b, n, law, low, high, incoming, row, work)
            s_n, real = scores[b, n], mask[b, n]
            for m in range(others):
                d = (s_n - scores[b, m]) * c
                exponents[m] = -(d * d)
            exp_into(exponents, exps, bits, others)
            for m in range(others):
                term = row[m] * exps[m] if real and real_others[m] and m != n else 0.0
                exps[m] = term
                part[m] += term
            row_totals[b, n] = _fixed_order_sum(exps, others)


def _score_gradient(row_totals, column_parts, scale, out):  # pragma: no cover - compiled
    """``out[b, k] = scale * (sum over blocks of column_parts[b, :, k] - row_totals[b, k])``, the blocks in
    order."""
    batch, blocks, size = column_parts.shape
    for b in range(batch):
        total = out[b]
        total[:] = 0.0
        for block in range(blocks):
            part = column_parts[b, block]
            for k in range(size):
                total[k] += part[k]
        for k in range(size):
            total[k] = scale * (total[k] - row_totals[b, k])


TILE = 32  # the pair kernel's square blocks of (i, j): a block's two halves of ``out`` stay in the cache


def _pair_tile(scores, mask, c, out, b, i0, j0, work, bits):  # pragma: no cover - compiled
    """The pairs (i, j > i) with i in ``i0 .. i0 + TILE`` and j in ``j0 .. j0 + TILE`` (``j0 >= i0``), both
    orders, of :func:`_pair_probabilities`: the block's differences, one vectorised pass of erfc over the
    whole block (on the diagonal block, over its lower half too: fewer, longer passes), then the writes,
    ``out[b, i, j]`` row after row and ``out[b, j, i]`` likewise, so that neither half is written one column
    at a time."""
    size = scores.shape[1]
    i1, j1 = min(i0 + TILE, size), min(j0 + TILE, size)
    width = j1 - j0
    differences, magnitudes, values, transposed = work[0], work[1], work[2], work[3]
    for i in range(i0, i1):
        s_i, at = scores[b, i], (i - i0) * width
        for k in range(width):
            differences[at + k] = (s_i - scores[b, j0 + k]) * c
    count = (i1 - i0) * width
    for k in range(count):
        magnitudes[k] = abs(differences[k])
    erfc_into(magnitudes, values, work[4:6], bits, count)
    real_others = mask[b]
    for i in range(i0, i1):
        if i >= j0:
            out[b, i, i] = 0.0
        real, at, row = mask[b, i], (i - i0) * width - j0, out[b, i]
        for j in range(max(j0, i + 1), j1):
            tail = 0.5 * values[at + j]  # P(s_j > s_i) when d >= 0
            upper, lower = (tail, 1.0 - tail) if differences[at + j] >= 0.0 else (1.0 - tail, tail)
            keep = real and real_others[j]
            row[j], transposed[at + j] = (upper, lower) if keep else (0.0, 0.0)
    for j in range(j0, j1):
        target = out[b, j]
        for i in range(i0, min(i1, j)):
            target[i] = transposed[(i - i0) * width + j - j0]


def _pair_probabilities(scores, mask, c, out, lane, lanes):  # pragma: no cover - compiled
    r"""``out[b, n, m] = pi_mn = P(s_m > s_n) = erfc((s_n - s_m) c) / 2`` for every pair of real documents
    m != n (else 0), with ``c = 1 / (2 sigma)``: one erfc per pair, at the smaller probability (the tail,
    accurate to float64's rounding); the other is 1 minus it, accurate too since it is at least 1/2. In
    square blocks of ``TILE`` x ``TILE`` pairs (:func:`_pair_tile`); the blocks on and above the diagonal
    are the tasks, dealt to the lanes in turn. ``out`` is pivot-major, as the laws read it."""
    batch, size = scores.shape
    blocks = (size + TILE - 1) // TILE
    per_query = blocks * (blocks + 1) // 2
    work, bits = np.empty((6, TILE * TILE)), np.empty(TILE * TILE, dtype=np.int64)
    for task in range(lane, batch * per_query, lanes):
        b, rest = task // per_query, task % per_query
        first = 0  # block row I: the blocks (I, J >= I) are numbered row after row
        while rest >= blocks - first:
            rest -= blocks - first
            first += 1
        _pair_tile(scores, mask, c, out, b, first * TILE, (first + rest) * TILE, work, bits)


# The lane kernels' drivers: their lanes on numba's threads, each lane marked done once it returned
# (gaprank._compiled_setup.run_lanes). A driver's body is the call alone; numba compiles the kernel into it
# afresh, so the tests compare every kernel's numbers on one thread (the kernel alone) and on several (the driver).
def _rank_laws_lanes(beats, out, done, lanes):  # pragma: no cover - compiled
    for lane in numba.prange(lanes):
        _rank_laws(beats, out, lane, lanes)
        done[lane] = 1


def _rank_laws_adjoint_lanes(beats, grad_laws, grad_beats, done, lanes):  # pragma: no cover - compiled
    for lane in numba.prange(lanes):
        _rank_laws_adjoint(beats, grad_laws, grad_beats, lane, lanes)
        done[lane] = 1


def _expected_values_lanes(beats, values, out, laws, bounds, done, lanes):  # pragma: no cover - compiled
    for lane in numba.prange(lanes):
        _expected_values(beats, values, out, laws, bounds, lane, lanes)
        done[lane] = 1


def _expected_values_score_adjoint_lanes(beats, scores, mask, c, values, weights, laws, bounds, row_totals,
                                         column_parts, done, lanes):  # pragma: no cover - compiled
    for lane in numba.prange(lanes):
        _expected_values_score_adjoint(beats, scores, mask, c, values, weights, laws, bounds, row_totals,
                                       column_parts, lane, lanes)
        done[lane] = 1


def _pair_probabilities_lanes(scores, mask, c, out, done, lanes):  # pragma: no cover - compiled
    for lane in numba.prange(lanes):
        _pair_probabilities(scores, mask, c, out, lane, lanes)
        done[lane] = 1


def _compile(function, nogil=False):
    # contract: multiply-adds fused, never reordered; error_model numpy: a division raises nothing, so its
    # loops vectorise; compiled once, kept in numba's disk cache where it has one (gaprank._compiled_setup);
    # a lane kernel runs without the GIL
    return jit(function, nogil=nogil, fastmath={"contract"}, error_model="numpy")


if numba is not None:
    _quartic, _multiply, _pivot_law = _compile(_quartic), _compile(_multiply), _compile(_pivot_law)
    _correlations, _workspace, _split_horner = _compile(_correlations), _compile(_workspace), _compile(_split_horner)
    _pivot_adjoint, _windowed_adjoint, _pair_tile = _compile(_pivot_adjoint), _compile(_windowed_adjoint), _compile(_pair_tile)
    _fixed_order_sum = _compile(_fixed_order_sum)
    score_gradient = _compile(_score_gradient)
    # the lane kernels under the names their drivers call, then the entry points: run(*args, threads)
    _rank_laws, _rank_laws_adjoint = _compile(_rank_laws, nogil=True), _compile(_rank_laws_adjoint, nogil=True)
    _expected_values = _compile(_expected_values, nogil=True)
    _expected_values_score_adjoint = _compile(_expected_values_score_adjoint, nogil=True)
    _pair_probabilities = _compile(_pair_probabilities, nogil=True)
    rank_laws = lane_kernel(_rank_laws, _rank_laws_lanes)
    rank_laws_adjoint = lane_kernel(_rank_laws_adjoint, _rank_laws_adjoint_lanes)
    expected_values = lane_kernel(_expected_values, _expected_values_lanes)
    expected_values_score_adjoint = lane_kernel(_expected_values_score_adjoint, _expected_values_score_adjoint_lanes)
    pair_probabilities = lane_kernel(_pair_probabilities, _pair_probabilities_lanes)
