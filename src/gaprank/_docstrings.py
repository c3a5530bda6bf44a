"""numpydoc Parameters and Returns sections assembled from texts written once (shared by metrics and losses)."""

from __future__ import annotations

import inspect
import textwrap
from collections.abc import Callable
from typing import Any

Entry = tuple[str, str]  # (type, description)


def entry_lines(name: str, kind: str, text: str) -> list[str]:
    """A numpydoc entry's lines: ``name : kind``, then the text wrapped at 96 columns, indented by 4."""
    return [f"{name} : {kind}" if kind else name, *textwrap.wrap(text, 96, initial_indent="    ", subsequent_indent="    ")]


def with_parameters(function: Callable[..., Any], own: dict[str, Entry], *, shared: dict[str, Entry],
                    first: tuple[tuple[str, str, str], ...] = (), returns: Entry) -> None:
    """Give ``function``'s docstring numpydoc Parameters and Returns sections (unless it has them),
    before its Examples: each of ``first`` (name, type, text) describes a leading array, then each other
    parameter in signature order from ``own`` or ``shared`` (``own`` wins), then the Returns entry."""
    doc = inspect.getdoc(function) or ""
    if "\nParameters\n" in doc:
        return
    lines = ["Parameters", "----------"]
    skip: set[str] = set()
    for name, kind, text in first:
        lines += entry_lines(name, kind, text)
        skip.add(name)
    for name in inspect.signature(function).parameters:
        if name in skip:
            continue
        described = own.get(name) or shared.get(name)
        if described is not None:
            lines += entry_lines(name, *described)
    lines += ["", "Returns", "-------", *entry_lines("value", *returns)]
    head, marker, examples = doc.partition("\nExamples\n")
    body = head.rstrip() + "\n\n" + "\n".join(lines) + "\n"
    function.__doc__ = body + (f"\nExamples\n{examples}" if marker else "")
