"""Every objective on the same five folds, side by side, with significance tests, reference numbers and plots.

    python -m training.compare --config configs/ohsumed/compare.yaml [--quick] [--force] [--out DIR]

``runs`` lists the objectives: each is a :mod:`training.cv` or :mod:`training.lambdamart` config (its
own file; run as that script would, so finished folds are skipped on re-run), a display name, the
learner (SoftRank, LambdaRank, LambdaMART, ...) and the measure it optimises. All runs must use the same
data set and evaluation conventions, and must report the comparison's ``measures``.

Significance: for every run that optimises a GAP-family measure (gap, xgap, egap), against every run of
the same learner that optimises ndcg or ap: a paired t-test (``scipy.stats.ttest_rel``) and a paired
randomisation test (``scipy.stats.permutation_test``, sign flips of the per-query differences, two-sided)
over all test queries of the folds run (each query is in exactly one test fold).

Seeds and tuning: ``seeds: [1, 2, 3, 4, 5]`` trains every run once per seed (its config's
``training.seed`` / ``booster.seed``) under ``<output_dir>/runs/<run>/seed<k>``; the measures are then
means over seeds, ``seed_sd`` their standard deviation, and significance pairs each query's value
averaged over seeds. ``tuning: <training.tune config>`` runs (or resumes) that config's studies first
and trains each run it tunes with its study's best parameters; the others keep their own settings.
``relevant_queries_only`` adds measures averaged over the test queries with a relevant document.

Writes under ``output_dir``: ``summary.json`` (``{"objectives": {name: {measure: mean, "per_fold": ...,
"seeds", "seed_sd", "per_seed", "tuning"}}, "conventions", "config", "run_configs", "provenance",
"significance", "reference", "seeds", "tuning", "run"}`` where ``provenance`` holds the data
fingerprint of every fold and gaprank's version, and ``run`` the commit, the command and the wall time),
``per_query.tsv`` (one line per objective and test query), ``per_seed.tsv``, ``table.md`` (the
comparison, the reference numbers, the p-values, the tuned parameters), ``plots/*.png`` and
``log.jsonl``. ``--quick`` (fold 1, a few epochs / rounds per run, two seeds, two tuning trials) writes
under ``<output_dir>-quick``; ``--out DIR`` puts the comparison and every run under ``DIR`` instead.

A config of ``kind: clicks`` (learning from simulated clicks, ``configs/mq2008/clicks.yaml``) is run by
:mod:`training.clicks`, with the same options.
"""

from __future__ import annotations

import dataclasses
import json
import shlex
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats

import gaprank
from gaprank import GaprankInputError
from gaprank.data import fold_fingerprint, load_fold, write_atomic, write_json_atomic
from gaprank.metrics import get_conventions, objective_measure

from . import tune as tuning
from ._baselines import find_baselines, letor_baselines
from ._runner import (
    checkout_commit,
    locked,
    log_event,
    machine_description,
    output_root,
    published_root,
    publishing,
    script_parser,
)
from ._trainers import REPO, TRAINERS, RunEntry, check_seeds
from .config import ConfigError, load_config, output_path, read_config_data, to_dict, with_params

# The suffix of a measure averaged over only the test queries that have a relevant document.
RELEVANT_ONLY = " [queries with a relevant doc]"


@dataclass
class ReferenceRow:
    source: str  # e.g. "GAP paper, Table 2"
    learner: str
    objective: str
    values: dict[str, float]  # measure -> reported value


@dataclass
class SignificanceConfig:
    measures: list[str] = field(default_factory=lambda: ["NDCG@10", "MAP", "P@10"])
    resamples: int = 100_000
    seed: int = 1

    def validate(self) -> None:
        if self.resamples < 100:
            raise GaprankInputError(f"significance.resamples must be >= 100; got {self.resamples}")


@dataclass
class CompareConfig:
    name: str
    output_dir: str
    runs: list[RunEntry]
    measures: list[str] = field(default_factory=lambda: ["NDCG@10", "MAP", "P@10", "GAP"])
    significance: SignificanceConfig = field(default_factory=SignificanceConfig)
    letor_baselines: str | None = None  # CSV of the official LETOR baselines: <DATASET>/<path in the set's folder>
    reference: list[ReferenceRow] = field(default_factory=list)  # published numbers shown next to ours
    seeds: list[int] | None = None  # every run once per seed, under <output_dir>/runs/<run>/seed<k>
    tuning: str | None = None  # a training.tune config (relative to the repository root) for the runs it tunes
    relevant_queries_only: list[str] = field(default_factory=list)  # also averaged over queries with a relevant doc

    def validate(self) -> None:
        names = [r.name for r in self.runs]
        if not names:
            raise GaprankInputError("runs must list at least one objective")
        if len(set(names)) != len(names):
            raise GaprankInputError(f"runs: names must be unique; got {names}")
        if self.seeds is not None:
            check_seeds(self.seeds, "seeds")
        elif any(r.seeds is not None for r in self.runs):
            raise GaprankInputError("a run's own seeds need the comparison's seeds (which place every run under "
                                    "<output_dir>/runs/)")
        outside = [m for m in self.relevant_queries_only if m not in self.measures]
        if outside:
            raise GaprankInputError(f"relevant_queries_only: {outside} are not among measures {self.measures}")


