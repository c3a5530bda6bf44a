"""mkdocs hook: the maths of every page (``$...$`` and ``$$...$$`` in the Markdown, ``.. math::`` and
``:math:`` in the docstrings, through ``pymdownx.arithmatex``) becomes MathML when the site is built.

Browsers draw MathML themselves, so the site needs no script and no font from elsewhere: a site built
offline shows its maths offline. A formula the converter cannot read fails the build, naming the page and
the formula, rather than leaving raw LaTeX on the page.
"""

from __future__ import annotations

import html
import re

from mkdocs.exceptions import PluginError

try:
    from latex2mathml.converter import convert
except ImportError as missing:  # pragma: no cover - the docs extra installs it
    raise ImportError('docs/hooks/maths.py needs latex2mathml: pip install -e ".[docs]"') from missing

# what pymdownx.arithmatex (generic mode) writes: \( ... \) in a span, \[ ... \] in a div, HTML-escaped
_INLINE = re.compile(r'<span class="arithmatex">\\\((?P<tex>.*?)\\\)</span>', re.S)
_BLOCK = re.compile(r'<div class="arithmatex">\\\[(?P<tex>.*?)\\\]</div>', re.S)
_UNKNOWN_COMMAND = re.compile(r">(\\[A-Za-z]+)<")


def to_mathml(tex: str, display: str, where: str) -> str:
    """One formula, as arithmatex escaped it, as MathML; a formula the converter refuses is a build error."""
    source = html.unescape(tex).strip()
    try:
        mathml = convert(source, display=display)
    except Exception as error:  # latex2mathml raises its own exception types, and IndexError on bad input
        reason = f"{type(error).__name__} {error}".rstrip()
        raise PluginError(f"{where}: cannot convert the formula {source!r} to MathML: {reason}") from error
    unknown = _UNKNOWN_COMMAND.search(mathml)
    if unknown:  # the converter writes a command it does not know as text: raw LaTeX on the page
        raise PluginError(f"{where}: cannot convert the formula {source!r} to MathML: unknown command {unknown[1]}")
    # the LaTeX source as the formula's text alternative (screen readers, copy and paste)
    return mathml.replace("<math ", f'<math alttext="{html.escape(source)}" ', 1)


def on_page_content(content: str, page, config, files) -> str:
    where = page.file.src_uri
    content = _BLOCK.sub(lambda m: to_mathml(m["tex"], "block", where), content)
    return _INLINE.sub(lambda m: to_mathml(m["tex"], "inline", where), content)
