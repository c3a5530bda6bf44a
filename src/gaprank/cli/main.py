"""``gaprank`` command line: ``gaprank eval`` (LETOR and TREC modes), ``gaprank baseline`` and ``gaprank data``;
``gaprank --version``.

Exit codes: 0 success, 2 bad command line or bad input file (the message says which and where).
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import signal
import sys
import textwrap
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .. import __version__
from .._inputs import GaprankInputError
from ..data import (
    DATASETS,
    DataNotFoundError,
    data_locations,
    dataset_info,
    find_dataset,
    fold_files,
    import_dataset,
    load_fold,
    read_letor,
    read_qrels,
    read_run,
    read_scores,
    remove_stale_imports,
    to_json,
    write_atomic,
)
from ..metrics import did_you_mean, evaluate_letor, evaluate_trec, trec_measure


def _parse_g(text: str | None) -> list[float] | None:
    if text is None:
        return None
    try:
        return [float(x) for x in text.split(",")]
    except ValueError:
        raise GaprankInputError(f"--g must be comma-separated numbers such as 0.5,0.5; got {text!r}") from None


def _print_table(per_query: dict[str, dict[str, float]], means: dict[str, float], fmt: str, show_queries: bool,
                 settings: dict[str, dict[str, str]] | None = None) -> None:
    if fmt == "json":
        payload: dict = dict(means)
        if settings:
            payload["settings"] = settings
        if show_queries:
            payload["per_query"] = per_query
        print(to_json(payload))
        return
    names = list(means)
    if show_queries:
        print("qid\t" + "\t".join(names))
        for qid, values in per_query.items():
            print(qid + "\t" + "\t".join(f"{values[n]:.4f}" for n in names))
        print("mean\t" + "\t".join(f"{means[n]:.4f}" for n in names))
    else:
        width = max(len(n) for n in names)
        for n in names:
            print(f"{n:<{width}}  {means[n]:.4f}")


def _eval_letor(args: argparse.Namespace) -> None:
    split = read_letor(args.letor, null="nan" if args.feature is None else "min")
    if args.scores is not None:
        scores = read_scores(args.scores, expected_lines=len(split.labels))
    else:
        if not 1 <= args.feature <= split.num_features:
            raise GaprankInputError(f"--feature must be 1..{split.num_features}; got {args.feature}")
        scores = split.features[:, args.feature - 1]
    results = evaluate_letor(scores, split.labels, split.group_sizes, g=_parse_g(args.g), conventions=args.conventions)
    qids = split.query_ids
    per_query = {q: {name: float(v[i]) for name, v in results.items()} for i, q in enumerate(qids)}
    means = {name: float(np.mean(v)) for name, v in results.items()}
    if args.format == "text":
        source = args.scores if args.scores is not None else f"feature {args.feature}"
        print(f"# {args.letor}: {len(qids)} queries, {len(split.labels)} documents, scores from {source}, "
              f"conventions {args.conventions}", file=sys.stderr)
    _print_table(per_query, means, args.format, args.per_query)


def _eval_trec(args: argparse.Namespace) -> None:
    if not args.measure:
        raise GaprankInputError("TREC mode needs at least one -m MEASURE (e.g. -m GAP -m nDCG@10 -m P@10)")
    for measure in args.measure:  # checked before the files are read
        trec_measure(measure)
    qrels = read_qrels(args.qrels)
    run = read_run(args.run)
    if not any(q in qrels for q in run) and not args.complete:
        raise GaprankInputError(f"no query of {args.run} has judgments in {args.qrels}")
    result = evaluate_trec(qrels, run, args.measure, g=_parse_g(args.g), ties=args.ties, complete=args.complete,
                           conventions=args.conventions)
    qids, means = result.query_ids, result.means
    if args.format == "json":
        per_query = {q: {name: float(v[i]) for name, v in result.per_query.items()} for i, q in enumerate(qids)}
        _print_table(per_query, means, "json", args.per_query, result.settings)
        return
    if args.conventions is not None:
        print(f"# conventions {args.conventions}: what a measure string leaves open follows {args.conventions}",
              file=sys.stderr)
    for name, used in result.settings.items():
        said = [f"gaprank's {used['measure']}"] if "measure" in used else []
        said += [f"gain {used['gain']}, discount {used['discount']}"] if "gain" in used else []
        print(f"# {name}: {'; '.join(said)}", file=sys.stderr)
    for name, values in result.per_query.items():
        if args.per_query:
            for q, v in zip(qids, values, strict=True):
                print(f"{name}\t{q}\t{v:.4f}")
        print(f"{name}\tall\t{means[name]:.4f}")


# each mode's own options: given in the other mode they would be ignored, so they are refused
_LETOR_ONLY = {"scores": "--scores", "feature": "--feature"}
_TREC_ONLY = {"measure": "-m/--measure", "complete": "--complete", "ties": "--ties"}


def _cmd_eval(args: argparse.Namespace) -> None:
    letor_mode = args.letor is not None
    trec_mode = args.qrels is not None or args.run is not None
    if letor_mode == trec_mode:
        raise GaprankInputError("give either --letor FILE (with --scores or --feature) or --qrels FILE --run FILE")
    others = _TREC_ONLY if letor_mode else _LETOR_ONLY
    given = [flag for key, flag in others.items() if getattr(args, key) not in (None, False, [])]
    if given:
        mode, own = ("LETOR", "it prints its fixed measures (see --help)") if letor_mode else ("TREC", "")
        raise GaprankInputError(f"{given[0]} is not an option of {mode} mode{'; ' + own if own else ''}")
    if letor_mode:
        if (args.scores is None) == (args.feature is None):
            raise GaprankInputError("LETOR mode needs exactly one of --scores FILE or --feature K")
        args.conventions = args.conventions or "letor3"
        _eval_letor(args)
    else:
        if args.qrels is None or args.run is None:
            raise GaprankInputError("TREC mode needs both --qrels and --run")
        args.ties = args.ties or "trec_eval"
        _eval_trec(args)


def _ridge(features: np.ndarray, labels: np.ndarray, alpha: float) -> tuple[np.ndarray, float]:
    """Ridge regression with an unpenalised intercept: the weights minimise ``|y - X w - b|^2 + alpha |w|^2``
    (centred data, then the least-squares solution of the system stacked with ``sqrt(alpha) I``, which also
    takes ``alpha = 0`` and constant features)."""
    x = np.asarray(features, dtype=np.float64)
    y = np.asarray(labels, dtype=np.float64)
    x_mean, y_mean = x.mean(0), y.mean()
    stacked = np.vstack([x - x_mean, np.sqrt(alpha) * np.eye(x.shape[1])])
    target = np.concatenate([y - y_mean, np.zeros(x.shape[1])])
    weights = np.linalg.lstsq(stacked, target, rcond=None)[0]
    return weights, float(y_mean - x_mean @ weights)


def _cmd_baseline(args: argparse.Namespace) -> None:
    """Least-squares linear regression on the fold's train set: LETOR's 'Regression' baseline, pointwise."""
    if not (np.isfinite(args.alpha) and args.alpha >= 0):
        raise GaprankInputError(f"--alpha must be a finite number >= 0; got {args.alpha}")
    out = Path(args.out)
    if out.is_dir():
        raise GaprankInputError(f"--out {out} is a directory; give a file name")
    try:
        fold = load_fold(args.dataset, args.fold, variant=args.variant, data_dir=args.data_dir)
    except DataNotFoundError as exc:
        hint = did_you_mean(args.dataset, [info.name for info in DATASETS.values()])
        if dataset_info(args.dataset) is not None or not hint:
            raise
        raise DataNotFoundError(f"{exc} {hint[0].upper()}{hint[1:]}") from None
    weights, intercept = _ridge(fold.train.features, fold.train.labels, args.alpha)
    split = fold.split(args.split)
    scores = split.features @ weights + intercept
    write_atomic(out, "".join(f"{s:.10g}\n" for s in scores))
    files = fold_files(args.dataset, args.fold, variant=args.variant, data_dir=args.data_dir)[args.split]
    print(f"wrote {len(scores)} scores for {fold.name} {args.split} ({split.num_queries} queries) to {out}")
    if len(files) == 1:
        # the data set's own evaluation conventions, so the hint reproduces its published numbers
        info = dataset_info(args.dataset)
        conventions = info.conventions if info is not None else "letor3"
        print(f"evaluate with: gaprank eval --letor {files[0]} --scores {out} --conventions {conventions}")


@contextlib.contextmanager
def _data_warnings() -> Iterator[None]:
    """gaprank's own warnings (an unreadable place passed over, files an import skipped) as one line each."""
    with warnings.catch_warnings():
        show = warnings.showwarning

        def one_line(message: Warning | str, category: type[Warning], filename: str, lineno: int, file: Any = None,
                     line: str | None = None) -> None:
            if category.__module__.startswith("gaprank."):
                print(f"gaprank data: warning: {str(message).removeprefix('gaprank: ')}", file=sys.stderr)
            else:
                show(message, category, filename, lineno, file, line)
        warnings.showwarning = one_line
        yield


