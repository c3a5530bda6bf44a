"""From (scores, labels, mask) to ranked grade sequences: the common first step of every metric.

Conventions (documented once here, named as arguments in every public function):

* Higher score = better rank. Ranks are 1-based in the math, 0-based in tensors.
* ``ties="stable"`` keeps tied documents in input order (as the LETOR evaluation tools do);
  ``"pessimistic"`` puts the lower grades of a tie group first, ``"optimistic"`` the higher grades.
* Padding (``mask`` False) is ranked after every real document and never contributes.
* The grade scale 0..c is set by the first of: the parameter that fixes it (``g`` has c entries,
  ``p`` has c+1, ``grade_counts`` has c+1, ``max_grade``), else the largest real label of the input.
  A label above the scale is an error.
* ``weights`` (per document, finite; negative for an affine estimate's evidence against a document) make a
  document count ``w`` times at its grade wherever the measure counts
  documents of a grade: in the grade counts, the terms a document contributes as itself (``w``), and the pairs
  it forms with another document (``w_m w_n``). That is the inverse-propensity estimate of the measure from
  documents observed with probability 1/w (docs: The maths, "Weights: inverse-propensity estimates"). Weights
  per document and level 1..c (a last axis of c) weigh each level its label reaches: the document then counts
  ``w_a`` at every threshold ``a <= label``, as a *grade mass* ``w_u - w_{u+1}`` at each grade u below its label
  and ``w_label`` at its label (nothing at grade 0).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .._inputs import (
    GRADE_SCALE_HINT,
    MAX_GRADE,
    TIE_RULES,
    GaprankInputError,
    OutputSpec,
    batch_weights,
    check_choice,
    checked_tensor,
    prepare_scores_labels,
)
from .._typing import ArrayLike


@dataclass
class RankedLists:
    """A batch of ranked lists reduced to what the metrics need."""

    grades: torch.Tensor  # [B, N] int64: grade of the document at each rank; 0 at padding
    valid: torch.Tensor  # [B, N] bool: a real document sits at this rank
    order: torch.Tensor  # [B, N] int64: input index of the document at each rank
    n_docs: torch.Tensor  # [B] int64: real documents per query
    counts: torch.Tensor  # [B, c+1] float64: R(k), the judged documents of each grade
    num_grades: int  # c
    spec: OutputSpec
    # a bound on RB(1) known without reading the data (the list width when the counts are the lists' own);
    # None: the ideal ranking's length is read from the counts
    ideal_length: int | None = None
    # [B, N] float64: the weight of the document at each rank, 0 at padding; None: every document weighs 1, or
    # weights per level (then ``mass`` only)
    weights: torch.Tensor | None = None
    # [B, N, c+1] float64: how much the document at each rank counts at each grade, when weighted; None: one-hot
    mass: torch.Tensor | None = None

    @property
    def batch(self) -> int:
        return self.grades.shape[0]

    @property
    def list_size(self) -> int:
        return self.grades.shape[1]

    @property
    def recall_base(self) -> torch.Tensor:
        """RB(k) = R(k) + ... + R(c), shape [B, c+1] (RB(0) counts every judged document)."""
        return torch.flip(torch.cumsum(torch.flip(self.counts, [-1]), -1), [-1])

    def positions(self, length: int | None = None) -> torch.Tensor:
        """1-based ranks 1..length as float64, shape [length]."""
        n = self.list_size if length is None else length
        return torch.arange(1, n + 1, dtype=torch.float64, device=self.grades.device)

    def rankable(self) -> torch.Tensor:
        """``[B]`` bool: the query has real documents of at least two different grades (a loss gives the others
        exactly zero value and gradient); weighted, at least two real documents (two of one grade may differ in
        weight)."""
        if self.mass is not None:
            return self.n_docs >= 2
        top = self.grades.masked_fill(~self.valid, -1).amax(-1)  # amax, not max(-1): no OpenMP region on the CPU
        low = self.grades.masked_fill(~self.valid, torch.iinfo(torch.int64).max).amin(-1)
        return top > low

    def document_grades(self) -> torch.Tensor:
        """Grades back in input (document) order, ``[B, N]``, 0 at padding."""
        return torch.zeros_like(self.grades).scatter_(1, self.order, self.grades)

    def document_weights(self) -> torch.Tensor | None:
        """Per-document weights back in input (document) order, ``[B, N]``, 0 at padding; None for unweighted lists
        (or weights per level)."""
        return None if self.weights is None else torch.zeros_like(self.weights).scatter_(1, self.order, self.weights)

    def ideal_grades(self) -> torch.Tensor:
        """Grades of the ideal ranking built from R(k), shape [B, L] with L = max RB(1) (``ideal_length`` when set).

        The i-th ideal grade (1-based) is #{k >= 1 : RB(k) >= i}; zeros pad shorter queries. Weighted lists
        have no ideal ranking of grades (:meth:`ideal_values` orders their documents' values).
        """
        if self.mass is not None:
            raise WeightsNotTaken("its normaliser is the value of an ideal ranking of grades, which weighted "
                                  "documents do not have")
        rb = self.recall_base[:, 1:]  # [B, c]
        if self.ideal_length is not None:  # past a query's RB(1) the ideal holds grade 0, as in the padding
            length = self.ideal_length
        else:
            length = int(rb[:, 0].max().item()) if rb.shape[1] else 0
        pos = self.positions(max(length, 1))
        return (rb[:, None, :] >= pos[None, :, None]).sum(-1)  # [B, L]


    def ideal_values(self, values: torch.Tensor) -> torch.Tensor:
        """``[B, N]``: each list's real documents' ``values`` (``[B, N]`` in rank order) from the largest down,
        0 past the list's end: the ideal ranking of a measure that sums one value per document (nDCG's weighted
        gains). Padding sorts last (below a negative value: an affine estimate's), then reads 0."""
        ordered = torch.sort(values.masked_fill(~self.valid, float("-inf")), dim=-1, descending=True).values
        return ordered.masked_fill(ordered == float("-inf"), 0.0)

    def grade_mass(self) -> torch.Tensor:
        """``[B, N, c+1]`` float64: how much the document at each rank counts at each grade (one at its own grade
        unless weighted; 0 at padding)."""
        if self.mass is not None:
            return self.mass
        return (grade_indicators(self.grades, self.num_grades + 1) & self.valid[..., None]).to(torch.float64)


class WeightsNotTaken(GaprankInputError):
    """A measure's form cannot weigh documents (raised with the reason; the metric names the measure)."""


def grade_indicators(grades: torch.Tensor, classes: int) -> torch.Tensor:
    """``[..., classes]`` bool: ``grades[...] == t`` for t = 0..classes-1. A comparison rather than ``one_hot``,
    which reads the grades' range back to the host on some devices (a wait on a GPU). Checks only what needs no
    value read back: integer grades, a positive number of classes."""
    if grades.is_floating_point() or grades.is_complex() or grades.dtype == torch.bool:
        raise GaprankInputError(f"grades must be an integer tensor; got dtype {grades.dtype}")
    if isinstance(classes, bool) or not isinstance(classes, (int, torch.SymInt)) or classes < 1:
        raise GaprankInputError(f"classes must be a positive integer; got {classes!r}")
    return grades[..., None] == torch.arange(classes, device=grades.device)


def resolve_g(g: ArrayLike | None, device: torch.device) -> torch.Tensor | None:
    """Validate user threshold probabilities g_1..g_c (non-negative, summing to 1 within 1e-6)."""
    if g is None:
        return None
    gt = checked_tensor(g, "g", device).to(torch.float64)
    if gt.ndim != 1 or gt.numel() == 0:
        raise GaprankInputError(f"g must be a non-empty 1-D sequence (g_1..g_c); got shape {tuple(gt.shape)}")
    if not bool(torch.isfinite(gt).all()) or bool((gt < 0).any()):
        raise GaprankInputError(f"g must hold finite non-negative probabilities; got {gt.tolist()}")
    total = float(gt.sum())
    if abs(total - 1.0) > 1e-6:
        raise GaprankInputError(f"g must sum to 1 (within 1e-6); got sum {total:.9g} for g = {gt.tolist()}")
    return gt


def default_g(num_grades: int, device: torch.device) -> torch.Tensor:
    """Uniform user model over grades 1..c."""
    c = max(num_grades, 1)
    return torch.full((c,), 1.0 / c, dtype=torch.float64, device=device)


def _rank_order(scores: torch.Tensor, labels: torch.Tensor, mask: torch.Tensor, ties: str) -> torch.Tensor:
    key = scores.masked_fill(~mask, float("-inf"))  # real scores are finite, so padding sorts last
    if ties == "stable":
        return torch.sort(key, dim=-1, descending=True, stable=True).indices
    # Two stable sorts make a lexicographic sort: by score, then by grade within a tie group.
    by_grade = torch.sort(labels, dim=-1, descending=(ties == "optimistic"), stable=True).indices
    by_score = torch.sort(key.gather(-1, by_grade), dim=-1, descending=True, stable=True).indices
    return by_grade.gather(-1, by_score)


def _check_grade_counts(
    grade_counts: ArrayLike, in_list: torch.Tensor, num_grades: int, device: torch.device, validate: bool = True
) -> torch.Tensor:
    batch = in_list.shape[0]
    gc = checked_tensor(grade_counts, "grade_counts", device).to(torch.float64)
    if gc.ndim == 1:
        gc = gc.expand(batch, -1)
    if gc.ndim != 2 or gc.shape[0] != batch or gc.shape[1] != num_grades + 1:
        raise GaprankInputError(
            f"grade_counts must have shape [c+1] or [batch, c+1] = [{num_grades + 1}] or "
            f"[{batch}, {num_grades + 1}] (R(0)..R(c)); got {tuple(gc.shape)}"
        )
    if not validate:
        return gc.contiguous()
    if not bool(torch.isfinite(gc).all()) or bool((gc < 0).any()) or bool((gc != torch.round(gc)).any()):
        raise GaprankInputError("grade_counts must hold non-negative integer counts R(k)")
    short = (gc[:, 1:] < in_list[:, 1:]) if num_grades else torch.zeros(1, dtype=torch.bool)
    if bool(short.any()):
        b, k = (int(i) for i in torch.nonzero(short)[0])
        raise GaprankInputError(
            f"grade_counts says query {b} has {int(gc[b, k + 1])} judged documents of grade {k + 1}, "
            f"but its list holds {int(in_list[b, k + 1])}: the recall base cannot be smaller than the list"
        )
    return gc.contiguous()


def rank_lists(
    scores: ArrayLike,
    labels: ArrayLike,
    *,
    mask: ArrayLike | None = None,
    grade_counts: ArrayLike | None = None,
    ties: str = "stable",
    num_grades: int | None = None,
    scale_source: str = "",
    by_score: bool = True,
    validate: bool = True,
    weights: ArrayLike | None = None,
) -> RankedLists:
    """Validate inputs, fix the grade scale, sort each list by score and count grades.

    ``num_grades`` is c when a parameter fixes the scale (``scale_source`` names it for errors).
    ``by_score=False`` skips the sort for callers that use only what the scores do not decide (the grade
    counts, normalisers, which lists can be ranked): the documents keep their input order, padding last.
    ``validate=False`` reads nothing back from the device (no synchronisation on a GPU): scores, labels and
    ``grade_counts`` are trusted (see :func:`~gaprank._inputs.prepare_scores_labels`), and the grade scale
    must be fixed by ``num_grades`` or ``grade_counts``' shape, since the largest label is not read.
    ``weights``: per document, or per document and level (module doc); the grade counts are then the weighted
    counts of the list, so ``grade_counts`` cannot come with them.
    """
    check_choice(ties, "ties", TIE_RULES)
    for flag, name in ((by_score, "by_score"), (validate, "validate")):
        if not isinstance(flag, bool):
            raise GaprankInputError(f"{name} must be True or False; got {flag!r}")
    s, y, m, spec = prepare_scores_labels(scores, labels, mask, validate=validate)
    device = s.device
    w = batch_weights(weights, spec_shape(s, spec), m, device, validate=validate)
    if w is not None and grade_counts is not None:
        raise GaprankInputError("weights and grade_counts cannot be combined: weighted documents are counted from "
                                "the list (each at its weight), not from outside it")
    if num_grades is None and grade_counts is None and not validate:
        raise GaprankInputError("validate=False reads no label back from the device, so the grade scale must be "
                                "given (max_grade, or a parameter that fixes it such as g or grade_counts)")
    max_label = int(y.max().item()) if validate else 0
    if num_grades is None and grade_counts is not None:
        gc_shape = checked_tensor(grade_counts, "grade_counts", device).shape
        if len(gc_shape) not in (1, 2) or gc_shape[-1] < 1:
            raise GaprankInputError(f"grade_counts must have shape [c+1] or [batch, c+1]; got {tuple(gc_shape)}")
        num_grades, scale_source = gc_shape[-1] - 1, "grade_counts"
    if num_grades is None:
        num_grades = max_label
    elif num_grades > MAX_GRADE:
        raise GaprankInputError(f"{scale_source} sets a grade scale 0..{num_grades}: {GRADE_SCALE_HINT}")
    elif max_label > num_grades:
        raise GaprankInputError(
            f"label {max_label} is above the grade scale 0..{num_grades} set by {scale_source}"
        )
    if by_score:
        order = _rank_order(s, y, m, ties)
    else:  # each document's slot: real ones first in input order, then padding (no sort, no host read)
        slot = torch.where(m, m.cumsum(-1), m.sum(-1, keepdim=True) + (~m).cumsum(-1)) - 1
        order = torch.empty_like(slot).scatter_(-1, slot, torch.arange(s.shape[-1], device=device).expand_as(slot))
    grades = y.gather(-1, order)
    valid = m.gather(-1, order)
    onehot = (grade_indicators(grades, num_grades + 1) & valid[..., None]).to(torch.float64)
    ranked_weights = mass = None
    if w is not None and w.ndim == 2:
        ranked_weights = w.gather(-1, order)
        mass = onehot * ranked_weights[..., None]
    elif w is not None:
        mass = _level_mass(grades, w.gather(1, order[..., None].expand(-1, -1, w.shape[-1])), num_grades)
    in_list = (onehot if mass is None else mass).sum(1)  # [B, c+1]
    if grade_counts is None:
        counts = in_list
    else:
        counts = _check_grade_counts(grade_counts, in_list, num_grades, device, validate)
    # Unvalidated lists bound the ideal ranking by their width, so that its length is not read back; validated
    # ones keep the exact length (a longer sum of the same terms could round differently).
    ideal_length = s.shape[-1] if grade_counts is None and not validate else None
    return RankedLists(grades, valid, order, m.sum(-1), counts, num_grades, spec, ideal_length, ranked_weights, mass)


def _level_mass(grades: torch.Tensor, weights: torch.Tensor, num_grades: int) -> torch.Tensor:
    """``[B, N, c+1]``: the grade mass of documents weighted per level (``weights`` ``[B, N, c]``, 0 at padding):
    ``X_a = w_a 1[label >= a]`` at each threshold a = 1..c, mass ``X_u - X_{u+1}`` at grade u >= 1, 0 at grade 0."""
    if weights.shape[-1] != num_grades:
        raise GaprankInputError(f"weights give {weights.shape[-1]} levels per document, but the grade scale is "
                                f"0..{num_grades}: one weight per level 1..{num_grades}")
    levels = torch.arange(1, num_grades + 1, device=grades.device)
    reached = weights * (grades[..., None] >= levels)  # X_1..X_c
    mass = reached - torch.nn.functional.pad(reached[..., 1:], (0, 1))
    return torch.nn.functional.pad(mass, (1, 0))


def spec_shape(scores: torch.Tensor, spec: OutputSpec) -> tuple[int, ...]:
    """The shape the caller gave the scores in (``[list]`` or ``[batch, list]``)."""
    return (scores.shape[1],) if spec.squeeze else tuple(scores.shape)
