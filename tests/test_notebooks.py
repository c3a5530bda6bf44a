"""Every notebook runs top to bottom (nbclient) in quick mode: on a --quick comparison and 2 training epochs."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"


@pytest.mark.parametrize("name", ["compare_objectives", "metrics_tour", "losses_in_your_model", "learning_from_clicks"])
def test_notebook_executes_in_quick_mode(name, quick_ohsumed_comparison, monkeypatch):
    _, summary = quick_ohsumed_comparison
    monkeypatch.setenv("GAPRANK_RESULTS", summary["output_dir"])
    monkeypatch.setenv("GAPRANK_NOTEBOOK_QUICK", "1")
    notebook = nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4)
    nbclient.NotebookClient(notebook, timeout=600, kernel_name="python3",
                            resources={"metadata": {"path": str(NOTEBOOKS)}}).execute()
    outputs = [o for cell in notebook.cells if cell.cell_type == "code" for o in cell.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    assert any("image/png" in o.get("data", {}) for o in outputs)  # the plots were drawn
    if name == "metrics_tour":
        assert _system_query_pairs(notebook) > 0


def _system_query_pairs(notebook) -> int:
    """The number of system-query pairs metrics_tour's per-query panel printed it pooled."""
    text = "".join(o.get("text", "") for cell in notebook.cells if cell.cell_type == "code" for o in cell.outputs)
    found = re.search(r"per query: (\d+) system-query pairs", text)
    assert found, "metrics_tour printed no per-query line"
    assert "SmallSampleWarning" not in text  # kendalltau of empty columns
    return int(found.group(1))


def test_the_committed_metrics_tour_shows_a_filled_per_query_panel():
    """Its per-query panel reads the committed results/ohsumed/per_query.tsv (it read runs/*/folds, not
    committed, and showed an empty panel): the committed output pools every objective's test queries."""
    notebook = nbformat.read(NOTEBOOKS / "metrics_tour.ipynb", as_version=4)
    rows = (NOTEBOOKS.parent / "results" / "ohsumed" / "per_query.tsv").read_text().count("\n") - 1
    assert _system_query_pairs(notebook) == rows > 1000
