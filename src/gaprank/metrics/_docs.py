"""The parameters every metric shares, written once and put into each metric's docstring.

A registered measure's docstring gets numpydoc ``Parameters`` and ``Returns`` sections built from its
signature: the arrays, then, in signature order, the cutoff ``k``, its own parameters (their
descriptions come from the measure's registry entry) and the options below, before its
``Examples``. The built-in metrics' docstrings are written out in full (``help()`` and the source show the
same text); a test checks their shared entries against these texts.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from .._docstrings import with_parameters

ARRAYS = (("scores", "array_like or torch.Tensor",
           "``[list]`` (one query) or ``[batch, list]``; a higher score ranks a document higher. NumPy in, NumPy "
           "out; a tensor in, a tensor out, on its device."),
          ("labels", "array_like or torch.Tensor",
           "The documents' relevance grades, integers 0..30, in the shape of ``scores``."))
CUTOFF = ("int, optional", "Cutoff: only ranks 1..k count; a normaliser (recall base, ideal list) is kept as "
                           "it is, as in trec_eval's cut measures.")
SHARED: dict[str, tuple[str, str]] = {
    "mask": ("array_like of bool, optional",
             "True marks a real document, False padding. Padding ranks after every real document and never "
             "counts; its scores and labels are never read. Default: every position is real."),
    "weights": ("array_like, optional",
                "Per document, >= 0, in the shape of ``scores``: a document of weight w counts w times at its "
                "grade, in the grade counts, in its own terms and (times the other's weight) in its pairs: the "
                "inverse-propensity estimate of the measure from documents each observed with probability 1/w "
                "(docs: Simulating clicks). With a last axis of c, one weight per document and level 1..c: the "
                "document counts w_a at each threshold a up to its label (graded events, each level observed "
                "with its own probability). Padding's weights are never read. Default: every document weighs 1."),
    "grade_counts": ("array_like, optional",
                     "R(0)..R(c) per query, shape ``[c+1]`` or ``[batch, c+1]``: the judged documents of each grade, "
                     "when the list does not hold every judged document (a run that missed relevant ones). The "
                     "recall base and the ideal ranking are built from it. Default: counted from the labels."),
    "ties": ('{"stable", "pessimistic", "optimistic"}, default "stable"',
             '"stable" keeps tied documents in input order (as LETOR\'s evaluation tools); "pessimistic" puts the '
             'lower grades of a tie first, "optimistic" the higher grades.'),
    "empty_value": ("float, default 0.0",
                    "The value of a query whose measure is undefined because its normaliser is 0 (no relevant "
                    "document). Measures without a normaliser (P@k, RBP, ERR, eRRBP) are always defined."),
    "reduction": ('{"mean", "sum", "none"}, default "mean"', '"mean" or "sum" over the queries, or "none": one value per query.'),
}
RETURNS = ("float, numpy.ndarray or torch.Tensor",
           'The mean or the sum over the queries, or one value per query (``reduction="none"``, a scalar for a '
           "1-D input), in the scores' array type.")


def cutoff_entry(function: Callable[..., Any]) -> tuple[str, str]:
    """The ``k`` entry of a metric's docstring: optional, or a plain ``int`` for a measure defined at a cutoff
    only (P@k), whose ``k`` has no default."""
    k = inspect.signature(function).parameters.get("k")
    required = k is not None and k.default is inspect.Parameter.empty
    return ("int", CUTOFF[1]) if required else CUTOFF


def document_metric(function: Callable[..., Any], own: dict[str, tuple[str, str]]) -> None:
    """Give a metric's docstring its Parameters and Returns (unless it has them); ``own`` maps a keyword
    of the function to (type, description)."""
    with_parameters(function, {"k": cutoff_entry(function), **own}, shared=SHARED, first=ARRAYS, returns=RETURNS)
