"""The test tiers (``pytest -m``): which tier each test module, doctest module or test is in, and which modules a
``-m`` expression leaves out whole. Read by ``tests/conftest.py`` (the markers) and the checkout's ``conftest.py``
(the collection of ``tests/`` and ``src/``)."""

from __future__ import annotations

import re

# Test tiers, by module or by test (``module::test_function``, which wins over its module's tier); pytest -m "not e2e"
# is the quick run, README's command runs every tier.
# oracle: measures against independent implementations and published numbers; integration: another library's
# own computation, the file system, the CLI or a subprocess; e2e: what runs a training script or job (a CLI command
# that fits a model included), a notebook or a documentation page, or several processes working together (torch
# distributed, Dask). Everything else is unit.
TIERS = {
    "oracle": {"test_metrics_oracle", "test_against_trec_eval", "test_paper_checks", "test_cli_trec_eval_names",
               "test_elementwise", "test_swap_deltas"},
    "integration": {"test_lightgbm", "test_xgboost", "test_ir_measures", "test_torchmetrics", "test_cli_main",
                    "test_cli_trec", "test_cli_project_files", "test_data", "test_data_import", "test_cache",
                    "test_web_scale_data", "test_letor_eval"},
    "e2e": {"test_readme_example", "test_notebooks", "test_distributed", "test_training_cv", "test_training_sanity",
            "test_docs_blocks", "test_docs_pages", "test_tune", "test_training_lambdamart", "test_cli_training_scripts",
            "test_dask", "test_sentence_transformers", "test_synthetic", "test_data_replace", "test_compare_tuned",
            "test_training_compare", "test_threads_fork", "test_data_import_hardening",
            # the compiled kernels' threads: fresh interpreters with signals, Ctrl-C, forks and 8 Python threads
            "test_lanes",
            # gaprank warmup and a first compile, each in a fresh interpreter with an empty numba cache
            "test_warmup",
            # the doctests of the sentence-transformers adapter (src/gaprank/sentence_transformers.py), like its tests
            "sentence_transformers",
            # gaprank data import and gaprank baseline (a least-squares fit on MQ2008 Fold 1) in two processes
            "test_cli_main::test_the_cli_runs_on_the_lean_install",
            # two gloo processes synchronising the metric's state
            "test_torchmetrics::test_state_is_synchronised_across_processes"},
}


def tier_of(module: str, test: str) -> str:
    """The tier of test function ``test`` of test module ``module``: its own entry, else its module's, else unit."""
    for key in (f"{module}::{test}", module):
        for name, entries in TIERS.items():
            if key in entries:
                return name
    return "unit"


def module_left_out(markexpr: str, module: str) -> bool:
    """Whether ``-m markexpr`` leaves out every test of module ``module`` (a test module's or a source module's file
    stem), so that it need not be imported: only for a module whose tier is its own (no test of it has a tier of
    its own), and only when the expression names tiers alone."""
    if not markexpr or not (module.startswith("test_") or any(module in entries for entries in TIERS.values())):
        return False
    if any(key.startswith(f"{module}::") for entries in TIERS.values() for key in entries):
        return False  # tiers of its own tests: leave it to the markers
    tier = tier_of(module, "")
    try:
        names, selected = _evaluate(markexpr, tier)
    except ValueError:  # not an expression of names, and, or, not and parentheses: collect, and let -m deselect
        return False
    if not names <= set(TIERS) | {"unit"}:
        return False  # a marker other than the tiers (xfail, filterwarnings, ...): only the module's tests can say
    return not selected


def _evaluate(markexpr: str, tier: str) -> tuple[set[str], bool]:
    """The marker names of ``-m markexpr`` and whether it selects a test marked ``tier`` alone: the expression
    read as pytest reads one (names, ``and``, ``or``, ``not``, parentheses), a ValueError for anything else."""
    tokens = re.findall(r"\(|\)|[^\s()]+", markexpr)
    names = {token for token in tokens if token not in ("(", ")", "and", "or", "not")}
    if not all(re.fullmatch(r"[A-Za-z_][\w]*", name) for name in names):
        raise ValueError(markexpr)
    words = [token if token in ("(", ")", "and", "or", "not") else str(token == tier) for token in tokens]
    try:
        return names, bool(eval(" ".join(words), {"__builtins__": {}}, {}))  # noqa: S307 - True, False, and/or/not only
    except SyntaxError as exc:
        raise ValueError(markexpr) from exc
