"""The compiled kernels in forked processes (DataLoader workers, fork pools), on a read-only install, and the
threading layer they run on. Each scenario runs in a fresh interpreter with a timeout, so that a hang fails."""

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

import gaprank

PACKAGE_ROOT = Path(gaprank.__file__).resolve().parents[1]  # the folder holding this gaprank (src/ or site-packages)
TIMEOUT = 300  # seconds: compiling the kernels on a loaded machine; a hang fails here instead of blocking CI

# The three users of the kernels: the LightGBM objective (gradients and hessians), LambdaRankLoss on the CPU and
# SoftNDCGLoss, computed by the parent (with two threads, so that its thread pools start: lists long enough for
# the kernels to run on numba's threads) and again by a child.
SCENARIO = r'''
import multiprocessing, os, sys
import numpy as np
import torch
import gaprank
from gaprank.lightgbm import lambdarank_objective
import numba

torch.set_num_threads(2)
numba.set_num_threads(2)


def numbers(_=None):
    rng = np.random.default_rng(0)
    labels, preds = rng.integers(0, 3, 800), rng.normal(size=800)
    grad, hess = lambdarank_objective("gap", g=[0.5, 0.5]).gradients(preds, labels, np.array([200] * 4), None)
    out = [grad.tolist(), hess.tolist()]
    generator = torch.Generator().manual_seed(0)
    for loss in (gaprank.LambdaRankLoss(measure="gap", g=[0.5, 0.5]), gaprank.losses.SoftNDCGLoss()):
        scores = torch.randn(4, 200, dtype=torch.float64, generator=generator, requires_grad=True)
        value = loss(scores, torch.randint(0, 3, (4, 200), generator=generator))
        value.backward()
        out += [value.item(), scores.grad.flatten().tolist()]
    return out


class Computed(torch.utils.data.Dataset):
    def __len__(self):
        return 2

    def __getitem__(self, index):
        return repr(numbers())


if __name__ == "__main__":
    parent = numbers()
    numba.threading_layer()  # the threads started (raises before)
    how = sys.argv[1]
    if how == "pool":
        # PyTorch's rule for a forked child (GNU OpenMP's threads do not survive fork), as DataLoader applies it
        # in its workers: torch on one thread there. gaprank's kernels need nothing.
        with multiprocessing.get_context("fork").Pool(2, initializer=torch.set_num_threads, initargs=(1,)) as pool:
            children = [result.get(timeout=120) for result in [pool.apply_async(numbers) for _ in range(2)]]
    else:  # DataLoader workers, started by fork (the default on Linux)
        loader = torch.utils.data.DataLoader(Computed(), batch_size=None, num_workers=2, timeout=120,
                                             multiprocessing_context="fork")
        children = [eval(item) for item in loader]
    assert all(child == parent for child in children), "a child computed other numbers than its parent"
    print("same numbers", len(children))
'''


