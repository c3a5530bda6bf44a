"""trec_eval's measure names in TREC-mode evaluation (:func:`~gaprank.metrics.evaluate_trec`, ``gaprank eval
-m``): each is an alias of the gaprank measure string that computes the same number under TREC conventions.

trec_eval users type ``-m ndcg_cut.10``, ``-m P.10`` or read ``P_10`` off its output; both spellings (a dot or
an underscore before the cutoff) are accepted. Every alias is checked against trec_eval (pytrec_eval) on
trec_eval's own test files in ``tests/test_cli_trec_eval_names.py``. An unknown name gets a "did you mean" hint;
a trec_eval measure gaprank has no equal of is refused by name.
"""

from __future__ import annotations

import difflib
import re

from .._inputs import GaprankInputError
from ._names import Measure, parse_measure
from ._registry import MEASURE_NAME, find_measure, measures

# trec_eval's name -> (the gaprank measure string computing the same number, whether trec_eval's name takes a
# cutoff). trec_eval's relevance level 1 is gaprank's default rel=1; its ndcg takes the grade as gain and
# discounts by log2(r+1); P@k divides by k however few documents were retrieved (gaprank's default too);
# map_cut divides by every relevant document, retrieved or not (gaprank's AP@k, trec_eval's rule)
TREC_EVAL_ALIASES: dict[str, tuple[str, bool]] = {
    "map": ("AP", False),
    "map_cut": ("AP@{k}", True),
    "P": ("P@{k}", True),
    "ndcg": ("nDCG(gain=linear,discount=log2p1)", False),
    "ndcg_cut": ("nDCG(gain=linear,discount=log2p1)@{k}", True),
    "recip_rank": ("RR", False),
    "Rprec": ("Rprec", False),
    "recall": ("R@{k}", True),
    "success": ("Success@{k}", True),
}

# trec_eval's other measures (trec_eval 10's m_*.c): named in a refusal rather than answered with "unknown"
TREC_EVAL_ONLY = (
    "11pt_avg", "G", "P_avgjg", "Rndcg", "Rprec_mult", "Rprec_mult_avgjg", "binG", "bpref", "gm_bpref", "gm_map",
    "ideal_dcg", "infAP", "iprec_at_recall", "map_avgjg", "ndcg_p", "ndcg_rel", "num_nonrel_judged_ret", "num_q",
    "num_rel", "num_rel_ret", "num_ret", "prefs_avgjg", "prefs_avgjg_Rnonrel", "prefs_avgjg_Rnonrel_ret",
    "prefs_avgjg_imp", "prefs_avgjg_ret", "prefs_num_prefs_ful", "prefs_num_prefs_ful_ret", "prefs_num_prefs_poss",
    "prefs_pair", "prefs_pair_imp", "prefs_pair_ret", "prefs_simp", "prefs_simp_imp", "prefs_simp_ret", "rbp_resid",
    "relative_P", "relstring", "runid", "set_F", "set_P", "set_map", "set_recall", "set_relative_P", "unj", "utility",
    "yaap",
)

_ALIAS = {name.lower(): name for name in TREC_EVAL_ALIASES}
_ONLY = {name.lower(): name for name in TREC_EVAL_ONLY}
# trec_eval's measure syntax: NAME, NAME.params (command line) or NAME_k (its output)
_TREC_EVAL_NAME = re.compile(r"^\s*([A-Za-z][A-Za-z0-9_]*?)(?:[._]([0-9][0-9,.]*))?\s*$")
_BASE = re.compile(r"^\s*(" + MEASURE_NAME.pattern + ")")  # the name a measure string starts with


