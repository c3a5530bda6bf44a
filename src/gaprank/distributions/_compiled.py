r"""SoftRank's rank laws and their adjoint, compiled (numba), one pivot per task.

For pivot n the law of the count above it is the coefficient vector of
:math:`P(x) = \prod_m f_m(x)`, :math:`f_m(x) = 1 - \pi_m + \pi_m x` (the others' factors; a factor with
:math:`\pi_m = 0` -- the pivot itself, padding -- is 1 and is skipped). Forward: the product, four factors at
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
tasks, so the result does not depend on the number of threads. Everything is float64.

Two forms: the laws themselves (``rank_laws``, [B, N, M] out, any incoming gradient), and the expectation of a
per-rank value ``v`` under each law (``expected_values``: :math:`\sum_r p_n(r) v_r`, SoftNDCG's expected
discount), whose gradient :math:`G_n = w_n v` needs no [B, N, M] array of incoming gradients; its forward pass
can keep each law (over its support) so that the backward pass need not make it again. SoftNDCG's pair
probabilities from the scores and the gradient back to the scores (``row_pairs``, ``column_sums``) are
compiled too, each pair's erfc and exp taken once.
"""

from __future__ import annotations

import math

import numpy as np

try:
    import numba
except ImportError:  # pragma: no cover - numba is a dependency; without it the torch path serves
    numba = None  # type: ignore[assignment]


def available() -> bool:
    return numba is not None


LEAD = 4  # zeros ahead of count 0 in a law's buffer, so that counts r - 4 .. r are read without a check
# A law's entries below this probability are dropped from its ends as it is built: at most M^2 of them over a
# law's M factors, so at most M^2 x 1e-24 of probability in all (1e-18 at M = 1000), below float64's rounding
# of the result; what remains is each law's numerical support, about 21 standard deviations of the count
# wide, which the backward pass's work scales with.
NEGLIGIBLE = 1e-24


def _multiply(source, target, at, length, c0, c1, c2, c3, c4):  # pragma: no cover - compiled
    """``target[at + r] = sum_i c_i source[at + r - i]`` for r < length: one group of four factors."""
    # shifted views indexed from 0: no negative index, so the loop vectorises
    s0, s1, s2, s3, s4 = source[at:], source[at - 1:], source[at - 2:], source[at - 3:], source[at - 4:]
    out = target[at:]
    for r in range(length):
        out[r] = c0 * s0[r] + c1 * s1[r] + c2 * s2[r] + c3 * s3[r] + c4 * s4[r]


