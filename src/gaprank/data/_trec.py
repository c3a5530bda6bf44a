"""TREC qrels and run files.

* qrels: ``<qid> <iteration> <docid> <grade>`` per line. Negative grades (e.g. TREC Web's -2 for spam)
  count as 0, as trec_eval treats them as non-relevant. A repeated (qid, docid), or a grade above
  ``MAX_GRADE`` (30), is an error.
* run: ``<qid> Q0 <docid> <rank> <score> <tag>`` per line. The rank column is ignored: documents are
  ranked by score (higher first). Fields after the tag are ignored, as trec_eval ignores them (its own
  test file ``results.trunc`` has such lines). A repeated (qid, docid) or a non-finite score is an error.
"""

from __future__ import annotations

import re
from pathlib import Path

from .._inputs import MAX_GRADE
from ._letor import LetorFormatError, _open_text, finite_score

_GRADE = re.compile(r"-?[0-9]+")


def read_qrels(path: str | Path) -> dict[str, dict[str, int]]:
    """``{qid: {docid: grade}}`` from a TREC qrels file.

    Parameters
    ----------
    path : str or Path
        The qrels file (``.gz`` too).

    Returns
    -------
    dict of str to dict of str to int
        ``{qid: {docid: grade}}``.
    """
    path = Path(path)
    qrels: dict[str, dict[str, int]] = {}
    for lineno, line in enumerate(_open_text(path), 1):
        tokens = line.split()
        if not tokens:
            continue
        if len(tokens) != 4:
            raise LetorFormatError(f"{path}, line {lineno}: a qrels line has 4 fields (qid iter docid grade); got {len(tokens)}")
        qid, _, docid, grade = tokens
        if not (grade.isascii() and grade.isdigit()) and not _GRADE.fullmatch(grade):  # str methods first: fast
            raise LetorFormatError(f"{path}, line {lineno}: grade {grade!r} is not an integer")
        value = int(grade)
        if value > MAX_GRADE:
            raise LetorFormatError(f"{path}, line {lineno}: grade {grade} is above {MAX_GRADE}, the largest grade "
                                   "gaprank supports (every measure keeps one table column per grade)")
        judged = qrels.setdefault(qid, {})
        if docid in judged:
            raise LetorFormatError(f"{path}, line {lineno}: document {docid} judged twice for query {qid}")
        judged[docid] = max(value, 0)
    if not qrels:
        raise LetorFormatError(f"{path}: no qrels lines")
    return qrels


def read_run(path: str | Path) -> dict[str, dict[str, float]]:
    """``{qid: {docid: score}}`` from a TREC run file.

    Parameters
    ----------
    path : str or Path
        The run file (``.gz`` too); its rank column is ignored, its tag too, and any field after the tag.

    Returns
    -------
    dict of str to dict of str to float
        ``{qid: {docid: score}}``, documents in file order.
    """
    path = Path(path)
    run: dict[str, dict[str, float]] = {}
    for lineno, line in enumerate(_open_text(path), 1):
        tokens = line.split()
        if not tokens:
            continue
        if len(tokens) < 6:
            raise LetorFormatError(f"{path}, line {lineno}: a run line has 6 fields (qid Q0 docid rank score tag); "
                                   f"got {len(tokens)}")
        qid, _, docid, _, score = tokens[:5]  # trec_eval reads no further than the tag
        value = finite_score(score, path, lineno)
        if value is None:
            raise LetorFormatError(f"{path}, line {lineno}: score {score!r} is not a number")
        ranked = run.setdefault(qid, {})
        if docid in ranked:
            raise LetorFormatError(f"{path}, line {lineno}: document {docid} appears twice for query {qid}")
        ranked[docid] = value
    if not run:
        raise LetorFormatError(f"{path}: no run lines")
    return run
