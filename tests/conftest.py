import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import pytest  # noqa: E402


@pytest.fixture(scope="session")
def quick_ohsumed_comparison(tmp_path_factory):
    """The shipped OHSUMED comparison in --quick mode (what CI runs), run once per test session."""
    from gaprank.data import resolve_data_dir
    from training.compare import CompareConfig, run
    from training.config import load_config

    try:
        if not (resolve_data_dir() / "OHSUMED").is_dir():
            raise FileNotFoundError("no OHSUMED folder")
    except Exception as exc:  # pragma: no cover - data not beside the repository
        pytest.skip(f"OHSUMED not available: {exc}")
    root = Path(__file__).resolve().parents[1]
    out = tmp_path_factory.mktemp("quick_comparison")
    config = load_config(root / "configs" / "ohsumed" / "compare.yaml", CompareConfig)
    return config, run(config, quick=True, out=out, progress=False)