@dataclass
class _Loaded:
    entry: RunEntry
    config: Any  # the run's config as the comparison runs it (tuned), with its first seed
    seeded: dict[int, Any]  # seed -> the config trained with it
    run: Any
    tuning: dict[str, Any] | None = None  # {"trials", "best_value", "params"} of a tuned run


def _seed_of(run_config: Any, path: str) -> int:
    node: Any = to_dict(run_config)
    for part in path.split("."):
        node = node[part]
    return int(node)


def load_runs(config: CompareConfig, *, quick: bool = False, out: Path | None = None,
              tuned: dict[str, dict[str, Any]] | None = None) -> list[_Loaded]:
    """Each run's own config, loaded and checked against the comparison (same data, conventions, measures),
    with its tuned parameters (``tuned``: the tuner's result by run name) and one config per seed.

    A run writes to its own ``output_dir`` unless the comparison places it: under ``out / name`` with
    ``--out``, under ``<root>/runs/<name>/seed<k>`` when the comparison has ``seeds`` (``root``: ``out`` or
    the comparison's ``output_dir``). A placed run also reports every measure the comparison needs."""
    root = output_path(out, "--out") if out is not None else output_root(config.output_dir, quick)
    placed = out is not None or config.seeds is not None
    loaded = []
    for entry in config.runs:
        trainer = TRAINERS[entry.trainer]
        run_config = entry.load(quick=quick)
        tuning_result = (tuned or {}).get(entry.name)
        if tuning_result is not None:
            if tuning_result["params"] is None:
                raise ConfigError(f"run {entry.name!r}: every tuning trial failed; nothing to run")
            run_config = with_params(run_config, tuning_result["params"])
        needed = list(dict.fromkeys(config.measures + config.significance.measures))
        missing = [m for m in needed if m not in run_config.evaluation.measures]
        if placed:
            name = run_config.name
            where = f"--out {out}" if out is not None else str(root / "runs")
            if not name or name in (".", "..") or "/" in name or "\\" in name or name.startswith("~"):
                raise ConfigError(f"run {entry.name!r} ({entry.config}): its name {name!r} must be a plain folder "
                                  f"name to be written under {where} (no '/', '..' or '~')")
            if missing:
                run_config = with_params(run_config, {"evaluation.measures": run_config.evaluation.measures + missing})
        elif missing:
            raise ConfigError(f"run {entry.name!r} ({entry.config}) does not report {missing}; "
                              f"add them to its evaluation.measures")
        seeds = entry.seeds or config.seeds or [_seed_of(run_config, trainer.seed_path)]
        if quick:
            seeds = seeds[:2]
        seeded = {}
        for seed in seeds:
            seed_config = with_params(run_config, {trainer.seed_path: seed})
            if config.seeds is not None:
                seed_config = dataclasses.replace(seed_config, output_dir=str(root / "runs" / run_config.name / f"seed{seed}"))
            elif out is not None:
                seed_config = dataclasses.replace(seed_config, output_dir=str(out / run_config.name))
            seeded[seed] = seed_config
        loaded.append(_Loaded(entry, seeded[seeds[0]], seeded, trainer.run,
                              None if tuning_result is None else
                              {k: tuning_result[k] for k in ("trials", "best_value", "params")}))
    first = loaded[0].config
    for item in loaded[1:]:
        c = item.config
        if (c.data.dataset, c.data.folds, c.evaluation.conventions, c.evaluation.g) != (
                first.data.dataset, first.data.folds, first.evaluation.conventions, first.evaluation.g):
            raise ConfigError(f"run {item.entry.name!r} uses different data, folds, conventions or g than "
                              f"run {loaded[0].entry.name!r}; a comparison needs the same for all")
    return loaded