def _cmd_warmup(args: argparse.Namespace) -> None:
    import time

    import numba

    from ._warmup import compile_kernels

    start = time.perf_counter()
    logger = logging.getLogger("gaprank")
    level = logger.level
    logger.setLevel(logging.ERROR)  # this command is the notice that kernels are being compiled
    try:
        calls = compile_kernels()
    finally:
        logger.setLevel(level)
    where = getattr(numba.config, "CACHE_DIR", "") or "numba's default cache (__pycache__ beside gaprank's modules)"
    print(f"compiled gaprank's kernels in {time.perf_counter() - start:.1f} s ({calls} calls); cached in {where}")


def _cmd_data_list(args: argparse.Namespace) -> None:
    with _data_warnings():
        _data_list(args)


def _data_list(args: argparse.Namespace) -> None:
    """Every named set: where it is read from (the first place holding it), its download page and citation."""
    for path in remove_stale_imports():
        print(f"gaprank data: removed {path}, left by an import that was stopped", file=sys.stderr)
    places = data_locations(args.data_dir)
    rows: list[dict[str, Any]] = []
    for info in DATASETS.values():
        found = find_dataset(info.name, variant=info.variant, data_dir=args.data_dir)
        status, where = "missing", ""
        if found is not None:
            place, folder = found
            status, where = ("bundled" if place.kind == "bundled" else "found"), str(folder)
        rows.append({"name": info.name, "status": status, "path": where, "download": info.download,
                     "citation": info.citation, "features": info.num_features, "grades": f"0..{info.max_label}",
                     "layout": info.expected_layout()})
    if args.format == "json":
        print(to_json(rows))
        return
    width = max(len(r["name"]) for r in rows)
    for row in rows:
        where = f" {row['path']}" if row["status"] == "found" else ""
        print(f"{row['name']:<{width}}  {row['status']}{where}")
        print(f"{'':<{width}}  download: {row['download']}")
        print(f"{'':<{width}}  cite: {row['citation']}")
    print(f"looked in: {'; '.join(place.describe() for place in places)}. Import a download with: "
          "gaprank data import NAME PATH")


