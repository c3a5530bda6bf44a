"""The tiers' table names test modules and tests that exist, each in one tier."""

import ast
from pathlib import Path

from conftest import TIERS, tier_of


def test_every_tiered_module_and_test_exists_once():
    here = Path(__file__).parent
    named = [entry for entries in TIERS.values() for entry in entries]
    assert len(named) == len(set(named))
    missing = []
    for entry in named:
        module, _, test = entry.partition("::")
        path = here / f"{module}.py"
        if not path.is_file():
            missing.append(entry)
        elif test and test not in {node.name for node in ast.walk(ast.parse(path.read_text()))
                                   if isinstance(node, ast.FunctionDef)}:
            missing.append(entry)
    assert not missing, sorted(missing)


def test_a_test_s_own_entry_wins_over_its_module_s():
    assert tier_of("test_cli_main", "test_the_cli_runs_on_the_lean_install") == "e2e"
    assert tier_of("test_cli_main", "test_version_is_gaprank_s_version") == "integration"
    assert tier_of("test_losses", "test_anything") == "unit"