def load_tuning(config: CompareConfig) -> tuning.TuneConfig | None:
    """The comparison's tuning config, each of its runs checked to be the comparison's run of that name."""
    if config.tuning is None:
        return None
    path = Path(config.tuning)
    tune_config = load_config(path if path.is_absolute() else REPO / path, tuning.TuneConfig)
    ours = {entry.name: entry for entry in config.runs}
    for entry in tune_config.runs:
        mine = ours.get(entry.name)
        if mine is None:
            raise ConfigError(f"tuning: {config.tuning} tunes {entry.name!r}, which is not a run of the comparison")
        if (mine.config, mine.trainer, mine.learner) != (entry.config, entry.trainer, entry.learner):
            raise ConfigError(f"tuning: run {entry.name!r} has another config, trainer or learner in {config.tuning} "
                              "than in the comparison")
    return tune_config


def aggregate_seeds(results: dict[int, dict[str, Any]], measures: list[str]) -> dict[str, Any]:
    """One run's results over seeds: ``mean`` (of each seed's five-fold mean), ``seed_sd`` (standard
    deviation across seeds of the five-fold mean; None for one seed), ``per_seed``, ``per_fold`` and
    ``per_query`` (each query's value averaged over seeds)."""
    seeds = list(results)
    first = results[seeds[0]]
    for seed in seeds[1:]:
        for fold, by_measure in first["per_query"].items():
            if fold not in results[seed]["per_query"] or any(
                    by_measure[m].keys() != results[seed]["per_query"][fold][m].keys() for m in measures):
                raise GaprankInputError(f"seed {seed} was tested on other folds or queries than seed {seeds[0]}")
    per_seed = {seed: {m: float(r["mean"][m]) for m in measures} for seed, r in results.items()}
    return {
        "mean": {m: float(np.mean([per_seed[s][m] for s in seeds])) for m in measures},
        "seed_sd": {m: float(np.std([per_seed[s][m] for s in seeds], ddof=1)) if len(seeds) > 1 else None
                    for m in measures},
        "per_seed": per_seed,
        "per_fold": {fold: {m: float(np.mean([results[s]["per_fold"][fold][m] for s in seeds])) for m in measures}
                     for fold in first["per_fold"]},
        "per_query": {fold: {m: {qid: float(np.mean([results[s]["per_query"][fold][m][qid] for s in seeds]))
                                 for qid in first["per_query"][fold][m]} for m in measures}
                      for fold in first["per_query"]},
    }


def queries_with_relevant(run_config: Any, folds: list[str]) -> dict[str, set[str]]:
    """The test queries of each fold that have a document with label >= 1."""
    data = run_config.data
    kept = {}
    for fold in folds:
        test = load_fold(data.dataset, int(fold.removeprefix("Fold")), variant=data.variant, data_dir=data.data_dir).test
        starts = np.concatenate([[0], np.cumsum(test.group_sizes)[:-1]])
        best = np.maximum.reduceat(test.labels, starts) if test.labels.size else np.zeros(0)
        kept[fold] = {qid for qid, top in zip(test.query_ids, best, strict=True) if top >= 1}
    return kept


def add_relevant_only(result: dict[str, Any], measures: list[str], kept: dict[str, set[str]]) -> list[str]:
    """Add to a run's result each measure averaged over only the queries in ``kept`` (per fold, then the
    mean over folds, as LETOR averages); returns the added names."""
    added = []
    for measure in measures:
        name = measure + RELEVANT_ONLY
        for fold, by_measure in result["per_query"].items():
            values = {q: v for q, v in by_measure[measure].items() if q in kept[fold]}
            by_measure[name] = values
            result["per_fold"][fold][name] = float(np.mean(list(values.values()))) if values else 0.0
        result["mean"][name] = float(np.mean([result["per_fold"][f][name] for f in result["per_query"]]))
        added.append(name)
    return added


def _aligned(per_query: dict[str, dict[str, dict[str, float]]], measure: str) -> tuple[list[str], np.ndarray]:
    keys, values = [], []
    for fold, by_measure in per_query.items():
        for qid, value in by_measure[measure].items():
            keys.append(f"{fold}:{qid}")
            values.append(value)
    return keys, np.asarray(values)


# Per-query values are means over seeds, and two runs with different numbers of seeds hold equal values
# as different floats (3 x 0.1 / 3 - 5 x 0.1 / 5 = 1.4e-17): closer than this is a tie.
TIE_TOLERANCE = 1e-12


