"""The five-fold loop every training script shares: skip finished folds, write fold records, a summary,
per-query scores, a markdown table and a JSON log.

A trainer supplies ``run_fold(fold_number) -> record``; a record holds ``"fold"`` ("Fold1"), ``"test"``
(``{measure: mean}``), ``"per_query"`` (``{measure: {qid: value}}``), ``"seconds"`` and ``"selected"``
(what validation chose, e.g. ``{"iteration": 120}`` or ``{"epoch": 37, "learning_rate": 0.01}``).
The loop adds ``"provenance"``: the config, the fingerprint of the fold's data files (size and SHA-256)
and gaprank's version, with the versions of the engines beside them. A finished fold is reused only when
all three are unchanged (the config's ``output_dir`` aside, and a field added since at its default:
:func:`same_run_config`); otherwise it is retrained and the log says why.

Every file is written atomically (a killed run leaves the old file or none), an unreadable fold record
counts as unfinished, and the output directory is locked (``filelock``) while a run writes to it.
"""

from __future__ import annotations

import argparse
import contextlib
import contextvars
import dataclasses
import json
import os
import platform
import re
import subprocess
import sys
import time
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
from filelock import FileLock, Timeout
from tqdm import tqdm

import gaprank
from gaprank import GaprankInputError
from gaprank.data import fold_fingerprint, write_atomic, write_json_atomic
from gaprank.metrics import get_conventions

from .config import available_cores, local_processes, output_path, to_dict

LOCK_NAME = ".lock"
REPO = Path(__file__).resolve().parents[1]  # the repository: relative config paths and the commit
RESULTS = REPO / "results"  # the committed results: read by every run, written only when a command asks
SCRATCH = REPO / "runs"  # where a run whose results live in results/ writes otherwise (not tracked)
_publishing: contextvars.ContextVar[Path | None] = contextvars.ContextVar("publishing", default=None)


@contextlib.contextmanager
def publishing(directory: str | Path | None) -> Iterator[None]:
    """Within: runs write under ``directory`` (the command's ``--out``) as they are told, also where it lies in the
    committed ``results/``; everything else of theirs that would go into ``results/`` (a comparison's tuning
    studies, say) goes to :data:`SCRATCH` instead (:func:`destination`). None: nothing is asked for."""
    token = _publishing.set(None if directory is None else Path(directory).resolve())
    try:
        yield
    finally:
        _publishing.reset(token)


def destination(output_dir: str | Path) -> Path:
    """Where a run whose results live in ``output_dir`` writes: ``output_dir``, unless it is inside the
    repository's committed ``results/`` and the command did not ask to write there (``--out results/...``): then
    its counterpart under ``runs/``, so that following the docs never changes a tracked file. The committed
    records are still read, and reused where they stand for the run."""
    path = output_path(output_dir)
    asked = _publishing.get()
    resolved = path.resolve()
    if asked is not None and any(resolved == root or resolved.is_relative_to(root)
                                 for root in (asked, asked.with_name(asked.name + "-quick"))):
        return path
    try:
        relative = resolved.relative_to(RESULTS.resolve())
    except ValueError:
        return path
    return SCRATCH / relative


def announce_training(name: str, folds: list[int], seconds: list[float | None]) -> None:
    """One line on standard error before folds are trained: how many, and how long the earlier records of the
    same folds took where there are any, so that a long retrain is never a silent one."""
    known = [s for s in seconds if s is not None]
    took = f"; the earlier records of {len(known)} of them took {sum(known) / 60:.1f} min" if known else ""
    print(f"{name}: training {len(folds)} fold{'s' if len(folds) != 1 else ''} ({', '.join(f'Fold{n}' for n in folds)})"
          f"{took}", file=sys.stderr, flush=True)


class OutputInUse(GaprankInputError):
    """Another run holds the lock on an output directory."""


class OversubscribedWarning(UserWarning):
    """More threads than cores: the run is correct but slower than with fewer threads."""


_oversubscription_told = False


