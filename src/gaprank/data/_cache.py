"""A parsed LETOR file kept in binary form, so the second load of a large file skips the text parse.

The cache directory is ``GAPRANK_CACHE``, else ``gaprank`` under the user's cache directory
(``XDG_CACHE_HOME`` or ``~/.cache``); ``GAPRANK_CACHE=off`` reads every file as text. An entry is keyed by
the source file's resolved path, size, modification time, inode number and change time (which no copying
tool can set back: ``cp -p``, ``tar x`` and ``rsync -t`` restore the modification time of a replaced file, not this)
and the SHA-256 of its first MiB, by the parse options and by gaprank's version; it holds exactly the
arrays the parser returned (same dtypes). An entry whose key does not match, or that cannot be read
whole, is rebuilt, never trusted. A cache that cannot be written (a full disk, no permission) is a
warning: the parsed data is returned and no temporary file is left behind.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import warnings
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from ._letor import RankingSplit

HEAD_BYTES = 1 << 20


def cache_dir() -> Path | None:
    """The cache directory, or None when caching is off (``GAPRANK_CACHE=off``)."""
    setting = os.environ.get("GAPRANK_CACHE", "").strip()
    if setting.lower() in ("off", "0", "false", "no"):
        return None
    if setting:
        return Path(setting).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "gaprank"


def _key(path: Path, options: dict[str, Any]) -> dict[str, Any]:
    from .. import __version__

    stat = path.stat()
    with path.open("rb") as fh:
        head = hashlib.sha256(fh.read(HEAD_BYTES)).hexdigest()
    return {"source": str(path.resolve()), "bytes": stat.st_size, "mtime_ns": stat.st_mtime_ns,
            "ctime_ns": stat.st_ctime_ns, "inode": stat.st_ino, "head_sha256": head, "options": options,
            "gaprank": __version__}


def _load(entry: Path, key: dict[str, Any], source: str) -> RankingSplit | None:
    try:
        with np.load(entry, allow_pickle=False) as data:
            if json.loads(str(data["key"])) != key:
                return None
            split = RankingSplit(data["features"], data["labels"], data["qids"], data["docids"],
                                 comments=data["comments"].tolist(), source=source)
    except (OSError, ValueError, KeyError, zipfile.BadZipFile, json.JSONDecodeError, EOFError):
        return None  # missing, truncated or corrupt: parse again
    if not (len(split.labels) == len(split.qids) == len(split.docids) == split.features.shape[0]):
        return None
    return split


def cached_read(path: str | Path, options: dict[str, Any], read: Callable[[], RankingSplit]) -> RankingSplit:
    """``read()``'s split for the file ``path`` parsed with ``options``, from the cache when its entry
    matches, else parsed and stored (atomically: a killed writer leaves no half entry)."""
    folder = cache_dir()
    source = Path(path)
    if folder is None:
        return read()
    key = _key(source, options)
    name = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:32]
    entry = folder / f"{name}.npz"
    split = _load(entry, key, str(path))
    if split is not None:
        return split
    split = read()
    temporary = folder / f".{name}.{os.getpid()}.tmp.npz"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        np.savez(temporary, key=np.array(json.dumps(key)), features=split.features, labels=split.labels,
                 qids=np.asarray(split.qids, dtype=str), docids=np.asarray(split.docids, dtype=str),
                 comments=np.asarray(split.comments, dtype=str))
        os.replace(temporary, entry)
    except OSError as exc:
        with contextlib.suppress(OSError):
            temporary.unlink(missing_ok=True)
        warnings.warn(f"gaprank: the parsed-file cache {folder} cannot be written ({exc.strerror or exc}); {path} "
                      "was read as text and will be again (set GAPRANK_CACHE to a writable folder, or "
                      "GAPRANK_CACHE=off)", CacheWriteWarning, stacklevel=2)
    return split


class CacheWriteWarning(UserWarning):
    """The parsed-file cache could not be written; the data was read and returned all the same."""