def paired_tests(a: np.ndarray, b: np.ndarray, *, resamples: int, seed: int) -> dict[str, float]:
    """Mean difference a - b, paired t-test and paired randomisation (sign-flip) test p-values (two-sided);
    per-query differences within :data:`TIE_TOLERANCE` count as ties (0)."""
    diff = a - b
    diff = np.where(np.abs(diff) <= TIE_TOLERANCE, 0.0, diff)
    if np.all(diff == 0):  # identical runs: no evidence either way (scipy would return nan)
        return {"mean_difference": 0.0, "t_test_p": 1.0, "randomisation_p": 1.0, "wins": 0, "ties": int(diff.size),
                "losses": 0}
    t_p = float(stats.ttest_1samp(diff, 0.0).pvalue)  # the paired t-test, on the tie-cleaned differences
    # one sample + permutation_type="samples" is scipy's sign-flip test of the paired differences;
    # batches keep memory at 5,000 x queries
    perm = stats.permutation_test((diff,), lambda d, axis: np.mean(d, axis=axis), vectorized=True,
                                  permutation_type="samples", n_resamples=resamples, alternative="two-sided",
                                  batch=5_000, random_state=np.random.default_rng(seed))
    return {"mean_difference": float(diff.mean()), "t_test_p": t_p, "randomisation_p": float(perm.pvalue),
            "wins": int((diff > 0).sum()), "ties": int((diff == 0).sum()), "losses": int((diff < 0).sum())}


def _uses_g(optimises: str | None) -> bool:
    """Whether a run optimises a GAP-family measure (one with GAP's user model g)."""
    return optimises is not None and objective_measure(optimises).uses_g


def significance(config: CompareConfig, per_query: dict[str, Any], loaded: list[_Loaded]) -> list[dict[str, Any]]:
    """Every GAP-family run against its same-learner nDCG and AP counterparts."""
    rows = []
    sig = config.significance
    for item in loaded:
        if not _uses_g(item.entry.optimises):
            continue
        for other in loaded:
            if other.entry.learner != item.entry.learner or other.entry.optimises is None or _uses_g(other.entry.optimises):
                continue
            row: dict[str, Any] = {"objective": item.entry.name, "versus": other.entry.name,
                                   "learner": item.entry.learner}
            for measure in sig.measures:
                keys_a, a = _aligned(per_query[item.entry.name], measure)
                keys_b, b = _aligned(per_query[other.entry.name], measure)
                if keys_a != keys_b:
                    raise GaprankInputError(f"{item.entry.name} and {other.entry.name} were tested on different queries")
                row[measure] = paired_tests(a, b, resamples=sig.resamples, seed=sig.seed) | {"queries": a.size}
            rows.append(row)
    return rows


def _fmt(value: float | None) -> str:
    return "–" if value is None else f"{value:.4f}"


def _p(value: float) -> str:
    return f"{value:.3f}" if value >= 0.001 else f"{value:.1e}"