def use_threads(count: int, processes: int | None = None) -> None:
    """Run this process's torch operations and gaprank's compiled (numba) kernels on ``count`` threads
    (numba's capped at the pool it started with), so that a trial given one core uses one.

    ``processes``: how many processes of this run share the machine's cores (default: torchrun's
    ``LOCAL_WORLD_SIZE``, else 1). When ``count`` x ``processes`` exceeds the cores this process may use,
    one warning says so (once per process)."""
    import numba
    import torch

    global _oversubscription_told
    if processes is None:
        processes = local_processes()
    cores = available_cores()
    if count * processes > cores and not _oversubscription_told:
        _oversubscription_told = True
        alone = "" if processes == 1 else f" x {processes} processes"
        warnings.warn(f"{count} threads{alone} on {cores} cores: threads wait for each other and the run slows "
                      f"down; set num_threads to {max(1, cores // processes)} (or auto)", OversubscribedWarning,
                      stacklevel=2)
    torch.set_num_threads(count)
    numba.set_num_threads(max(1, min(count, numba.config.NUMBA_NUM_THREADS)))


def log_event(path: Path, **event: Any) -> None:
    """Append one JSON line to ``path``; a log that cannot be written (a full disk) is a one-line error."""
    try:
        with path.open("a") as fh:
            fh.write(json.dumps({"time": time.strftime("%Y-%m-%dT%H:%M:%S"), **event}) + "\n")
    except OSError as exc:
        raise GaprankInputError(f"cannot write the run log {path}: {exc.strerror or exc}") from None


def _progress_wanted(progress: bool) -> bool:
    """Asked for, and not switched off by ``TQDM_DISABLE`` (tqdm's own variable, which an explicit
    ``disable=`` would otherwise override)."""
    return progress and os.environ.get("TQDM_DISABLE", "").strip().lower() in ("", "0", "false")


def show_progress(progress: bool) -> bool:
    """Whether to draw progress bars: wanted (:func:`_progress_wanted`) and standard error a terminal; bars
    written to a log file are thousands of lines, so :func:`run_folds` prints one line per fold there
    instead."""
    return _progress_wanted(progress) and sys.stderr.isatty()


def _fold_line(name: str, record: dict[str, Any], measures: list[str]) -> str:
    """A finished fold in one line, for a log: what was selected on vali, the seconds and the test values."""
    test = ", ".join(f"{m} {record['test'][m]:.4f}" for m in measures)
    return f"{name} {record['fold']}: {_selected_text(record['selected'])}; {record['seconds']:.1f} s; test {test}"


def locked(directory: Path) -> FileLock:
    """The lock of an output directory, taken at once or refused with :class:`OutputInUse`:

    ``with locked(out): ...``. Two runs writing one directory would each train every fold and the last
    writer would win."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:  # a parent that is a file, no permission, a full or read-only disk
        raise GaprankInputError(f"cannot create the output directory {directory}: {exc.strerror or exc}") from None
    lock = FileLock(str(directory / LOCK_NAME), timeout=0)
    try:
        lock.acquire()
    except Timeout:  # (a TimeoutError, so an OSError: caught first)
        raise OutputInUse(f"{directory} is in use by another run (it holds {directory / LOCK_NAME}); wait for it "
                          "to finish or write elsewhere") from None
    except OSError as exc:
        raise GaprankInputError(f"cannot write in the output directory {directory}: {exc.strerror or exc}") from None
    return lock


def cpu_name() -> str:
    """The CPU's model name ("unknown CPU" where the system does not say)."""
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            for line in cpuinfo:
                key, _, value = line.partition(":")
                if key.strip() in ("model name", "Model") and value.strip():
                    return value.strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def machine_description() -> str:
    """Architecture, system, Python and CPU model. Recorded with results because a float32 model trained
    on another CPU can land elsewhere (torch's kernels differ by CPU), not used to decide reuse."""
    return f"{platform.machine()}, {platform.system()}, python {platform.python_version()}, {cpu_name()}"


def numeric_versions() -> dict[str, str]:
    """The numerical libraries every trainer computes with (recorded beside the engine's version)."""
    import numba

    return {"numpy": np.__version__, "numba": numba.__version__}