def _cmd_data_import(args: argparse.Namespace) -> None:
    info = dataset_info(args.name)
    try:
        with _data_warnings():
            target = import_dataset(args.name, args.path, replace=args.replace, progress=sys.stderr.isatty(),
                                    max_size=args.max_size)
    except KeyboardInterrupt as exc:  # SIGINT, SIGTERM or SIGHUP: the import cleaned up; one line, no traceback
        number = getattr(exc, "signum", signal.SIGINT)
        imported = getattr(exc, "imported", None)
        outcome = f"{imported} was made current before it stopped" if imported else "nothing was imported"
        print(f"gaprank data: interrupted by {signal.Signals(number).name}; {outcome}", file=sys.stderr)
        raise SystemExit(128 + number) from None
    print(f"imported {info.name if info else args.name} into {target}")


class _HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Every option's help ends with its default, where it has one; lines never break inside a name with a
    hyphen (``--data-dir``, ``MSLR-WEB10K``)."""

    def _split_lines(self, text: str, width: int) -> list[str]:
        return textwrap.wrap(" ".join(text.split()), width, break_on_hyphens=False)

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if action.option_strings and "%(default)" not in text and action.default not in (None, False, [],
                                                                                           argparse.SUPPRESS):
            text += " (default: %(default)s)"
        return text


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="gaprank", description="Graded Average Precision for learning to rank.",
                                     formatter_class=_HelpFormatter)
    parser.add_argument("--version", action="version", version=f"gaprank {__version__}",
                        help="print gaprank's version and exit")
    sub = parser.add_subparsers(dest="command", required=True)

    ev = sub.add_parser("eval", help="evaluate a ranking (LETOR files or TREC qrels/run)", formatter_class=_HelpFormatter,
                        description="LETOR mode: --letor FILE with --scores FILE (one score per line, as LETOR's\n"
                                    "tool) or --feature K; prints NDCG@1..10, P@1..10, MAP, GAP, xGAP and eGAP.\n"
                                    "TREC mode: --qrels FILE --run FILE -m MEASURE [-m MEASURE ...].")
    ev.add_argument("--letor", metavar="FILE", help="LETOR mode: LETOR/SVMlight file (.txt or .gz) with labels, qids "
                                                    "and #docid comments")
    ev.add_argument("--scores", metavar="FILE", help="LETOR mode: prediction file, one score per line, aligned with "
                                                     "--letor")
    ev.add_argument("--feature", metavar="K", type=int, help="LETOR mode: rank by feature K of the --letor file "
                                                             "instead of --scores")
    ev.add_argument("--conventions", choices=["letor3", "letor4", "trec"],
                    help="LETOR mode: the LETOR tool whose conventions NDCG/P/MAP follow (default: letor3; "
                         "MQ2007/MQ2008 use letor4). TREC mode: rules for the settings a measure string leaves "
                         "open (trec: as trec_eval and ir_measures, nDCG's gain the grade); default none, each "
                         "string as gaprank's metric functions read it")
    ev.add_argument("--qrels", metavar="FILE", help="TREC mode: qrels file, qid iter docid grade (graded)")
    ev.add_argument("--run", metavar="FILE", help="TREC mode: run file, qid Q0 docid rank score tag (fields after "
                                                  "the tag are ignored, as by trec_eval)")
    ev.add_argument("-m", "--measure", action="append", default=[],
                    help="TREC mode: a measure, repeatable: GAP, nDCG@10, P@10, AP, 'RBP(p=0.9)', ... Each means "
                         "what it means everywhere in gaprank (nDCG@10: gain 2^grade - 1, discount 1/log2(r+1); "
                         "'nDCG(gain=linear)@10' for the grade as gain). trec_eval's names are accepted for the "
                         "measures gaprank computes equally, and mean trec_eval's measure: map, map_cut.k, P.k, "
                         "ndcg, ndcg_cut.k (gain = the grade), recip_rank, Rprec, recall.k, success.k (P_10 as "
                         "trec_eval prints it, too)")
    ev.add_argument("--complete", action="store_true",
                    help="TREC mode: also score qrels queries absent from the run (trec_eval -c)")
    ev.add_argument("--ties", choices=["trec_eval", "stable", "pessimistic", "optimistic"],
                    help="TREC mode: how tied scores rank (default: trec_eval, docid descending as trec_eval does; "
                         "the others as the metric functions' ties=, from the run's order)")
    ev.add_argument("--g", metavar="G1,...,GC", help="GAP/xGAP/eGAP threshold probabilities g_1,...,g_c, summing to 1 "
                                                     "(default: uniform over the grades 1..c)")
    ev.add_argument("--per-query", action="store_true", help="also print every query's values")
    ev.add_argument("--format", default="text", choices=["text", "json"], help="output format")
    ev.set_defaults(handler=_cmd_eval)

    names = ", ".join(info.name for info in DATASETS.values())
    bl = sub.add_parser("baseline", formatter_class=_HelpFormatter,
                        help="fit a linear regression ranker on a fold's train set and write its scores",
                        description="Least-squares linear regression (ridge) on the fold's train set, LETOR's\n"
                                    "'Regression' baseline: writes one score per line for the chosen split, then\n"
                                    "prints the gaprank eval command that evaluates it.")
    bl.add_argument("--dataset", required=True, metavar="NAME", help=f"the data set: {names}, or a folder name under "
                                                                     "--data-dir")
    bl.add_argument("--fold", type=int, default=1, help="the fold number, 1..5 for the five-fold sets")
    bl.add_argument("--variant", default=None, help="feature variant (OHSUMED: QueryLevelNorm, Feature-min, "
                                                    "Feature-null; default: the set's own)")
    bl.add_argument("--split", default="test", choices=["train", "vali", "test"], help="the split to score")
    bl.add_argument("--alpha", type=float, default=1.0, help="ridge penalty")
    bl.add_argument("--data-dir", default=None, metavar="DIR",
                    help="a data directory looked in first (then GAPRANK_DATA, the user data directory, the bundled "
                         "sets)")
    bl.add_argument("--out", required=True, metavar="FILE", help="the score file to write (one score per line)")
    bl.set_defaults(handler=_cmd_baseline)

    data = sub.add_parser("data", help="the data sets: where each is read from; import a download",
                          description="Sets are read from, in order: --data-dir / data_dir=, GAPRANK_DATA, the user "
                                      "data directory (where 'import' copies them), the sets bundled with gaprank.")
    data_sub = data.add_subparsers(dest="data_command", required=True)
    ls = data_sub.add_parser("list", help="every named set: bundled, found where, or missing; download page, citation")
    ls.add_argument("--data-dir", default=None, help="a data directory looked in first")
    ls.add_argument("--format", default="text", choices=["text", "json"])
    ls.set_defaults(handler=_cmd_data_list)
    imp = data_sub.add_parser("import", help="check a downloaded set and copy it into the user data directory",
                              description="PATH is the unpacked download, or its .zip / .tar.gz. The set's layout, "
                                          "feature count, grade scale and folds are checked before anything is copied "
                                          "into place.")
    imp.add_argument("name", help=f"the set's name: {', '.join(i.name for i in DATASETS.values())}")
    imp.add_argument("path", help="the download: a folder, a .zip or a tar archive")
    imp.add_argument("--replace", action="store_true", help="replace a copy imported before (readers see the old "
                     "copy or the new one, never a mix)")
    imp.add_argument("--max-size", default="100G",
                     help="the largest uncompressed size an archive may declare, e.g. 500M, 200G (default 100G)")
    imp.set_defaults(handler=_cmd_data_import)

    warm = sub.add_parser("warmup", help="compile gaprank's kernels now, so that no first call pauses",
                          description="Compile every numba kernel gaprank uses (about 15 s) into numba's disk cache, "
                                      "which later processes load: run it once after installing, e.g. in a Docker "
                                      "build or a CI step.")
    warm.set_defaults(handler=_cmd_warmup)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        args.handler(args)
        sys.stdout.flush()  # a full or closed output fails here, not in the interpreter's exit
    except GaprankInputError as exc:
        print(f"gaprank {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # pragma: no cover - e.g. piped into head
        _discard_stdout()
        return 0
    except OSError as exc:  # standard output cannot be written: a full disk, /dev/full
        _discard_stdout()
        print(f"gaprank {args.command}: error: cannot write the output: {exc.strerror or exc}", file=sys.stderr)
        return 2
    return 0


def _discard_stdout() -> None:
    """Point standard output at the null device, so the interpreter's final flush of what could not be
    written neither fails nor prints a second error."""
    try:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # pragma: no cover - no real file behind stdout
        pass


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