def render_table(summary: dict[str, Any], measures: list[str]) -> str:
    objectives = summary["objectives"]
    folds = len(next(iter(objectives.values()))["per_fold"])
    best = {m: max(o[m] for o in objectives.values()) for m in measures}
    seeded = any(len(o["seeds"]) > 1 for o in objectives.values())
    title = f"### {summary['config']['name']}: test means over {folds} fold(s)"
    if seeded:
        title += ", averaged over seeds (± standard deviation across seeds of the fold mean)"
    lines = [title, "", "| objective | learner | optimises | tuned | seeds | " + " | ".join(measures) + " | train s |",
             "|---|---|---|---|---:|" + "---:|" * (len(measures) + 1)]

    def cell(o: dict[str, Any], m: str) -> str:
        text = f"{o[m]:.4f}" + ("" if o["seed_sd"][m] is None else f" ± {o['seed_sd'][m]:.4f}")
        return f"**{text}**" if o[m] == best[m] else text

    for name, o in objectives.items():
        tuned = "–" if o["tuning"] is None else f"{o['tuning']['trials']} trials"
        lines.append(f"| {name} | {o['learner']} | {o['optimises'] or '–'} | {tuned} | {len(o['seeds'])} | "
                     + " | ".join(cell(o, m) for m in measures) + f" | {o['seconds']:.0f} |")
    reference = summary["reference"]
    if reference["letor_baselines"] or reference["published"]:
        reported = set().union(*(v for v in reference["letor_baselines"].values()),
                               *(row["values"] for row in reference["published"]))
        shown = [m for m in measures if m in reported]
        lines += ["", "### Reference numbers (as published; not rerun here)", "",
                  "| source | learner | objective | " + " | ".join(shown) + " |", "|---|---|---|" + "---:|" * len(shown)]
        for algorithm, values in reference["letor_baselines"].items():
            lines.append(f"| LETOR 3.0 baseline | {algorithm} | – | " + " | ".join(_fmt(values.get(m)) for m in shown) + " |")
        for row in reference["published"]:
            lines.append(f"| {row['source']} | {row['learner']} | {row['objective']} | "
                         + " | ".join(_fmt(row["values"].get(m)) for m in shown) + " |")
    if summary["significance"]:
        sig_measures = [m for m in summary["config"]["significance"]["measures"]]
        averaged = " (each query's value averaged over the run's seeds)" if seeded else ""
        lines += ["", "### GAP objectives vs their nDCG and AP counterparts (same learner), paired over test queries"
                  + averaged,
                  "", "Δ = mean per-query difference (GAP objective − counterpart) over all test queries (the means above "
                  "average the per-fold means, as LETOR reports them); p: paired t-test / paired randomisation test "
                  f"({summary['config']['significance']['resamples']} resamples); W/T/L: per-query wins/ties/losses.", "",
                  "| objective | vs | " + " | ".join(f"Δ {m} | p (t / rand.) | W/T/L" for m in sig_measures) + " |",
                  "|---|---|" + "---:|---:|---:|" * len(sig_measures)]
        for row in summary["significance"]:
            cells = []
            for m in sig_measures:
                r = row[m]
                cells.append(f"{r['mean_difference']:+.4f} | {_p(r['t_test_p'])} / {_p(r['randomisation_p'])} | "
                             f"{r['wins']}/{r['ties']}/{r['losses']}")
            lines.append(f"| {row['objective']} | {row['versus']} | " + " | ".join(cells) + " |")
    tuned_runs = {name: o for name, o in objectives.items() if o["tuning"] is not None}
    if tuned_runs:
        budget = summary["tuning"]
        lines += ["", "### Tuned hyperparameters (Optuna TPE on vali; test never read)", "",
                  f"Budget: {', '.join(f'{n} trials per {learner} objective' for learner, n in budget['trials'].items())}; "
                  "a trial scores the mean over folds of the best vali value of the run's own selection measure "
                  "(so best values are comparable within an objective only). Studies: "
                  f"`{budget['studies']}`.", "",
                  "| objective | trials | best mean vali | parameters |", "|---|---:|---:|---|"]
        for name, o in tuned_runs.items():
            t = o["tuning"]
            lines.append(f"| {name} | {t['trials']} | {t['best_value']:.4f} | {tuning.params_text(t['params'])} |")
    return "\n".join(lines) + "\n"


