"""The threads that run the compiled kernels' lanes (``gaprank._compiled_setup.run_lanes``): every lane once,
the caller taking the lanes of a helper that is held up, a lane's error raised by the caller, an interrupt that
waits for the lanes under way, a forked child starting threads of its own, helpers kept off the caller's core,
and the same numbers on one thread as on two."""

import gc
import multiprocessing
import os
import signal
import threading
import time
import weakref

import numpy as np
import pytest
import torch

import gaprank
from gaprank._compiled_setup import CHUNKS_PER_THREAD, lane_kernel, run_lanes

numba = pytest.importorskip("numba")
native_sync = pytest.importorskip("gaprank._native_sync")
if not native_sync.AVAILABLE:  # pragma: no cover - a system without futexes runs every lane on the caller
    pytest.skip("no futexes here: every lane runs on the calling thread", allow_module_level=True)
from gaprank._native_sync import monotonic_ns, thread_id  # noqa: E402


@numba.njit(nogil=True)
def _recording_kernel(counts, threads, finished, caller, hold_helper_ns, hold_all_ns, fail_lane, lane, lanes):
    """A toy lane kernel: counts its lanes, notes which thread ran each and when it finished; a helper (a thread
    other than ``caller``) first spins ``hold_helper_ns``, as one whose core is taken starts late."""
    me = thread_id()
    hold = hold_all_ns + (hold_helper_ns if me != caller else 0)
    if hold > 0:
        start = monotonic_ns()
        while monotonic_ns() - start < hold:
            pass
    if lane == fail_lane:
        raise ValueError("a lane failed")
    counts[lane] += 1
    threads[lane] = me
    finished[lane] = monotonic_ns()


def _run(threads, lanes=None, hold_helper=0.0, hold_all=0.0, fail_lane=-1):
    """The toy kernel's arrays, and a call that runs it: ``lanes`` lanes (default: ``lane_kernel``'s count)."""
    count = lanes or (CHUNKS_PER_THREAD * threads if threads > 1 else 1)
    counts, ran_on, finished = np.zeros(count, np.int64), np.zeros(count, np.int64), np.zeros(count, np.int64)
    args = (counts, ran_on, finished, threading.get_native_id(), int(hold_helper * 1e9), int(hold_all * 1e9),
            fail_lane)
    if lanes is None:
        return args, lambda: lane_kernel(_recording_kernel)(*args, threads)
    return args, lambda: run_lanes(_recording_kernel, args, lanes, threads)


def test_every_lane_runs_once_whatever_the_threads():
    for threads in (1, 2, 3, 5):
        (counts, ran_on, *_), run = _run(threads)
        run()
        assert counts.tolist() == [1] * counts.size


def _both_threads_take_lanes(attempts=20):
    """Run until the helper takes a lane (a helper's first start may load its code from numba's cache while the
    caller takes every lane): whether both threads took lanes, and every run's lanes ran once."""
    for _ in range(attempts):
        (counts, ran_on, *_), run = _run(2, hold_all=0.03)
        run()
        if counts.tolist() != [1] * counts.size:
            return False
        if len(set(ran_on.tolist())) == 2:
            return True
    return False


def test_the_threads_share_the_lanes():
    assert _both_threads_take_lanes()


def test_the_caller_takes_the_lanes_of_a_helper_that_is_held_up():
    (counts, ran_on, *_), run = _run(2, hold_helper=1.0)
    started = time.perf_counter()
    run()
    assert counts.tolist() == [1] * counts.size
    by_helper = int((ran_on != threading.get_native_id()).sum())
    assert by_helper <= 1  # the helper took at most the one lane it held
    if by_helper:
        assert time.perf_counter() - started >= 1.0  # ... and the caller waited for it before returning


def test_a_lane_s_error_is_raised_by_the_caller_and_the_next_run_is_whole():
    (counts, *_), run = _run(2, fail_lane=3)
    with pytest.raises(ValueError, match="a lane failed"):
        run()
    assert counts[3] == 0 and counts.sum() == counts.size - 1  # every other lane ran
    (counts, *_), run = _run(2)
    run()
    assert counts.tolist() == [1] * counts.size


def _child_runs_lanes(done):
    done.put(_both_threads_take_lanes())


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork() is POSIX")
def test_a_forked_child_starts_helper_threads_of_its_own():
    """The parent's helpers are not in a forked child: without its own, the child would wait forever."""
    _run(2)[1]()  # the parent's helper has started
    context = multiprocessing.get_context("fork")
    done = context.Queue()
    child = context.Process(target=_child_runs_lanes, args=(done,))
    child.start()
    child.join(timeout=60)
    if child.is_alive():
        child.kill()
        pytest.fail("the forked child hung on its first lane kernel")
    assert child.exitcode == 0
    assert done.get(timeout=5)  # the child's own helper took lanes