def fold_provenance(config: Any, number: int, versions: dict[str, str]) -> dict[str, Any]:
    """What produced a fold's result: the config, the fold's data fingerprint, gaprank's version (the
    reuse key), the engines' versions and the machine (recorded)."""
    data = config.data
    return {"config": to_dict(config),
            "data": fold_fingerprint(data.dataset, number, variant=data.variant, data_dir=data.data_dir),
            "gaprank": gaprank.__version__, "versions": versions | numeric_versions(),
            "machine": machine_description()}


def fields_at_default(config: Any) -> set[str]:
    """The fields of a config (or of one of its sections) that hold their default value."""
    names = set()
    for f in dataclasses.fields(config):
        if f.default is not dataclasses.MISSING:
            default = f.default
        elif f.default_factory is not dataclasses.MISSING:
            default = f.default_factory()
        else:
            continue
        if to_dict(getattr(config, f.name)) == to_dict(default):
            names.add(f.name)
    return names


def run_config_key(config: Any) -> dict[str, Any]:
    """What a run's results depend on in its config: all of it but ``output_dir`` (where a run writes
    does not change what it computes, so a moved result directory stays valid)."""
    return {k: v for k, v in to_dict(config).items() if k != "output_dir"}


def same_run_config(held: Any, config: Any) -> bool:
    """Whether a config recorded with a result (fold record or tuning study) stands for ``config``.

    A field the record lacks, at any depth (``training.device`` inside ``training``), matches when
    ``config`` holds its default there: a record written before the field existed was made as the
    default does, so a new field never invalidates results. ``output_dir`` is ignored."""
    if not isinstance(held, dict):
        return False
    return _same_section({k: v for k, v in held.items() if k != "output_dir"}, config, skip={"output_dir"})


def _same_section(held: Any, section: Any, skip: frozenset[str] | set[str] = frozenset()) -> bool:
    if not (dataclasses.is_dataclass(section) and not isinstance(section, type)):
        return held == to_dict(section)
    if not isinstance(held, dict):
        return False
    names = {f.name for f in dataclasses.fields(section)} - set(skip)
    if not set(held) <= names:
        return False  # the record has a field this config does not know
    at_default = fields_at_default(section)
    return all(_same_section(held[name], getattr(section, name)) if name in held else name in at_default
               for name in names)


def stale_reason(record: dict[str, Any], provenance: dict[str, Any], config: Any) -> str | None:
    """Why a finished record cannot stand for a run of ``config`` with ``provenance`` (None when it can)."""
    if "selected" not in record or "test" not in record:
        return "the record is incomplete"
    held = record.get("provenance")
    if held is None:
        return "the record carries no provenance (written before data fingerprints)"
    if not same_run_config(held.get("config"), config):
        return "the config changed since it was trained"
    for key, what in (("data", "the data files"), ("gaprank", "gaprank's version")):
        if held.get(key) != provenance[key]:
            return f"{what} changed since it was trained"
    return None


