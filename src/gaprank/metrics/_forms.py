r"""The implementations a measure's registry entry carries: three forms, one code path each.

* :class:`KernelForm`, the AP family: :math:`M = \sum_n \frac{1}{n}\big(D[r_n] + \sum_{m<n} K[r_m, r_n]\big)`
  with a small ``(c+1) x (c+1)`` kernel per query (docs: The maths, "One kernel for the AP family").
  One pivot-sum engine evaluates it; the swap deltas (O(c) per pair), SoftRank's smooth value and the
  exact expectation all read the kernel.
* :class:`GainDiscountForm`, the discounted-gain family:
  :math:`M = \frac{1}{Z} \sum_{n \le k} \mathrm{gain}(r_n)\, \mathrm{disc}(n)` with a gain per grade, a
  discount per rank and a per-query normaliser Z that does not depend on the ranking (nDCG, DCG, P@k, RBP,
  eRRBP, the sliding ratio). Its swap delta is
  :math:`(\mathrm{gain}(y) - \mathrm{gain}(x))(\mathrm{disc}(a) - \mathrm{disc}(b)) / Z`, and its smooth
  value takes SoftRank's expected discounts.
* :class:`ListForm`: a measure with a value of its own (ERR, Q) and, optionally, its own swap-delta factors
  ``delta(a, b) = sum_f left[f, a] right[f, b]`` for ranks a above b.

Every function of a form receives the measure's own parameters as a dict keyed by keyword, checked and
filled (GAP's ``g`` already uniform when unset).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from .._inputs import GaprankInputError, on_device
from ._kernels import Kernel, pivot_sum, safe_divide
from ._ranking import RankedLists, WeightsNotTaken

Params = dict[str, Any]
Values = tuple[torch.Tensor, torch.Tensor | None]  # values [B] float64, defined [B] bool (None: always)


class Form:
    """Base of the three forms; see the module doc."""

    has_swap_deltas = False
    has_smooth = False
    has_expected = False
    smooth_takes_cutoff = False  # the smooth forms exist at a cutoff @k too
    takes_weights = False  # its metric function takes per-document weights

    def check(self, measure: str) -> None:
        """Refuse a form missing one of its parts (raised at the entry's construction)."""
        for part in self._parts():
            if not callable(getattr(self, part)):
                raise GaprankInputError(f"measure {measure}: {type(self).__name__}.{part} must be a function; "
                                        f"got {getattr(self, part)!r}")

    def _parts(self) -> tuple[str, ...]:
        return ()

    def value(self, ranked: RankedLists, k: int | None, params: Params) -> Values:
        """The measure (at cutoff ``k``) of every ranked list."""
        raise NotImplementedError


@dataclass(frozen=True)
class KernelForm(Form):
    """The AP family: ``kernel(ranked, **params) -> Kernel``, the kernel of every query.

    Parameters
    ----------
    kernel : callable
        ``kernel(ranked, **params) -> Kernel``: ``matrix`` ``[B, c+1, c+1]`` (K[t, u], t the grade above,
        u the pivot's), ``diag`` ``[B, c+1]`` (D[u], the pivot's own term), ``defined`` ``[B]`` (the
        normaliser is non-zero).
    takes_weights : bool, default True
        Its metric takes per-document ``weights`` (the kernel is then built from the weighted grade counts);
        False for a kernel normalised by an ideal ranking of grades, which weighted documents do not have.
    """

    kernel: Callable[..., Kernel]
    takes_weights: bool = True
    has_swap_deltas = True
    has_smooth = True
    has_expected = True

    def _parts(self) -> tuple[str, ...]:
        return ("kernel",)

    def build(self, ranked: RankedLists, params: Params) -> Kernel | None:
        """The kernel of these lists; None when the scale has no grade above 0 (every query undefined)."""
        if not ranked.num_grades:
            return None
        return self.kernel(ranked, **params)

    def value(self, ranked: RankedLists, k: int | None, params: Params) -> Values:
        kernel = self.build(ranked, params)
        if kernel is None:
            return ranked.counts.new_zeros(ranked.batch), ranked.counts.new_zeros(ranked.batch).bool()
        return pivot_sum(ranked.grades, ranked.valid, kernel, k, ranked.mass), kernel.defined


def cut(values: torch.Tensor, positions: torch.Tensor, k: int | None) -> torch.Tensor:
    """``values`` with every entry beyond rank ``k`` (1-based ``positions``) set to 0."""
    return values if k is None else values.masked_fill(positions > k, 0.0)


@dataclass(frozen=True)
class GainDiscountForm(Form):
    """The discounted-gain family: ``M = (1/Z) sum_{n <= k} gain[r_n] disc(n)``.

    A parameter ``short_list="zero"`` (nDCG, P@k) scores 0 a query with fewer than k documents, as the
    LETOR tools do; its swap deltas are then 0.

    Parameters
    ----------
    gain : callable
        ``gain(c, params) -> [c+1]`` float64: the gain of each grade 0..c.
    discount : callable
        ``discount(positions, params) -> discounts``: the discount at each 1-based rank (float64).
    normaliser : callable, optional
        ``normaliser(ranked, gains, k, params) -> [B]``: Z per query, a function of its grade counts and
        length only (never of the ranking); the measure is undefined where Z = 0. None: Z = 1, always
        defined. :func:`ideal_sum` gives the usual one (the ideal ranking's sum).
    takes_weights : bool, default True
        Its metric takes per-document ``weights``, which scale each document's gain (and the grade counts a
        normaliser reads; :func:`ideal_sum` then orders the documents by weighted gain).
    """

    gain: Callable[[int, Params], torch.Tensor]
    discount: Callable[[torch.Tensor, Params], torch.Tensor]
    normaliser: Callable[[RankedLists, torch.Tensor, int | None, Params], torch.Tensor] | None = None
    takes_weights: bool = True
    has_swap_deltas = True
    has_smooth = True
    smooth_takes_cutoff = True

    def _parts(self) -> tuple[str, ...]:
        return ("gain", "discount") + (("normaliser",) if self.normaliser is not None else ())

    def gains(self, num_grades: int, params: Params, device: torch.device) -> torch.Tensor:
        """``[c+1]`` float64 on ``device``."""
        return on_device(torch.as_tensor(self.gain(num_grades, params), dtype=torch.float64), device)

    def discounts(self, positions: torch.Tensor, params: Params, k: int | None) -> torch.Tensor:
        """The discount at each 1-based rank in ``positions`` (float64), 0 beyond rank ``k``."""
        return cut(torch.as_tensor(self.discount(positions, params), dtype=torch.float64).expand_as(positions),
                   positions, k)

    def normalise(self, ranked: RankedLists, gains: torch.Tensor, k: int | None, params: Params,
                  cutoff: int | None = None) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor | None]:
        """``(Z [B], defined [B] or None, scored zero [B] or None)``: ``k`` is the measure's cutoff,
        ``cutoff`` the normaliser's (default ``k``); a query scored zero is a short list under
        ``short_list="zero"``."""
        cutoff = k if cutoff is None else cutoff
        if self.normaliser is None:
            norm, defined = ranked.counts.new_ones(ranked.batch), None
        else:
            norm = torch.as_tensor(self.normaliser(ranked, gains, cutoff, params), dtype=torch.float64)
            defined = norm > 0
        short = None
        if params.get("short_list") == "zero" and k is not None:  # LETOR tools: a short list scores 0
            short = ranked.n_docs < k
            defined = None if defined is None else defined | short
        return norm, defined, short

    def inverse_norm(self, ranked: RankedLists, gains: torch.Tensor, k: int | None, params: Params,
                     cutoff: int | None = None) -> tuple[torch.Tensor, torch.Tensor | None]:
        """``(1/Z, defined)`` per query: 1/Z is 0 where the measure is undefined or a short list scores 0 (no
        swap changes it); ``defined`` as :meth:`normalise` gives it."""
        norm, defined, short = self.normalise(ranked, gains, k, params, cutoff)
        inverse = safe_divide(torch.ones_like(norm), norm)
        return (inverse if short is None else inverse.masked_fill(short, 0.0)), defined

    def value(self, ranked: RankedLists, k: int | None, params: Params) -> Values:
        gains = self.gains(ranked.num_grades, params, ranked.grades.device)
        ranks = ranked.list_size if k is None else min(k, ranked.list_size)  # the ranks that count
        positions = ranked.positions(ranks)
        discounts = self.discounts(positions, params, None)  # the positions stop at the cutoff already
        total = (document_gains(ranked, gains)[:, :ranks] * discounts).sum(-1)
        norm, defined, short = self.normalise(ranked, gains, k, params)
        values = total if self.normaliser is None else total / torch.where(norm > 0, norm, torch.ones_like(norm))
        return (values if short is None else values.masked_fill(short, 0.0)), defined