def test_softndcg_gives_the_same_numbers_on_one_thread_as_on_two():
    """Through the public knob (numba's thread count): the kernels' lanes deal the pivots differently, and
    each pivot's result is made from the inputs alone."""
    rng = np.random.default_rng(7)
    scores = torch.tensor(rng.normal(size=(5, 90)))
    labels = torch.tensor(rng.integers(0, 4, (5, 90)))
    mask = torch.tensor(rng.random((5, 90)) > 0.1)
    results = []
    before = numba.get_num_threads()
    try:
        for threads in (1, 2):
            numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
            for loss in (gaprank.SoftNDCGLoss(sigma=0.6), gaprank.SoftNDCGLoss(sigma=0.6, smoothing="fast_soft_rank")):
                s = scores.clone().requires_grad_(True)
                value = loss(s, labels, mask)
                value.backward()
                results.append((threads, value.detach(), s.grad))
    finally:
        numba.set_num_threads(before)
    one, two = results[:2], results[2:]
    for (_, v1, g1), (_, v2, g2) in zip(one, two, strict=True):
        assert torch.equal(v1, v2) and torch.equal(g1, g2)


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="thread affinity is Linux's")
def test_helpers_are_kept_off_the_calling_thread_s_core():
    """A woken helper is often placed on its waker's core, where the two would share one core for the whole
    call: each run keeps the helpers to the process's other cores."""
    from gaprank import _compiled_setup

    cores = os.sched_getaffinity(0)
    if len(cores) < 2:
        pytest.skip("one core: nowhere else to keep a helper")
    if _compiled_setup._current_core() is None:
        pytest.skip("this system does not say which core a thread runs on")
    _compiled_setup._lanes.caller_core = None  # as on a first run
    _run(2)[1]()
    helper = _compiled_setup._lanes.helpers[0].native_id
    kept = os.sched_getaffinity(helper)
    assert kept < cores and len(kept) == len(cores) - 1


@pytest.mark.skipif(not hasattr(signal, "pthread_kill"), reason="signals to a thread are POSIX")
def test_an_interrupt_leaves_no_lane_and_waits_for_the_lanes_under_way():
    """A signal handler that raises (as Ctrl-C's does) while the lanes run: the lanes not yet taken are never
    run, and the call ends only once the lanes under way have finished writing."""

    class Interrupted(Exception):
        pass

    def interrupt(*_):
        raise Interrupted

    (counts, _, finished, *_), run = _run(2, lanes=16, hold_all=0.1)
    previous = signal.signal(signal.SIGUSR1, interrupt)
    try:
        threading.Timer(0.15, signal.pthread_kill, (threading.main_thread().ident, signal.SIGUSR1)).start()
        with pytest.raises(Interrupted):
            run()
        ended = time.monotonic_ns()  # the clock the kernel reads (CLOCK_MONOTONIC)
    finally:
        signal.signal(signal.SIGUSR1, previous)
    time.sleep(0.5)  # a helper that went on taking lanes would finish more in this time
    ran = int(counts.sum())
    assert 2 <= ran < 16  # the interrupt came after the first lanes (0.1 s each) and left the rest
    assert finished.max() <= ended  # nothing finished after the call ended
    assert int(counts.sum()) == ran


def test_helpers_do_not_keep_the_last_call_s_arrays_alive():
    """The run block holds the arrays' addresses only: nothing keeps them alive once the call has returned."""
    args, run = _run(2)
    kept = weakref.ref(args[0])
    run()
    del args, run
    gc.collect()
    assert kept() is None


def test_a_python_function_runs_its_lanes_on_the_calling_thread():
    """What the compiled lanes do not take (a kernel numba did not compile) runs every lane on the caller."""
    record = []
    lane_kernel(lambda lane, lanes: record.append((lane, threading.current_thread() is threading.main_thread())))(2)
    assert sorted(lane for lane, _ in record) == list(range(2 * CHUNKS_PER_THREAD))
    assert all(on_caller for _, on_caller in record)


LANE_MODULE_RUN = r'''
import threading
import numba, numpy as np
from gaprank._compiled_setup import lane_kernel

@numba.njit(nogil=True)
def kernel(counts, lane, lanes):
    counts[lane] += 1

counts = np.zeros(8, np.int64)
lane_kernel(kernel)(counts, 2)
print(counts.tolist())
'''


def test_a_kernel_s_lane_module_is_written_once_and_cached(tmp_path):
    """The helpers' code for a kernel is written to the cache folder once and compiled into numba's disk cache;
    a second process reuses both."""
    import subprocess
    import sys

    script = tmp_path / "lane_module_run.py"
    script.write_text(LANE_MODULE_RUN)
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "cache"))
    runs = [subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=300)
            for _ in range(2)]
    for run in runs:
        assert run.returncode == 0, run.stderr[-2000:]
        assert run.stdout.strip().splitlines()[-1] == str([1] * 8)
    folder = tmp_path / "cache" / "gaprank-lanes"
    assert len(list(folder.glob("gaprank_lanes_*.py"))) == 1
    indexes = {path.name.split(".")[1].split("-")[0] for path in (tmp_path / "cache").rglob("gaprank_lanes_*.nbi")}
    assert indexes == {"driver", "launch"}  # numba's disk cache holds both
