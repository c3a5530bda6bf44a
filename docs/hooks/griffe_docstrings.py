"""griffe extension (mkdocstrings): docstrings written for Sphinx read well in the Markdown API pages.

* ``.. math::`` blocks become ``$$ ... $$`` and ``:math:`x``` becomes ``$x$``: ``pymdownx.arithmatex``
  picks them up and ``docs/hooks/maths.py`` turns them into MathML;
* ``:func:`name```, ``:class:``, ``:meth:``, ``:attr:``, ``:mod:``, ``:data:``, ``:obj:`` become code spans;
* an attribute found by inspection whose "docstring" is only its value's type's (``str(object='') -> str``
  for a string, ``dict() -> new empty dictionary`` for a dict) gets none, and so does a dataclass whose
  docstring is the one ``dataclasses`` writes (its signature);
* the first paragraph is joined into one line: the member tables show a docstring's first line as its
  summary, and a summary wrapped in the source would be cut there.

The source files stay as they are (numpydoc, rendered by Sphinx and ``help()`` alike).
"""

from __future__ import annotations

import dataclasses
import inspect
import re
import textwrap
from typing import Any

import griffe

_DIRECTIVE = re.compile(r"^(?P<indent>[ \t]*)\.\. math::[ \t]*(?P<rest>.*)$")
_MATH_ROLE = re.compile(r":math:`(?P<tex>[^`]+)`")
_REFERENCE_ROLE = re.compile(r":(?:py:)?(?:func|class|meth|attr|mod|data|obj|exc):`~?(?P<name>[^`]+)`")


def math_directives(text: str) -> str:
    """``.. math::`` blocks (the formula indented below the directive) as ``$$`` blocks at the directive's
    indent, and the ``:math:``, ``:func:`` ... roles as ``$...$`` and code spans."""
    lines = text.split("\n")
    out: list[str] = []
    i = 0
    while i < len(lines):
        directive = _DIRECTIVE.match(lines[i])
        if directive is None:
            out.append(lines[i])
            i += 1
            continue
        indent = directive["indent"]
        body = [directive["rest"]] if directive["rest"].strip() else []
        i += 1
        while i < len(lines) and (not lines[i].strip() or len(lines[i]) - len(lines[i].lstrip()) > len(indent)):
            if not lines[i].strip().startswith(":"):  # directive options (:label:, :nowrap:) have no Markdown form
                body.append(lines[i])
            i += 1
        formula = textwrap.dedent("\n".join(body)).strip("\n")
        if out and out[-1].strip():  # a $$ block is a Markdown block of its own: blank lines around it
            out.append("")
        out += [f"{indent}$$", *(f"{indent}{line}" for line in formula.split("\n") if line.strip()), f"{indent}$$"]
        if i < len(lines):
            out.append("")
    text = "\n".join(out)
    text = _MATH_ROLE.sub(lambda m: f"${m['tex'].strip()}$", text)
    return _REFERENCE_ROLE.sub(lambda m: f"`{m['name']}`", text)


def one_line_summary(text: str) -> str:
    """The docstring with its first paragraph on one line (the rest as it is)."""
    first, blank, rest = text.strip("\n").partition("\n\n")
    lines = [line.strip() for line in first.split("\n")]
    if lines[0].startswith((">>>", "$$", "```")) or any(re.match(r"[*|-]|\d+\.\s|-+$", line) for line in lines[1:]):
        return text  # not prose: an example, maths, a list, a table or a section heading
    return " ".join(lines) + blank + rest


class SphinxToMarkdown(griffe.Extension):
    """Rewrites each object's docstring as it is loaded (static analysis and inspection alike)."""

    def on_instance(self, *, node: Any, obj: griffe.Object, agent: Any, **kwargs: Any) -> None:
        docstring = obj.docstring
        if docstring is None:
            return
        runtime = getattr(node, "obj", None)  # inspection gives the live object, static analysis an AST node
        if obj.is_attribute and runtime is not None and not inspect.isclass(runtime) and not callable(runtime):
            own_type = inspect.getdoc(type(runtime))
            if own_type is not None and docstring.value.strip() == own_type.strip():
                obj.docstring = None
                return
        written_by_dataclasses = re.fullmatch(rf"{re.escape(obj.name)}\(.*\)", docstring.value.strip(), re.S)
        if obj.is_class and dataclasses.is_dataclass(runtime) and written_by_dataclasses:
            obj.docstring = None
            return
        docstring.value = one_line_summary(math_directives(docstring.value))
