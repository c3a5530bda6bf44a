"""Write the Parameters entries that several docstrings share into the source, from the one text of each.

A shared entry is written once: the metrics' in ``gaprank.metrics._docs``, the losses' in ``gaprank.losses._docs``,
the torchmetrics classes' in ``gaprank.torchmetrics._PARAMETERS``, the LambdaMART objective factories' in
``LambdaMARTSettings``'s docstring. This script writes each into every
docstring that documents that parameter, so the source, ``help()``, IDEs and the API pages all show static text;
an entry that is a function's own (not in its table) stays as written. ``--check`` changes nothing and fails,
naming the docstrings, when one is out of date (a test runs it).

    python tools/docstrings.py            # rewrite the docstrings
    python tools/docstrings.py --check    # exit 1 if a docstring differs from its table
"""

from __future__ import annotations

import argparse
import ast
import importlib
import inspect
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

Entry = tuple[str, str]  # (type, description)


def documented() -> Iterator[tuple[Callable[..., Any], dict[str, Entry]]]:
    """Each function or class whose docstring takes shared entries, with its table."""
    import gaprank.metrics as metrics
    from gaprank.boosting import LambdaMARTSettings
    from gaprank.losses import _docs as loss_docs
    from gaprank.metrics import _docs as metric_docs

    for info in metrics.measures():
        function = info.function
        entries = {name: (kind, text) for name, kind, text in metric_docs.ARRAYS}
        entries.update(metric_docs.SHARED)
        if "k" in inspect.signature(function).parameters:
            entries["k"] = metric_docs.cutoff_entry(function)
        yield function, entries
    for path, entries in loss_docs.DOCUMENTED.items():
        yield _named(path), entries
    from gaprank import torchmetrics

    for name in ("RetrievalGAP", "RetrievalXGAP", "RetrievalEGAP"):
        yield getattr(torchmetrics, name), torchmetrics._PARAMETERS
    settings = parameters(inspect.getdoc(LambdaMARTSettings) or "")
    for path in ("gaprank.lightgbm._objective:lambdarank_objective", "gaprank.lightgbm._objective:sklearn_objective",
                 "gaprank.xgboost._objective:objective"):
        yield _named(path), settings


def _named(path: str) -> Callable[..., Any]:
    module, _, name = path.partition(":")
    return getattr(importlib.import_module(module), name)


def parameters(doc: str) -> dict[str, Entry]:
    """A docstring's Parameters entries, ``name -> (type, text)`` with the text's line breaks folded."""
    lines = doc.splitlines()
    if "Parameters" not in lines:
        return {}
    start = lines.index("Parameters") + 2
    entries: dict[str, Entry] = {}
    for name, kind, text_lines in _entries(lines[start:_section_end(lines, start)]):
        entries[name] = (kind, " ".join(" ".join(line.strip() for line in text_lines).split()))
    return entries


def _section_end(lines: list[str], start: int) -> int:
    """The index after a section's last line: the blank line before the next section's title, or the end."""
    for index in range(start, len(lines)):
        if not lines[index].strip() and index + 2 < len(lines) and set(lines[index + 2].strip()) == {"-"}:
            return index
    while lines and not lines[-1].strip():
        lines = lines[:-1]
    return len(lines)


def _entries(lines: list[str]) -> Iterator[tuple[str, str, list[str]]]:
    """``(name, type, text lines)`` of a section's entries (lines without the docstring's own indentation)."""
    name: str | None = None
    kind, text = "", []
    for line in lines:
        if line and not line.startswith(" "):
            if name is not None:
                yield name, kind, text
            name, _, kind = line.partition(" : ")
            text = []
        elif name is not None:
            text.append(line)
    if name is not None:
        yield name, kind, text


def render(name: str, entry: Entry) -> list[str]:
    """An entry as numpydoc lines (``gaprank._docstrings``' layout)."""
    from gaprank._docstrings import entry_lines

    return entry_lines(name, *entry)


def rewritten(source: str, target: Any, table: dict[str, Entry]) -> str:
    """``source`` with ``target``'s docstring taking ``table``'s entries for the parameters it documents."""
    tree = ast.parse(source)
    node = next(n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef)) and n.name == target.__name__)
    doc_node = node.body[0].value  # type: ignore[attr-defined]
    lines = source.splitlines(keepends=True)
    first, last = doc_node.lineno - 1, doc_node.end_lineno  # the docstring's lines
    body = lines[first:last]
    indent = " " * (node.col_offset + 4)
    plain = [line if index == 0 else line[len(indent):] if line.startswith(indent) else line.lstrip(" ")
             for index, line in enumerate("".join(body).split("\n"))]
    if "Parameters" not in plain:
        return source
    start = plain.index("Parameters") + 2
    end = _section_end(plain, start)
    section: list[str] = []
    for name, kind, text in _entries(plain[start:end]):
        section += render(name, table[name]) if name in table else [f"{name} : {kind}" if kind else name, *text]
    new_plain = plain[:start] + section + plain[end:]
    new_body = "\n".join(indent + line if line.strip() and index else line
                         for index, line in enumerate(new_plain))
    return "".join(lines[:first]) + new_body + "".join(lines[last:])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 if a docstring is out of date")
    args = parser.parse_args(argv)
    stale = []
    for target, table in documented():
        path = Path(inspect.getsourcefile(target) or "")
        source = path.read_text(encoding="utf-8")
        new = rewritten(source, target, table)
        if new != source:
            stale.append(f"{path}: {target.__qualname__}")
            if not args.check:
                path.write_text(new, encoding="utf-8")
    for line in stale:
        print(("out of date: " if args.check else "rewritten: ") + line)
    if args.check and stale:
        print("run: python tools/docstrings.py", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
