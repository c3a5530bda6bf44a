"""Evaluation of a TREC run against graded qrels, as trec_eval and ir_measures evaluate it: ``gaprank eval``'s
TREC mode, the ir_measures and PyTerrier adapters and :func:`evaluate_trec` share this one path.

Documents rank by score, ties by docid descending as strings (trec_eval's order); unjudged documents are
grade 0; negative grades are judged non-relevant (0); a query's recall base is every judged document of the
qrels, retrieved or not; queries of the run without judgments are ignored; with ``complete``, queries of the
qrels absent from the run are scored too (trec_eval ``-c``).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._grouped import GroupedLists, MeasureCall
from .._inputs import MAX_GRADE, GaprankInputError, check_choice
from .._typing import ArrayLike
from ._letor_eval import Conventions, get_conventions
from ._names import Measure
from ._trec_names import trec_measure

TREC_TIE_RULES = ("trec_eval", "stable", "pessimistic", "optimistic")
_DISCOUNT_TEXT = {"log2p1": "1/log2(r+1)", "jk": "1/max(1, log2 r)"}


@dataclass(frozen=True)
class TrecEvaluation:
    """The result of :func:`evaluate_trec`.

    Attributes
    ----------
    query_ids : list of str
        The evaluated queries, numeric ids in numeric order, then the others.
    per_query : dict of str to numpy.ndarray
        Each measure string's value per query, in ``query_ids``' order.
    settings : dict of str to dict of str to str
        For nDCG and DCG: the gain and discount used; for a trec_eval name, ``"measure"``: the gaprank
        measure string it stands for.
    """

    query_ids: list[str]
    per_query: dict[str, np.ndarray]
    settings: dict[str, dict[str, str]]

    @property
    def means(self) -> dict[str, float]:
        """Each measure's mean over the queries."""
        return {name: float(np.mean(values)) for name, values in self.per_query.items()}


def _id_text(value: Any, what: str, kind: str) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return str(int(value))
    raise GaprankInputError(f"{what}: {kind} id {value!r} is a {type(value).__name__}; ids must be strings or integers "
                            "(compared as text, as trec_eval compares them)")


def text_ids(table: Mapping[Any, Mapping[Any, Any]], what: str) -> dict[str, dict[str, Any]]:
    """Query and document ids as text, as trec_eval reads them from its files: the integer 7 (a pandas int64
    column) and the string "7" are one id. An id of another type, or two ids with one text, is refused."""
    for query, docs in table.items():
        if not isinstance(docs, Mapping):
            raise GaprankInputError(f"{what} must map each query id to {{document id: value}}; query {query!r} maps to "
                                    f"a {type(docs).__name__}")
    if all(type(q) is str and all(type(d) is str for d in docs) for q, docs in table.items()):
        return table  # type: ignore[return-value]  # already text: read as it is, never written
    texts: dict[str, dict[str, Any]] = {}
    for query, docs in table.items():
        qid = _id_text(query, what, "query")
        if qid in texts:
            raise GaprankInputError(f"{what}: query id {qid!r} appears both as a string and as an integer")
        texts[qid] = {}
        for doc, value in docs.items():
            docno = _id_text(doc, what, "document")
            if docno in texts[qid]:
                raise GaprankInputError(f"{what}: query {qid}, document id {docno!r} appears both as a string and as "
                                        "an integer")
            texts[qid][docno] = value
    return texts