def _read_record(path: Path, log: Path, number: int, progress: bool) -> dict[str, Any] | None:
    if not path.exists():
        return None
    try:
        record = json.loads(path.read_text())
        if not isinstance(record, dict):
            raise ValueError("not a JSON object")
        return record
    except (ValueError, OSError) as exc:
        log_event(log, event="fold_record_unreadable", fold=number, error=str(exc))
        if progress:
            print(f"Fold{number}: {path} is unreadable ({exc}); training it again", file=sys.stderr)
        return None


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
    folds: list[int] | None,
    measures: list[str],
    conventions: str | None,
    g: Any,
    versions: dict[str, str],
    force: bool = False,
    progress: bool = True,
) -> dict[str, Any]:
    """Run ``run_fold`` for each fold of ``folds`` (default: the config's ``data.folds``), reusing a
    ``folds/FoldK.json`` whose provenance matches unless ``force``, and write ``summary.json``,
    ``per_query.tsv``, ``table.md`` and ``log.jsonl`` under ``config.output_dir``. The summary covers every
    finished fold of the config, also those not in ``folds``. Returns the summary plus its ``"table"``,
    the folds trained in this call (``"trained_now"``) and the test values of each query
    (``"per_query"``: ``{fold: {measure: {qid: value}}}``)."""
    configured = list(config.data.folds)
    chosen = configured if folds is None else list(folds)
    outside = [f for f in chosen if f not in configured]
    if outside:
        raise GaprankInputError(f"{config.name}: fold{'s' if len(outside) > 1 else ''} {outside} not among the "
                                f"config's data.folds {configured}")
    published = output_path(config.output_dir)
    out = destination(published)
    with locked(out):
        (out / "folds").mkdir(parents=True, exist_ok=True)
        log = out / "log.jsonl"
        if out != published and _progress_wanted(progress):
            print(f"{config.name}: writing to {out} ({published} is read, never written; --out {published} writes "
                  "there)", file=sys.stderr)
        by_fold, trained = {}, []
        records, reasons, provenances = {}, {}, {}
        for number in configured:  # what each fold has, before any is trained
            path = out / "folds" / f"Fold{number}.json"
            provenance = provenances[number] = fold_provenance(config, number, versions)
            record = _read_record(path, log, number, progress)
            reason = "no finished record" if record is None else stale_reason(record, provenance, config)
            if reason is not None and out != published:
                # the committed record: copied over where it stands for the run (and the scratch one does not)
                committed = _read_record(published / "folds" / f"Fold{number}.json", log, number, progress)
                committed_reason = None if committed is None else stale_reason(committed, provenance, config)
                if committed is not None and committed_reason is None and not force:
                    write_json_atomic(path, committed)
                    record, reason = committed, None
                elif record is None and committed is not None:
                    record, reason = committed, committed_reason
            records[number] = record
            reasons[number] = "--force" if force else reason
        to_train = [n for n in chosen if reasons[n] is not None]
        if to_train and _progress_wanted(progress):
            announce_training(config.name, to_train, [(records[n] or {}).get("seconds") for n in to_train])
        bars = show_progress(progress)
        lines = _progress_wanted(progress) and not bars  # standard error is a file: a line per fold, not bars
        for number in tqdm(configured, desc=config.name, unit="fold", file=sys.stderr, disable=not bars):
            path = out / "folds" / f"Fold{number}.json"
            provenance, record, reason = provenances[number], records[number], reasons[number]
            if reason is None:
                if number in chosen:
                    log_event(log, event="fold_skipped", fold=number, reason="finished with the same config, data and version")
                    if lines:
                        print(f"{config.name} Fold{number}: finished before with the same config, data and version; "
                              "reused", file=sys.stderr)
                by_fold[number] = record
                continue
            if number not in chosen:
                continue  # not asked for now; a stale or missing record stays out of the summary
            if record is not None and reason != "--force":
                log_event(log, event="fold_stale", fold=number, reason=reason)
                if progress:
                    print(f"Fold{number}: {reason}; training it again", file=sys.stderr)
            log_event(log, event="fold_start", fold=number)
            record = run_fold(number)
            record["provenance"] = provenance
            trained.append(record["fold"])
            write_json_atomic(path, record)
            log_event(log, event="fold_done", fold=number, selected=record["selected"], seconds=record["seconds"],
                      test=record["test"])
            if lines:
                print(_fold_line(config.name, record, measures), file=sys.stderr, flush=True)
            by_fold[number] = record
        records = [by_fold[n] for n in configured if n in by_fold]
        means = {m: float(np.mean([r["test"][m] for r in records])) for m in measures}
        summary = {
            "name": config.name,
            "dataset": config.data.dataset,
            "folds": [r["fold"] for r in records],
            "mean": means,
            "per_fold": {r["fold"]: {**r["test"], "selected": r["selected"], "seconds": r["seconds"]} for r in records},
            "seconds": round(sum(r["seconds"] for r in records), 3),
            "conventions": None if conventions is None else get_conventions(conventions).describe(),
            "g": g,
            "config": to_dict(config),
            "versions": versions | numeric_versions(),
        }
        write_json_atomic(out / "summary.json", summary)
        lines = ["fold\tqid\t" + "\t".join(measures) + "\n"]
        for r in records:
            for qid in r["per_query"][measures[0]]:
                lines.append(f"{r['fold']}\t{qid}\t" + "\t".join(f"{r['per_query'][m][qid]:.6f}" for m in measures) + "\n")
        write_atomic(out / "per_query.tsv", "".join(lines))
        table = fold_table(config.name, measures, records, means)
        write_atomic(out / "table.md", table)
        log_event(log, event="run_done", mean=means)
    return summary | {"table": table, "trained_now": trained,
                      "per_query": {r["fold"]: r["per_query"] for r in records}}