def _env(**changes: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_THREADING_LAYER", "OMP_NUM_THREADS")}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(PACKAGE_ROOT), os.environ.get("PYTHONPATH", "")) if p)
    env["NUMBA_NUM_THREADS"] = "2"  # a pool of two threads, even on a one-core machine
    return {**env, **changes}


def _run(script: str, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True, env=env,
                              timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        pytest.fail(f"the scenario hung (no result in {TIMEOUT} s)")


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork() is POSIX")
@pytest.mark.parametrize("how", ["pool", "dataloader"])
def test_a_forked_child_computes_what_its_parent_computed(how):
    """numba's threads had started in the parent: a forked child runs gaprank's lanes on its calling thread
    and computes its parent's numbers (numba's GNU OpenMP layer would stop a child that used it)."""
    done = _run(SCENARIO, how, env=_env())
    assert done.returncode == 0, done.stderr[-3000:]
    assert "same numbers 2" in done.stdout


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork() is POSIX")
def test_a_fork_after_numbas_gnu_openmp_layer_started_computes_the_same_numbers():
    """numba's GNU OpenMP layer does not survive fork(): numba stops (SIGTERM) a child that runs a parallel
    kernel on it. gaprank's lanes run on the child's calling thread, so it computes its parent's numbers."""
    script = SCENARIO.replace("how = sys.argv[1]", "how = sys.argv[1]\n    assert numba.threading_layer() == 'omp'")
    done = _run(script, "pool", env=_env(NUMBA_THREADING_LAYER="omp"))
    if "No threading layer could be loaded" in done.stderr:
        pytest.skip("numba's OpenMP layer is not available here")
    assert done.returncode == 0, done.stderr[-3000:]
    assert "same numbers 2" in done.stdout


THREADS = r'''
import sys, importlib
for name in sys.argv[1:]:
    importlib.import_module(name)
import numpy as np
import numba
import gaprank
from gaprank.lightgbm import lambdarank_objective

rng = np.random.default_rng(0)
# two lists of 300: pairs enough for numba's threads
grad, _ = lambdarank_objective("gap").gradients(rng.normal(size=600), rng.integers(0, 3, 600), np.array([300, 300]), None)
print(numba.threading_layer(), repr(grad.tolist()))
'''


def test_the_kernels_run_on_the_layer_numba_picks_or_the_user_chose_whatever_the_import_order():
    """gaprank chooses no threading layer: numba's own choice, or the user's, and the same numbers on each and
    whether xgboost or torch is imported first."""
    pytest.importorskip("xgboost")
    runs = [_run(THREADS, *order, env=_env()) for order in (["torch", "xgboost"], ["xgboost", "torch"])]
    for done in runs:
        assert done.returncode == 0, done.stderr[-3000:]
    assert runs[0].stdout == runs[1].stdout
    for layer in ("workqueue", "omp"):
        chosen = _run(THREADS, env=_env(NUMBA_THREADING_LAYER=layer))
        if chosen.returncode == 0 or layer == "workqueue":  # (omp where numba's OpenMP layer loads)
            assert chosen.returncode == 0, chosen.stderr[-3000:]
            assert chosen.stdout.split(" ", 1)[0] == layer
            assert chosen.stdout.split(" ", 1)[1] == runs[0].stdout.split(" ", 1)[1]


READ_ONLY = r'''
import warnings
import torch
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    import gaprank
    scores = torch.linspace(-1.0, 1.0, 12, dtype=torch.float64).reshape(2, 6).requires_grad_()
    gaprank.LambdaRankLoss(measure="gap", g=[0.5, 0.5])(scores, torch.tensor([[0, 1, 2, 0, 1, 2], [2, 2, 0, 0, 1, 0]])).backward()
    # big enough for numba's threads: the lanes' drivers are compiled too, with no more warnings
    torch.manual_seed(0)
    soft = torch.randn(4, 200, dtype=torch.float64, requires_grad=True)
    gaprank.losses.SoftNDCGLoss()(soft, torch.randint(0, 3, (4, 200))).backward()
told = [str(w.message) for w in caught if "cache" in str(w.message)]
assert len(told) == 1, told
print(repr(scores.grad.flatten().tolist() + soft.grad.flatten().tolist()))
'''


def _as_unprivileged() -> list[str] | None:
    """A command prefix that runs a program as an unprivileged user (root ignores file permissions), or None."""
    if os.geteuid() != 0:
        return []
    if shutil.which("setpriv"):
        return ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
    return None


@pytest.mark.skipif(not hasattr(os, "geteuid"), reason="POSIX permissions")
def test_import_and_a_gradient_on_a_read_only_install_with_no_writable_home():
    """Before: ``RuntimeError: cannot cache function 'log_into': no locator available`` at ``import gaprank``.
    After: one warning that compilation is not cached, and the same gradient as a normal install."""
    prefix = _as_unprivileged()
    if prefix is None:
        pytest.skip("running as root without setpriv: no way to drop the privileges that ignore permissions")
    place = Path(tempfile.mkdtemp(prefix="gaprank-read-only-"))
    scratch = Path(tempfile.mkdtemp(prefix="gaprank-tmp-"))  # the run's temporary folder: left empty
    try:
        shutil.copytree(Path(gaprank.__file__).parent, place / "gaprank", ignore=shutil.ignore_patterns("__pycache__"))
        os.chmod(place, 0o755)
        subprocess.run(["chmod", "-R", "a-w", str(place)], check=True)
        env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CACHE_DIR", "XDG_CACHE_HOME", "PYTHONPATH")}
        os.chmod(scratch, 0o777)
        env.update(HOME=str(place / "no-home"), PYTHONPATH=str(place), PYTHONDONTWRITEBYTECODE="1", TMPDIR=str(scratch))
        probe = subprocess.run([*prefix, sys.executable, "-c", "import torch, numba"], env=env, capture_output=True,
                               text=True, cwd=place, timeout=TIMEOUT)
        if probe.returncode != 0:
            pytest.skip(f"the unprivileged user cannot run this Python: {probe.stderr.strip().splitlines()[-1:]}")
        try:
            done = subprocess.run([*prefix, sys.executable, "-c", READ_ONLY], env=env, capture_output=True, text=True,
                                  cwd=place, timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            pytest.fail(f"no result in {TIMEOUT} s")
        assert done.returncode == 0, done.stderr[-3000:]
        assert not list(scratch.iterdir()), "the run left files in the temporary folder"
        normal = _run(READ_ONLY.replace("assert len(told) == 1, told", ""), env=_env())
        assert normal.returncode == 0, normal.stderr[-3000:]
        assert done.stdout.strip().splitlines()[-1] == normal.stdout.strip().splitlines()[-1]
    finally:
        subprocess.run(["chmod", "-R", "u+w", str(place)], check=False)
        shutil.rmtree(place, ignore_errors=True)
        shutil.rmtree(scratch, ignore_errors=True)
