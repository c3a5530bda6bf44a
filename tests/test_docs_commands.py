"""Every training command the docs print writes to scratch space or the reader's named folder, never into a
tracked file: each command's arguments are parsed as the script parses them, and every folder it would write
(its runs' fold records, the comparison's summary, the tuning studies) is checked against ``git ls-files``."""

from __future__ import annotations

import argparse
import re
import shlex
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted([*ROOT.glob("docs/*.md"), ROOT / "README.md", ROOT / "configs" / "README.md",
                ROOT / "training" / "README.md", *ROOT.glob("notebooks/*.ipynb")])
COMMAND = re.compile(r"-m (training\.(?:cv|lambdamart|compare|tune)) (--config configs/[^`|\\\n\"]*)")


def _commands() -> list[tuple[str, str, str]]:
    found = []
    for page in PAGES:
        for match in COMMAND.finditer(page.read_text(encoding="utf-8")):
            arguments = match.group(2).split(" #")[0].strip()  # a comment after the command
            found.append((page.relative_to(ROOT).as_posix(), match.group(1), arguments))
    return sorted(set(found))


def _targets(script: str, arguments: str) -> list[Path]:
    """The folders the command would write, as the scripts decide them."""
    from training._runner import output_root, publishing
    from training.config import load_config, output_path

    parser = argparse.ArgumentParser()
    for flag in ("--config", "--out", "--folds"):
        parser.add_argument(flag)
    for flag in ("--quick", "--force", "--replot", "--quiet"):
        parser.add_argument(flag, action="store_true")
    args, _ = parser.parse_known_args(shlex.split(arguments))
    config_path = ROOT / args.config
    with publishing(args.out):
        if script in ("training.cv", "training.lambdamart"):
            from training._runner import destination
            from training.cv import CVConfig
            from training.lambdamart import LambdaMARTConfig

            config = load_config(config_path, CVConfig if script == "training.cv" else LambdaMARTConfig)
            where = args.out if args.out is not None else config.output_dir
            return [output_root(where, args.quick) if args.quick else destination(where)]
        if script == "training.tune":
            from training.tune import TuneConfig, studies_path

            config = load_config(config_path, TuneConfig)
            return [studies_path(config, quick=args.quick).parent]
        from training._runner import destination
        from training.compare import CompareConfig, load_runs, load_tuning
        from training.config import read_config_data
        from training.tune import studies_path

        if read_config_data(config_path).get("kind") == "clicks":  # training.clicks: its cells and summary
            from training.clicks import ClicksConfig

            clicks = load_config(config_path, ClicksConfig)
            return [output_path(args.out) if args.out is not None else output_root(clicks.output_dir, args.quick)]
        config = load_config(config_path, CompareConfig)
        out = None if args.out is None else output_path(args.out)
        root = out if out is not None else output_root(config.output_dir, args.quick)
        targets = [root] + [destination(run.config.output_dir) for run in load_runs(config, quick=args.quick, out=out)]
        tuning = load_tuning(config)
        if tuning is not None:
            targets.append(studies_path(tuning, quick=args.quick).parent)
        return targets


def _tracked(path: Path) -> list[str]:
    listed = subprocess.run(["git", "ls-files", "--", str(path)], cwd=ROOT, capture_output=True, text=True)
    return listed.stdout.split()


COMMANDS = _commands()


def test_the_docs_print_training_commands():
    assert len(COMMANDS) >= 10 and {script for _, script, _ in COMMANDS} == {
        "training.cv", "training.lambdamart", "training.compare", "training.tune"}


@pytest.mark.parametrize("page, script, arguments", COMMANDS, ids=[f"{p}: {s} {a}" for p, s, a in COMMANDS])
def test_a_docs_command_writes_no_tracked_file(page, script, arguments, monkeypatch):
    import training.tune

    if subprocess.run(["git", "rev-parse"], cwd=ROOT, capture_output=True).returncode != 0:
        pytest.skip("not a git checkout")
    monkeypatch.setattr(training.tune, "available_cores", lambda: 2)  # MQ2008 tunes two studies at once
    for target in _targets(script, arguments):
        assert not _tracked(target), f"{page}: python -m {script} {arguments} writes into {target}, which git tracks"


def test_a_command_writes_into_the_committed_results_only_when_asked():
    """Without --out a shipped config's run writes under runs/, reading results/; --out results/... writes there."""
    from training._runner import RESULTS, SCRATCH, destination, publishing

    assert destination("results/ohsumed-untuned/soft_gap") == SCRATCH / "ohsumed-untuned" / "soft_gap"
    with publishing("results/ohsumed-untuned"):  # --out results/ohsumed-untuned: that folder, and only that one
        assert destination("results/ohsumed-untuned/soft_gap").resolve() == RESULTS / "ohsumed-untuned" / "soft_gap"
        assert destination("results/ohsumed-untuned-quick/soft_gap").resolve() == (
            RESULTS / "ohsumed-untuned-quick" / "soft_gap")
        assert destination("results/ohsumed/tuning") == SCRATCH / "ohsumed" / "tuning"  # not asked for
    assert destination("/tmp/elsewhere") == Path("/tmp/elsewhere")  # a folder the reader named is theirs
