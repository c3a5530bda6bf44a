"""The ``gaprank`` command line itself: ``--version``, help texts that give every option's description and
default, ``gaprank baseline``'s required data set and output, options of the other ``eval`` mode refused."""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys

import numpy as np
import pytest

import gaprank
from gaprank.cli.main import build_parser, main


def test_version_is_gaprank_s_version(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out == f"gaprank {gaprank.__version__}\n"
    done = subprocess.run([sys.executable, "-m", "gaprank", "--version"], capture_output=True, text=True, check=True)
    assert done.stdout == f"gaprank {gaprank.__version__}\n"


def _subcommands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    choices = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices
    return {"gaprank": parser, **{f"gaprank {name}": sub for name, sub in choices.items() if name != "data"}}


@pytest.mark.parametrize("command", ["gaprank", "gaprank eval", "gaprank baseline"])
def test_help_describes_every_option_and_its_default(command):
    parser = _subcommands()[command]
    text = parser.format_help()
    blocks: dict[str, str] = {}  # each option's lines of the help, joined, by its first flag
    for line in text.split("options:")[1].splitlines():
        if line.startswith("  -"):
            key = line.split()[0].rstrip(",")  # the first flag
            blocks[key] = line
        elif blocks:
            blocks[key] += " " + line.strip()
    for action in parser._actions:
        if not action.option_strings or action.help == argparse.SUPPRESS:
            continue
        assert action.help, f"{command} {action.option_strings[0]} has no description"
        block = blocks[action.option_strings[0]]
        if action.default not in (None, False, [], argparse.SUPPRESS) and action.dest != "help":
            assert f"(default: {action.default})" in block, block
    if command == "gaprank baseline":
        assert "--dataset NAME" in text and "OHSUMED, MQ2008" in text and "(default: test)" in text


def test_baseline_needs_a_data_set_and_an_output_file(tmp_path, monkeypatch, capsys):
    """It used to fit OHSUMED Fold 1 and write results/baseline_scores.txt into the current directory."""
    monkeypatch.chdir(tmp_path)
    for argv in (["baseline"], ["baseline", "--dataset", "OHSUMED"], ["baseline", "--out", "x.txt"]):
        with pytest.raises(SystemExit) as exc:
            main(argv)
        assert exc.value.code == 2
        assert "the following arguments are required" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_baseline_says_what_it_fitted_and_a_misspelt_data_set_gets_a_hint(tmp_path, capsys):
    out = tmp_path / "pred.txt"
    assert main(["baseline", "--dataset", "MQ2008", "--out", str(out)]) == 0
    assert capsys.readouterr().out.startswith(f"wrote {len(out.read_text().splitlines())} scores for MQ2008 Fold1 test")
    assert main(["baseline", "--dataset", "OHSUMD", "--out", str(tmp_path / "x.txt")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.rstrip().endswith("Did you mean 'OHSUMED'?")


@pytest.mark.parametrize("argv, message", [
    (["--letor", "{f}", "--scores", "{f}", "-m", "GAP"], "-m/--measure is not an option of LETOR mode"),
    (["--letor", "{f}", "--feature", "1", "--complete"], "--complete is not an option of LETOR mode"),
    (["--letor", "{f}", "--feature", "1", "--ties", "stable"], "--ties is not an option of LETOR mode"),
    (["--qrels", "{f}", "--run", "{f}", "-m", "GAP", "--scores", "{f}"], "--scores is not an option of TREC mode"),
    (["--qrels", "{f}", "--run", "{f}", "-m", "GAP", "--feature", "2"], "--feature is not an option of TREC mode"),
])
def test_an_option_of_the_other_eval_mode_is_refused_not_ignored(argv, message, tmp_path, capsys):
    path = tmp_path / "file.txt"
    path.write_text("")
    assert main(["eval", *[a.replace("{f}", str(path)) for a in argv]]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_the_cli_page_s_synopsis_is_commands_that_parse():
    """docs/cli.md's synopsis block holds only commands (it once swallowed a paragraph of prose), each accepted by
    the parser with its optional parts left out and with each of them in."""
    import shlex
    from pathlib import Path

    page = (Path(__file__).resolve().parents[1] / "docs" / "cli.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```text\n(.*?)```", page, flags=re.S)[:1]  # the synopsis, with [optional] parts
    assert blocks
    lines = [line for block in blocks for line in block.splitlines() if line.strip()]
    assert all(line.startswith("gaprank ") for line in lines), lines
    for line in lines:
        required = re.sub(r"\s*\[[^]]*\]", "", line)
        optional = re.sub(r"\[([^]|]*?)(?:\|[^]]*)?\]", r"\1", line)  # [--format text|json] -> --format text
        for argv in (shlex.split(required)[1:], shlex.split(optional)[1:]):
            if argv == ["--version"]:
                continue
            build_parser().parse_args(argv)


def test_ridge_is_the_closed_form_solution():
    """The baseline's ridge regression (NumPy; scikit-learn is no dependency): the normal equations of the
    centred data with an unpenalised intercept."""
    from gaprank.cli.main import _ridge

    rng = np.random.default_rng(0)
    x = rng.normal(size=(50, 4))
    y = x @ [1.0, -2.0, 0.5, 0.0] + 3.0 + rng.normal(scale=0.1, size=50)
    for alpha in (0.0, 1.0, 25.0):
        weights, intercept = _ridge(x, y, alpha)
        xc, yc = x - x.mean(0), y - y.mean()
        expected = np.linalg.solve(xc.T @ xc + alpha * np.eye(4), xc.T @ yc)
        np.testing.assert_allclose(weights, expected, rtol=1e-10, atol=1e-12)
        assert abs(intercept - (y.mean() - x.mean(0) @ expected)) < 1e-10


def test_the_cli_runs_on_the_lean_install(tmp_path):
    """Without the extras' libraries (tqdm, scikit-learn, scipy, yaml, lightgbm), ``gaprank data import`` and
    ``gaprank baseline`` run: they used to import tqdm and scikit-learn unconditionally."""
    from gaprank.data import locate_dataset

    script = ("import sys\n"
              "for name in ('tqdm', 'sklearn', 'scipy', 'yaml', 'lightgbm', 'xgboost', 'matplotlib'):\n"
              "    sys.modules[name] = None\n"
              "from gaprank.cli.main import main\n"
              "sys.exit(main(sys.argv[1:]))\n")
    env = {**os.environ, "XDG_DATA_HOME": str(tmp_path / "data-home")}
    env.pop("GAPRANK_DATA", None)
    out = tmp_path / "pred.txt"
    for argv in (["data", "import", "MQ2008", str(locate_dataset("MQ2008"))],
                 ["baseline", "--dataset", "MQ2008", "--out", str(out)]):
        result = subprocess.run([sys.executable, "-c", script, *argv], capture_output=True, text=True, env=env,
                                cwd=tmp_path, timeout=600)
        assert result.returncode == 0, (argv, result.stderr[-2000:])
    assert len(out.read_text().splitlines()) > 100
