import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
# the Hugging Face libraries (sentence-transformers' tests) never reach the network: tiny models are built here
for _variable in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE"):
    os.environ[_variable] = "1"

# pytest-xdist's workers (-n 2) each take one core: torch's intra-op threads per worker would put two threads on a
# core and run several times slower; a thread count set in the environment stands
if int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")) > 1:
    for _variable in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):  # numba's pool: every core otherwise
        os.environ.setdefault(_variable, "1")

import pytest  # noqa: E402
from tiers import tier_of  # noqa: E402


@pytest.fixture(scope="session", autouse=True)
def isolated_data_and_cache(tmp_path_factory):
    """No data but the bundled sets and what a test makes, and a cache of this session's own, whatever the
    machine holds: the parsed-file cache in a session folder, an empty user data directory (platformdirs
    reads XDG_DATA_HOME), no GAPRANK_DATA."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("GAPRANK_CACHE", str(tmp_path_factory.mktemp("gaprank_cache")))
        patch.setenv("XDG_DATA_HOME", str(tmp_path_factory.mktemp("user_data")))
        patch.delenv("GAPRANK_DATA", raising=False)
        yield


@pytest.fixture(scope="session")
def ohsumed_fold1():
    """The bundled OHSUMED (QueryLevelNorm) fold 1, loaded once per test session (read, never changed)."""
    from gaprank.data import load_fold

    return load_fold("OHSUMED", 1)


@pytest.fixture(scope="session")
def quick_ohsumed_comparison(tmp_path_factory):
    """The shipped OHSUMED comparison in --quick mode (what CI runs), run once per test session."""
    from training.compare import CompareConfig, run
    from training.config import load_config

    root = Path(__file__).resolve().parents[1]
    out = tmp_path_factory.mktemp("quick_comparison")
    config = load_config(root / "configs" / "ohsumed" / "compare.yaml", CompareConfig)
    return config, run(config, quick=True, out=out, progress=False)


def write_toy_dataset(root: Path, name: str = "OHSUMED", queries_per_partition: int = 4, seed: int = 0) -> Path:
    """A small data set in this project's partitions + folds.json layout under ``root/name`` (the
    partitions in ``QueryLevelNorm/`` for OHSUMED, as its default variant): five
    partitions ``P1..P5`` of ``queries_per_partition`` queries (45 features, labels 0..2 with a learnable
    signal in feature 1), Fold K testing on partition K and validating on the one before."""
    import json

    import numpy as np

    rng = np.random.default_rng(seed)
    folder = root / name
    files = folder / "QueryLevelNorm" if name == "OHSUMED" else folder  # OHSUMED's default variant folder
    files.mkdir(parents=True, exist_ok=True)
    for p in range(1, 6):
        lines = []
        for q in range(queries_per_partition):
            labels = rng.integers(0, 3, 8)
            for label in labels:
                features = rng.random(45)
                features[0] = label + rng.normal(scale=0.5)
                lines.append(f"{label} qid:{p}{q:02d} " + " ".join(f"{i + 1}:{v:.4f}" for i, v in enumerate(features)))
        (files / f"P{p}.txt").write_text("\n".join(lines) + "\n")
    folds = {}
    for k in range(1, 6):
        vali = (k - 2) % 5 + 1
        folds[f"Fold{k}"] = {"train": [f"P{p}" for p in range(1, 6) if p not in (k, vali)], "vali": f"P{vali}",
                             "test": f"P{k}"}
    (folder / "folds.json").write_text(json.dumps({"folds": folds}))
    return root


@pytest.fixture()
def toy_data(tmp_path):
    """A data directory holding a small OHSUMED-shaped data set (see :func:`write_toy_dataset`)."""
    return write_toy_dataset(tmp_path / "data")


def pytest_configure(config):
    for tier, what in (("unit", "fast checks of one function or module"),
                       ("oracle", "against an independent implementation or published numbers"),
                       ("integration", "with another library, the file system or the CLI"),
                       ("e2e", "training runs, notebooks, docs pages, several processes (slow)")):
        config.addinivalue_line("markers", f"{tier}: {what}")


def pytest_collection_modifyitems(config, items):
    for item in items:
        test = getattr(item, "originalname", None) or item.name  # a parametrized test by its function's name
        item.add_marker(getattr(pytest.mark, tier_of(item.path.stem, test)))
