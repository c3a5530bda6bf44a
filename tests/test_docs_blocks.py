"""Every code block of README.md and docs/*.md runs as printed.

A page's ``python`` blocks run in order in one namespace, in an empty temporary directory. In a ``bash``
block each ``gaprank ...`` command runs there too (``python -m gaprank``, so this checkout's gaprank);
``python -m training.*``, ``torchrun`` and ``python benchmarks/*.py`` commands train or measure for
minutes, so they are checked, not run: the module or script exists and every ``configs/*.yaml`` they name
exists and parses. Any other command is refused by the test, so a new kind of block gets a check or a
marker. A block is skipped only when the line before its fence is a marker of the form
``<!-- skip-test: needs a GPU ... -->`` or ``<!-- skip-test: needs a download ... -->``
(docs/testing.md, "Code blocks in the docs"). Blocks run by a dedicated test (``COVERED``) are left to it.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
SKIP_MARKER = re.compile(r"<!--\s*skip-test:\s*(?P<reason>.*?)\s*-->")
SKIP_REASONS = ("needs a GPU", "needs a download")
FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,})(?P<lang>[\w-]*)[^\n`]*$")

# Pages (or README sections, by heading) whose blocks a dedicated test runs with its own assertions.
COVERED = {
    "docs/adding-a-measure.md": "tests/test_docs_pages.py",
    "docs/ir-measures.md": "tests/test_docs_pages.py",
    "docs/torchmetrics.md": "tests/test_docs_pages.py",
    "docs/sentence-transformers.md": "tests/test_docs_pages.py",
    "README.md ## Train your PyTorch ranker for GAP": "tests/test_readme_example.py",
    "README.md ## LambdaMART for GAP with LightGBM": "tests/test_readme_example.py",
}


@dataclass
class Block:
    page: str  # path relative to the repository
    line: int  # the fence's line, 1-based
    lang: str
    code: str
    heading: str  # the nearest "## " heading above it
    skip: str | None  # the marker's reason

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"


def code_blocks(path: Path, root: Path = REPO) -> list[Block]:
    """The fenced blocks of a Markdown page, with the skip marker on the line before each fence."""
    page = path.relative_to(root).as_posix()
    lines = path.read_text(encoding="utf-8").splitlines()
    blocks: list[Block] = []
    heading = ""
    i = 0
    while i < len(lines):
        if lines[i].startswith("## "):
            heading = lines[i].strip()
        opening = FENCE.match(lines[i])
        if not opening:
            i += 1
            continue
        indent, fence = opening["indent"], opening["fence"]
        body: list[str] = []
        j = i + 1
        while j < len(lines) and not (lines[j].strip().startswith(fence) and lines[j].strip().strip("`") == ""):
            body.append(lines[j][len(indent):] if lines[j].startswith(indent) else lines[j].lstrip())
            j += 1
        assert j < len(lines), f"{page}:{i + 1}: a code fence that is never closed"
        before = next((lines[k] for k in range(i - 1, -1, -1) if lines[k].strip()), "")
        marker = SKIP_MARKER.search(before)
        blocks.append(Block(page, i + 1, opening["lang"].lower(), "\n".join(body) + "\n", heading,
                            marker["reason"] if marker else None))
        i = j + 1
    return blocks


def covered_by(block: Block) -> str | None:
    return COVERED.get(block.page) or COVERED.get(f"{block.page} {block.heading}")


def test_the_skip_markers_name_a_gpu_or_a_download():
    for path in PAGES:
        for block in code_blocks(path):
            if block.skip is not None:
                assert block.skip.startswith(SKIP_REASONS), (
                    f"{block.where}: a block is skipped only when it needs a GPU or a download, "
                    f"marked '<!-- skip-test: needs a GPU ... -->' or '<!-- skip-test: needs a download ... -->'; "
                    f"got '{block.skip}'")


def test_the_block_reader_sees_markers_indented_fences_and_headings(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("## A\n\n<!-- skip-test: needs a GPU (CUDA) -->\n```python\nx = 1\n```\n\n"
                    "* item:\n\n    ```bash\n    gaprank --help\n    ```\n\n## B\n```text\nout\n```\n", encoding="utf-8")
    blocks = [(b.line, b.lang, b.code, b.heading, b.skip) for b in code_blocks(page, tmp_path)]
    assert blocks == [(4, "python", "x = 1\n", "## A", "needs a GPU (CUDA)"),
                      (10, "bash", "gaprank --help\n", "## A", None),
                      (15, "text", "out\n", "## B", None)]


def _pages_with(lang: str) -> list[Path]:
    return [p for p in PAGES if any(b.lang == lang and b.skip is None and not covered_by(b) for b in code_blocks(p))]


@pytest.mark.parametrize("path", _pages_with("python"), ids=lambda p: p.relative_to(REPO).as_posix())
def test_the_python_blocks_of_a_page_run_as_printed(path, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    namespace: dict = {"__name__": "__main__"}  # as a script: a block's `if __name__ == "__main__":` runs
    for block in code_blocks(path):
        if block.lang != "python" or block.skip is not None or covered_by(block):
            continue
        with warnings.catch_warnings():
            # a deprecation the reader would see is a block that does not run as printed
            warnings.filterwarnings("error", category=DeprecationWarning, module="__main__")
            warnings.filterwarnings("error", category=FutureWarning, module="__main__")
            warnings.filterwarnings("error", message=".*deprecated.*")
            try:
                exec(compile(block.code, block.where, "exec"), namespace)  # noqa: S102 - our own documentation
            except Exception as error:
                raise AssertionError(f"{block.where} does not run as printed: {type(error).__name__}: {error}") from error


def _commands(code: str) -> list[list[str]]:
    """The commands of a bash block: continuation lines joined, comments dropped, ``&&`` chains split."""
    joined = re.sub(r"\\\n", " ", code)
    commands: list[list[str]] = []
    for line in joined.splitlines():
        words = shlex.split(line, comments=True)
        current: list[str] = []
        for word in [*words, "&&"]:
            if word in ("&&", ";", "||"):
                if current:
                    commands.append(current)
                current = []
            else:
                current.append(word)
    return commands


def _check_training_command(words: list[str], where: str) -> None:
    """A ``python -m training.X`` / ``torchrun ... -m training.X`` / ``python benchmarks/X.py`` command: the
    module or script exists, and so does every config it names (and it parses as YAML)."""
    if "-m" in words:
        module = words[words.index("-m") + 1]
        assert module.startswith("training."), f"{where}: '{' '.join(words)}' runs a module this test cannot check"
        assert (REPO / (module.replace(".", "/") + ".py")).is_file(), f"{where}: no module {module}"
    else:
        script = next(w for w in words[1:] if w.endswith(".py"))
        assert (REPO / script).is_file(), f"{where}: no script {script}"
    for word in words:
        if word.startswith("configs/"):
            config = REPO / word
            assert config.is_file(), f"{where}: no config {word}"
            assert isinstance(yaml.safe_load(config.read_text(encoding="utf-8")), dict), f"{where}: {word} is not a mapping"


def _run_gaprank(words: list[str], where: str, cwd: Path) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-m", "gaprank", *words[1:]], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, f"{where}: '{shlex.join(words)}' exits {done.returncode}: {done.stderr.strip()[-500:]}"


# Other pages' blocks known not to run as printed, with what is wrong (their pages' owners fix them).
PENDING: dict[str, str] = {}  # page -> why its blocks do not run yet (a non-strict xfail)


def _with_pending(paths: list[Path]) -> list:
    return [pytest.param(p, marks=pytest.mark.xfail(reason=PENDING[p.relative_to(REPO).as_posix()], strict=False))
            if p.relative_to(REPO).as_posix() in PENDING else p for p in paths]


@pytest.mark.parametrize("path", _with_pending(_pages_with("bash")), ids=lambda p: p.relative_to(REPO).as_posix())
def test_the_bash_blocks_of_a_page_run_or_name_what_exists(path, tmp_path):
    for block in code_blocks(path):
        if block.lang != "bash" or block.skip is not None or covered_by(block):
            continue
        for words in _commands(block.code):
            program = Path(words[0]).name
            if program == "gaprank":
                _run_gaprank(words, block.where, tmp_path)
            elif program in ("python", "python3", "torchrun") and (
                    any(w.startswith("training.") for w in words) or any(w.startswith("benchmarks/") for w in words)):
                _check_training_command(words, block.where)
            else:
                raise AssertionError(f"{block.where}: the docs test does not know how to check '{shlex.join(words)}'; "
                                     "run it here, or mark the block '<!-- skip-test: needs a download ... -->'")


def _docs_hook(name: str):
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, REPO / "docs" / "hooks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_docstring_maths_and_roles_become_markdown():
    """The API reference's griffe extension: Sphinx's ``.. math::`` and roles as the Markdown the site renders."""
    pytest.importorskip("griffe")
    convert = _docs_hook("griffe_docstrings").math_directives
    text = ("Graded AP.\n\n.. math::\n\n    \\mathrm{GAP} = \\frac{a}{b},\n\n    \\qquad G(a)\n(eq. 4) with "
            ":math:`e^t` and :func:`~gaprank.gap`.")
    assert convert(text) == ("Graded AP.\n\n$$\n\\mathrm{GAP} = \\frac{a}{b},\n\\qquad G(a)\n$$\n\n(eq. 4) with $e^t$ "
                             "and `gaprank.gap`.")


def test_docstring_summaries_are_one_line_for_the_member_tables():
    pytest.importorskip("griffe")
    summary = _docs_hook("griffe_docstrings").one_line_summary
    assert summary("What a fold's data\nis made of.\n\nMore\ntext.") == "What a fold's data is made of.\n\nMore\ntext."
    for kept in ("Sum:\n* a\n* b", ">>> 1\n1", "Summary\n-------"):
        assert summary(kept) == kept


def test_the_site_turns_latex_into_mathml_and_refuses_what_it_cannot_read():
    pytest.importorskip("latex2mathml")
    from mkdocs.exceptions import PluginError

    hook = _docs_hook("maths")
    page = type("Page", (), {"file": type("File", (), {"src_uri": "maths.md"})()})()
    html = hook.on_page_content('<p><span class="arithmatex">\\(a &lt; b\\)</span></p>'
                                '<div class="arithmatex">\\[\\frac{1}{n}\\]</div>', page, None, None)
    assert "arithmatex" not in html and html.count("<math ") == 2 and 'display="block"' in html
    assert '<mo>&lt;</mo>' in html or '<mo>&#x0003C;</mo>' in html
    for bad, why in (("a^", "MissingSuperScriptOrSubscript"), ("\\frack{1}{2}", "unknown command \\\\frack")):
        with pytest.raises(PluginError, match=f"maths.md: cannot convert the formula '{re.escape(repr(bad)[1:-1])}'.*{why}"):
            hook.on_page_content(f'<span class="arithmatex">\\({bad}\\)</span>', page, None, None)


def test_the_site_is_built_and_read_offline():
    """No script or style sheet from another host (maths are MathML, made at build time), and the build hooks
    are not published with the site."""
    config = yaml.safe_load((REPO / "mkdocs.yml").read_text(encoding="utf-8"))
    for key in ("extra_javascript", "extra_css"):
        assert not [url for url in config.get(key, []) if "://" in str(url)], f"mkdocs.yml {key} fetches from a host"
    assert config["theme"].get("font") is False, "mkdocs.yml: Material fetches its fonts from a host unless theme.font is false"
    assert "hooks/" in config["exclude_docs"].split()
    for hook in config["hooks"]:
        assert (REPO / hook).is_file(), hook
    assert "docs/hooks/maths.py" in config["hooks"]
