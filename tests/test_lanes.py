"""The compiled kernels' lanes and the threads that run them (numba's own, through a ``numba.prange`` driver):
every lane once, a lane's error raised by the caller, the same numbers on 1, 2 and 8 threads and from 8 Python
threads at once, interrupts (one, two, three Ctrl-C) that end a call promptly, a loss called from a signal handler
in the middle of a call, a threading layer that cannot load, and nothing changed in the user's process at import.

``run_lanes`` is a private unit tested on purpose here with a toy kernel (the lanes' own contract); everything
else goes through the public losses and objectives, most in a fresh interpreter with a timeout so that a hang
fails instead of blocking the run."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import gaprank
from gaprank._compiled_setup import run_lanes

numba = pytest.importorskip("numba")
PACKAGE_ROOT = Path(gaprank.__file__).resolve().parents[1]
TIMEOUT = 300  # seconds: a fresh interpreter compiles or loads the kernels; a hang fails here


# a toy lane kernel (counts its lanes, notes which of numba's threads ran each, raises at fail_lane) and its driver
TOY = r'''
import numba, numpy as np
from gaprank._compiled_setup import run_lanes

@numba.njit(nogil=True)
def kernel(counts, threads, fail_lane, lane, lanes):
    if lane == fail_lane:
        raise ValueError("a lane failed")
    counts[lane] += 1
    threads[lane] = numba.get_thread_id()

@numba.njit(parallel=True, nogil=True)
def driver(counts, threads, fail_lane, done, lanes):
    for lane in numba.prange(lanes):
        kernel(counts, threads, fail_lane, lane, lanes)
        done[lane] = 1

def toy(lanes, fail_lane=-1):
    counts, ran_on = np.zeros(lanes, np.int64), np.full(lanes, -1, np.int64)
    try:
        run_lanes(kernel, driver, (counts, ran_on, fail_lane), lanes)
    finally:
        print(counts.tolist(), len(set(ran_on.tolist())))
'''
_toy: dict = {}
exec(TOY, _toy)  # the same toy in this process as in the fresh interpreters below
_recording_kernel, _recording_driver = _toy["kernel"], _toy["driver"]


def _run_toy(lanes, fail_lane=-1):
    counts, ran_on = np.zeros(lanes, np.int64), np.full(lanes, -1, np.int64)
    run_lanes(_recording_kernel, _recording_driver, (counts, ran_on, fail_lane), lanes)
    return counts, ran_on


def test_every_lane_runs_once_whatever_the_lanes():
    for lanes in (1, 2, 3, 5, 16):
        counts, _ = _run_toy(lanes)
        assert counts.tolist() == [1] * lanes


@numba.njit(parallel=True, nogil=True)
def _driver_that_cannot_compile(counts, threads, fail_lane, done, lanes):
    for lane in numba.prange(lanes):
        _recording_kernel(counts, threads, fail_lane, lane, lanes, "one argument too many")
        done[lane] = 1


def test_a_driver_numba_cannot_compile_warns_once_and_the_lanes_run_on_the_calling_thread():
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(3):
            counts, ran_on = np.zeros(4, np.int64), np.zeros(4, np.int64)
            run_lanes(_recording_kernel, _driver_that_cannot_compile, (counts, ran_on, -1), 4)
            assert counts.tolist() == [1, 1, 1, 1]
    told = [str(w.message) for w in caught if "could not be built" in str(w.message)]
    assert len(told) == 1 and "on the calling thread alone" in told[0], told


@pytest.mark.parametrize("layer", ["workqueue", None])
def test_the_lanes_run_on_numba_s_threads(layer):
    done = _python(TOY + "toy(8)\n", _env(NUMBA_NUM_THREADS="2", **({"NUMBA_THREADING_LAYER": layer} if layer else {})))
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == ["[1,", "1,", "1,", "1,", "1,", "1,", "1,", "1]", "2"]  # every lane once, on 2 threads


def test_a_call_made_while_another_thread_runs_lanes_runs_alone_on_its_own_thread():
    """numba's workqueue layer must not be entered by two threads at once: the second caller runs its lanes
    itself instead of waiting (or of aborting the process)."""
    script = TOY + """
