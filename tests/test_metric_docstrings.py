"""Every metric's docstring describes the parameters all metrics share in one set of words.

The built-in metrics' docstrings are written out in full (``help(gaprank.gap)`` shows them, and so does the
source); the texts of the shared entries (``scores``, ``labels``, ``k``, ``mask``, ``weights``, ``grade_counts``,
``ties``, ``empty_value``, ``reduction`` and Returns) are those of one table, ``gaprank.metrics._docs``, from
which a registered measure's docstring is built. So an entry edited in one docstring, and not in the table and
the others, fails here.
"""

import inspect

import pytest
import torch

import gaprank.metrics as M
from gaprank.metrics import _docs

BUILT_IN = [info for info in M.measures()]


def numpydoc_section(doc: str, title: str) -> dict[str, tuple[str, str]]:
    """A numpydoc section's entries: name -> (type, description with its line breaks folded), in order."""
    lines = doc.splitlines()
    start = lines.index(title)
    assert set(lines[start + 1]) == {"-"}, title
    entries: dict[str, tuple[str, list[str]]] = {}
    name = None
    for line in lines[start + 2:]:
        if not line.strip():
            if name is not None:
                break
            continue
        if not line.startswith(" "):
            name, _, kind = line.partition(" : ")
            entries[name] = (kind, [])
        else:
            entries[name][1].append(line.strip())
    return {name: (kind, " ".join(text)) for name, (kind, text) in entries.items()}


def canonical_entries(function) -> dict[str, tuple[str, str]]:
    """The shared entries a metric's docstring must hold, from the one table."""
    fold = {name: (kind, " ".join(text.split())) for name, kind, text in _docs.ARRAYS}
    fold.update({name: (kind, " ".join(text.split())) for name, (kind, text) in _docs.SHARED.items()
                 if name in inspect.signature(function).parameters})  # weights: only where the form takes them
    if "k" in inspect.signature(function).parameters:
        kind, text = _docs.cutoff_entry(function)
        fold["k"] = (kind, " ".join(text.split()))
    return fold


def check_docstring(info) -> None:
    function = info.function
    doc = inspect.getdoc(function)
    parameters = numpydoc_section(doc, "Parameters")
    assert list(parameters) == list(inspect.signature(function).parameters), "entries in signature order"
    for name, (kind, text) in canonical_entries(function).items():
        assert parameters[name] == (kind, text), f"{info.name}: {name}"
    for param in info.params:
        assert parameters[param.keyword][0] == param.type_text, f"{info.name}: {param.keyword}"
    kind, text = _docs.RETURNS
    assert numpydoc_section(doc, "Returns") == {"value": (kind, " ".join(text.split()))}, info.name


def test_the_built_in_measures_are_the_eighteen_metrics():
    assert len(BUILT_IN) == 18
    modules = {"gaprank.metrics._ap_family", "gaprank.metrics._gain_discount", "gaprank.metrics._list_measures"}
    assert all(info.function.__module__ in modules for info in BUILT_IN)


@pytest.mark.parametrize("info", BUILT_IN, ids=[info.name for info in BUILT_IN])
def test_a_built_in_metric_s_shared_entries_are_the_table_s(info):
    check_docstring(info)


@pytest.mark.parametrize("needs_cutoff", [False, True])
def test_a_registered_measure_s_docstring_is_built_from_the_same_table(needs_cutoff):
    """A registered measure's generated docstring passes the same check, with ``k : int`` where k has no
    default (a measure defined at a cutoff only)."""
    info = M.register(M.MeasureInfo(
        "DocstringToy", M.GainDiscountForm(gain=lambda c, params: torch.arange(c + 1, dtype=torch.float64),
                                           discount=lambda positions, params: (positions == 1).to(torch.float64)),
        needs_cutoff=needs_cutoff))
    try:
        check_docstring(info)
        assert ("\nk : int\n" in inspect.getdoc(info.function)) == needs_cutoff
    finally:
        M.unregister("DocstringToy")


def _docstrings_tool():
    """``tools/docstrings.py``, the script that writes the shared entries into the source."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "tools" / "docstrings.py"
    spec = importlib.util.spec_from_file_location("gaprank_docstrings_tool", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_shared_entry_is_written_from_its_table(capsys):
    """Metrics, losses and the LambdaMART objective factories: each docstring holds its table's text for each
    shared entry (``python tools/docstrings.py --check``)."""
    assert _docstrings_tool().main(["--check"]) == 0, capsys.readouterr().out


def test_the_docstring_tool_rewrites_an_entry_its_table_changed():
    """An entry edited in the table (and not in the docstring) is found and rewritten; a function's own entry stays."""
    import gaprank.losses as L
    from gaprank.losses import _docs as loss_docs

    tool = _docstrings_tool()
    source = inspect.getsource(inspect.getmodule(L.lambdarank_loss))
    table = dict(loss_docs.DOCUMENTED["gaprank.losses._pairwise:lambdarank_loss"])
    table["mask"] = ("torch.Tensor of bool, optional", "A changed text.")
    new = tool.rewritten(source, L.lambdarank_loss, table)
    assert new != source and "        A changed text.\n" in new
    assert tool.parameters(new.split("def lambdarank_loss(")[1].split('"""')[1].replace("\n    ", "\n"))["mask"] == table["mask"]
    del table["truncation_level"]  # not in the table: the function's own entry, kept as written
    kept = tool.rewritten(source, L.lambdarank_loss, table)
    assert "    truncation_level : int, optional\n        Only pairs whose upper document" in kept
