"""Pages of the docs whose code is run as written: "Adding a measure" registers a measure from one entry and
checks it against one oracle; each integration's page (ir_measures and PyTerrier, torchmetrics,
sentence-transformers) runs its example."""

from __future__ import annotations

import re
from pathlib import Path

import gaprank.metrics as M

DOCS = Path(__file__).resolve().parents[1] / "docs"


def python_blocks(page: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", (DOCS / page).read_text(encoding="utf-8"), flags=re.S)


def test_adding_a_measure_runs_as_written():
    blocks = python_blocks("adding-a-measure.md")
    assert len(blocks) == 4
    before = [info.name for info in M.measures()]
    namespace: dict = {}
    try:
        for block in blocks:
            exec(compile(block, "docs/adding-a-measure.md", "exec"), namespace)
        assert namespace["value"] > 0 and abs(float(namespace["value"] - namespace["same"])) < 1e-12
        assert namespace["grad"].shape == (40,) and namespace["hess"].min() >= 0
    finally:
        for name in ("gRBP", "AP2"):
            if M.find_measure(name) is not None:
                M.unregister(name)
    assert [info.name for info in M.measures()] == before


def run_page(page: str, library: str, blocks: int = 1, **given) -> dict:
    """Run the last of the page's ``blocks`` Python blocks as written (after ``given`` names), skipped without
    ``library``."""
    import pytest

    pytest.importorskip(library)
    code = python_blocks(page)
    assert len(code) == blocks, f"docs/{page} has {len(code)} Python blocks"
    namespace: dict = dict(given)
    exec(compile(code[-1], f"docs/{page}", "exec"), namespace)
    return namespace


def test_the_ir_measures_page_runs_as_written():
    """The page's example, PyTerrier's experiment with gaprank's measures as objects beside trec_eval names; the
    strings its prose offers parse to measures PyTerrier takes."""
    namespace = run_page("ir-measures.md", "pyterrier")
    table = namespace["table"].set_index("name")
    gap = "GAP(g={1:0.5,2:0.5})"
    assert table.loc["ideal", gap] == 1.0 and table.loc["run", gap] < 1.0
    assert abs(namespace["results"][namespace["same"]] - table.loc["run", gap]) < 1e-12
    assert table.loc["ideal", "map"] == 1.0 and table.loc["ideal", "ndcg_cut_10"] == 1.0
    assert abs(table.loc["run", "map"] - namespace["results"][namespace["ir_measures"].AP]) < 1e-12
    import ast

    text = (DOCS / "ir-measures.md").read_text(encoding="utf-8")
    strings = re.search(r"parse_measure\(s\) for s in (\[[^]]*\])", text).group(1)
    parsed = [namespace["ir_measures"].parse_measure(s) for s in ast.literal_eval(strings)]
    assert [str(m) for m in parsed] == ["GAP(g={1:0.5,2:0.5})", "eGAP@10"]


def test_the_torchmetrics_page_runs_as_written():
    """The page's example, and its RetrievalMAP swap giving RetrievalMAP's value."""
    namespace = run_page("torchmetrics.md", "torchmetrics")
    assert 0.3 < float(namespace["gap"].compute()) < 1.0
    ours, theirs = float(namespace["ours"].compute()), float(namespace["theirs"].compute())
    assert 0.3 < ours < 1.0 and abs(ours - theirs) < 1e-6


def test_the_sentence_transformers_page_runs_as_written(tmp_path, monkeypatch):
    """Every block of the page in order, as printed and offline: MODEL names a Hugging Face model, the offline
    block then builds a tiny cross-encoder in a folder and sets MODEL to it, and the example trains and
    evaluates that one."""
    import pytest

    pytest.importorskip("sentence_transformers")
    blocks = python_blocks("sentence-transformers.md")
    assert len(blocks) == 3 and blocks[0].startswith("MODEL = ")
    monkeypatch.chdir(tmp_path)  # the offline model's folder and the example's output_dir
    namespace: dict = {}
    for block in blocks:
        exec(compile(block, "docs/sentence-transformers.md", "exec"), namespace)
    assert namespace["MODEL"] == "tiny-cross-encoder" and (tmp_path / "tiny-cross-encoder" / "config.json").is_file()
    results = namespace["results"]
    assert namespace["evaluator"].primary_metric == "toy_gap" and 0 < results["toy_gap"] <= 1
    assert set(results) == {"toy_gap", "toy_xgap", "toy_egap", "toy_ndcg@10", "toy_map", "toy_p@10", "toy_err"}


def test_the_benchmarks_page_is_a_reference_not_a_diary():
    """Current figures per area, each with its command, commit and machine; no dated sections (the diary of
    what was tried stays in git history)."""
    text = (DOCS / "benchmarks.md").read_text()
    assert len(text.splitlines()) <= 400
    headings = [line for line in text.splitlines() if line.startswith("#")]
    months = "January|February|March|April|May|June|July|August|September|October|November|December"
    dated = [h for h in headings if re.search(r"\d{4}-\d{2}-\d{2}|Morning|Evening|Night of|Later that|" + months, h)]
    assert not dated, dated
    assert "{{" not in text  # no figure left to fill
