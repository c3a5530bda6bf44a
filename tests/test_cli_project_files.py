"""The files a project is expected to have: LICENSE (MIT, as pyproject says), CHANGELOG.md, CITATION.cff
(CFF 1.2.0) and CONTRIBUTING.md, whose commands are those CI runs and whose links resolve."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]


def test_license_is_mit_as_pyproject_says():
    text = (ROOT / "LICENSE").read_text()
    assert text.startswith("MIT License") and re.search(r"Copyright \(c\) \d{4} gaprank developers", text)
    assert re.search(r'^license = "MIT"$', (ROOT / "pyproject.toml").read_text(), re.M)


def test_citation_file_is_cff_1_2_0_and_points_to_the_data_sets_citations():
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    assert cff["cff-version"] == "1.2.0" and cff["type"] == "software" and cff["title"] == "gaprank"
    assert cff["authors"] == [{"name": "gaprank developers"}] and cff["license"] == "MIT"
    import gaprank

    assert str(cff["version"]) == gaprank.__version__  # the version the code reports
    assert "gaprank data list" in cff["message"] and "docs/data.md" in cff["message"]
    # keys CFF 1.2.0 defines (the schema allows no others)
    assert set(cff) <= {"cff-version", "message", "type", "title", "abstract", "authors", "license", "version",
                        "keywords", "date-released", "doi", "repository-code", "url", "preferred-citation",
                        "references", "identifiers", "commit", "contact", "license-url", "repository",
                        "repository-artifact"}


def test_changelog_has_this_round_and_the_first_version():
    text = (ROOT / "CHANGELOG.md").read_text()
    assert re.findall(r"^## (.+)$", text, re.M)[:2] == ["Unreleased", "0.1.0"]


def test_contributing_gives_ci_s_commands_and_working_links():
    text = (ROOT / "CONTRIBUTING.md").read_text()
    ci = (ROOT / ".ci" / "run").read_text()
    for command in (".venv/bin/ruff check .", ".venv/bin/mypy", "mkdocs build --strict", "bash .ci/check_wheel"):
        assert command in text and command in ci, command
    assert 'pytest -q -m "not e2e"' in text
    for link in re.findall(r"\]\(([^)#:]+)\)", text):
        assert (ROOT / link).is_file(), link
    assert "docs/adding-a-measure.md" in text


@pytest.mark.parametrize("adapter, package, extra", [
    ("gaprank.torchmetrics", "torchmetrics", "torchmetrics"),
    ("gaprank.ir_measures", "ir_measures", "ir-measures"),
    ("gaprank.sentence_transformers", "sentence_transformers", "sentence-transformers"),
])
def test_an_adapter_without_its_library_names_the_extra_to_install(adapter, package, extra, monkeypatch):
    import importlib
    import sys

    for name in [package, *(key for key in sys.modules if key.startswith(package + "."))]:
        monkeypatch.setitem(sys.modules, name, None)  # as if not installed (its submodules loaded by other tests too)
    monkeypatch.delitem(sys.modules, adapter, raising=False)
    with pytest.raises(ModuleNotFoundError, match=rf'^{adapter} needs {package}, which is not installed here: '
                                                  rf'pip install "gaprank\[{extra}\]"$'):
        importlib.import_module(adapter)


def test_dask_partitions_without_dask_name_the_extra(monkeypatch):
    import sys

    import numpy as np

    from gaprank.dask import partition_by_query

    monkeypatch.setitem(sys.modules, "dask.array", None)
    with pytest.raises(ModuleNotFoundError, match=r'pip install "gaprank\[dask\]"'):
        partition_by_query(np.zeros((2, 1)), [1, 0], [1, 1], 1)
