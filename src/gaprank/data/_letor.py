"""Reading LETOR / SVMlight ranking files.

Line format: ``<label> qid:<q> <fid>:<value> ... [# docid = <id> ...]``. Files of plain numbers are read
whole-array (NumPy, in blocks); anything else by a strict line-by-line reader whose errors name file and line
(label, qid, feature ids and count, contiguous queries), which also keeps the ``#docid`` comments and applies a
policy for LETOR's literal ``NULL`` values.
"""

from __future__ import annotations

import gzip
import io
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
import torch

from .._grouped import GroupedLists
from .._inputs import MAX_GRADE, GaprankInputError
from .._padding import pad_by_group

NULL_POLICIES = ("min", "zero", "nan", "error")
_DOCID = re.compile(r"docid\s*=\s*(\S+)")
# ASCII only: Python's int() and float() would also take "1_000" and other scripts' digits.
_NUMBER = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_NON_FINITE = re.compile(r"[+-]?(?:nan|inf|infinity)", re.IGNORECASE)
_FEATURE = re.compile(r"([0-9]+):(\S+)")
_LABEL = re.compile(r"[0-9]+")


class LetorFormatError(GaprankInputError):
    """A malformed ranking file; the message names the file and the line."""


@dataclass
class PaddedBatch:
    """The PyTorch view of a split: ``features [B, N, F]``, ``labels [B, N]``, boolean ``mask [B, N]``."""

    features: torch.Tensor
    labels: torch.Tensor
    mask: torch.Tensor
    qids: list[str]


