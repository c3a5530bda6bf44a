"""Results on disk: written whole or not at all, and never as non-standard JSON.

A file is written to a temporary name in its own folder, flushed to the disk, then renamed over the
target (``os.replace`` is atomic on POSIX and Windows): a run killed mid-write leaves the old file or
none, never half of one. JSON refuses NaN and infinity (Python would write the non-standard ``NaN``).
"""

from __future__ import annotations

import json
import math
import os
import secrets
from pathlib import Path
from typing import Any

from .._inputs import GaprankInputError


def write_atomic(path: str | Path, text: str) -> Path:
    """Write ``text`` (UTF-8) to ``path`` atomically, creating missing parent folders.

    Parameters
    ----------
    path : str or Path
        The target file.
    text : str
        Its content.

    Returns
    -------
    Path
        ``path``.

    Raises
    ------
    GaprankInputError
        When ``path`` is a directory, or cannot be written (permissions, a full device, a parent that is
        a file); one line naming the path and the reason.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from gaprank.data import write_atomic
    >>> target = pathlib.Path(tempfile.mkdtemp()) / "scores.txt"
    >>> write_atomic(target, "0.5\\n").read_text()
    '0.5\\n'
    """
    path = Path(path)
    if path.is_dir():
        raise GaprankInputError(f"{path} is a directory; give a file name")
    temporary = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        name = str(path.parent / f".{path.name}.{secrets.token_hex(8)}.tmp")
        # created like any file (0666 less the umask; mkstemp would make it 0600), and never one that exists
        handle = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        temporary = name  # ours to remove from here on
        with os.fdopen(handle, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(temporary, path)
    except OSError as exc:
        if temporary is not None and os.path.exists(temporary):
            os.unlink(temporary)
        blocking = next((p for p in path.parents if p.exists()), None)
        if blocking is not None and not blocking.is_dir():  # mkdir says "File exists" of a file on the way
            raise GaprankInputError(f"cannot write {path}: {blocking} is not a directory") from None
        raise GaprankInputError(f"cannot write {path}: {exc.strerror or exc}") from None
    return path


def _first_non_finite(value: Any, where: str = "") -> str | None:
    if isinstance(value, float) and not math.isfinite(value):
        return where or "the value"
    if isinstance(value, dict):
        for key, item in value.items():
            found = _first_non_finite(item, f"{where}.{key}" if where else str(key))
            if found:
                return found
    if isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            found = _first_non_finite(item, f"{where}[{index}]")
            if found:
                return found
    return None


def to_json(value: Any, *, indent: int | None = 1) -> str:
    """Standard JSON text of ``value``; a NaN or infinite number is an error naming where it sits.

    Parameters
    ----------
    value
        Plain data (dicts, lists, numbers, strings).
    indent : int, optional
        As in :func:`json.dumps`.

    Returns
    -------
    str
        The JSON text.
    """
    try:
        return json.dumps(value, indent=indent, allow_nan=False)
    except ValueError:
        where = _first_non_finite(value)
        raise GaprankInputError(f"refusing to write a non-finite number (at {where}) as JSON") from None


def write_json_atomic(path: str | Path, value: Any, *, indent: int | None = 1) -> Path:
    """:func:`write_atomic` of standard JSON (no ``NaN`` / ``Infinity``).

    Parameters
    ----------
    path : str or Path
        The target file.
    value
        Plain data, written as standard JSON.
    indent : int, optional
        As in :func:`json.dumps`.

    Returns
    -------
    Path
        ``path``.
    """
    return write_atomic(path, to_json(value, indent=indent))
