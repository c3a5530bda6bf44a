"""Brute-force reference implementations, written from the papers' definitions with plain loops.

They share no code with gaprank: ranking, recall bases, ideal lists and every sum are recomputed
here per query from Python lists.
"""

from __future__ import annotations

import math


def rank(scores, labels, ties="stable"):
    """Grades in ranked order (higher score first)."""
    idx = list(range(len(scores)))
    if ties == "stable":
        key = lambda i: (-scores[i], i)  # noqa: E731
    elif ties == "pessimistic":
        key = lambda i: (-scores[i], labels[i], i)  # noqa: E731
    else:
        key = lambda i: (-scores[i], -labels[i], i)  # noqa: E731
    return [labels[i] for i in sorted(idx, key=key)]


def recall_base(counts, k):
    return sum(counts[j] for j in range(k, len(counts)))


def ideal_list(counts):
    out = []
    for grade in range(len(counts) - 1, 0, -1):
        out += [grade] * int(counts[grade])
    return out


def cum_g(g, a):
    return sum(g[:a])


def ap(r, counts, threshold=1, k=None):
    rb = recall_base(counts, threshold)
    if rb == 0:
        return None
    total = 0.0
    hits = 0
    for n, grade in enumerate(r, 1):
        if grade >= threshold:
            hits += 1
            if k is None or n <= k:
                total += hits / n
    return total / rb


def gap(r, counts, g, k=None):
    """Robertson et al. 2010: sum over relevant pivots of (1/n) sum_{m<=n} sum_{j<=min} g_j, over sum_k R(k) G(k)."""
    denominator = sum(counts[a] * cum_g(g, a) for a in range(1, len(counts)))
    if denominator == 0:
        return None
    total = 0.0
    for n in range(1, len(r) + 1):
        if r[n - 1] == 0 or (k is not None and n > k):
            continue
        inner = 0.0
        for m in range(1, n + 1):
            for j in range(1, min(r[m - 1], r[n - 1]) + 1):
                inner += g[j - 1]
        total += inner / n
    return total / denominator


def egap(r, counts, g, k=None):
    """Ferrante et al. eq. 6 as E[AP(K)] = sum_{k <= tau} g_k AP(k)."""
    if recall_base(counts, 1) == 0:
        return None
    total = 0.0
    for grade in range(1, len(g) + 1):
        if grade < len(counts) and recall_base(counts, grade) > 0:
            total += g[grade - 1] * ap(r, counts, grade, k)
    return total


def xgap(r, counts, g, k=None):
    """Ferrante et al. eq. 5."""
    if recall_base(counts, 1) == 0:
        return None
    total = 0.0
    for n in range(1, len(r) + 1):
        a = r[n - 1]
        if a == 0 or (k is not None and n > k) or cum_g(g, a) == 0:
            continue
        w = sum(g[j - 1] / recall_base(counts, j) for j in range(1, a + 1)) / cum_g(g, a)
        inner = sum(cum_g(g, min(r[m - 1], a)) for m in range(1, n + 1))
        total += w * inner / n
    return total


def kishida_vg(r, counts, k=None):
    """Kishida 2005, eq. 42."""
    def raw(x, cut=None):
        return sum(sum(x[:i]) / i for i in range(1, len(x) + 1) if x[i - 1] > 0 and (cut is None or i <= cut))
    z = raw(ideal_list(counts))
    return None if z == 0 else raw(r, k) / z


def erap(r, counts, p, k=None):
    """Ferrante, Ferro, Pontarollo eq. 2."""
    rb_hat = sum(counts[j] * p[j] for j in range(len(counts)))
    if rb_hat == 0:
        return None
    total = 0.0
    for n in range(1, len(r) + 1):
        if k is not None and n > k:
            break
        total += (1 + sum(p[r[m - 1]] for m in range(1, n))) * p[r[n - 1]] / n
    return total / rb_hat


def errbp(r, p, q, k=None):
    return (1 - q) * sum(q ** (n - 1) * p[grade] for n, grade in enumerate(r, 1) if k is None or n <= k)


def rbp(r, q, threshold=1, k=None):
    return (1 - q) * sum(q ** (n - 1) for n, grade in enumerate(r, 1) if grade >= threshold and (k is None or n <= k))


def err(r, max_grade, k=None):
    total, reach = 0.0, 1.0
    for n, grade in enumerate(r, 1):
        if k is not None and n > k:
            break
        stop = (2**grade - 1) / 2**max_grade
        total += reach * stop / n
        reach *= 1 - stop
    return total


def _gain(grade, gain):
    return 2**grade - 1 if gain == "exp2" else grade


def _disc(n, discount):
    return 1 / math.log2(n + 1) if discount == "log2p1" else 1 / max(1.0, math.log2(n))


def ndcg(r, counts, k=None, gain="exp2", discount="log2p1", short_list="pad"):
    if short_list == "zero" and k is not None and len(r) < k:
        return 0.0
    dcg = sum(_gain(x, gain) * _disc(n, discount) for n, x in enumerate(r, 1) if k is None or n <= k)
    ideal = ideal_list(counts)
    idcg = sum(_gain(x, gain) * _disc(n, discount) for n, x in enumerate(ideal, 1) if k is None or n <= k)
    return None if idcg == 0 else dcg / idcg


def precision(r, k, threshold=1, short_list="pad"):
    if short_list == "zero" and len(r) < k:
        return 0.0
    return sum(1 for x in r[:k] if x >= threshold) / k


def q_measure(r, counts, beta=1.0):
    """Kishida eq. 35 with beta (Sakai's blended ratio), gain = grade."""
    big_r = recall_base(counts, 1)
    if big_r == 0:
        return None
    ideal = ideal_list(counts)
    total = 0.0
    for i in range(1, len(r) + 1):
        if r[i - 1] > 0:
            c = sum(1 for x in r[:i] if x > 0)
            cg = sum(r[:i])
            cig = sum(ideal[:i])
            total += (c + beta * cg) / (i + beta * cig)
    return total / big_r


def sliding_ratio(r, counts, k=None):
    n = len(r) if k is None else min(len(r), k)
    ideal = ideal_list(counts)
    den = sum(ideal[i - 1] / i for i in range(1, min(n, len(ideal)) + 1))
    if den == 0:
        return None
    return sum(r[i - 1] / i for i in range(1, n + 1)) / den


def reciprocal_rank(r, counts, threshold=1, k=None):
    if recall_base(counts, threshold) == 0:
        return None
    for n, grade in enumerate(r, 1):
        if k is not None and n > k:
            break
        if grade >= threshold:
            return 1.0 / n
    return 0.0


def recall(r, counts, k, threshold=1):
    rb = recall_base(counts, threshold)
    if rb == 0:
        return None
    return sum(1 for x in r[:k] if x >= threshold) / rb


def r_precision(r, counts, threshold=1):
    rb = recall_base(counts, threshold)
    if rb == 0:
        return None
    return sum(1 for x in r[:rb] if x >= threshold) / rb


def success(r, k, threshold=1):
    return 1.0 if any(x >= threshold for x in r[:k]) else 0.0


def dcg(r, k=None, gain="exp2", discount="log2p1"):
    return sum(_gain(x, gain) * _disc(n, discount) for n, x in enumerate(r, 1) if k is None or n <= k)