def trec_eval_alias(name: str) -> str | None:
    """The gaprank measure string a trec_eval measure name stands for (None when ``name`` is not one).

    Parameters
    ----------
    name : str
        ``map``, ``map_cut.10``, ``P.10``, ``P_10``, ``ndcg``, ``ndcg_cut.10``, ``ndcg_cut_10``,
        ``recip_rank``, ``Rprec``, ``recall.100``, ``success.5``, spelt as trec_eval spells them (its names are
        case-sensitive): ``nDCG`` and ``MAP`` are gaprank's measure strings, ``ndcg`` and ``map`` trec_eval's.

    Returns
    -------
    str or None
        E.g. ``"nDCG(gain=linear,discount=log2p1)@10"`` for ``ndcg_cut.10``.

    Raises
    ------
    GaprankInputError
        A trec_eval name with a list of cutoffs (``P.5,10``) or without the cutoff gaprank needs
        (``ndcg_cut``), or a trec_eval measure gaprank has no equal of (``bpref``).
    """
    if not isinstance(name, str):
        return None
    stripped = name.strip()
    match = _TREC_EVAL_NAME.match(stripped)
    if not match:
        return None
    base, cutoff = match.groups()
    key = base.lower()
    if key in _ONLY and find_measure(base) is None:  # a measure registered under that name is the user's
        raise GaprankInputError(f"measure {stripped!r} is trec_eval's {_ONLY[key]}; gaprank has no equal of it. "
                                f"trec_eval names gaprank computes: {_alias_list()}")
    if base == "rbp" and cutoff is None:
        # trec_eval's spelling (its names are case-sensitive); gaprank's RBP is another measure with its name
        raise GaprankInputError("measure 'rbp': trec_eval's rbp (p = 0.9, gains from the grades) is not gaprank's "
                                "RBP (p = 0.8, documents of grade >= rel relevant); write RBP(p=0.9), equal to "
                                "trec_eval's rbp on binary qrels, or RBP for gaprank's")
    if key not in _ALIAS or (base != _ALIAS[key] and find_measure(base) is not None):
        return None  # not trec_eval's spelling of a name gaprank has: gaprank's measure string (nDCG, MAP)
    canonical = _ALIAS[key]
    target, takes_cutoff = TREC_EVAL_ALIASES[canonical]
    if cutoff is None:
        if takes_cutoff and find_measure(base) is not None:
            return None  # gaprank's own P or Success: its parser says it needs a cutoff, e.g. P@10
        if takes_cutoff:
            raise GaprankInputError(f"measure {stripped!r}: give trec_eval's {canonical} one cutoff, "
                                    f"e.g. {canonical}.10 (gaprank evaluates one cutoff per measure)")
        return target
    if not takes_cutoff:
        raise GaprankInputError(f"measure {stripped!r}: trec_eval's {canonical} takes no parameter")
    if not cutoff.isdigit():
        raise GaprankInputError(f"measure {stripped!r}: give one cutoff per measure, e.g. {canonical}.10 and "
                                f"{canonical}.20 as two measures; got {cutoff!r}")
    return target.format(k=int(cutoff))


def trec_measure(name: str | Measure) -> Measure:
    """A measure string or trec_eval name, parsed for TREC-mode evaluation.

    Parameters
    ----------
    name : str or Measure
        A gaprank measure string (:func:`~gaprank.metrics.parse_measure`) or a trec_eval name
        (:func:`trec_eval_alias`).

    Returns
    -------
    Measure
        The gaprank measure (a trec_eval name becomes the measure computing the same number).

    Raises
    ------
    GaprankInputError
        An unknown name (with the closest known names), or what :func:`~gaprank.metrics.parse_measure`
        refuses.
    """
    if isinstance(name, Measure):
        return name
    alias = trec_eval_alias(name)
    if alias is not None:
        return parse_measure(alias)
    base = _BASE.match(name)
    if base is not None and find_measure(base.group(1)) is None:
        hint = did_you_mean(base.group(1))
        raise GaprankInputError(f"unknown measure {base.group(1)!r} in {name.strip()!r}{f' ({hint})' if hint else ''}; "
                                f"known: {', '.join(_known())}; trec_eval names: {_alias_list()}")
    return parse_measure(name)


def did_you_mean(name: str, choices: list[str] | None = None) -> str:
    """``"did you mean 'nDCG'?"`` for a misspelt name (empty when nothing is close).

    Parameters
    ----------
    name : str
        What was given.
    choices : list of str, optional
        The known names (default: the measures' names and aliases and trec_eval's names).

    Returns
    -------
    str
        The hint, for a message.
    """
    known = choices if choices is not None else [*_known(), *TREC_EVAL_ALIASES]
    by_lower: dict[str, str] = {}
    for choice in known:
        by_lower.setdefault(choice.lower(), choice)
    close = difflib.get_close_matches(name.lower(), list(by_lower), n=3, cutoff=0.6)
    if not close:
        return ""
    shown = " or ".join(repr(by_lower[c]) for c in close)
    return f"did you mean {shown}?"


def _known() -> list[str]:
    return [n for info in measures() for n in (info.name, *info.aliases)]


def _alias_list() -> str:
    return ", ".join(f"{name}.k" if takes_cutoff else name for name, (_, takes_cutoff) in TREC_EVAL_ALIASES.items())