def evaluate_trec(qrels: Mapping[str, Mapping[str, int]], run: Mapping[str, Mapping[str, float]],
                  measures: str | Measure | Sequence[str | Measure], *, g: ArrayLike | None = None,
                  ties: str = "trec_eval", complete: bool = False,
                  conventions: str | Conventions | None = None) -> TrecEvaluation:
    """Evaluate a run against graded qrels as trec_eval does: its tie rule, the qrels' recall base.

    Parameters
    ----------
    qrels : mapping
        ``{query id: {document id: grade}}``, integer grades (negative: judged non-relevant).
    run : mapping
        ``{query id: {document id: score}}``, finite scores.
    measures : str, Measure or sequence of them
        Measure strings (:func:`~gaprank.metrics.parse_measure`): ``"GAP"``, ``"nDCG@10"``, ``"RR"``, ...,
        each the value of its metric function (``"nDCG@10"``: gain 2^grade - 1, as :func:`gaprank.ndcg`).
        trec_eval's own names are accepted for the measures gaprank computes equally, and mean trec_eval's
        measure: ``map``, ``map_cut.k``, ``P.k``, ``ndcg``, ``ndcg_cut.k`` (gain = the grade), ``recip_rank``,
        ``Rprec``, ``recall.k``, ``success.k`` (``P_10`` as trec_eval prints it, too); the results keep the
        name as given.
    g : array_like, optional
        GAP's, xGAP's and eGAP's threshold probabilities when their strings set none (default uniform over
        the qrels' grades 1..c).
    ties : {"trec_eval", "stable", "pessimistic", "optimistic"}
        "trec_eval": tied scores ranked by document id descending, as strings; the others as the metric
        functions' ``ties``, from the run's order.
    complete : bool
        Also score the qrels' queries absent from the run (trec_eval ``-c``).
    conventions : {"trec", "letor3", "letor4"} or Conventions, optional
        Named rules for the settings a string leaves open: "trec" reads ``"nDCG@10"`` as trec_eval and
        ir_measures do (gain = the grade); default none (each string as the metric functions read it).
        :attr:`TrecEvaluation.settings` says which gain and discount each nDCG and DCG used.

    Returns
    -------
    TrecEvaluation

    Examples
    --------
    >>> from gaprank.metrics import evaluate_trec
    >>> qrels = {"1": {"a": 2, "b": 0, "c": 1}}
    >>> run = {"1": {"a": 0.2, "b": 0.9, "c": 0.5}}
    >>> evaluate_trec(qrels, run, ["RR", "GAP(g=[0.5,0.5])"]).means
    {'RR': 0.5, 'GAP(g=[0.5,0.5])': 0.5}
    >>> evaluate_trec(qrels, run, ["recip_rank", "P.2"]).means
    {'recip_rank': 0.5, 'P.2': 0.5}
    """
    check_choice(ties, "ties", TREC_TIE_RULES)
    parsed = _measures(measures, g)
    if not isinstance(qrels, Mapping) or not isinstance(run, Mapping):
        raise GaprankInputError("qrels and run must be mappings {query id: {document id: grade or score}}; got "
                                f"{type(qrels).__name__} and {type(run).__name__}")
    qrels, run = text_ids(qrels, "qrels"), text_ids(run, "run")
    qids = [q for q in run if q in qrels]
    if complete:
        qids += [q for q in qrels if q not in run]
    if not qids:
        raise GaprankInputError("no query of the run has judgments in the qrels")
    qids.sort(key=lambda q: (len(q), q) if q.isdigit() else (math.inf, q))
    flat_scores, flat_labels, flat_mask, sizes, counts = _trec_rows(qids, qrels, run, ties)
    num_grades = counts.shape[1] - 1
    _check_grade_scales(qrels, parsed, num_grades)
    settings: dict[str, dict[str, str]] = {}
    defaults: dict[str, dict[str, Any]] = {}
    named = None if conventions is None else get_conventions(conventions)
    for label, measure in parsed:
        defaults[label] = {} if named is None else {key: value for key, value in named.keywords(measure).items()
                                                    if key not in ("ties", "empty_value")}
        used = {**{param.keyword: param.default for param in measure.info.params}, **defaults[label], **measure.kwargs}
        if label != measure.name:  # a trec_eval name: say which gaprank measure computed it
            settings[label] = {"measure": measure.name}
        if "gain" in used:  # nDCG, DCG: say which gain and discount were used
            settings[label] = {**settings.get(label, {}),
                               "gain": "grade (linear)" if used["gain"] == "linear" else "2^grade - 1 (exp2)",
                               "discount": _DISCOUNT_TEXT[used["discount"]]}
    # a measure whose parameters fix a grade scale above the qrels' top grade (ERR's max_grade, GAP's g,
    # eRAP's p) counts the judged documents on that scale: the grades above the qrels' have none
    widths = {label: max(num_grades, _grade_scale(m)) + 1 for label, m in parsed}
    rule = "stable" if ties == "trec_eval" else ties
    calls = [MeasureCall(label, m, {**defaults[label], "ties": rule}, mask=flat_mask,
                         per_query={"grade_counts": np.pad(counts, ((0, 0), (0, widths[label] - counts.shape[1])))})
             for label, m in parsed]
    per_query = GroupedLists(sizes).evaluate(calls, flat_scores, flat_labels)
    return TrecEvaluation(qids, per_query, settings)


def _measures(measures: str | Measure | Sequence[str | Measure], g: ArrayLike | None) -> list[tuple[str, Measure]]:
    """Each measure, with ``g`` where it takes one and its string sets none, and the name its results are kept
    under: the string as given (a trec_eval name stays one), or the Measure's own name."""
    items = [measures] if isinstance(measures, (str, Measure)) else measures
    if not isinstance(items, Sequence) or not items:
        raise GaprankInputError(f"measures must be a measure string or a non-empty list of them; got {measures!r}")
    parsed = []
    for item in items:
        if not isinstance(item, (str, Measure)):
            raise GaprankInputError(f"measures must be measure strings such as 'GAP' or 'nDCG@10'; got {item!r}")
        measure = trec_measure(item).with_defaults(g=g)
        parsed.append((item.strip() if isinstance(item, str) else measure.name, measure))
    names = [label for label, _ in parsed]
    repeated = [name for i, name in enumerate(names) if name in names[:i]]
    if repeated:
        raise GaprankInputError(f"measures must be unique; {repeated[0]!r} is given twice")
    return parsed


