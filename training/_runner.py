"""The five-fold loop every training script shares: skip finished folds, write fold records, a summary,
per-query scores, a markdown table and a JSON log.

A trainer supplies ``run_fold(fold_number) -> record``; a record holds ``"fold"`` ("Fold1"), ``"test"``
(``{measure: mean}``), ``"per_query"`` (``{measure: {qid: value}}``), ``"seconds"`` and ``"selected"``
(what validation chose, e.g. ``{"iteration": 120}`` or ``{"epoch": 37, "learning_rate": 0.01}``).
"""

from __future__ import annotations

import dataclasses
import json
import sys
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np
from tqdm import tqdm

from gaprank.metrics import get_conventions

from .config import to_dict


def log_event(path: Path, **event: Any) -> None:
    """Append one JSON line to ``path``."""
    with path.open("a") as fh:
        fh.write(json.dumps({"time": time.strftime("%Y-%m-%dT%H:%M:%S"), **event}) + "\n")


def _selected_text(selected: dict[str, Any]) -> str:
    return ", ".join(f"{k} {v:g}" if isinstance(v, float) else f"{k} {v}" for k, v in selected.items())


def fold_table(name: str, measures: list[str], records: list[dict[str, Any]], means: dict[str, float]) -> str:
    """One row per fold, then the mean (markdown)."""
    lines = [f"| {name} | " + " | ".join(measures) + " | selected on vali |",
             "|---|" + "---:|" * len(measures) + "---|"]
    for record in records:
        lines.append(f"| {record['fold']} | " + " | ".join(f"{record['test'][m]:.4f}" for m in measures)
                     + f" | {_selected_text(record['selected'])} |")
    lines.append("| **mean** | " + " | ".join(f"**{means[m]:.4f}**" for m in measures) + " | |")
    return "\n".join(lines) + "\n"


def run_folds(
    config: Any,
    *,
    run_fold: Callable[[int], dict[str, Any]],
    folds: list[int],
    measures: list[str],
    conventions: str,
    g: Any,
    versions: dict[str, str],
    force: bool = False,
    progress: bool = True,
) -> dict[str, Any]:
    """Run ``run_fold`` for each fold (reusing ``folds/FoldK.json`` written with the same config unless
    ``force``) and write ``summary.json``, ``per_query.tsv``, ``table.md`` and ``log.jsonl`` under
    ``config.output_dir``. Returns the summary plus its ``"table"``, the folds trained in this call
    (``"trained_now"``) and the test values of each query (``"per_query"``: ``{fold: {measure: {qid: value}}}``)."""
    out = Path(config.output_dir)
    (out / "folds").mkdir(parents=True, exist_ok=True)
    log = out / "log.jsonl"
    config_data = to_dict(config)
    records, trained = [], []
    for number in tqdm(folds, desc=config.name, unit="fold", file=sys.stderr, disable=not progress):
        path = out / "folds" / f"Fold{number}.json"
        if path.exists() and not force:
            record = json.loads(path.read_text())
            if record.get("config") == config_data and "selected" in record:
                log_event(log, event="fold_skipped", fold=number, reason="finished with the same config")
                records.append(record)
                continue
        log_event(log, event="fold_start", fold=number)
        record = run_fold(number)
        record["config"] = config_data
        trained.append(record["fold"])
        path.write_text(json.dumps(record, indent=1))
        log_event(log, event="fold_done", fold=number, selected=record["selected"], seconds=record["seconds"],
                  test=record["test"])
        records.append(record)
    means = {m: float(np.mean([r["test"][m] for r in records])) for m in measures}
    summary = {
        "name": config.name,
        "dataset": config.data.dataset,
        "folds": [r["fold"] for r in records],
        "mean": means,
        "per_fold": {r["fold"]: {**r["test"], "selected": r["selected"], "seconds": r["seconds"]} for r in records},
        "seconds": round(sum(r["seconds"] for r in records), 3),
        "conventions": get_conventions(conventions).describe(),
        "g": g,
        "config": config_data,
        "versions": versions,
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=1))
    with (out / "per_query.tsv").open("w") as fh:
        fh.write("fold\tqid\t" + "\t".join(measures) + "\n")
        for r in records:
            for qid in r["per_query"][measures[0]]:
                fh.write(f"{r['fold']}\t{qid}\t" + "\t".join(f"{r['per_query'][m][qid]:.6f}" for m in measures) + "\n")
    table = fold_table(config.name, measures, records, means)
    (out / "table.md").write_text(table)
    log_event(log, event="run_done", mean=means)
    return summary | {"table": table, "trained_now": trained,
                      "per_query": {r["fold"]: r["per_query"] for r in records}}


def quick_variant(config: Any, **changes: Any) -> Any:
    """The ``--quick`` form of a run config: its first fold only, written under ``<output_dir>-quick``,
    with the script's own shortening in ``changes`` (e.g. fewer epochs)."""
    return dataclasses.replace(config, data=dataclasses.replace(config.data, folds=config.data.folds[:1]),
                               output_dir=f"{config.output_dir}-quick", **changes)


def parse_folds(text: str | None, dataset: str) -> list[int] | None:
    """``--folds 1,2`` -> [1, 2], checked like ``data.folds``."""
    from ._sections import DataConfig
    from .config import ConfigError

    if not text:
        return None
    try:
        folds = [int(f) for f in text.split(",")]
    except ValueError:
        raise ConfigError(f"--folds must be comma-separated fold numbers; got {text!r}") from None
    DataConfig(dataset, folds=folds).validate()
    return folds


def fold_script_main(argv: list[str] | None, *, prog: str, doc: str, example: str, config_class: type,
                     run: Callable[..., dict[str, Any]], quick: Callable[[Any], Any], quick_help: str) -> int:
    """The command line of a five-fold training script: config errors are one line and exit status 2."""
    import argparse

    from gaprank import GaprankInputError

    from .config import load_config

    parser = argparse.ArgumentParser(prog=prog, description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", required=True, help=f"YAML config, e.g. {example}")
    parser.add_argument("--folds", help="comma-separated subset of the config's folds, e.g. 1,2")
    parser.add_argument("--force", action="store_true", help="retrain folds that already have results")
    parser.add_argument("--quick", action="store_true", help=quick_help)
    args = parser.parse_args(argv)
    try:
        config = load_config(args.config, config_class)
        if args.quick:
            config = quick(config)
        result = run(config, folds=parse_folds(args.folds, config.data.dataset), force=args.force)
    except GaprankInputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(result["table"], end="")
    return 0