def plot(summary: dict[str, Any], per_query: dict[str, Any], measures: list[str], out: Path) -> list[str]:
    """Per-measure bars with 95% t confidence intervals over test queries, and GAP-vs-nDCG per-query scatters."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out.mkdir(parents=True, exist_ok=True)
    names = list(summary["objectives"])
    written = []
    fig, axes = plt.subplots(1, len(measures), figsize=(4.2 * len(measures), 0.32 * len(names) + 1.6), sharey=True)
    for ax, measure in zip(np.atleast_1d(axes), measures, strict=True):
        means, half = [], []
        for name in names:
            _, v = _aligned(per_query[name], measure)
            means.append(v.mean())
            half.append(stats.t.ppf(0.975, v.size - 1) * v.std(ddof=1) / np.sqrt(v.size) if v.size > 1 else 0.0)
        ax.barh(range(len(names)), means, xerr=half, color="#4c72b0", ecolor="#333333", capsize=2)
        ax.set_yticks(range(len(names)), names)
        ax.invert_yaxis()
        ax.set_xlabel(f"test {measure} (mean, 95% CI)")
        ax.set_xlim(max(0.0, min(means) - 0.12), min(1.0, max(means) + 0.12))
    fig.tight_layout()
    fig.savefig(out / "means.png", dpi=110)
    plt.close(fig)
    written.append("plots/means.png")
    pairs = [(row["objective"], row["versus"]) for row in summary["significance"]
             if summary["objectives"][row["versus"]]["optimises"] == "ndcg"]
    if pairs:
        fig, axes = plt.subplots(1, len(pairs), figsize=(3.6 * len(pairs), 3.6), squeeze=False)
        for ax, (gap_name, ndcg_name) in zip(axes[0], pairs, strict=True):
            _, a = _aligned(per_query[gap_name], "NDCG@10")
            _, b = _aligned(per_query[ndcg_name], "NDCG@10")
            ax.scatter(b, a, s=10, alpha=0.7)
            ax.plot([0, 1], [0, 1], color="grey", lw=0.8)
            ax.set_xlabel(f"{ndcg_name} NDCG@10")
            ax.set_ylabel(f"{gap_name} NDCG@10")
            ax.set_title(f"{(a > b).sum()} above / {(a < b).sum()} below", fontsize=9)
        fig.tight_layout()
        fig.savefig(out / "gap_vs_ndcg_per_query.png", dpi=110)
        plt.close(fig)
        written.append("plots/gap_vs_ndcg_per_query.png")
    written.append(plot_seeds(summary, measures, out))
    return written


def plot_seeds(summary: dict[str, Any], measures: list[str], out: Path) -> str:
    """Each objective's five-fold test mean per seed (dots), their mean and ± one standard deviation across
    seeds (bar), one panel per measure, coloured by learner."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(summary["objectives"])
    learners = list(dict.fromkeys(summary["objectives"][n]["learner"] for n in names))
    colours = {learner: plt.get_cmap("tab10")(i % 10) for i, learner in enumerate(learners)}
    fig, axes = plt.subplots(1, len(measures), figsize=(3.6 * len(measures), 0.3 * len(names) + 1.8), sharey=True)
    for ax, measure in zip(np.atleast_1d(axes), measures, strict=True):
        for row, name in enumerate(names):
            o = summary["objectives"][name]
            values = np.array([by_seed[measure] for by_seed in o["per_seed"].values()])
            colour = colours[o["learner"]]
            spread = values.std(ddof=1) if values.size > 1 else 0.0
            ax.errorbar(values.mean(), row, xerr=spread, fmt="o", color=colour, ms=5, capsize=3, lw=1.2)
            ax.scatter(values, np.full(values.size, row + 0.22), s=9, color=colour, alpha=0.55, lw=0)
        ax.set_yticks(range(len(names)), names)
        ax.set_ylim(len(names) - 0.4, -0.6)
        ax.grid(axis="x", alpha=0.3)
        ax.set_xlabel(f"test {measure}")
    seeds = sorted({len(o["per_seed"]) for o in summary["objectives"].values()})
    fig.suptitle(f"{summary['dataset']}: mean over seeds ± one standard deviation (dots: each seed; "
                 f"{'/'.join(map(str, seeds))} seeds)", fontsize=10)
    fig.tight_layout()
    fig.savefig(out / "seeds.png", dpi=110)
    plt.close(fig)
    return "plots/seeds.png"


def read_per_query(path: Path) -> dict[str, dict[str, dict[str, dict[str, float]]]]:
    """``per_query.tsv`` back as {objective: {fold: {measure: {qid: value}}}}."""
    per_query: dict[str, dict[str, dict[str, dict[str, float]]]] = {}
    with path.open(encoding="utf-8") as fh:
        header = fh.readline().rstrip("\n").split("\t")
        measures = header[3:]
        for line in fh:
            name, fold, qid, *values = line.rstrip("\n").split("\t")
            by_measure = per_query.setdefault(name, {}).setdefault(fold, {m: {} for m in measures})
            for measure, value in zip(measures, values, strict=True):
                by_measure[measure][qid] = float(value)
    return per_query


def replot(root: Path, *, command: str | None = None) -> list[str]:
    """Draw ``plots/`` again from a finished comparison's ``summary.json`` and ``per_query.tsv`` (no run is
    read or trained); ``summary.json`` records the plots and the commit and command that drew them."""
    summary_path = root / "summary.json"
    if not summary_path.is_file() or not (root / "per_query.tsv").is_file():
        raise ConfigError(f"{root}: no finished comparison (summary.json and per_query.tsv) to plot")
    summary = json.loads(summary_path.read_text(encoding="utf-8"))
    measures = list(summary["config"]["measures"])
    summary["plots"] = plot(summary, read_per_query(root / "per_query.tsv"), measures, root / "plots")
    summary["plots_drawn"] = {"commit": checkout_commit(), "command": command or "training.compare.replot(...)",
                              "finished": time.strftime("%Y-%m-%dT%H:%M:%S")}
    write_json_atomic(summary_path, summary)
    return summary["plots"]


