"""mkdocs hook: the comparison plots in ``results/<data>/plots/`` are published with the site, at the same
path (``results/ohsumed/plots/seeds.png``), so the docs show the committed figures, never copies of them."""

from __future__ import annotations

from pathlib import Path

from mkdocs.structure.files import File, Files

REPO = Path(__file__).resolve().parents[2]


def on_files(files: Files, config) -> Files:
    for path in sorted(REPO.glob("results/*/plots/*.png")):
        files.append(File(path.relative_to(REPO).as_posix(), str(REPO), config["site_dir"], config["use_directory_urls"]))
    return files