def _pivot_law(pi, b, n):  # pragma: no cover - compiled
    """The law of the count above pivot n of query b: ``(buffer, low, high)``, the law at counts
    ``low..high`` held at ``buffer[LEAD + low: LEAD + high + 1]``, with zeros for four counts either side
    (the rest of the buffer is scratch).

    The factors with pi > 0 are multiplied in four at a time (a quartic's five coefficients, all
    non-negative, so the grouping costs no accuracy): five multiply-adds per count and four factors; after
    each group the ends below ``NEGLIGIBLE`` are dropped."""
    others = pi.shape[1]
    factors, prev, nxt = np.empty(others + 4), np.zeros(LEAD + others + 16), np.zeros(LEAD + others + 16)
    used = 0
    for m in range(others):
        v = pi[b, m, n]
        if v != 0.0:  # the pivot itself and padding: the factor 1
            factors[used] = v
            used += 1
    factors[used:used + 4] = 0.0
    prev[LEAD] = 1.0
    low = high = 0
    for first in range(0, used, 4):
        p0, p1, p2, p3 = factors[first], factors[first + 1], factors[first + 2], factors[first + 3]
        q0, q1, q2, q3 = 1.0 - p0, 1.0 - p1, 1.0 - p2, 1.0 - p3
        a0, a1, a2 = q0 * q1, q0 * p1 + p0 * q1, p0 * p1  # (q0 + p0 x)(q1 + p1 x)
        b0, b1, b2 = q2 * q3, q2 * p3 + p2 * q3, p2 * p3
        c0, c1, c2 = a0 * b0, a0 * b1 + a1 * b0, a0 * b2 + a1 * b1 + a2 * b0
        c3, c4 = a1 * b2 + a2 * b1, a2 * b2
        _multiply(prev, nxt, LEAD + low, high - low + 5, c0, c1, c2, c3, c4)
        high += 4
        while nxt[LEAD + low] < NEGLIGIBLE:
            nxt[LEAD + low] = 0.0
            low += 1
        while nxt[LEAD + high] < NEGLIGIBLE:
            nxt[LEAD + high] = 0.0
            high -= 1
        # the next group reads counts low - 4 .. high + 4 of this buffer: zero what an earlier use left there
        nxt[LEAD + low - 4: LEAD + low] = 0.0
        nxt[LEAD + high + 1: LEAD + high + 5] = 0.0
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
        a0, a1, a2, a3 = h[j:], h[j + 1:], h[j + 2:], h[j + 3:]
        b0, b1, b2, b3 = p[j + 1:], p[j + 2:], p[j + 3:], p[j + 4:]
        for d in range(size - j):
            low[d] += p0 * a0[d] + p1 * a1[d] + p2 * a2[d] + p3 * a3[d]
        for d in range(size - j):
            high[d] += h0 * b0[d] + h1 * b1[d] + h2 * b2[d] + h3 * b3[d]


def _horner(coefficients, size, ratios, count, values):  # pragma: no cover - compiled
    """``values[i] = sum_{d < size} coefficients[d] ratios[i]^d`` for i < count, vectorised over i, four
    degrees per pass over the values (four multiply-adds per load and store)."""
    values[:count] = 0.0
    top = size
    while top % 4:
        top -= 1
        c = coefficients[top]
        for i in range(count):
            values[i] = values[i] * ratios[i] + c
    for d in range(top - 4, -1, -4):
        c3, c2, c1, c0 = coefficients[d + 3], coefficients[d + 2], coefficients[d + 1], coefficients[d]
        for i in range(count):
            r = ratios[i]
            values[i] = (((values[i] * r + c3) * r + c2) * r + c1) * r + c0


def _pivot_adjoint(pi, b, n, p, h, size, grad_pi):  # pragma: no cover - compiled
    """``grad_pi[b, m, n] = <h, p / f_m>`` for every other m, given pivot n's law ``p`` and ``h`` over the
    counts ``o .. o + size - 1`` (a common offset o; both zero from ``size`` on for at least four places,
    as :func:`_correlations` reads them, ``p`` zero at 0)."""
    others = pi.shape[1]
    low, high = np.empty(size + 8), np.empty(size + 8)
    _correlations(p, h, size, low, high)
    ratio_low, ratio_high = np.empty(others), np.empty(others)
    index_low, index_high = np.empty(others, dtype=np.int64), np.empty(others, dtype=np.int64)
    n_low = n_high = 0
    for m in range(others):
        v = pi[b, m, n]
        if v <= 0.5:
            ratio_low[n_low] = -v / (1.0 - v)
            index_low[n_low] = m
            n_low += 1
        else:
            ratio_high[n_high] = -(1.0 - v) / v
            index_high[n_high] = m
            n_high += 1
    values = np.empty(others)
    _horner(low, size, ratio_low, n_low, values)
    for i in range(n_low):
        m = index_low[i]
        grad_pi[b, m, n] = values[i] / (1.0 - pi[b, m, n])
    _horner(high, size, ratio_high, n_high, values)
    for i in range(n_high):
        m = index_high[i]
        grad_pi[b, m, n] = values[i] / pi[b, m, n]