def run(config: CompareConfig, *, quick: bool = False, force: bool = False, out: str | Path | None = None,
        progress: bool = True, command: str | None = None) -> dict[str, Any]:
    """Train (or reuse) every run, then compare; see the module doc for what is written."""
    started = time.perf_counter()
    commit = checkout_commit()
    root = output_path(out, "--out") if out is not None else output_root(config.output_dir, quick)
    placed_out = root if out is not None else None
    load_runs(config, quick=quick, out=placed_out)  # every run checked before any tuning or training
    tune_config = load_tuning(config)
    tuned, budget = None, None
    if tune_config is not None:
        tuned = tuning.tune(tune_config, quick=quick, progress=progress)
        budget = {"config": config.tuning, "seed": tune_config.seed,
                  "studies": str(tuning.studies_path(tune_config, quick=quick)),
                  "trials": tuning.trial_budget(tune_config, quick=quick)}
    loaded = load_runs(config, quick=quick, out=placed_out, tuned=tuned)
    if progress:
        _say_the_committed_time(config, root, quick)
    with locked(root):
        return _compare(config, loaded, root, quick=quick, force=force, progress=progress, command=command,
                        started=started, commit=commit, tuning_budget=budget)


def _say_the_committed_time(config: CompareConfig, root: Path, quick: bool) -> None:
    """Before a comparison that has no summary of its own yet trains anything: how long the committed one's runs
    took, so that a long retrain is announced, not silent."""
    published = published_root(config.output_dir, quick) / "summary.json"
    if (root / "summary.json").exists() or root / "summary.json" == published or not published.is_file():
        return
    try:
        objectives = json.loads(published.read_text())["objectives"]
        seconds = sum(float(o.get("seconds", 0.0)) for o in objectives.values())
    except (ValueError, KeyError, TypeError, AttributeError):
        return
    print(f"{config.name}: writing to {root}; a run without a finished record there or in {published.parent} is "
          f"trained: the committed comparison's runs took {seconds / 60:.0f} min in all", file=sys.stderr, flush=True)


def _compare(config: CompareConfig, loaded: list[_Loaded], root: Path, *, quick: bool, force: bool, progress: bool,
             command: str | None, started: float, commit: str,
             tuning_budget: dict[str, Any] | None) -> dict[str, Any]:
    baselines_path = None
    if config.letor_baselines:  # checked before any training
        baselines_path = find_baselines(config.letor_baselines, loaded[0].config.data.data_dir)
        if baselines_path is None:
            raise ConfigError(f"letor_baselines: no copy of the data set holds {config.letor_baselines}")
    log = root / "log.jsonl"
    log_event(log, event="compare_start", runs=[item.entry.name for item in loaded], quick=quick)
    objectives, per_query = {}, {}
    shown = list(config.measures)
    kept: dict[str, set[str]] | None = None
    for item in loaded:
        results = {seed: item.run(seed_config, force=force, progress=progress)
                   for seed, seed_config in item.seeded.items()}
        measures = list(item.config.evaluation.measures)
        if config.relevant_queries_only:
            if kept is None:
                kept = queries_with_relevant(item.config, list(next(iter(results.values()))["per_query"]))
            added = [add_relevant_only(r, config.relevant_queries_only, kept) for r in results.values()][0]
            measures += added
            shown = list(config.measures) + added
        merged = aggregate_seeds(results, measures)
        per_query[item.entry.name] = merged["per_query"]
        objectives[item.entry.name] = {
            **merged["mean"],
            "learner": item.entry.learner, "optimises": item.entry.optimises,
            "seeds": list(results), "seed_sd": merged["seed_sd"], "per_seed": merged["per_seed"],
            "tuning": item.tuning,
            "seconds": round(sum(r["seconds"] for r in results.values()), 3),
            "output_dir": item.config.output_dir if len(results) == 1 else str(Path(item.config.output_dir).parent),
            "folds_trained_in_this_invocation": [fold if config.seeds is None else f"seed{seed} {fold}"
                                                 for seed, r in results.items() for fold in r["trained_now"]],
            "per_fold": merged["per_fold"],
        }
        log_event(log, event="run_done", run=item.entry.name, mean=merged["mean"], seeds=list(results),
                  seconds=objectives[item.entry.name]["seconds"])
    first = loaded[0].config
    baselines = letor_baselines(baselines_path, config.measures) if baselines_path is not None else {}
    summary: dict[str, Any] = {
        "objectives": objectives,
        "conventions": (None if first.evaluation.conventions is None
                        else get_conventions(first.evaluation.conventions).describe()),
        "g": first.evaluation.g,
        "dataset": first.data.dataset,
        "folds": [f"Fold{n}" for n in first.data.folds],
        "config": to_dict(config),
        "run_configs": {item.entry.name: to_dict(item.config) for item in loaded},
        # what every run was trained and scored on (each fold record holds the same), and by which gaprank
        "provenance": {"data": {f"Fold{n}": fold_fingerprint(first.data.dataset, n, variant=first.data.variant,
                                                            data_dir=first.data.data_dir) for n in first.data.folds},
                       "gaprank": gaprank.__version__},
        "significance": significance(config, per_query, loaded),
        "reference": {"letor_baselines": baselines, "published": [to_dict(r) for r in config.reference]},
        "seeds": config.seeds,
        "tuning": tuning_budget,
    }
    summary["plots"] = plot(summary, per_query, config.measures, root / "plots")
    summary["run"] = {
        "commit": commit, "command": command or "training.compare.run(...)", "quick": quick,
        "wall_seconds": round(time.perf_counter() - started, 1),
        "train_seconds": round(sum(o["seconds"] for o in objectives.values()), 1),
        "runs_reused": [n for n, o in objectives.items() if not o["folds_trained_in_this_invocation"]],
        "machine": machine_description(),
        "finished": time.strftime("%Y-%m-%dT%H:%M:%S"),
    }
    write_json_atomic(root / "summary.json", summary)
    rows = ["objective\tfold\tqid\t" + "\t".join(config.measures) + "\n"]
    for name, folds in per_query.items():
        for fold, by_measure in folds.items():
            for qid in by_measure[config.measures[0]]:
                rows.append(f"{name}\t{fold}\t{qid}\t" + "\t".join(f"{by_measure[m][qid]:.6f}" for m in config.measures) + "\n")
    write_atomic(root / "per_query.tsv", "".join(rows))
    rows = ["objective\tseed\t" + "\t".join(shown) + "\n"]
    for name, o in objectives.items():
        for seed, means in o["per_seed"].items():
            rows.append(f"{name}\t{seed}\t" + "\t".join(f"{means[m]:.6f}" for m in shown) + "\n")
    write_atomic(root / "per_seed.tsv", "".join(rows))
    table = render_table(summary, shown)
    run_info = summary["run"]
    reused = run_info["runs_reused"]
    table += (f"\nProduced by `{run_info['command']}` at commit {run_info['commit']}: {run_info['wall_seconds']:.0f} s wall "
              f"({run_info['machine']}), "
              + (f"{len(reused)} of {len(objectives)} runs reused from earlier invocations "
                 "(same config, data and gaprank version); "
                 if reused else "every run trained in this invocation; ")
              + f"training time of all runs {run_info['train_seconds']:.0f} s. Conventions "
              f"{first.evaluation.conventions}, g = {first.evaluation.g}; seeds and settings in summary.json.\n")
    write_atomic(root / "table.md", table)
    log_event(log, event="compare_done", wall_seconds=run_info["wall_seconds"])
    return summary | {"table": table, "output_dir": str(root)}