def document_gains(ranked: RankedLists, gains: torch.Tensor) -> torch.Tensor:
    """``[B, N]``: the gain of the document at each rank (of its grade mass when weighted; 0 at padding)."""
    if ranked.mass is not None:
        return ranked.mass @ gains
    return gains[ranked.grades] * ranked.valid


def ideal_sum(ranked: RankedLists, gains: torch.Tensor, discount: Callable[[torch.Tensor, Params], torch.Tensor],
              k: int | None, params: Params, *, within_list: bool = False) -> torch.Tensor:
    """``[B]``: the sum of ``gain * discount`` over the ideal ranking built from the grade counts (all judged
    documents, highest grade first), at ranks <= ``k`` and, ``within_list``, <= the list's length: the
    normaliser of nDCG (the ideal DCG) and of the sliding ratio. Weighted lists: the list's documents ordered by
    weighted gain, the largest first."""
    if ranked.mass is not None:
        values = ranked.ideal_values(document_gains(ranked, gains))
        positions = ranked.positions()
        return (values * cut(torch.as_tensor(discount(positions, params), dtype=torch.float64), positions, k)).sum(-1)
    ideal = ranked.ideal_grades()
    positions = ranked.positions(ideal.shape[1])
    terms = gains[ideal] * cut(torch.as_tensor(discount(positions, params), dtype=torch.float64), positions, k)
    if within_list:
        terms = terms * (positions[None, :] <= ranked.n_docs[:, None])
    return terms.sum(-1)


