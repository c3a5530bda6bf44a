"""The official LETOR baselines: published test numbers shown next to ours (never rerun here)."""

from __future__ import annotations

import csv
from pathlib import Path

from gaprank import GaprankInputError
from gaprank.data import dataset_file

from .config import ConfigError

# Each data set's flattened baseline spreadsheet: the set's name, then the path inside its folder.
OFFICIAL_BASELINES = {"OHSUMED": "OHSUMED/letor3-baselines/ohsumed_letor3_baselines.csv"}


def find_baselines(relative: str, data_dir: str | None) -> Path | None:
    """The baselines file ``relative`` ("<DATASET>/<path inside the set's folder>") from the first place
    holding the set with that file (the bundled OHSUMED has LETOR 3.0's), or None when none has it."""
    dataset, _, inside = relative.replace("\\", "/").partition("/")
    if not dataset or not inside or dataset in (".", ".."):
        raise ConfigError(f"letor_baselines: {relative!r} must be <DATASET>/<path inside the set's folder>")
    try:
        return dataset_file(dataset, inside, data_dir=data_dir)
    except GaprankInputError as exc:
        raise ConfigError(f"letor_baselines: {exc}") from None


def letor_baselines(path: Path, measures: list[str]) -> dict[str, dict[str, float]]:
    """{algorithm: {measure: test mean over the five folds}} from the flattened LETOR 3.0 spreadsheet."""
    table: dict[str, dict[str, float]] = {}
    with path.open() as fh:
        for row in csv.DictReader(fh):
            if row["split"] == "test" and row["fold"] == "average" and row["metric"] in measures:
                table.setdefault(row["algorithm"], {})[row["metric"]] = float(row["value"])
    if not table:
        raise ConfigError(f"{path}: no test averages for {measures}")
    return table


def baselines_table(dataset: str, data_dir: str | None, measures: list[str]) -> str:
    """A markdown table of the data set's official baselines for ``measures`` (those it reports), or ""
    when the data set ships none."""
    relative = OFFICIAL_BASELINES.get(dataset)
    if relative is None:
        return ""
    path = find_baselines(relative, data_dir)
    if path is None:
        return ""
    shown = [m for m in measures if m in {"MAP"} | {f"NDCG@{k}" for k in range(1, 11)} | {f"P@{k}" for k in range(1, 11)}]
    if not shown:
        return ""
    table = letor_baselines(path, shown)
    lines = [f"| LETOR 3.0 baseline (published, mean of five folds) | {' | '.join(shown)} |",
             "|---|" + "---:|" * len(shown)]
    for algorithm, values in table.items():
        lines.append(f"| {algorithm} | " + " | ".join(f"{values[m]:.4f}" if m in values else "–" for m in shown) + " |")
    return "\n".join(lines) + "\n"
