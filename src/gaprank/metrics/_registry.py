"""One registry of measures: each is said once, with everything that reads it.

An entry (:class:`MeasureInfo`) holds a measure's canonical name and aliases, its exact function, its
parameters (:class:`ParamInfo`, as ir_measures names them: the name in a measure string, the function's
keyword, type, default, description), its reference, and what the library can do with it: an AP-family
kernel (``kernel``: ``(ranked, g) -> Kernel``), whether it takes GAP's user model ``g``, whether it is an
objective with swap deltas (LambdaRank, LambdaMART), a smooth SoftRank mode and an exact E[M] mode.
Measure strings (:func:`~gaprank.metrics.parse_measure`), swap deltas, the soft and exact losses, the
LightGBM objective, LETOR evaluation, training configs and the comparison all read it; nothing else
lists measures.

Adding an AP-family measure as a metric *and* an objective is one kernel and one entry::

    register(MeasureInfo("myAP", kernel_metric(my_kernel, "my_ap"), kernel=my_kernel,
                         swap_deltas=True, soft=True, exact=True, reference="..."))
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from .._inputs import GaprankInputError
from . import _functional as F
from ._docs import document_metric
from ._kernels import Kernel, ap_kernel, egap_kernel, gap_kernel, xgap_kernel
from ._ranking import RankedLists

KernelBuilder = Callable[[RankedLists, torch.Tensor], Kernel]


@dataclass(frozen=True)
class ParamInfo:
    """A parameter of a measure: ``name`` in measure strings (``nDCG(gain=linear)``), the ``keyword``
    of the measure's function, its type, its default and what it means."""

    name: str
    keyword: str
    dtype: type
    default: Any
    desc: str
    required: bool = False  # a measure string without it is refused when parsed
    example: str = ""  # a value to show in messages, e.g. "[0,0.5,1]"

    @property
    def type_text(self) -> str:
        """numpydoc's type line: ``float, default 0.8``, ``sequence of float, optional`` or, required,
        ``sequence of float``."""
        kind = "sequence of float" if self.dtype is list else self.dtype.__name__
        if self.required:
            return kind
        return f"{kind}, optional" if self.default is None else f"{kind}, default {self.default!r}"


@dataclass(frozen=True)
class MeasureInfo:
    """Everything the library knows of one measure; see the module doc."""

    name: str  # canonical spelling in measure strings and tables, e.g. "GAP"
    function: Callable[..., Any]  # the exact metric
    params: tuple[ParamInfo, ...] = ()
    aliases: tuple[str, ...] = ()
    reference: str = ""
    kernel: KernelBuilder | None = None  # AP family: (ranked lists, g) -> Kernel
    uses_g: bool = False  # takes GAP's user model g_1..g_c
    swap_deltas: bool = False  # an objective: swap deltas, LambdaRank, LambdaMART
    soft: bool = False  # SoftRank's smooth value (soft_metric mode="paper")
    exact: bool = False  # exact E[M] under the Gaussian score model (mode="exact")
    needs_cutoff: bool = False  # only defined at a cutoff (P@k)
    takes_cutoff: bool = True
    parameters: dict[str, ParamInfo] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "parameters", {p.name: p for p in self.params})
        if self.exact and self.kernel is None:
            raise GaprankInputError(f"measure {self.name}: an exact mode needs a kernel")

    @property
    def key(self) -> str:
        """The objective name of the measure: its canonical name in lower case ("gap", "ndcg")."""
        return self.name.lower()


_G = ParamInfo("g", "g", list, None, "user threshold probabilities g_1..g_c (default uniform over grades 1..c)")
_REL = ParamInfo("rel", "threshold", int, 1, "smallest grade counted as relevant")
_RELEVANCE_P = ParamInfo("p", "p", list, None, "probability of relevance of each grade 0..c", required=True,
                         example="[0,0.5,1]")
_SHORT = ParamInfo("short_list", "short_list", str, "pad", "a list shorter than k: 'pad' (missing ranks count as "
                   "non-relevant) or 'zero' (the query scores 0, as LETOR 3.0's tool)")


def _ap(ranked: RankedLists, g: torch.Tensor) -> Kernel:
    return ap_kernel(ranked, 1)