def _is_clicks_config(argv: list[str] | None) -> bool:
    """Whether the ``--config`` given is a click experiment's (``kind: clicks``): :mod:`training.clicks` runs it."""
    args = list(sys.argv[1:] if argv is None else argv)
    path = next((a.split("=", 1)[1] for a in args if a.startswith("--config=")), None)
    if path is None and "--config" in args and args.index("--config") + 1 < len(args):
        path = args[args.index("--config") + 1]
    if path is None:
        return False
    try:
        data = read_config_data(path)
    except GaprankInputError:
        return False  # the comparison's own loading reports it
    return isinstance(data, dict) and data.get("kind") == "clicks"


def main(argv: list[str] | None = None) -> int:
    if _is_clicks_config(argv):
        from . import clicks

        return clicks.main(argv)
    parser = script_parser("python -m training.compare", __doc__, "configs/ohsumed/compare.yaml")
    parser.add_argument("--quick", action="store_true", help="fold 1 and a few epochs / rounds per run (CI)")
    parser.add_argument("--force", action="store_true", help="retrain runs whose folds already have results")
    parser.add_argument("--out", help="write the comparison and every run under this directory")
    parser.add_argument("--replot", action="store_true",
                        help="only draw plots/ again from the finished comparison's summary.json and per_query.tsv")
    args = parser.parse_args(argv)
    command = "python -m training.compare " + " ".join(shlex.quote(a) for a in (argv if argv is not None else sys.argv[1:]))
    try:
        config = load_config(args.config, CompareConfig)
        with publishing(args.out):
            if args.replot:
                root = output_path(args.out, "--out") if args.out is not None else output_root(config.output_dir,
                                                                                               args.quick)
                drawn = replot(root, command=command)
                print(f"drew {', '.join(drawn)} in {root}/")
                return 0
            result = run(config, quick=args.quick, force=args.force, out=args.out, command=command)
    except GaprankInputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(result["table"], end="")
    print(f"written to {result['output_dir']}/")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