def _windowed_adjoint(pi, b, n, law, low, high, incoming, grad_pi):  # pragma: no cover - compiled
    """The adjoint over the law's support ``low..high``: p and h taken from count ``low - 1`` on (where the
    law is zero), which both correlations then read at the offsets the module doc's sums need; ``incoming``
    gives G at each count (0 past the law's last column)."""
    size = high - low + 2
    h = np.zeros(size + 8)
    for i in range(size):
        r = low - 1 + i
        if r >= 0:
            h[i] = incoming[r + 1] - incoming[r]
    _pivot_adjoint(pi, b, n, law[LEAD + low - 1:], h, size, grad_pi)


def _rank_laws(pi, out):  # pragma: no cover - compiled
    """``pi`` [B, M, N] (others x pivots) -> ``out`` [B, N, M]: the law of the count above each pivot."""
    batch, others, pivots = pi.shape
    for task in numba.prange(batch * pivots):
        b, n = task // pivots, task % pivots
        law, low, high = _pivot_law(pi, b, n)
        out[b, n, :] = 0.0
        for r in range(low, min(high + 1, others)):
            out[b, n, r] = law[LEAD + r]


def _rank_laws_adjoint(pi, grad_laws, grad_pi):  # pragma: no cover - compiled
    """``grad_pi`` [B, M, N]: the gradient of <grad_laws, _rank_laws(pi)>."""
    batch, others, pivots = pi.shape
    for task in numba.prange(batch * pivots):
        b, n = task // pivots, task % pivots
        law, low, high = _pivot_law(pi, b, n)
        incoming = np.zeros(others + 2)
        incoming[:others] = grad_laws[b, n, :]
        _windowed_adjoint(pi, b, n, law, low, high, incoming, grad_pi)


def _expected_values(pi, values, out, laws, bounds):  # pragma: no cover - compiled
    """``out[b, n] = sum_r p_n(r) values[r]`` ([B, N]; ``values`` [M]). Unless ``laws`` is empty, each law
    is kept there ([B, N, M], its support ``bounds[b, n]``) for the adjoint."""
    batch, others, pivots = pi.shape
    keep = laws.shape[0] > 0
    for task in numba.prange(batch * pivots):
        b, n = task // pivots, task % pivots
        law, low, high = _pivot_law(pi, b, n)
        total = 0.0
        for r in range(low, min(high + 1, others)):
            total += law[LEAD + r] * values[r]
        out[b, n] = total
        if keep:
            bounds[b, n, 0], bounds[b, n, 1] = low, high
            laws[b, n, low:high + 1] = law[LEAD + low:LEAD + high + 1]


def _expected_values_adjoint(pi, values, weights, laws, bounds, grad_pi):  # pragma: no cover - compiled
    """``grad_pi`` [B, M, N]: the gradient of sum_{b, n} weights[b, n] _expected_values(pi, values)[b, n];
    the laws are read from ``laws`` and ``bounds`` as the forward pass kept them, or made again if empty."""
    batch, others, pivots = pi.shape
    kept = laws.shape[0] > 0
    for task in numba.prange(batch * pivots):
        b, n = task // pivots, task % pivots
        if kept:
            low, high = bounds[b, n, 0], bounds[b, n, 1]
            law = np.zeros(LEAD + others + 16)
            law[LEAD + low:LEAD + high + 1] = laws[b, n, low:high + 1]
        else:
            law, low, high = _pivot_law(pi, b, n)
        incoming = np.zeros(others + 2)
        incoming[:others] = weights[b, n] * values
        _windowed_adjoint(pi, b, n, law, low, high, incoming, grad_pi)


