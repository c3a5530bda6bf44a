"""The optional dependencies of gaprank's adapters: a missing one is a one-line error naming the extra to install."""

from __future__ import annotations

import importlib
from types import ModuleType


def missing_extra(package: str, extra: str, adapter: str) -> ModuleNotFoundError:
    """The error of ``adapter`` without ``package``: which extra of gaprank installs it."""
    return ModuleNotFoundError(f'{adapter} needs {package}, which is not installed here: pip install "gaprank[{extra}]"',
                               name=package)


def require(module: str, extra: str, adapter: str) -> ModuleType:
    """``module`` imported, or :func:`missing_extra`'s error."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise missing_extra(module.split(".")[0], extra, adapter) from exc