def _check_grade_scales(qrels: Mapping[str, Mapping[str, int]], parsed: list[tuple[str, Measure]], top: int) -> None:
    """Refuse a measure whose parameters fix a grade scale below the qrels' top grade, naming the first
    judgment above it: every query of the qrels, evaluated or not, is on one scale (the qrels')."""
    for label, measure in parsed:
        _, scale, source = measure.settings()
        if scale is None or top <= scale:
            continue
        query, doc, grade = next((q, d, v) for q, judged in qrels.items() for d, v in judged.items() if v > scale)
        raise GaprankInputError(f"measure {label!r}: qrels query {query}, document {doc}: label {grade} is above the "
                                f"grade scale 0..{scale} set by {source}")


def _grade_scale(measure: Measure) -> int:
    """The largest grade ``measure``'s own parameters set (0 when they set none)."""
    _, scale, _ = measure.settings()
    return scale or 0


def _recall_bases(qrels: Mapping[str, Mapping[str, int]], qids: list[str]) -> np.ndarray:
    """``[queries, c+1]``: each query's judged documents per grade, c the top grade of the whole qrels; grades
    checked (integers, at most MAX_GRADE), negative ones read as 0."""
    judgments = list(qrels.values())
    if not all(isinstance(judged, Mapping) for judged in judgments):
        raise GaprankInputError("qrels must map each query id to {document id: grade}")
    sizes = np.fromiter(map(len, judgments), dtype=np.int64, count=len(judgments))
    try:
        grades = np.fromiter((v for judged in judgments for v in judged.values()), dtype=np.float64,
                             count=int(sizes.sum()))
    except (TypeError, ValueError):
        grades = np.array([v if isinstance(v, (int, float)) else np.nan for j in judgments for v in j.values()],
                          dtype=np.float64)
    bad = ~np.isfinite(grades) | (grades != np.round(grades)) | (grades > MAX_GRADE)
    if bad.any():
        first = int(np.argmax(bad))
        query = int(np.searchsorted(np.cumsum(sizes), first, side="right"))
        q = list(qrels)[query]
        doc, value = list(qrels[q].items())[first - int(sizes[:query].sum())]
        raise GaprankInputError(f"qrels: query {q}, document {doc}: grade {value!r} is not an integer <= {MAX_GRADE}")
    grades = np.maximum(grades, 0).astype(np.int64)
    num_grades = int(grades.max(initial=0))
    owner = np.repeat(np.arange(len(judgments)), sizes)
    counts = np.bincount(owner * (num_grades + 1) + grades, minlength=len(judgments) * (num_grades + 1))
    position = {q: i for i, q in enumerate(qrels)}
    return counts.reshape(len(judgments), num_grades + 1)[[position[q] for q in qids]]


def _trec_rows(qids: list[str], qrels: Mapping[str, Mapping[str, int]], run: Mapping[str, Mapping[str, float]],
               tie_rule: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The run's documents as flat rows, query after query in ``qids``' order and, within a query, in
    trec_eval's order (score descending, ties by docid descending as strings): scores (with
    ``tie_rule="trec_eval"``, minus the rank, so every tie is broken that way), grades, a mask (a query of
    the qrels absent from the run holds one masked row), documents per query and each query's judged
    documents per grade (the recall base, ``[queries, c+1]``)."""
    counts = _recall_bases(qrels, qids)
    empty = {"": 0.0}  # a query of the qrels absent from the run: one masked row
    ranked = [run.get(q) or empty for q in qids]
    if not all(isinstance(docs, Mapping) for docs in ranked):
        raise GaprankInputError("run must map each query id to {document id: score}")
    sizes = np.fromiter(map(len, ranked), dtype=np.int64, count=len(qids))
    query_of_row = np.repeat(np.arange(len(qids)), sizes)
    docids = np.array([d for docs in ranked for d in docs], dtype=str)
    try:
        scores = np.fromiter((s for docs in ranked for s in docs.values()), dtype=np.float64, count=docids.size)
    except (TypeError, ValueError):
        scores = np.array([s if isinstance(s, (int, float)) else np.nan for docs in ranked for s in docs.values()],
                          dtype=np.float64)
    if not np.isfinite(scores).all():
        row = int(np.argmax(~np.isfinite(scores)))
        q = qids[int(query_of_row[row])]
        raise GaprankInputError(f"run: query {q}, document {docids[row]}: score {run[q][docids[row]]!r} "
                                "is not a finite number")
    judgments = [qrels[q] for q in qids]
    labels = np.fromiter((max(judged.get(d, 0), 0) for judged, docs in zip(judgments, ranked, strict=True)
                          for d in docs), dtype=np.int64, count=docids.size)
    mask = np.repeat(np.array([q in run for q in qids], dtype=bool), sizes)
    # one sort for every query: ascending by (query descending, score, docid), reversed
    order = np.lexsort((docids, scores, -query_of_row))[::-1]
    scores, labels, mask = scores[order], labels[order], mask[order]
    if tie_rule == "trec_eval":
        starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
        scores = -(np.arange(scores.size) - np.repeat(starts, sizes)).astype(np.float64)
    return scores, labels, mask, sizes, counts
