"""The tiers' table names test modules, doctest modules and tests that exist, each in one tier."""

import ast
from pathlib import Path

import pytest
from tiers import TIERS, module_left_out, tier_of


def test_every_tiered_module_and_test_exists_once():
    here = Path(__file__).parent
    named = [entry for entries in TIERS.values() for entry in entries]
    assert len(named) == len(set(named))
    missing = []
    for entry in named:
        module, _, test = entry.partition("::")
        path = here / f"{module}.py"
        if not module.startswith("test_"):  # a module of the package, for its doctests
            if test or not list((here.parent / "src" / "gaprank").rglob(f"{module}.py")):
                missing.append(entry)
        elif not path.is_file():
            missing.append(entry)
        elif test and test not in {node.name for node in ast.walk(ast.parse(path.read_text()))
                                   if isinstance(node, ast.FunctionDef)}:
            missing.append(entry)
    assert not missing, sorted(missing)


def test_a_test_s_own_entry_wins_over_its_module_s():
    assert tier_of("test_cli_main", "test_the_cli_runs_on_the_lean_install") == "e2e"
    assert tier_of("test_cli_main", "test_version_is_gaprank_s_version") == "integration"
    assert tier_of("test_losses", "test_anything") == "unit"


@pytest.mark.parametrize("markexpr, module, left_out", [
    ("not e2e", "test_tune", True), ("not e2e", "test_build", False), ("e2e or unit", "test_tune", False),
    ("e2e or unit", "test_lightgbm", True), ("unit", "test_tune", True), ("not unit", "test_build", True),
    ("not unit", "test_lightgbm", False), ("", "test_tune", False),
    ("e2e", "test_cli_main", False),  # tests of several tiers: left to the markers
    # a marker other than the tiers is on some tests only: -m xfail selects test_docs_blocks' xfail pages
    ("xfail", "test_docs_blocks", False), ("filterwarnings", "test_lightgbm", False), ("unit and xfail", "test_build", False),
    # a source module whose doctests have a tier of their own; the others are never left out
    ("not e2e", "sentence_transformers", True), ("not e2e", "torchmetrics", False),
    # pytest's grammar: parentheses, precedence; anything else is left to pytest
    ("(unit or e2e) and not e2e", "test_tune", True), ("not (unit or integration)", "test_tune", False),
    ("not (unit or integration)", "test_lightgbm", True), ("unit or", "test_tune", False), ("e2e;x", "test_tune", False),
    ("not e2e", "test_lanes", True),
])
def test_a_module_is_left_unimported_only_when_minus_m_leaves_out_its_every_test(markexpr, module, left_out):
    assert module_left_out(markexpr, module) is left_out


def test_the_tiers_read_minus_m_without_pytest_s_private_parser():
    source = (Path(__file__).parent / "tiers.py").read_text()
    assert "_pytest" not in source