def _pair_row(scores, mask, c, out, b, i, gradient):  # pragma: no cover - compiled
    """Row i's pairs (i, j > i), both orders, of :func:`_row_pairs`."""
    out[b, i, i] = 0.0
    for j in range(i + 1, scores.shape[1]):
        if mask[b, i] and mask[b, j]:
            d = (scores[b, i] - scores[b, j]) * c
            if gradient:
                term = (out[b, i, j] - out[b, j, i]) * math.exp(-d * d)
                out[b, i, j], out[b, j, i] = term, -term
            else:
                tail = 0.5 * math.erfc(abs(d))
                out[b, i, j], out[b, j, i] = (1.0 - tail, tail) if d >= 0.0 else (tail, 1.0 - tail)
        else:
            out[b, i, j] = out[b, j, i] = 0.0


def _row_pairs(scores, mask, c, out, gradient):  # pragma: no cover - compiled
    r"""Every pair of real documents i != j once (else 0), with ``c = 1 / (2 sigma)``; a task takes rows i
    and N - 1 - i, so every task has N - 1 pairs.

    * ``gradient`` False: ``out[b, i, j] = P(s_i > s_j) = erfc(-(s_i - s_j) c) / 2``, one erfc per pair, at the
      smaller probability (the tail, accurate to float64's rounding); the other is 1 minus it, accurate too
      since it is at least 1/2.
    * ``gradient`` True: ``out`` holds the gradient in pi on entry and the antisymmetric terms
      :math:`A_{ij} = (G_{ij} - G_{ji})\, e^{-((s_i - s_j) c)^2}` on exit, one exp per pair: since
      :math:`\partial \pi_{ij} / \partial s_i = -\partial \pi_{ij} / \partial s_j = c\, e^{-((s_i - s_j) c)^2} / \sqrt\pi`
      and :math:`\pi_{ji} = 1 - \pi_{ij}`, the gradient in :math:`s_k` is
      :math:`(c / \sqrt\pi) \sum_j A_{kj} = -(c / \sqrt\pi) \sum_j A_{jk}` (:func:`_column_sums`)."""
    batch, size = scores.shape
    half = (size + 1) // 2
    for task in numba.prange(batch * half):
        b, i = task // half, task % half
        _pair_row(scores, mask, c, out, b, i, gradient)
        if size - 1 - i != i:
            _pair_row(scores, mask, c, out, b, size - 1 - i, gradient)


def _column_sums(terms, scale, out):  # pragma: no cover - compiled
    """``out[b, k] = scale * sum_j terms[b, j, k]``, each sum in a fixed order (down a column)."""
    batch, size = out.shape
    for task in numba.prange(batch * size):
        b, k = task // size, task % size
        total = 0.0
        for j in range(size):
            total += terms[b, j, k]
        out[b, k] = total * scale


if numba is not None:
    # contract: multiply-adds fused, never reordered; cache: compiled once, kept on disk
    _multiply = numba.njit(cache=True, fastmath={"contract"})(_multiply)
    _pivot_law = numba.njit(cache=True, fastmath={"contract"})(_pivot_law)
    _correlations = numba.njit(cache=True, fastmath={"contract"})(_correlations)
    _horner = numba.njit(cache=True, fastmath={"contract"})(_horner)
    _pivot_adjoint = numba.njit(cache=True, fastmath={"contract"})(_pivot_adjoint)
    _windowed_adjoint = numba.njit(cache=True, fastmath={"contract"})(_windowed_adjoint)
    rank_laws = numba.njit(parallel=True, cache=True, fastmath={"contract"})(_rank_laws)
    rank_laws_adjoint = numba.njit(parallel=True, cache=True, fastmath={"contract"})(_rank_laws_adjoint)
    expected_values = numba.njit(parallel=True, cache=True, fastmath={"contract"})(_expected_values)
    expected_values_adjoint = numba.njit(parallel=True, cache=True, fastmath={"contract"})(_expected_values_adjoint)
    _pair_row = numba.njit(cache=True, fastmath={"contract"})(_pair_row)
    row_pairs = numba.njit(parallel=True, cache=True, fastmath={"contract"})(_row_pairs)
    column_sums = numba.njit(parallel=True, cache=True, fastmath={"contract"})(_column_sums)
