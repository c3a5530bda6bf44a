"""The tiers' table names test modules that exist, each in one tier."""

from pathlib import Path

from conftest import TIERS


def test_every_tiered_module_exists_once():
    here = Path(__file__).parent
    named = [module for modules in TIERS.values() for module in modules]
    assert len(named) == len(set(named))
    assert all((here / f"{module}.py").is_file() for module in named), sorted(
        m for m in named if not (here / f"{m}.py").is_file())