@dataclass
class RankingSplit:
    """Rows of one split, grouped by query (each query's rows contiguous, in file order)."""

    features: np.ndarray  # [rows, F] float64
    labels: np.ndarray  # [rows] int64
    qids: np.ndarray  # [rows] str
    docids: np.ndarray  # [rows] str ("" when the file has no docid comment)
    comments: list[str] = field(default_factory=list)  # [rows] text after '#'
    source: str = ""

    def __post_init__(self) -> None:
        change = np.flatnonzero(self.qids[1:] != self.qids[:-1]) + 1
        starts = np.concatenate([[0], change]).astype(np.int64) if len(self.qids) else np.zeros(0, np.int64)
        self._starts = starts
        self._sizes = np.diff(np.concatenate([starts, [len(self.qids)]])).astype(np.int64)

    @property
    def num_queries(self) -> int:
        return int(self._sizes.size)

    @property
    def num_features(self) -> int:
        return int(self.features.shape[1])

    @property
    def query_ids(self) -> list[str]:
        """Query ids in file order."""
        return [str(q) for q in self.qids[self._starts]]

    @cached_property
    def grouped(self) -> GroupedLists:
        """The split's queries as grouped lists: length buckets for evaluation
        (:attr:`GroupedLists.buckets`), length-sorted batches of a fixed number of queries for training
        (:meth:`GroupedLists.batches`), each padded to its longest query (:meth:`GroupedLists.padded`)."""
        return GroupedLists(self._sizes)

    @property
    def group_sizes(self) -> np.ndarray:
        """Documents per query, in file order (LightGBM's ``group``)."""
        return self._sizes.copy()

    @property
    def query_index(self) -> np.ndarray:
        """Each row's query as an integer: its position in file order (``0, 0, 0, 1, 1, ...``), int64 ``[rows]``.

        Non-decreasing, as XGBoost's ``qid`` and :func:`gaprank.dask.partition_by_query` want; the query ids
        themselves (``qids``, ``query_ids``) are text, which neither takes.
        """
        return np.repeat(np.arange(self.num_queries, dtype=np.int64), self._sizes)

    def to_flat(self, *, qid: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The split as flat arrays for gradient boosting.

        Parameters
        ----------
        qid : bool, default False
            False: the third array is the group sizes ``[queries]`` (LightGBM's ``group``); True: one integer
            query id per row, ``[rows]`` (:attr:`query_index`: XGBoost's ``qid``).

        Returns
        -------
        tuple of numpy.ndarray
            Features ``[rows, F]``, labels ``[rows]`` and the group sizes or the per-row query ids.

        Examples
        --------
        >>> import numpy as np
        >>> from gaprank.data import load_fold
        >>> test = load_fold("OHSUMED", 1).test
        >>> X, y, qid = test.to_flat(qid=True)
        >>> X.shape, qid[:3], qid.dtype
        ((3383, 45), array([0, 0, 0]), dtype('int64'))
        >>> bool((np.bincount(qid) == test.group_sizes).all())
        True
        """
        if not isinstance(qid, (bool, np.bool_)):
            raise GaprankInputError(f"qid must be True or False; got {qid!r}")
        return self.features, self.labels, self.query_index if qid else self.group_sizes

    def to_padded(self, *, dtype: torch.dtype = torch.float32, device: str | torch.device | None = None) -> PaddedBatch:
        """Padded tensors ``[queries, max_docs, ...]`` with a boolean mask (True = a real document)."""
        feats, mask = pad_by_group(self.features, self._sizes)
        labels, _ = pad_by_group(self.labels, self._sizes)
        return PaddedBatch(
            torch.as_tensor(feats, dtype=dtype, device=device),
            torch.as_tensor(labels, dtype=torch.int64, device=device),
            torch.as_tensor(mask, device=device),
            self.query_ids,
        )

    @classmethod
    def concatenate(cls, splits: Sequence[RankingSplit]) -> RankingSplit:
        """Rows of several splits, one after the other (the splits must not share a query id)."""
        seen: set[str] = set()
        for split in splits:
            shared = seen.intersection(split.query_ids)
            if shared:
                raise GaprankInputError(f"query {sorted(shared)[0]} appears in more than one split ({split.source})")
            seen.update(split.query_ids)
        widths = {s.num_features for s in splits}
        if len(widths) > 1:
            raise GaprankInputError(f"splits have different feature counts {sorted(widths)}")
        return cls(
            np.concatenate([s.features for s in splits]),
            np.concatenate([s.labels for s in splits]),
            np.concatenate([s.qids for s in splits]),
            np.concatenate([s.docids for s in splits]),
            [c for s in splits for c in s.comments],
            " + ".join(s.source for s in splits),
        )


def finite_score(token: str, path: Path | str, lineno: int) -> float | None:
    """``token`` as a finite number in ASCII decimals, or None when it is no number at all (``1_000``,
    other scripts' digits); ``nan``, ``inf`` and a value that overflows are an error naming the file and
    line (the message is only built then: readers call this for every line)."""
    try:  # float() first, the common case, fast; what it takes beyond ASCII decimals is checked below
        value = float(token)
    except ValueError:
        value = math.nan
    if math.isfinite(value) and token.isascii() and "_" not in token:
        return value
    if _NUMBER.fullmatch(token):
        value = float(token)
        if math.isfinite(value):
            return value
    elif not _NON_FINITE.fullmatch(token):
        return None
    raise LetorFormatError(f"{path}, line {lineno}: score {token} is not finite")


def _open_text(path: Path) -> list[str]:
    try:
        raw = gzip.open(path, "rb").read() if path.suffix == ".gz" else path.read_bytes()
    except FileNotFoundError:
        raise LetorFormatError(f"{path}: no such file") from None
    except (OSError, EOFError) as exc:
        raise LetorFormatError(f"{path}: cannot be read ({exc})") from exc
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise LetorFormatError(f"{path}: not a UTF-8 text file ({exc})") from exc
    text = text.removeprefix("\ufeff")  # a byte-order mark some editors write: not part of the first label
    # Lines end at "\n" alone (as editors and wc count them): str.splitlines would also break at form
    # feeds, U+2028 and other separators inside a line and shift every later line number. A file with
    # carriage returns and no line feed at all ends its lines with "\r" (classic Mac OS).
    if "\n" not in text and "\r" in text:
        return text.split("\r")
    lines = text.split("\n")
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def _fill_null(features: np.ndarray, sizes: np.ndarray, policy: str) -> np.ndarray:
    missing = np.isnan(features)
    if policy == "nan" or not missing.any():
        return features
    if policy == "zero":
        return np.where(missing, 0.0, features)
    # "min": the smaller of 0 and the query's smallest observed value of that feature.
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    with np.errstate(invalid="ignore"):
        observed = np.where(missing, np.inf, features)
        query_min = np.minimum.reduceat(observed, starts, axis=0)  # [queries, F]
    fill = np.minimum(np.where(np.isinf(query_min), 0.0, query_min), 0.0)
    return np.where(missing, np.repeat(fill, sizes, axis=0), features)


# Bytes a plain numeric ranking file is made of ("qid" aside): anything else (comments, NULL, nan, inf,
# "1_000", which Python's float() would take, other scripts' digits) sends a file to the line-by-line reader.
_PLAIN_BYTES = np.zeros(256, dtype=bool)
_PLAIN_BYTES[np.frombuffer(b"0123456789.+-eE: \t\r\nqid", dtype=np.uint8)] = True
# A line that does not start "<digits> qid:<id> " with a canonical integer id (digits only, no sign, no
# leading zero: the number and the text name the same query), or a blank line before the end: the strict
# reader words the error or keeps the id's text ("1.5", "1.0" and "1e1" are queries of their own).
_IRREGULAR_LINE = re.compile(rb"(?m)^(?![0-9]+[ \t]+qid:(?:0|[1-9][0-9]*)[ \t])")
BLOCK_BYTES = 64 << 20


def _blocks(path: Path):
    """The file's bytes in blocks of about BLOCK_BYTES that end at a line end (the last block: at the
    end of the file)."""
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as fh:
        rest = b""
        while True:
            block = fh.read(BLOCK_BYTES)
            if not block:
                if rest:
                    yield rest
                return
            block = rest + block
            cut = block.rfind(b"\n") + 1
            if cut == 0:
                rest = block
                continue
            rest = block[cut:]
            yield block[:cut]


def _line_count(block: bytes) -> int:
    """Lines in a block of :func:`_blocks` (the last block of a file may lack its final line end)."""
    return block.count(b"\n") + (not block.endswith(b"\n"))


def _parse_block(block: bytes, width: int | None, dtype: np.dtype, sparse: bool
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """(features, labels, query ids) of a block of plain lines, or None when a line breaks a rule.
    Dense rows go through NumPy's text reader as ``label qid id value id value ...`` columns (every row
    must then carry the ids 1..F in order); sparse rows through :func:`_parse_sparse_block`."""
    lines = _line_count(block)
    if sparse:
        return _parse_sparse_block(block, lines, width, dtype)
    columns = block.replace(b":", b" ")
    count = len(columns.split(b"\n", 1)[0].split())  # columns of the first line
    if count < 5 or count % 2 == 0 or (width is not None and count != 3 + 2 * width):
        return None
    try:
        table = np.loadtxt(io.BytesIO(columns), dtype=np.float64, usecols=[0, *range(2, count)], comments=None,
                           ndmin=2)
    except ValueError:
        return None  # a row with another number of features, or a token that is no number
    if table.shape[0] != lines or not np.array_equal(table[:, 2::2], np.broadcast_to(
            np.arange(1, (count - 1) // 2), (lines, (count - 3) // 2))):
        return None
    return table[:, 3::2].astype(dtype), table[:, 0], table[:, 1]


# A plain sparse line: label, qid, then <id>:<value> tokens (digits only in ids; a value NumPy then parses or refuses).
_SPARSE_LINE = re.compile(rb"(?m)^[0-9]+[ \t]+qid:[0-9]+(?:[ \t]+[0-9]+:[-+0-9.eE]+)*[ \t]*\r?$")


def _parse_sparse_block(block: bytes, lines: int, width: int | None, dtype: np.dtype
                        ) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """(features, labels, query ids) of a block of plain sparse lines (``label qid:q id:value ...``, ids
    increasing), whole-array: every token's line is found from the line ends; None when a line breaks a rule
    (the strict reader then words it)."""
    if len(_SPARSE_LINE.findall(block)) != lines:
        return None  # a token that is not <id>:<value> (two colons, none, a signed or decimal id, ...)
    data = np.frombuffer(block, dtype=np.uint8)
    space = (data == ord(" ")) | (data == ord("\t")) | (data == ord("\r")) | (data == ord("\n"))
    starts = np.flatnonzero(~space & np.concatenate([[True], space[:-1]]))  # each token's first byte
    line_ends = np.flatnonzero(data == ord("\n"))
    token_line = np.searchsorted(line_ends, starts)  # the line of each token
    tokens = block.replace(b"qid:", b"").replace(b":", b" ").split()  # label, query, then id, value, ...
    # "qid:" and each "id:value" are single whitespace-free tokens, so the split keeps their order
    per_line = np.bincount(token_line, minlength=lines)
    if per_line.size != lines or (per_line < 2).any():
        return None  # a blank line inside the block, or a line without label and query
    counts = per_line + (per_line - 2)  # each id:value token became two
    if len(tokens) != int(counts.sum()) or ((counts - 2) % 2).any():
        return None
    first = np.concatenate([[0], np.cumsum(counts)[:-1]])
    try:
        numbers = np.array(tokens).astype(np.float64)
    except ValueError:
        return None  # a token that is no number
    position = np.arange(numbers.size) - np.repeat(first, counts)
    row = np.repeat(np.arange(lines), counts)
    pairs = position >= 2
    ids, values = numbers[pairs][0::2], numbers[pairs][1::2]
    id_rows = row[pairs][0::2]
    if ((ids < 1) | (ids != np.floor(ids))).any():
        return None
    if ids.size > 1 and ((np.diff(ids) <= 0) & (id_rows[1:] == id_rows[:-1])).any():
        return None  # ids not increasing within a line
    columns = int(ids.max()) if ids.size else 0
    if width is not None:
        if columns > width:
            return None
        columns = width
    features = np.zeros((lines, columns), dtype=np.float64)
    features[id_rows, ids.astype(np.int64) - 1] = values
    return features.astype(dtype, copy=False), numbers[first], numbers[first + 1]


def _read_plain(path: Path, num_features: int | None, max_label: int | None, dtype: np.dtype,
                sparse: bool) -> RankingSplit | None:
    """The whole-array reader of :func:`read_letor` for files of plain numbers; None when the file has
    anything the line-by-line reader must see (it then reads the file and words any error)."""
    rows = 0
    for block in _blocks(path):
        rows += _line_count(block)
        if not _PLAIN_BYTES[np.frombuffer(block, dtype=np.uint8)].all() or _IRREGULAR_LINE.search(block.rstrip(b"\n")):
            return None
    if rows == 0:
        return None
    width = num_features
    top = MAX_GRADE if max_label is None else min(MAX_GRADE, max_label)
    features: np.ndarray | None = None
    labels = np.empty(rows, dtype=np.int64)
    qids = np.empty(rows, dtype=np.int64)
    filled = 0
    for block in _blocks(path):
        parsed = _parse_block(block, width, dtype, sparse)
        if parsed is None:
            return None
        values, grades, queries = parsed
        count = values.shape[0]
        if filled + count > rows or (width is not None and values.shape[1] != width) or grades.max() > top:
            return None
        width = values.shape[1]
        if features is None:
            features = np.empty((rows, width), dtype=dtype)
        features[filled:filled + count] = values
        labels[filled:filled + count] = grades
        if np.abs(queries).max() >= 2**53:
            return None  # beyond exact float64 integers
        qids[filled:filled + count] = queries
        filled += count
    if features is None or filled != rows or not np.isfinite(features).all():
        return None
    runs = 1 + int(np.count_nonzero(qids[1:] != qids[:-1]))
    unique, inverse = np.unique(qids, return_inverse=True)
    if runs != unique.size:
        return None  # a query's rows are not contiguous
    return RankingSplit(features, labels, unique.astype(str)[inverse], np.full(rows, "", dtype="<U1"), [""] * rows,
                        str(path))


def feature_dtype(dtype: Any) -> np.dtype:
    """``dtype`` as the NumPy dtype of a split's features: float32 or float64, else a one-line error."""
    try:
        checked = np.dtype(dtype)
    except TypeError:
        raise GaprankInputError(f"dtype must be float32 or float64; got {dtype!r}") from None
    if checked not in (np.float32, np.float64):
        raise GaprankInputError(f"dtype must be float32 or float64; got {checked}")
    return checked


def read_letor(
    path: str | Path,
    *,
    num_features: int | None = None,
    null: str = "min",
    max_label: int | None = None,
    dtype: type | np.dtype = np.float64,
    sparse: bool = False,
) -> RankingSplit:
    """Read a LETOR / SVMlight ranking file (``.txt`` or ``.gz``, LF or CRLF).

    A file with no comments and no ``NULL`` in it (MSLR, Yahoo!, Istella) is parsed in blocks straight
    into one ``[rows, F]`` array, with every rule below checked on whole arrays; anything that does not
    pass those checks is read again line by line, which names the file and line of the problem.

    Lines starting with ``#`` (SVMlight comments) and blank lines at the end are skipped; a blank line
    between data lines is an error.

    Parameters
    ----------
    path
        The file.
    num_features
        Expected number of features (the data set's known count); feature ids must then lie in
        1..num_features. Default: the count on the first data line. Every line must carry the same
        feature ids (LETOR files are dense); only the ids used take memory, whatever their values.
    null
        Policy for LETOR's literal ``NULL`` (Feature-null variant): the value is missing, then
        ``"min"`` fills it with min(0, the query's smallest observed value of that feature) -- this
        reproduces LETOR 3.0's own Feature-min files in 1,521 of OHSUMED's 1,530 (query, feature)
        cells; ``"zero"`` fills 0; ``"nan"`` keeps NaN; ``"error"`` refuses the file.
    max_label
        The largest grade of the data set's scale (MSLR: 4); a larger label is an error. Default: any
        grade up to gaprank's largest.
    dtype
        The features' dtype: float64 (default) or float32 (half the memory; the same values a float64
        array cast to float32 holds).
    sparse
        Rows list only their non-zero features (Yahoo! LTR); an omitted feature is 0. Default: every row
        carries the same feature ids.

    Raises
    ------
    LetorFormatError
        For a bad label (not an ASCII integer, or above the largest supported grade), a missing qid,
        malformed, unordered or out-of-range feature ids, a wrong feature count, rows of one query that
        are not contiguous, a value that is not a finite ASCII number (a literal ``nan`` or ``inf``
        too); the message names file and line.

    Returns
    -------
    RankingSplit
        The file's rows grouped by query, in file order.
    """
    if null not in NULL_POLICIES:
        raise GaprankInputError(f"null must be one of {NULL_POLICIES}; got {null!r}")
    dtype = feature_dtype(dtype)
    path = Path(path)
    try:
        fast = _read_plain(path, num_features, max_label, dtype, sparse)
    except (OSError, EOFError):
        fast = None  # unreadable, or a truncated archive: the strict reader says which, naming the file
    if fast is not None:
        return fast
    return _read_line_by_line(path, num_features, null, max_label, dtype, sparse)


def _read_line_by_line(path: Path, num_features: int | None, null: str, max_label: int | None, dtype: np.dtype,
                       sparse: bool) -> RankingSplit:
    """:func:`read_letor`'s strict reader: every line checked in turn, so an error names its line."""
    lines = _open_text(path)
    labels: list[int] = []
    qids: list[str] = []
    docids: list[str] = []
    comments: list[str] = []
    columns: list[int] = []  # the features' columns (1-based), row after row
    values: list[str] = []  # their values as written (checked), row after row
    row_widths: list[int] = []
    first_line_of: dict[str, int] = {}
    expected_ids: list[int] | None = None
    previous_qid = None
    first_data_line: int | None = None
    last_content = max((i for i, line in enumerate(lines, 1) if line.strip()), default=0)
    for lineno, line in enumerate(lines, 1):
        body, _, comment = line.partition("#")
        tokens = body.split()
        where = f"{path}, line {lineno}"
        if not tokens:
            if line.strip() or lineno > last_content:  # a comment line, or blank lines at the end
                continue
            raise LetorFormatError(f"{where}: empty line")
        if not _LABEL.fullmatch(tokens[0]):
            raise LetorFormatError(f"{where}: label {tokens[0]!r} is not a non-negative integer grade")
        label = int(tokens[0])
        if label > MAX_GRADE:
            raise LetorFormatError(f"{where}: label {tokens[0]} is above {MAX_GRADE}, the largest grade gaprank "
                                   "supports (every measure keeps one table column per grade)")
        if max_label is not None and label > max_label:
            raise LetorFormatError(f"{where}: label {tokens[0]} is outside the data set's grades 0..{max_label} "
                                   "(a file of another data set?)")
        if len(tokens) < 2 or not tokens[1].startswith("qid:") or len(tokens[1]) == 4:
            raise LetorFormatError(f"{where}: missing 'qid:<id>' after the label")
        qid = tokens[1][4:]
        if qid != previous_qid:
            if qid in first_line_of:
                raise LetorFormatError(
                    f"{where}: rows of query {qid} are not contiguous (it already appeared at line {first_line_of[qid]})"
                )
            first_line_of[qid] = lineno
            previous_qid = qid
        ids: list[int] = []
        for token in tokens[2:]:
            match = _FEATURE.fullmatch(token)
            if not match:
                raise LetorFormatError(f"{where}: malformed feature {token!r} (expected <id>:<value>)")
            fid = int(match.group(1))
            if fid < 1 or (ids and fid <= ids[-1]):
                after = ids[-1] if ids else "-"
                raise LetorFormatError(f"{where}: feature ids must be >= 1 and increasing; got {fid} after {after}")
            if num_features is not None and fid > num_features:
                raise LetorFormatError(f"{where}: feature id {fid} is above num_features={num_features}")
            ids.append(fid)
            value = match.group(2)
            if value == "NULL":
                if null == "error":
                    raise LetorFormatError(f"{where}: feature {fid} is NULL (null='error')")
                value = "nan"
            elif not _NUMBER.fullmatch(value):
                kind = "not finite" if _NON_FINITE.fullmatch(value) else "not a number"
                raise LetorFormatError(f"{where}: feature value {value!r} (feature {fid}) is {kind}")
            # dense files: columns numbered by position, so a large feature id costs no memory
            columns.append(fid if sparse else len(ids))
            values.append(value)
        if not sparse:  # dense files: every row carries the first row's feature ids (sparse rows list their own)
            if expected_ids is None:
                expected_ids = ids
                if num_features is not None and len(ids) != num_features:
                    raise LetorFormatError(f"{where}: {len(ids)} features, expected {num_features}")
            elif ids != expected_ids:
                raise LetorFormatError(
                    f"{where}: {len(ids)} features (ids {ids[:1]}..{ids[-1:]}), expected the {len(expected_ids)} of "
                    f"line {first_data_line}"
                )
        if first_data_line is None:
            first_data_line = lineno
        labels.append(label)
        qids.append(qid)
        match = _DOCID.search(comment)
        docids.append(match.group(1) if match else "")
        comments.append(comment.strip())
        row_widths.append(len(ids))
    if not labels:
        raise LetorFormatError(f"{path}: no data lines")
    width = len(expected_ids) if expected_ids else 0
    if sparse:
        width = num_features if num_features is not None else max(columns, default=0)
    if width == 0:
        raise LetorFormatError(f"{path}, line {first_data_line}: no features (a line is '<label> qid:<id> "
                               "<feature>:<value> ...'); a file of labels and query ids only cannot be ranked")
    # every value matched _NUMBER (or is a NULL's "nan"): each parses, correctly rounded, to float64
    features = np.zeros((len(labels), width), dtype=np.float64)
    rows = np.repeat(np.arange(len(labels)), row_widths)
    features[rows, np.asarray(columns, dtype=np.int64) - 1] = np.asarray(values, dtype=np.float64)
    if not np.isfinite(features[~np.isnan(features)]).all():  # e.g. 1e999, which overflows on parsing
        row = int(np.flatnonzero(np.isinf(features).any(1))[0])
        raise LetorFormatError(f"{path}, data line {row + 1}: a feature value overflows to infinity")
    features = features.astype(dtype, copy=False)
    split = RankingSplit(features, np.asarray(labels, np.int64), np.asarray(qids, dtype=object).astype(str),
                         np.asarray(docids, dtype=object).astype(str), comments, str(path))
    split.features = _fill_null(features, split.group_sizes, null)
    return split


def read_scores(path: str | Path, expected_lines: int | None = None) -> np.ndarray:
    """Read a prediction file: one score per line (LETOR's format), finite numbers only.

    Parameters
    ----------
    path : str or Path
        One score per line.
    expected_lines : int, optional
        The number of lines the ranking file has; a different count is an error.

    Returns
    -------
    numpy.ndarray
        The scores, float64.
    """
    path = Path(path)
    lines = _open_text(path)
    while lines and not lines[-1].strip():
        lines.pop()
    scores = np.empty(len(lines), dtype=np.float64)
    for lineno, line in enumerate(lines, 1):
        token = line.strip().split()
        value = finite_score(token[0], path, lineno) if len(token) == 1 else None
        if value is None:
            raise LetorFormatError(f"{path}, line {lineno}: expected one number (ASCII digits), got {line!r}")
        scores[lineno - 1] = value
    if expected_lines is not None and len(scores) != expected_lines:
        raise LetorFormatError(f"{path} has {len(scores)} scores but the ranking file has {expected_lines} lines")
    return scores
