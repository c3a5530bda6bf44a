"""Every notebook runs top to bottom (nbclient) in quick mode: on a --quick comparison and 2 training epochs."""

from __future__ import annotations

from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"


@pytest.mark.parametrize("name", ["compare_objectives", "metrics_tour", "losses_in_your_model"])
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
