"""Doctests of an integration module whose library is not installed are not collected (its tests skip)."""

import importlib.util

_NEEDS = {"ir_measures.py": "ir_measures", "torchmetrics.py": "torchmetrics",
          "sentence_transformers.py": "sentence_transformers"}
collect_ignore = [f"src/gaprank/{module}" for module, library in _NEEDS.items()
                  if importlib.util.find_spec(library) is None]