def published_root(output_dir: str, quick: bool) -> Path:
    """Where a config's results live: ``output_dir``, or ``<output_dir>-quick`` for ``--quick`` (CI's smoke runs)."""
    return output_path(str(output_path(output_dir)) + ("-quick" if quick else ""))


def output_root(output_dir: str, quick: bool) -> Path:
    """Where a script writes: :func:`published_root`, under ``runs/`` instead of the committed ``results/`` unless
    the command asked (:func:`destination`)."""
    return destination(published_root(output_dir, quick))


def quick_variant(config: Any, **changes: Any) -> Any:
    """The ``--quick`` form of a run config: its first fold only, written under ``<output_dir>-quick``,
    with the script's own shortening in ``changes`` (e.g. fewer epochs)."""
    return dataclasses.replace(config, data=dataclasses.replace(config.data, folds=config.data.folds[:1]),
                               output_dir=str(output_root(config.output_dir, quick=True)), **changes)


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


def plain_text(doc: str | None) -> str | None:
    """A module doc as a terminal shows it: reST's roles (``:mod:`x```) and literals (````x````) as their text."""
    if doc is None:
        return None
    text = re.sub(r":[a-z]+:`~?([^`]+)`", r"\1", doc)
    return re.sub(r"``([^`]+)``", r"\1", text)


def script_parser(prog: str, doc: str | None, example: str) -> argparse.ArgumentParser:
    """The command line every training script starts from: its module doc as help, and ``--config``."""
    parser = argparse.ArgumentParser(prog=prog, description=plain_text(doc),
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", required=True, help=f"YAML config, e.g. {example}")
    return parser


def fold_script_main(argv: list[str] | None, *, prog: str, doc: str, example: str, config_class: type,
                     run: Callable[..., dict[str, Any]], quick: Callable[[Any], Any], quick_help: str) -> int:
    """The command line of a five-fold training script: config errors are one line and exit status 2."""
    from gaprank import GaprankInputError

    from ._baselines import baselines_table
    from ._distributed import RankLost, launched_rank
    from .config import load_config

    parser = script_parser(prog, doc, example)
    parser.add_argument("--folds", help="comma-separated subset of the config's folds, e.g. 1,2")
    parser.add_argument("--force", action="store_true", help="retrain folds that already have results")
    parser.add_argument("--quick", action="store_true", help=quick_help)
    parser.add_argument("--out", help="write under this directory instead of runs/<the config's output_dir under "
                                      "results/> (--out results/... updates the committed results)")
    args = parser.parse_args(argv)
    try:
        config = load_config(args.config, config_class)
        if args.out is not None:
            config = dataclasses.replace(config, output_dir=str(output_path(args.out, "--out")))
        if args.quick:
            config = quick(config)
        with publishing(args.out):
            result = run(config, folds=parse_folds(args.folds, config.data.dataset), force=args.force)
        baselines = baselines_table(config.data.dataset, config.data.data_dir, config.evaluation.measures)
    except GaprankInputError as exc:
        if launched_rank() == 0:  # under torchrun every rank meets the same error; one says it
            print(f"error: {exc}", file=sys.stderr)
        return 2
    except RankLost as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    if launched_rank() != 0:
        return 0
    print(result["table"], end="")
    if baselines:
        print("\n" + baselines, end="")
    return 0


def checkout_commit() -> str:
    """The repository's HEAD, marked when code or configs differ from it (``results/`` excepted)."""
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True, check=True).stdout.strip()
        # results/ is what the run writes; anything else uncommitted means the code or configs differ from HEAD
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--", ".", ":!results"], cwd=REPO,
                               capture_output=True, text=True, check=True).stdout.strip()
        return head + ("+uncommitted changes" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown (not a git checkout)"
