"""pytest's collection for the whole checkout (``tests/`` and the doctests of ``src/``); the tests' fixtures and
markers are in ``tests/conftest.py``."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent / "tests"))

from tiers import module_left_out  # noqa: E402


def pytest_ignore_collect(collection_path, config):
    """A module whose every test is of a tier ``-m`` leaves out is not imported at all (``-m "not e2e"`` then spares
    the import of sentence-transformers, Dask and the training scripts: seconds in each process)."""
    if collection_path.suffix == ".py" and module_left_out(config.getoption("markexpr", default="") or "",
                                                           collection_path.stem):
        return True
    return None
