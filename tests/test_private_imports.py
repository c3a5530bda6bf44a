"""No package of gaprank imports another package's private (underscore) modules or names.

A package is a folder under ``src/gaprank`` (or a top-level module such as ``gaprank.ir_measures``). What a
package shares with the rest of the library it re-exports from its ``__init__``; the top-level private modules
below are the library's shared internals, which any package may import (but not their underscore names).
"""

import ast
from pathlib import Path

SOURCE = Path(__file__).resolve().parents[1] / "src" / "gaprank"
SHARED_PRIVATE_MODULES = {"_engine", "_inputs", "_typing", "_padding", "_grouped", "_compiled_setup", "_docstrings", "_autograd",
                          "_extras",
                          "_elementwise"}


def module_path(path: Path, source: Path) -> list[str]:
    """``source/metrics/_trec.py`` -> ``["gaprank", "metrics", "_trec"]`` (a package's ``__init__`` is the
    package)."""
    parts = list(path.relative_to(source.parent).with_suffix("").parts)
    return parts[:-1] if parts[-1] == "__init__" else parts


def imported_names(path: Path, source: Path) -> list[tuple[int, list[str]]]:
    """Every gaprank name the module at ``path`` imports, as a dotted path (module, then the name imported from
    it), with its line; relative imports resolved."""
    here = module_path(path, source)
    package = here if path.name == "__init__.py" else here[:-1]
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)]
                source = base + (node.module.split(".") if node.module else [])
            else:
                source = (node.module or "").split(".")
            if source[0] == "gaprank":
                found += [(node.lineno, source + [alias.name]) for alias in node.names if alias.name != "*"]
        elif isinstance(node, ast.Import):
            found += [(node.lineno, alias.name.split(".")) for alias in node.names if alias.name.startswith("gaprank.")]
    return sorted(found)


def private_crossings(path: Path, source: Path = SOURCE) -> list[str]:
    """The imports of ``path`` (a module under ``source``, the gaprank package folder) that reach into another
    package's underscore modules or names."""
    here = module_path(path, source)
    owner = here[1] if len(here) > 1 else None
    crossings = []
    for line, target in imported_names(path, source):
        if len(target) < 2 or target[1] == owner:
            continue  # gaprank itself, or within the importer's own package
        private = [part for part in target[1:] if part.startswith("_") and not (part.startswith("__") and part.endswith("__"))]
        if private == [target[1]] and target[1] in SHARED_PRIVATE_MODULES:
            continue  # a shared internal module, or a public name in one
        if private:
            crossings.append(f"{path.relative_to(source.parent)}:{line}: {'.'.join(target)}")
    return crossings


def test_no_package_imports_another_packages_private_names():
    crossings = [crossing for path in sorted(SOURCE.rglob("*.py")) for crossing in private_crossings(path)]
    assert not crossings, "imports of another package's private modules or names:\n" + "\n".join(crossings)


def test_the_check_sees_each_kind_of_crossing(tmp_path):
    """The walk finds what it is for: relative and absolute imports of another package's private module, a
    private name from another package, a shared module's private name; it lets pass a package's own private
    modules, the shared private modules' public names and other packages' public names."""
    root = tmp_path / "gaprank"
    (root / "cli").mkdir(parents=True)
    (root / "cli" / "main.py").write_text(
        "from ..metrics._trec_names import trec_measure\n"      # crossing
        "import gaprank.metrics._registry\n"                     # crossing
        "from ..metrics import _private\n"                       # crossing
        "from .._inputs import _helper\n"                        # crossing: a shared module's private name
        "from ..metrics import evaluate_trec\n"                  # fine
        "from .._inputs import GaprankInputError\n"              # fine
        "from .._engine.pairs import PairwiseEngine\n"           # fine
        "from ._own import thing\n"                              # fine: its own package
        "from .. import __version__\n"                           # fine
        "def f():\n    from gaprank.data._letor import read\n")  # crossing, inside a function
    found = private_crossings(root / "cli" / "main.py", root)
    assert [entry.split(": ", 1)[1] for entry in found] == [
        "gaprank.metrics._trec_names.trec_measure", "gaprank.metrics._registry", "gaprank.metrics._private",
        "gaprank._inputs._helper", "gaprank.data._letor.read"]
