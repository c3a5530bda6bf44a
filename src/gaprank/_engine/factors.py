r"""All-pairs swap deltas in O(c) per pair (docs: The maths, "Swap deltas in O(c) per pair"), as one low-rank product.

For ranks a < b holding grades x = r_a and y = r_b, swapping the two documents changes a kernel
measure ``M = sum_n (1/n) (D[r_n] + sum_{m<n} K[r_m, r_n])`` only through three groups of pivots:

* pivots strictly between a and b: ``sum_t S_t(a,b) (K[y,t] - K[x,t])``, with S_t(a,b) the sum of 1/n
  over positions a < n < b holding grade t (prefix sums of 1/n per grade);
* the pivot at a: ``(1/a) [D[y] + sum_{m<a} K[r_m,y] - D[x] - sum_{m<a} K[r_m,x]]``;
* the pivot at b: ``(1/b) [D[x] - K[x,x] + K[y,x] + sum_{m<b} K[r_m,x] - D[y] - sum_{m<b} K[r_m,y]]``.

Every term is a per-rank table (O(cN) to build) read at the other document's grade, i.e. a sum over
grades t of ``(something of a, t) * 1[r_b = t]`` or ``1[r_a = t] * (something of b, t)``. So the whole
``[N, N]`` matrix of deltas is ``L R^T`` for ``[N, 2c+5]`` factors (c+1 grades): one batched matrix
product, which can be taken a block of rows at a time (LambdaRank truncation, long lists). nDCG's
classic ``(gain(y) - gain(x)) (D(a) - D(b)) / IDCG`` is the same shape with rank 4.

Factors live on the flat slots of a :class:`~gaprank._engine.slots.SlotLayout` (one ``[B, N]``
batch, or LightGBM's length buckets end to end), so each step of building them is one tensor
operation for all blocks; a :class:`FactorPlan` keeps what does not depend on the ranking.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from .._inputs import GaprankInputError, check_positive_int
from ..metrics import GainDiscountForm, Kernel, KernelForm, ListForm, Measure, RankedLists, rank_lists
from .slots import SlotLayout


@dataclass
class PairFactors:
    """Rank-space factors of the swap deltas on the slots of ``layout``:
    ``delta(a, b) = sum_f left[f, a] right[f, b]`` for slots a above b in the same list. Both are
    ``[F, S]`` float64 (factor-major: each factor is one contiguous row over the slots), and
    ``right`` is 0 at padding, so every pair whose lower slot is padding weighs 0.

    Entries with a >= b or equal grades are not meaningful; :meth:`block` masks them. ``weighted``: the factors
    of weighted documents, whose pairs of equal grades count too (and whose direction is the delta's sign).
    """

    left: torch.Tensor  # [F, S] float64
    right: torch.Tensor  # [F, S] float64, 0 at padding
    grades: torch.Tensor  # [S] int64, ranked
    layout: SlotLayout
    weighted: bool = False

    def block(self, start: int, stop: int, dtype: torch.dtype = torch.float64) -> torch.Tensor:
        """Deltas for upper ranks ``start..stop-1`` against every lower rank: ``[B, stop-start, N]``
        (a one-block layout), exactly 0 where the upper rank is not above, grades are equal, or
        either side is padding."""
        (block,) = self.layout.blocks
        left = self.layout.list_major(self.left, block)[:, :, start:stop].to(dtype)
        deltas = torch.bmm(left.transpose(1, 2), self.layout.list_major(self.right, block).to(dtype))
        grades, valid = self.layout.view(self.grades, block), self.layout.view(self.layout.valid, block)
        keep = pair_keep(grades, valid, start, stop, equal_grades=self.weighted)
        return torch.where(keep, deltas, torch.zeros((), dtype=dtype, device=deltas.device))


def pair_keep(grades: torch.Tensor, valid: torch.Tensor, start: int, stop: int, *,
              equal_grades: bool = False) -> torch.Tensor:
    """``[B, stop-start, N]`` bool: rank a (in start..stop-1) is above rank b, both are real documents
    and their grades differ (or not, ``equal_grades``: weighted documents) -- the pairs a swap can change."""
    rows = torch.arange(start, stop, device=grades.device)
    cols = torch.arange(grades.shape[1], device=grades.device)
    keep = (cols[None, :] > rows[:, None])[None] & valid[:, start:stop, None] & valid[:, None, :]
    return keep if equal_grades else keep & (grades[:, start:stop, None] != grades[:, None, :])


class RowLayout:
    """Named ranges of rows of one buffer, laid out in the order given: ``RowLayout(a=3, b=1)`` has
    ``layout["a"] == slice(0, 3)``, ``layout.row("b") == 3`` and ``layout.total == 4``."""

    def __init__(self, **sizes: int) -> None:
        self._slices: dict[str, slice] = {}
        start = 0
        for name, size in sizes.items():
            self._slices[name] = slice(start, start + size)
            start += size
        self.total = start

    def __getitem__(self, name: str) -> slice:
        return self._slices[name]

    def row(self, name: str) -> int:
        """The index of a one-row range."""
        rows = self._slices[name]
        assert rows.stop - rows.start == 1, f"{name} spans {rows.stop - rows.start} rows"
        return rows.start

    def span(self, first: str, last: str) -> slice:
        """The rows from range ``first`` through range ``last``."""
        return slice(self._slices[first].start, self._slices[last].stop)


def kernel_product_matrix(kernel: Kernel) -> torch.Tensor:
    """``[B, 3C+2, 3C+1]`` (C = c+1 grades): the one matrix that turns a list's grade tables into every
    kernel-weighted table :class:`KernelFactorPlan` needs (it depends only on the kernel, so a plan
    builds it once). Columns act on ``[above; H; onehot; valid]``, rows give

    * ``A[u,n] - K[u,r_n]`` and ``A[u,n] + K[r_n,u] + D[u] - K[u,u]``, with ``A = K^T above``;
    * ``Qe = K H``; then ``D[r_n]`` and ``K[r_n,r_n]``.
    """
    matrix, diag = kernel.matrix, kernel.diag
    batch, c1 = matrix.shape[0], matrix.shape[-1]
    k_t = matrix.transpose(1, 2)
    k_diag = torch.diagonal(matrix, dim1=-2, dim2=-1)
    product = matrix.new_zeros(batch, 3 * c1 + 2, 3 * c1 + 1)
    above, weighted, own, valid = slice(0, c1), slice(c1, 2 * c1), slice(2 * c1, 3 * c1), 3 * c1
    product[:, 0:c1, above] = k_t
    product[:, 0:c1, own] = -matrix
    product[:, c1:2 * c1, above] = k_t
    product[:, c1:2 * c1, own] = k_t
    product[:, c1:2 * c1, valid] = diag - k_diag
    product[:, 2 * c1:3 * c1, weighted] = matrix
    product[:, 3 * c1, own] = diag
    product[:, 3 * c1 + 1, own] = k_diag
    return product


class FactorPlan:
    """What the swap-delta factors of lists laid out as ``layout`` need besides the ranking: the
    kernel of an AP-family measure, the gains, discounts and 1/Z of a discounted-gain measure, or the
    lists' grade counts for a measure with factors of its own. They depend only on each list's grade
    counts, so a plan built once serves every later ranking of the same lists (LambdaMART's rounds).
    It keeps its buffers: the factors :meth:`factors` returns are valid until its next call.
    """

    def __init__(self, layout: SlotLayout, k: int | None) -> None:
        self.layout, self.k = layout, k

    def factors(self, grades: torch.Tensor, mass: torch.Tensor | None = None) -> PairFactors:
        """Factors for ranked ``grades`` ``[S]`` (int64, any values at padding): the same lists
        (same grade counts and padding) in any order. ``mass`` ``[C, S]`` (grade-major, rank order, 0 at
        padding): how much each document counts at each grade, for weighted documents (its weight at its own
        grade; docs: The maths, "Weights: inverse-propensity estimates"); None: one at its grade."""
        raise NotImplementedError

    def update(self, inputs: Any) -> None:
        """Take the next batch's score-independent inputs (:func:`plan_inputs`, of the same measure and grade
        scale) after the layout took its list sizes (:meth:`SlotLayout.resize`): a plan kept for its shape."""
        raise NotImplementedError


def _cut_inverse_ranks(layout: SlotLayout, k: int | None) -> torch.Tensor:
    """1/n at each slot (n = 1-based rank), 0 beyond rank k."""
    inv = 1.0 / (layout.position + 1).to(torch.float64)
    return inv if k is None else inv.masked_fill_(layout.position >= k, 0.0)


class KernelFactorPlan(FactorPlan):
    """Factors of a kernel measure (the measure at cutoff ``k`` when given: terms beyond rank k,
    each weighted by its pivot's 1/n, are dropped by zeroing 1/n there).

    Tables are grade-major, ``X[u, s]``: the value at slot s for grade u (x = r_a, y = r_b below).
    Left and right factors are two overlapping windows of one buffer, so the one-hot grade rows
    both need are written once: with C = c+1 grades the buffer's rows are
    ``[U (C), row, 1/n, onehot (C), valid, D[r_n], L (C), col]``, left = the first 2C+3 rows,
    right = the last 2C+3, and the pairs they form are U.onehot, row.valid, (1/n).D, onehot.L and
    valid.col (names as in :meth:`factors`).
    """

    def __init__(self, layout: SlotLayout, kernel: Kernel, k: int | None = None) -> None:
        super().__init__(layout, k)
        c1 = kernel.matrix.shape[-1]
        slots, device = layout.num_slots, layout.valid.device
        f64: dict[str, Any] = {"dtype": torch.float64, "device": device}
        self.product = torch.empty(layout.num_queries, 3 * c1 + 2, 3 * c1 + 1, **f64)  # kernel_product_matrix
        inv = _cut_inverse_ranks(layout, k)
        valid = torch.empty(slots, **f64)
        self._grade_ids = torch.arange(c1, device=device)[:, None]
        self._is_grade = torch.empty(c1, slots, dtype=torch.bool, device=device)
        # above[t, s]: grade-t documents above; weighted[t, s]: their sum of 1/m; onehot[t, s]; valid
        table_rows = RowLayout(above=c1, weighted=c1, onehot=c1, valid=1)
        tables = torch.empty(table_rows.total, slots, **f64)
        # upper: A - K, read at y; lower: A + K^T + D - diag K, read at x; q_excl[u, n]: sum_{m<n} K[u, r_m] / m;
        # d_own: D[r_n]; k_own: K[r_n, r_n] (the rows of kernel_product_matrix, in its order)
        kernel_rows = RowLayout(upper=c1, lower=c1, q_excl=c1, d_own=1, k_own=1)
        kernel_tables = torch.empty(kernel_rows.total, slots, **f64)
        # The factor rows: left = upper .. valid, right = onehot .. col (two overlapping windows);
        # zeros: no garbage is ever read.
        z_rows = RowLayout(upper=c1, row=1, inv=1, onehot=c1, valid=1, d_own=1, lower=c1, col=1)
        z = torch.zeros(z_rows.total, slots, **f64)
        z[z_rows.row("inv")] = inv
        self._inv, self._valid = inv, valid
        self._valid_rows = (tables[table_rows.row("valid")], z[z_rows.row("valid")])
        self._tables, self._kernel_tables = tables, kernel_tables
        prefix_rows = table_rows.span("above", "weighted")  # the prefix sums over m < n
        self._blocks = [(layout.view(tables[prefix_rows], block), self.product[block.queries],
                         layout.list_major(tables, block), layout.list_major(kernel_tables, block))
                        for block in layout.blocks]
        # Views, built once: the rows below are rewritten in place for every ranking.
        self._above, self._weighted, self._onehot = (tables[table_rows[n]] for n in ("above", "weighted", "onehot"))
        self._upper, self._lower, self._q_excl = (kernel_tables[kernel_rows[n]] for n in ("upper", "lower", "q_excl"))
        self._d_own, self._k_own = kernel_tables[kernel_rows.row("d_own")], kernel_tables[kernel_rows.row("k_own")]
        self._z_upper, self._z_row, self._z_onehot = z[z_rows["upper"]], z[z_rows["row"]], z[z_rows["onehot"]]
        self._z_d_own, self._z_lower, self._z_col = z[z_rows.row("d_own")], z[z_rows["lower"]], z[z_rows.row("col")]
        self._z_right_tail = z[z_rows.span("d_own", "col")]
        self.result = PairFactors(z[z_rows.span("upper", "valid")], z[z_rows.span("onehot", "col")], torch.empty(0),
                                  layout)
        self._corrected: tuple[torch.Tensor, torch.Tensor] | None = None  # weighted documents' factors, made on use
        self.update(KernelInputs(kernel, k))

    def update(self, inputs: KernelInputs) -> None:
        self.kernel = inputs.kernel
        self.product.copy_(kernel_product_matrix(inputs.kernel))
        self._valid.copy_(self.layout.valid)
        for row in self._valid_rows:
            row.copy_(self._valid)

    def factors(self, grades: torch.Tensor, mass: torch.Tensor | None = None) -> PairFactors:
        inv = self._inv
        onehot = self._onehot
        if mass is None:
            onehot.copy_(torch.eq(grades, self._grade_ids, out=self._is_grade).logical_and_(self.layout.valid))
        else:  # every table below is linear in the one-hot rows, so the mass takes their place
            onehot.copy_(mass)
        self._above.copy_(onehot)
        torch.mul(onehot, inv, out=self._weighted)
        self._z_onehot.copy_(onehot)
        for prefix, product, block_tables, block_kernel_tables in self._blocks:
            torch.sub(torch.cumsum(prefix, -1), prefix, out=prefix)  # sums over m < n in each list
            block_kernel_tables.copy_(torch.bmm(product, block_tables))
        # upper rank a:  Qi[x,a] - (1/a)(D[x] + A[x,a])  +  (1/a) A[y,a] - Qi[y,a]  +  (1/a) D[y]
        #                - Qe[x,b] + (1/b)(D[x] - K[x,x] + K[y,x] + A[x,b])       (x = r_a, y = r_b)
        # lower rank b:  Qe[y,b] - (1/b)(D[y] + A[y,b])
        # with Qi[u, n] = Qe[u, n] + (1/n) K[u, r_n], the sums over m <= n.
        upper_grade = torch.mul(self._upper, inv, out=self._z_upper).sub_(self._q_excl)  # U, read at u = y
        torch.mul(self._lower, inv, out=self._z_lower).sub_(self._q_excl)  # L, read at u = x
        # Read at u = x, U gives (1/a)(A[x,a] - K[x,x]) - Qe[x,a] = -(Qi[x,a] - (D[x] + A[x,a])/a) - D[x]/a
        # (at padding this reads grade 0: it only meets padding lower ranks, whose right factors are 0)
        # copied, not gathered with out=: under torch.compile the buffer's shape is symbolic and gather's
        # out= check fails on it
        if mass is None:
            upper_own = self._z_row.copy_(torch.gather(upper_grade, 0, grades[None]))[0]
        else:  # read at the document's own mass rather than its grade
            upper_own = self._z_row.copy_((upper_grade * mass).sum(0, keepdim=True))[0]
        upper_own.addcmul_(self._d_own, inv).neg_()  # row: Qi[x,a] - (D[x] + A[x,a])/a
        own_pair = self._k_own if mass is None else self._own_pairs(mass)
        torch.addcmul(upper_own, own_pair, inv, value=-1.0, out=self._z_col)  # col: Qe[y,b] - (D[y] + A[y,b])/b
        self._z_d_own.copy_(self._d_own)
        self._z_right_tail.mul_(self._valid)  # right factors 0 at padding (onehot and valid rows already are)
        self.result.grades = grades
        if mass is None:
            return self.result
        # L reads K[x,x] at the upper document's mass, linearly; its pair with itself, w_a^2 K[x,x], is quadratic:
        # one more factor pair (the difference, times 1/b) puts it right
        return self._with_own_pair_correction(own_pair)

    def _own_pairs(self, mass: torch.Tensor) -> torch.Tensor:
        """``[S]``: each document's pair with itself, ``y K y`` (``K[r_n, r_n]`` for a one-hot mass)."""
        own = torch.empty_like(self._k_own)
        for block in self.layout.blocks:
            block_mass = self.layout.list_major(mass, block)  # [Q, C, W]
            crossed = torch.bmm(self.kernel.matrix[block.queries], block_mass)  # K y per slot
            self.layout.view(own, block).copy_((block_mass * crossed).sum(1))
        return own

    def _with_own_pair_correction(self, own_pair: torch.Tensor) -> PairFactors:
        """The factors with the pair ``(diag(K) . y_a - y_a K y_a, 1/b)`` appended."""
        left, right = self.result.left, self.result.right
        if self._corrected is None:
            self._corrected = (left.new_empty(left.shape[0] + 1, left.shape[1]),
                               right.new_empty(right.shape[0] + 1, right.shape[1]))
        wide_left, wide_right = self._corrected
        wide_left[:-1].copy_(left)
        torch.sub(self._k_own, own_pair, out=wide_left[-1])  # k_own: diag(K) read linearly at the mass
        wide_right[:-1].copy_(right)
        torch.mul(self._inv, self._valid, out=wide_right[-1])
        return PairFactors(wide_left, wide_right, self.result.grades, self.layout, weighted=True)


class GainDiscountFactorPlan(FactorPlan):
    """The discounted-gain family: ``(gain(y) - gain(x)) (disc(a) - disc(b)) / Z``, rank 4.

    ``gains`` ``[c+1]`` per grade, ``discounts`` ``[S]`` per slot (0 beyond the measure's cutoff),
    ``inverse_norm`` ``[Q]`` 1/Z per list (0 where no swap changes the measure)."""

    def __init__(self, layout: SlotLayout, gains: torch.Tensor, discounts: torch.Tensor,
                 inverse_norm: torch.Tensor, k: int | None = None) -> None:
        super().__init__(layout, k)
        f64: dict[str, Any] = {"dtype": torch.float64, "device": layout.valid.device}
        self.scale = torch.empty(layout.num_slots, **f64)  # 1/Z, 0 at padding
        # left = [disc, gain, -gain disc, 1], right = [gain, disc, 1, -gain disc] / Z (the gain rows per ranking)
        self.left = torch.empty(4, layout.num_slots, **f64)
        self.left[3] = 1.0
        self.right = torch.empty(4, layout.num_slots, **f64)
        self.result = PairFactors(self.left, self.right, torch.empty(0), layout)
        self.update(GainDiscountInputs(gains, discounts, inverse_norm, k))

    def update(self, inputs: GainDiscountInputs) -> None:
        layout = self.layout
        self.gains, self.disc = inputs.gains, inputs.discounts
        torch.mul(torch.index_select(inputs.inverse_norm, 0, layout.query), layout.valid, out=self.scale)
        self.left[0].copy_(self.disc)
        torch.mul(self.disc, self.scale, out=self.right[1])
        self.right[2].copy_(self.scale)

    def factors(self, grades: torch.Tensor, mass: torch.Tensor | None = None) -> PairFactors:
        if mass is None:
            gain = torch.index_select(self.gains, 0, grades, out=self.left[1])
        else:  # a document's gain is linear in its mass
            gain = torch.mm(self.gains[None], mass, out=self.left[1][None])[0]
        torch.mul(gain, self.disc, out=self.left[2]).neg_()
        torch.mul(gain, self.scale, out=self.right[0])
        torch.mul(self.left[2], self.scale, out=self.right[3])
        self.result.grades = grades
        self.result.weighted = mass is not None
        return self.result


class ListFactorPlan(FactorPlan):
    """A measure with swap-delta factors of its own (:class:`~gaprank.metrics.ListForm`: ERR, Q), computed
    block by block from each ranking."""

    def __init__(self, layout: SlotLayout, form: ListForm, lists: Sequence[RankedLists], params: dict[str, Any],
                 k: int | None = None) -> None:
        super().__init__(layout, k)
        self.form, self.lists, self.params = form, list(lists), params
        self.result: PairFactors | None = None

    def factors(self, grades: torch.Tensor, mass: torch.Tensor | None = None) -> PairFactors:
        layout = self.layout
        assert self.form.swap_factors is not None, "a list plan is built for a form with swap factors"
        assert mass is None, "a measure of its own swap factors takes no weights (refused at its metric)"
        grades = grades.masked_fill(~layout.valid, 0)  # whatever padding holds is never read as a grade
        for block, ranked in zip(layout.blocks, self.lists, strict=True):
            valid = layout.view(layout.valid, block)
            current = dataclasses.replace(ranked, grades=layout.view(grades, block), valid=valid)
            left, right = self.form.swap_factors(current, self.k, self.params)
            if self.result is None:
                shape = (left.shape[0], layout.num_slots)
                self.result = PairFactors(torch.zeros(shape, dtype=torch.float64, device=grades.device),
                                          torch.zeros(shape, dtype=torch.float64, device=grades.device), grades, layout)
            layout.view(self.result.left, block).copy_(left)
            layout.view(self.result.right, block).copy_(right * valid)
        assert self.result is not None, "a layout has at least one block"
        self.result.grades = grades
        return self.result


def rank_for_measure(scores, labels, measure: Measure, *, mask=None, grade_counts=None,
                     max_grade: int | None = None, by_score: bool = True,
                     validate: bool = True, weights=None) -> tuple[RankedLists, dict[str, Any]]:
    """Check a measure's settings (its own parameters: a keyword ``g`` joined it through
    :meth:`~gaprank.metrics.Measure.with_params`), rank the lists (ties stable) on the grade
    scale they fix, and fill the settings that depend on the data (a uniform ``g`` over the lists' grades).
    ``max_grade``: the grade scale 0..max_grade when no setting fixes it (one that does must agree).
    ``by_score=False``: the lists are not sorted (for callers that read only score-independent inputs).
    ``validate``, ``weights``: as in :func:`~gaprank.metrics.rank_lists`.

    Returns the ranked lists and the measure's parameters, by keyword."""
    values, scale, source = measure.settings()
    if max_grade is not None:
        max_grade = check_positive_int(max_grade, "max_grade", allow_none=False)
        if scale is not None and scale != max_grade:
            raise GaprankInputError(f"max_grade={max_grade} disagrees with the grade scale 0..{scale} set by {source}")
        scale, source = max_grade, f"max_grade={max_grade}"
    if weights is not None and not measure.info.form.takes_weights:
        raise GaprankInputError(f"{measure.info.name} does not take weights (its form weighs no document)")
    ranked = rank_lists(scores, labels, mask=mask, grade_counts=grade_counts, ties="stable", num_grades=scale,
                        scale_source=source, by_score=by_score, validate=validate, weights=weights)
    return ranked, measure.info.fill(values, ranked.num_grades, ranked.grades.device)


@dataclass
class KernelInputs:
    """What a kernel measure's plan reads: the kernel of every list (score-independent) and the cutoff."""

    kernel: Kernel
    k: int | None


@dataclass
class GainDiscountInputs:
    """What a discounted-gain measure's plan reads: a gain per grade ``[C]``, a discount per slot ``[S]`` (0
    beyond the cutoff), 1/Z per list ``[Q]``."""

    gains: torch.Tensor
    discounts: torch.Tensor
    inverse_norm: torch.Tensor
    k: int | None


def plan_inputs(measure: Measure, parts: Sequence[RankedLists], params: dict[str, Any], layout: SlotLayout, *,
                k: int | None = None, ideal_cutoff: int | None = None,
                gains: torch.Tensor | None = None) -> KernelInputs | GainDiscountInputs | ListForm | None:
    """The score-independent inputs of ``measure``'s factor plan on ``layout`` (options as in
    :func:`plan_pair_factors`): the kernels, or the gains, discounts and 1/Z; a :class:`ListForm` for a measure
    with factors of its own; None when no pair can change it."""
    k = measure.k if k is None else k
    form = measure.info.form
    if isinstance(form, GainDiscountForm):
        device = layout.valid.device
        if gains is None:
            gains = form.gains(parts[0].num_grades, params, device)
        cutoff = k if k is not None else ideal_cutoff
        inverse_norm = torch.cat([form.inverse_norm(ranked, gains, k, params, cutoff)[0] for ranked in parts])
        discounts = form.discounts((layout.position + 1).to(torch.float64), params, k)
        return GainDiscountInputs(gains, discounts, inverse_norm, k)
    if isinstance(form, ListForm):
        return form
    assert isinstance(form, KernelForm), f"{measure.name} has no swap deltas"
    kernels = []
    for ranked in parts:
        kernel_of_part = form.build(ranked, params)
        if kernel_of_part is None:
            return None
        kernels.append(kernel_of_part)
    kernel = Kernel(torch.cat([kr.matrix for kr in kernels]), torch.cat([kr.diag for kr in kernels]),
                    torch.cat([kr.defined for kr in kernels]))
    return KernelInputs(kernel, k)


def plan_pair_factors(measure: Measure, lists: RankedLists | Sequence[RankedLists], params: dict[str, Any], *,
                      layout: SlotLayout | None = None, k: int | None = None, ideal_cutoff: int | None = None,
                      gains: torch.Tensor | None = None) -> FactorPlan | None:
    """The :class:`FactorPlan` of ``measure`` (with its ``params``, filled) for these lists; None when no
    pair can change it (a kernel measure on a scale without grades above 0).

    ``lists``: one :class:`RankedLists` per block of ``layout`` (their grade counts are what the plan uses),
    or one batch, whose layout is then the one block ``[B, N]``. ``k``: the cutoff whose measure's deltas
    these are (default the measure string's ``@k``). ``ideal_cutoff``: where a normaliser built from the
    ideal ranking (nDCG's ideal DCG) is taken when the measure has no cutoff (LightGBM takes it at its
    truncation level). ``gains``: a gain per grade replacing the measure's own (LightGBM's ``label_gain``)."""
    parts = [lists] if isinstance(lists, RankedLists) else list(lists)
    if layout is None:
        (ranked,) = parts
        layout = SlotLayout.single(ranked.n_docs, ranked.list_size)
    inputs = plan_inputs(measure, parts, params, layout, k=k, ideal_cutoff=ideal_cutoff, gains=gains)
    if isinstance(inputs, GainDiscountInputs):
        return GainDiscountFactorPlan(layout, inputs.gains, inputs.discounts, inputs.inverse_norm, inputs.k)
    if isinstance(inputs, ListForm):
        return ListFactorPlan(layout, inputs, parts, params, measure.k if k is None else k)
    if inputs is None:
        return None
    return KernelFactorPlan(layout, inputs.kernel, inputs.k)


def pair_factors(measure: Measure, ranked: RankedLists, params: dict[str, Any], *, k: int | None = None,
                 ideal_cutoff: int | None = None) -> PairFactors | None:
    """Swap-delta factors of ``measure`` for one batch of ranked lists (a one-block layout); None when no
    pair can change it. Options as in :func:`plan_pair_factors`."""
    plan = plan_pair_factors(measure, ranked, params, k=k, ideal_cutoff=ideal_cutoff)
    return None if plan is None else plan.factors(ranked.grades.reshape(-1), slot_mass(ranked))


def slot_mass(ranked: RankedLists) -> torch.Tensor | None:
    """``[C, S]``: the grade mass of a batch of ranked lists on its one-block layout's slots (grade-major), for a
    plan's :meth:`FactorPlan.factors`; None for unweighted lists."""
    if ranked.mass is None:
        return None
    return ranked.mass.reshape(-1, ranked.num_grades + 1).T.contiguous()


def symmetric_deltas(factors: PairFactors, size: int) -> torch.Tensor:
    """``[B, N, N]`` deltas of every pair, from the factors of a one-block layout (upper ranks' rows
    mirrored below the diagonal)."""
    upper = factors.block(0, size)
    return upper + upper.transpose(1, 2)


def to_document_space(rank_space: torch.Tensor, order: torch.Tensor) -> torch.Tensor:
    """Re-index ``[B, N, N]`` from (rank i, rank j) to (document order[i], document order[j])."""
    rank_of = torch.argsort(order, dim=-1)
    batch, size = rank_of.shape
    rows = rank_space.gather(1, rank_of[:, :, None].expand(batch, size, size))
    return rows.gather(2, rank_of[:, None, :].expand(batch, size, size))