from gaprank import _compiled_setup
toy(8)
with _compiled_setup._threads_in_use:  # as while another thread's lanes run
    toy(8)
"""
    done = _python(script, _env(NUMBA_NUM_THREADS="2", NUMBA_THREADING_LAYER="workqueue"))
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.splitlines() == ["[1, 1, 1, 1, 1, 1, 1, 1] 2", "[1, 1, 1, 1, 1, 1, 1, 1] 1"]


@pytest.mark.parametrize("layer", ["workqueue", None])
def test_a_lane_s_error_is_raised_by_the_caller_and_every_other_lane_ran_once(layer):
    """numba's threading layers lose (workqueue) or garble (omp: a SystemError) an error raised on their
    threads: the lane that raised runs again on the calling thread, where its own error is raised."""
    script = TOY + """
try:
    toy(8, fail_lane=3)
except ValueError as exc:
    print("raised", exc)
toy(8)
"""
    done = _python(script, _env(NUMBA_NUM_THREADS="2", **({"NUMBA_THREADING_LAYER": layer} if layer else {})))
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.strip().splitlines()
    assert lines[0].startswith("[1, 1, 1, 0, 1, 1, 1, 1]")  # every other lane ran, once
    assert lines[1] == "raised a lane failed"
    assert lines[2].startswith("[1, 1, 1, 1, 1, 1, 1, 1]")  # the next call is whole


NUMBERS = r'''
import sys
import numpy as np
import torch
import numba
import gaprank
from gaprank.lightgbm import lambdarank_objective

torch.set_num_threads(1)


def numbers():
    rng = np.random.default_rng(0)
    sizes = np.array([300, 250, 40, 410, 7, 120])
    labels, preds = rng.integers(0, 3, sizes.sum()), rng.normal(size=sizes.sum())
    out = list(lambdarank_objective("gap", truncation_level=30, norm=True).gradients(preds, labels, sizes, None))
    out += list(lambdarank_objective("gap").gradients(preds, labels, sizes, None))  # every pair: on numba's threads
    generator = torch.Generator().manual_seed(0)
    from gaprank.distributions import rank_distribution
    x = torch.randn(5, 90, dtype=torch.float64, generator=generator, requires_grad=True)
    laws = rank_distribution(x, sigma=0.5)
    (laws * torch.randn(laws.shape, dtype=torch.float64, generator=generator)).sum().backward()
    out += [laws.detach().numpy(), x.grad.numpy()]
    for loss in (gaprank.LambdaRankLoss(measure="gap", g=[0.5, 0.5]), gaprank.losses.SoftNDCGLoss(),
                 gaprank.losses.SoftGAPLoss(g=[0.5, 0.5])):
        scores = torch.randn(6, 150, dtype=torch.float64, generator=generator, requires_grad=True)
        value = loss(scores, torch.randint(0, 3, (6, 150), generator=generator))
        value.backward()
        out += [value.detach().numpy(), scores.grad.numpy()]
    return np.concatenate([np.ravel(part) for part in out])
'''


def _env(**changes: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_THREADING_LAYER", "NUMBA_NUM_THREADS")}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(PACKAGE_ROOT), os.environ.get("PYTHONPATH", "")) if p)
    return {**env, **changes}


def _python(script: str, env: dict[str, str], timeout: float = TIMEOUT, **popen: object) -> subprocess.CompletedProcess:
    try:
        return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env,
                              timeout=timeout, **popen)
    except subprocess.TimeoutExpired:
        pytest.fail(f"no result in {timeout} s (a hang)")


def test_the_same_numbers_on_one_two_and_eight_threads():
    script = NUMBERS + r'''
results = []
for threads in (1, 2, 8):
    numba.set_num_threads(threads)
    results.append(numbers())
assert all(np.array_equal(results[0], other) for other in results[1:]), "the thread count changed a number"
print("same", results[0].size)
'''
    done = _python(script, _env(NUMBA_NUM_THREADS="8"))
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.startswith("same")


def test_eight_python_threads_calling_at_once_get_the_numbers_of_one():
    """Eight Python threads, each computing every loss and objective, and all sharing one objective (whose plan
    keeps the last rankings between calls): the numbers of one thread alone."""
    script = NUMBERS + r'''
import threading
alone = numbers()
shared = lambdarank_objective("gap", truncation_level=5)
rng = np.random.default_rng(1)
sizes_shared = np.full(40, 500)
y_shared = rng.integers(0, 3, sizes_shared.sum())
shared.gradients(rng.normal(size=sizes_shared.sum()), y_shared, sizes_shared, None)
got = [None] * 8
def work(i):
    for j in range(3):
        got[i] = numbers()
        assert np.array_equal(got[i], alone), f"thread {i} computed other numbers"
    for j in range(20):  # other scores in every thread: each call's sort moves most documents
        scores = np.random.default_rng(100 * i + j).normal(size=sizes_shared.sum())
        g, h = shared.gradients(scores, y_shared, sizes_shared, None)
        want = lambdarank_objective("gap", truncation_level=5).gradients(scores, y_shared, sizes_shared, None)
        assert np.array_equal(g, want[0]) and np.array_equal(h, want[1]), f"thread {i}: the shared objective"
threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
for t in threads:
    t.start()
for t in threads:
    t.join()
assert all(g is not None and np.array_equal(g, alone) for g in got)
print("same 8")
'''
    for layer in ("workqueue", None):  # workqueue aborts a process whose threads enter it at once
        env = _env(NUMBA_NUM_THREADS="2", **({"NUMBA_THREADING_LAYER": layer} if layer else {}))
        done = _python(script, env)
        assert done.returncode == 0, (layer, done.stderr[-3000:])
        assert "same 8" in done.stdout


def test_a_loss_called_from_a_signal_handler_in_the_middle_of_a_call_returns():
    """A "print the current loss" hook on a signal, fired every 5 ms while objectives and losses run:
    no wait on anything the interrupted call holds, and the numbers of a quiet run."""
    script = NUMBERS + r'''
import signal
alone = numbers()
inner = []
small = torch.linspace(-1.0, 1.0, 10, dtype=torch.float64).reshape(2, 5)
from gaprank.lightgbm import lambdarank_objective
shared = lambdarank_objective("gap")  # called by the loop and by the hook: the hook's call finds its plan busy
rng = np.random.default_rng(1)
sizes_shared = np.array([300, 250, 410])
y_shared, p_shared = rng.integers(0, 3, sizes_shared.sum()), rng.normal(size=sizes_shared.sum())
shared_alone = shared.gradients(p_shared, y_shared, sizes_shared, None)
busy = []
def hook(*_):
    if busy:  # a signal during the hook's own losses: skipped, not nested ever deeper
        return
    busy.append(1)
    g, h = shared.gradients(p_shared, y_shared, sizes_shared, None)
    assert np.array_equal(g, shared_alone[0]) and np.array_equal(h, shared_alone[1])
    inner.append(float(gaprank.LambdaRankLoss(measure="gap")(small, torch.tensor([[0, 1, 2, 0, 1], [2, 0, 1, 0, 0]]))))
    inner.append(float(gaprank.losses.SoftNDCGLoss()(torch.randn(2, 200, dtype=torch.float64), torch.randint(0, 3, (2, 200)))))
    busy.clear()
hook()  # compiled before the signals (numba's compiler is not to be entered again from a handler)
inner.clear()
signal.signal(signal.SIGUSR1, hook)
signal.setitimer(signal.ITIMER_REAL, 0.005, 0.005)
signal.signal(signal.SIGALRM, lambda *_: signal.raise_signal(signal.SIGUSR1))
for _ in range(5):
    assert np.array_equal(numbers(), alone)
    for _ in range(20):
        g, h = shared.gradients(p_shared, y_shared, sizes_shared, None)
        assert np.array_equal(g, shared_alone[0]) and np.array_equal(h, shared_alone[1])
signal.setitimer(signal.ITIMER_REAL, 0)
assert len(inner) > 10, len(inner)
print("handled", len(inner))
'''
    if not hasattr(signal, "setitimer"):
        pytest.skip("interval timers are POSIX")
    done = _python(script, _env(NUMBA_NUM_THREADS="2"))
    assert done.returncode == 0, done.stderr[-3000:]
    assert "handled" in done.stdout


LONG_CALL = r'''
import sys, time
import numpy as np
import gaprank
from gaprank.lightgbm import lambdarank_objective

rng = np.random.default_rng(0)
sizes = np.array([4000] * 8)
labels, preds = rng.integers(0, 5, sizes.sum()), rng.normal(size=sizes.sum())
objective = lambdarank_objective("gap")
objective.gradients(preds, labels, sizes, None)  # compiled, and the plan made
started = time.perf_counter()
objective.gradients(preds, labels, sizes, None)
print(f"call {time.perf_counter() - started:.3f}", flush=True)
try:
    while True:
        objective.gradients(preds, labels, sizes, None)
except KeyboardInterrupt:
    print("interrupted", flush=True)
    sys.exit(130)
'''


@pytest.mark.skipif(not hasattr(signal, "SIGINT") or os.name != "posix", reason="Ctrl-C as a POSIX signal")
@pytest.mark.parametrize("presses", [1, 2, 3])
def test_ctrl_c_ends_a_call_promptly_however_often_it_is_pressed(presses):
    """One, two or three Ctrl-C in a row during objective calls: the process ends with KeyboardInterrupt within
    about one call's time of the first press (a compiled call is not interrupted in its middle; nothing of it
    is left running or waiting afterwards)."""
    child = subprocess.Popen([sys.executable, "-c", LONG_CALL], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, env=_env(NUMBA_NUM_THREADS="2"))
    try:
        first = child.stdout.readline()
        assert first.startswith("call "), child.stderr.read()[-3000:]
        call = float(first.split()[1])
        time.sleep(min(0.2, call / 2))
        pressed = time.perf_counter()
        for _ in range(presses):
            child.send_signal(signal.SIGINT)
            time.sleep(min(0.05, call / 4))
        out, err = child.communicate(timeout=10 + 3 * call)
    except subprocess.TimeoutExpired:
        child.kill()
        pytest.fail(f"still running {10 + 3 * call:.0f} s after {presses} Ctrl-C")
    ended = time.perf_counter() - pressed
    # 130: the script's own exit; -SIGINT: a later press landed in its except clause, and Python ended on it
    assert child.returncode in (130, -signal.SIGINT), err[-3000:]
    assert ended < 5 + 3 * call, ended


@pytest.mark.skipif(sys.platform != "linux", reason="numba's TBB layer needs its package; tested where it is absent")
def test_a_threading_layer_that_cannot_load_warns_once_and_the_kernels_run_on_one_thread():
    try:
        import tbb  # noqa: F401
        pytest.skip("tbb is installed: the layer loads")
    except ImportError:
        pass
    script = NUMBERS + r'''
import warnings
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    first, second = numbers(), numbers()
told = [str(w.message) for w in caught if "one thread" in str(w.message)]
assert len(told) == 1, told
assert np.array_equal(first, second)
print(repr(first.tolist()))
'''
    broken = _python(script, _env(NUMBA_THREADING_LAYER="tbb", NUMBA_NUM_THREADS="2"))
    assert broken.returncode == 0, broken.stderr[-3000:]
    normal = _python(script.replace("assert len(told) == 1, told", "assert not told, told"),
                     _env(NUMBA_NUM_THREADS="2"))
    assert normal.returncode == 0, normal.stderr[-3000:]
    assert broken.stdout == normal.stdout


def test_importing_gaprank_changes_nothing_in_the_user_s_process():
    """No threading layer chosen for the user, numba's threads not started, torch's thread count kept, in the
    process and in a child it forks."""
    script = r'''
import os
import numba, torch
torch.set_num_threads(2)
import gaprank
assert str(numba.config.THREADING_LAYER) == "default", numba.config.THREADING_LAYER
try:
    numba.threading_layer()
    raise SystemExit("numba's threads were started by the import")
except ValueError:
    pass
assert torch.get_num_threads() == 2
read, write = os.pipe()
pid = os.fork()
if pid == 0:
    os.write(write, str(torch.get_num_threads()).encode())
    os._exit(0)
os.waitpid(pid, 0)
assert os.read(read, 16) == b"2", "a forked child's torch threads changed"
print("untouched")
'''
    if not hasattr(os, "fork"):
        pytest.skip("fork() is POSIX")
    done = _python(script, _env())
    assert done.returncode == 0, done.stderr[-3000:]
    assert "untouched" in done.stdout