_ENTRIES = [
    MeasureInfo("AP", F.average_precision, (_REL,), aliases=("MAP",), kernel=_ap, swap_deltas=True, soft=True,
                exact=True, reference="binary average precision; Robertson, Kanoulas and Yilmaz 2010, sec. 2.1"),
    MeasureInfo("GAP", F.gap, (_G,), kernel=gap_kernel, uses_g=True, swap_deltas=True, soft=True, exact=True,
                reference="Robertson, Kanoulas and Yilmaz, SIGIR 2010, sec. 2.2; Ferrante, Ferro et al., eq. 4"),
    MeasureInfo("xGAP", F.xgap, (_G,), kernel=xgap_kernel, uses_g=True, swap_deltas=True, soft=True, exact=True,
                reference="Ferrante, Ferro et al., eq. 5"),
    MeasureInfo("eGAP", F.egap, (_G,), kernel=egap_kernel, uses_g=True, swap_deltas=True, soft=True, exact=True,
                reference="Ferrante, Ferro et al., eq. 6"),
    MeasureInfo("nDCG", F.ndcg, (
        ParamInfo("gain", "gain", str, "exp2", "'exp2' (2^l - 1) or 'linear' (the grade)"),
        ParamInfo("discount", "discount", str, "log2p1", "'log2p1' (1/log2(r+1)) or 'jk' (1/max(1, log2 r), LETOR)"),
        _SHORT), swap_deltas=True, soft=True, reference="Järvelin and Kekäläinen 2002; SoftNDCG: Taylor et al., WSDM 2008"),
    MeasureInfo("P", F.precision, (_REL, _SHORT), needs_cutoff=True, reference="precision at k"),
    MeasureInfo("RBP", F.rbp, (ParamInfo("p", "persistence", float, 0.8, "persistence"), _REL),
                reference="Moffat and Zobel 2008"),
    MeasureInfo("ERR", F.err, (ParamInfo("max_grade", "max_grade", int, None, "g_max (default: the largest label)"),),
                reference="Chapelle, Metzler, Zhang and Grinspan, CIKM 2009"),
    MeasureInfo("Q", F.q_measure, (ParamInfo("beta", "beta", float, 1.0, "Sakai's beta"),), takes_cutoff=False,
                reference="Sakai; Kishida 2005, eq. 35"),
    MeasureInfo("SR", F.sliding_ratio, reference="Sagara's modified sliding ratio; Kishida 2005, eq. 27"),
    MeasureInfo("vG", F.generalized_ap, reference="Kishida's generalized average precision; Kishida 2005, eq. 42"),
    MeasureInfo("eRAP", F.erap, (_RELEVANCE_P,),
                reference="Ferrante, Ferro, Pontarollo, eq. 2"),
    MeasureInfo("eRRBP", F.errbp, (_RELEVANCE_P,
                                   ParamInfo("q", "persistence", float, 0.8, "persistence")),
                reference="Ferrante, Ferro, Pontarollo, eq. 1"),
]

_REGISTRY: dict[str, MeasureInfo] = {}
_LOOKUP: dict[str, MeasureInfo] = {}


def register(info: MeasureInfo) -> MeasureInfo:
    """Add a measure; its name and aliases (case-insensitive) must be new.

    Parameters
    ----------
    info : MeasureInfo
        The measure's entry.

    Returns
    -------
    MeasureInfo
        ``info``.
    """
    names = [info.name, *info.aliases]
    taken = [n for n in names if n.lower() in _LOOKUP]
    if taken:
        raise GaprankInputError(f"measure name {taken[0]!r} is already registered")
    _REGISTRY[info.name] = info
    for n in names:
        _LOOKUP[n.lower()] = info
    return info


def unregister(name: str) -> None:
    """Remove a measure added with :func:`register`.

    Parameters
    ----------
    name : str
        Its canonical name.
    """
    info = _REGISTRY.pop(name)
    for n in [info.name, *info.aliases]:
        _LOOKUP.pop(n.lower(), None)


for _entry in _ENTRIES:
    register(_entry)
    document_metric(_entry.function, {p.keyword: (p.type_text, p.desc) for p in _entry.params})


def measures() -> list[MeasureInfo]:
    """Every registered measure.

    Returns
    -------
    list of MeasureInfo
        In registration order.
    """
    return list(_REGISTRY.values())


def user_model_measures() -> list[MeasureInfo]:
    """The measures that take GAP's user model ``g`` (GAP, xGAP, eGAP), in registration order.

    Returns
    -------
    list of MeasureInfo
    """
    return [info for info in _REGISTRY.values() if info.uses_g]


def g_not_taken(metric: str) -> GaprankInputError:
    """The error for a ``g`` given with a measure that takes none.

    Parameters
    ----------
    metric : str
        The measure that was given a ``g``.

    Returns
    -------
    GaprankInputError
        To raise; its message lists the measures that do take ``g``.
    """
    names = ", ".join(info.key for info in user_model_measures())
    return GaprankInputError(f"g applies to {names}, not {metric!r}")


def known_names() -> str:
    """The registered names (with aliases), for messages."""
    return ", ".join(n for info in _REGISTRY.values() for n in (info.name, *info.aliases))


def find_measure(name: str) -> MeasureInfo | None:
    """The entry of a measure by name.

    Parameters
    ----------
    name : str
        A canonical name or an alias, in any case.

    Returns
    -------
    MeasureInfo or None
        None when no measure has that name.
    """
    return _LOOKUP.get(name.lower())


def objective_names(*, mode: str = "swap_deltas") -> tuple[str, ...]:
    """The objective names of the measures that can serve as objectives of one kind.

    Parameters
    ----------
    mode : {"swap_deltas", "soft", "exact"}
        LambdaRank / LambdaMART (swap deltas), SoftRank's smooth value, or the exact expectation.

    Returns
    -------
    tuple of str
        Lower-case canonical names, in registration order.
    """
    return tuple(info.key for info in _REGISTRY.values() if getattr(info, mode))


def objective_info(metric: str, *, mode: str = "swap_deltas") -> MeasureInfo:
    """The entry of an objective, checked.

    Parameters
    ----------
    metric : str
        An objective name (a lower-case canonical name, e.g. "gap").
    mode : {"swap_deltas", "soft", "exact"}
        The kind of objective it must serve as.

    Returns
    -------
    MeasureInfo

    Raises
    ------
    GaprankInputError
        When no measure of that name has ``mode``; the message lists those that do.
    """
    info = find_measure(metric) if isinstance(metric, str) else None
    if info is None or metric != info.key or not getattr(info, mode):
        names = objective_names(mode=mode)
        raise GaprankInputError(f"metric must be one of {', '.join(map(repr, names))}; got {metric!r}")
    return info