@dataclass(frozen=True)
class ListForm(Form):
    """A measure with its own value and, optionally, its own swap deltas.

    Parameters
    ----------
    value_of : callable
        ``value_of(ranked, k, params) -> (values [B], defined [B] or None)``.
    swap_factors : callable, optional
        ``swap_factors(ranked, k, params) -> (left, right)``, each ``[F, B, N]`` float64: the change of
        the measure when the documents at ranks a < b swap is ``sum_f left[f, b, a] * right[f, b, b']``
        (a pair's upper rank reads ``left``, its lower rank ``right``). ``right`` must be 0 at padding.
        Pairs of equal grades are never read. None: no swap deltas (a metric only).
    """

    value_of: Callable[[RankedLists, int | None, Params], Values]
    swap_factors: Callable[[RankedLists, int | None, Params], tuple[torch.Tensor, torch.Tensor]] | None = None
    has_smooth = False

    def _parts(self) -> tuple[str, ...]:
        return ("value_of",) + (("swap_factors",) if self.swap_factors is not None else ())

    @property
    def has_swap_deltas(self) -> bool:  # type: ignore[override]
        return self.swap_factors is not None

    def value(self, ranked: RankedLists, k: int | None, params: Params) -> Values:
        if ranked.mass is not None:
            raise WeightsNotTaken("its value is not a sum over documents and pairs of documents that weights "
                                  "could scale")
        return self.value_of(ranked, k, params)
