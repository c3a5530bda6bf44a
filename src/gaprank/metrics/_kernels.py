r"""One engine for the whole AP family (docs: The maths, "One kernel for the AP family").

Every member is

.. math::

    M = \sum_n \frac{1}{n}\Big(D[r_n] + \sum_{m<n} K[r_m, r_n]\Big)

with a small ``(c+1) x (c+1)`` kernel ``K`` (grade above, pivot grade) and a diagonal term ``D``
(``D = diag(K)`` for every member except eRAP, where a document's own relevance enters once, not
squared). A :class:`Kernel` also says for which queries the measure is defined (its normaliser is
non-zero). A new measure is a new kernel builder; the engine, the smooth versions and the swap
deltas are shared.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ._ranking import RankedLists, grade_indicators


@dataclass
class Kernel:
    """The kernel of an AP-family measure for a batch of queries.

    Parameters
    ----------
    matrix : torch.Tensor
        ``[B, c+1, c+1]`` float64: K[t, u], t = the grade above, u = the pivot's grade.
    diag : torch.Tensor
        ``[B, c+1]`` float64: D[u], the pivot's own term (``K[u, u]`` for every member but eRAP).
    defined : torch.Tensor
        ``[B]`` bool: the measure's normaliser is non-zero.
    """

    matrix: torch.Tensor
    diag: torch.Tensor
    defined: torch.Tensor

    @classmethod
    def with_diagonal(cls, matrix: torch.Tensor, defined: torch.Tensor) -> Kernel:
        """The kernel whose pivot term is its own diagonal, ``D[u] = K[u, u]``; zero where the measure is not
        defined (with negative weights a threshold above an undefined one may still have a positive recall
        base, and the swap deltas read the kernel, not ``defined``)."""
        matrix = torch.where(defined[:, None, None], matrix, 0.0)
        return cls(matrix, torch.diagonal(matrix, dim1=-2, dim2=-1).contiguous(), defined)


def pivot_sum(grades: torch.Tensor, valid: torch.Tensor, kernel: Kernel, k: int | None = None,
              mass: torch.Tensor | None = None) -> torch.Tensor:
    """Evaluate ``sum_n (1/n) (D[r_n] + sum_{m<n} K[r_m, r_n])`` for ranked grades ``[B, N]``; with a grade
    ``mass`` ``[B, N, c+1]`` (rank order: how much each document counts at each grade),
    ``sum_n (1/n) (y_n . D + sum_{m<n} y_m K y_n)``.

    O(B N c^2): prefix counts per grade replace the inner sum over documents.
    """
    num_classes = kernel.matrix.shape[-1]
    onehot = grade_indicators(grades, num_classes).to(torch.float64) * valid[..., None] if mass is None else mass
    above = torch.cumsum(onehot, dim=1) - onehot  # [B, N, c+1]: grade counts strictly above rank n
    positions = torch.arange(1, grades.shape[1] + 1, dtype=torch.float64, device=grades.device)
    if mass is None:
        from_above = torch.bmm(above, kernel.matrix).gather(-1, grades[..., None]).squeeze(-1)
        terms = (from_above + kernel.diag.gather(-1, grades)) / positions * valid
    else:
        pairs_and_own = torch.bmm(above, kernel.matrix) + kernel.diag[:, None, :]  # read at the pivot's mass
        terms = (pairs_and_own * mass).sum(-1) / positions
    if k is not None:
        terms = terms[:, :k]
    return terms.sum(-1)


def _min_index(num_classes: int, device: torch.device) -> torch.Tensor:
    idx = torch.arange(num_classes, device=device)
    return torch.minimum(idx[:, None], idx[None, :])


def safe_divide(num: torch.Tensor, den: torch.Tensor) -> torch.Tensor:
    return torch.where(den > 0, num / torch.where(den > 0, den, torch.ones_like(den)), torch.zeros_like(num))


def _cumulative_g(g: torch.Tensor) -> torch.Tensor:
    """G(0..c) with G(0) = 0, G(a) = g_1 + ... + g_a."""
    return torch.cat([g.new_zeros(1), torch.cumsum(g, 0)])


def ap_kernel(ranked: RankedLists, threshold: int) -> Kernel:
    """Binary AP at ``threshold``: ``K[t,u] = 1[t>=th] 1[u>=th] / RB(th)``."""
    c1 = ranked.num_grades + 1
    grades = torch.arange(c1, device=ranked.grades.device)
    rel = (grades >= threshold).to(torch.float64)
    rb = ranked.recall_base[:, threshold] if threshold < c1 else ranked.counts.new_zeros(ranked.batch)
    matrix = safe_divide(torch.outer(rel, rel)[None], rb[:, None, None])
    return Kernel.with_diagonal(matrix, rb > 0)


def gap_kernel(ranked: RankedLists, g: torch.Tensor) -> Kernel:
    """GAP: ``K[t,u] = G(min(t,u)) / sum_k R(k) G(k)`` (Robertson et al. 2010, sec. 2.2)."""
    big_g = _cumulative_g(g)
    norm = ranked.counts @ big_g  # [B]
    matrix = safe_divide(big_g[_min_index(big_g.numel(), g.device)][None], norm[:, None, None])
    return Kernel.with_diagonal(matrix, norm > 0)


def _inverse_recall_terms(ranked: RankedLists, g: torch.Tensor) -> torch.Tensor:
    """cumulative sum over k <= a of g_k / RB(k) (terms with RB(k) = 0 dropped), shape [B, c+1]."""
    rb = ranked.recall_base[:, 1:]
    terms = safe_divide(g[None, :].expand_as(rb), rb)
    return torch.cat([terms.new_zeros(ranked.batch, 1), torch.cumsum(terms, -1)], -1)


def egap_kernel(ranked: RankedLists, g: torch.Tensor) -> Kernel:
    """eGAP = E[AP(K)]: ``K[t,u] = E(min(t,u))``, ``E(a) = sum_{k<=a, RB(k)>0} g_k / RB(k)``
    (Ferrante et al., eq. 6)."""
    e = _inverse_recall_terms(ranked, g)  # [B, c+1]
    idx = _min_index(e.shape[1], g.device)
    matrix = e[:, idx]
    return Kernel.with_diagonal(matrix, ranked.recall_base[:, 1] > 0 if ranked.num_grades else e.new_zeros(ranked.batch).bool())


def xgap_kernel(ranked: RankedLists, g: torch.Tensor) -> Kernel:
    """xGAP: ``K[t,u] = w(u) G(min(t,u))``, ``w(a) = [sum_{k<=a} g_k/RB(k)] / G(a)``
    (Ferrante et al., eq. 5; the term is 0 where G(a) = 0)."""
    big_g = _cumulative_g(g)
    w = safe_divide(_inverse_recall_terms(ranked, g), big_g[None, :].expand(ranked.batch, -1))  # [B, c+1]
    matrix = w[:, None, :] * big_g[_min_index(big_g.numel(), g.device)][None]
    return Kernel.with_diagonal(matrix, ranked.recall_base[:, 1] > 0 if ranked.num_grades else w.new_zeros(ranked.batch).bool())


def kishida_kernel(ranked: RankedLists) -> Kernel:
    """Kishida's v_G: ``K[t,u] = t 1[u>0] / Z``, Z = the same sum over the ideal list (eq. 42)."""
    c1 = ranked.num_grades + 1
    grades = torch.arange(c1, dtype=torch.float64, device=ranked.grades.device)
    raw = (grades[:, None] * (grades[None, :] > 0))[None].expand(ranked.batch, -1, -1).contiguous()
    ideal = ranked.ideal_grades()
    norm = pivot_sum(ideal, ideal > 0, Kernel.with_diagonal(raw, torch.ones(ranked.batch, dtype=torch.bool,
                                                                             device=raw.device)))
    return Kernel.with_diagonal(safe_divide(raw, norm[:, None, None]), norm > 0)


def erap_kernel(ranked: RankedLists, p: torch.Tensor) -> Kernel:
    """eRAP: ``K[t,u] = p_t p_u / RBhat``, ``D[u] = p_u / RBhat``, RBhat = sum_k R(k) p_k
    (Ferrante, Ferro, Pontarollo, eq. 2)."""
    rb_hat = ranked.counts @ p  # [B]
    matrix = safe_divide(torch.outer(p, p)[None], rb_hat[:, None, None])
    diag = safe_divide(p[None, :], rb_hat[:, None])
    return Kernel(matrix, diag, rb_hat > 0)
