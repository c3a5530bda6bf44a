"""The threads that run the SoftRank kernels' lanes (``gaprank._compiled_setup.lane_kernel``): every lane once,
the caller taking the lanes of a helper that is held up, a lane's error raised by the caller, a forked child
starting threads of its own, and the same numbers on one thread as on two."""

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
from gaprank._compiled_setup import CHUNKS_PER_THREAD, lane_kernel


def _recording_kernel(record, hold_helper=0.0, fail_lane=None):
    def kernel(lane, lanes):  # a Python stand-in for a compiled lane kernel: it reports who ran which lane
        on_caller = threading.current_thread() is threading.main_thread()
        if not on_caller and hold_helper:
            time.sleep(hold_helper)  # a helper whose core is taken: it starts late
        if lane == fail_lane:
            raise ValueError(f"lane {lane} failed")
        record.append((lane, lanes, on_caller))

    return kernel


def test_every_lane_runs_once_whatever_the_threads():
    for threads in (1, 2, 3, 5):
        record = []
        lane_kernel(_recording_kernel(record))(threads)
        lanes = 1 if threads == 1 else CHUNKS_PER_THREAD * threads
        assert sorted(lane for lane, _, _ in record) == list(range(lanes))
        assert {count for _, count, _ in record} == {lanes}


def test_the_caller_takes_the_lanes_of_a_helper_that_is_held_up():
    record = []
    started = time.perf_counter()
    lane_kernel(_recording_kernel(record, hold_helper=1.0))(2)
    assert sorted(lane for lane, _, _ in record) == list(range(2 * CHUNKS_PER_THREAD))
    by_helper = sum(not on_caller for _, _, on_caller in record)
    assert by_helper <= 1  # the helper took at most the one lane it held
    if by_helper:
        assert time.perf_counter() - started >= 1.0  # ... and the caller waited for it before returning


def test_a_lane_s_error_is_raised_by_the_caller_and_the_next_run_is_whole():
    record = []
    with pytest.raises(ValueError, match="lane 3 failed"):
        lane_kernel(_recording_kernel(record, fail_lane=3))(2)
    assert 3 not in {lane for lane, _, _ in record}
    record.clear()
    lane_kernel(_recording_kernel(record))(2)
    assert sorted(lane for lane, _, _ in record) == list(range(2 * CHUNKS_PER_THREAD))


def _child_runs_lanes(done):
    record = []
    lane_kernel(_recording_kernel(record))(2)
    done.put(sorted(lane for lane, _, _ in record))


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork() is POSIX")
def test_a_forked_child_starts_helper_threads_of_its_own():
    """The parent's helpers are not in a forked child: without its own, the child would wait forever."""
    lane_kernel(_recording_kernel([]))(2)  # the parent's helper has started
    context = multiprocessing.get_context("fork")
    done = context.Queue()
    child = context.Process(target=_child_runs_lanes, args=(done,))
    child.start()
    child.join(timeout=60)
    if child.is_alive():
        child.kill()
        pytest.fail("the forked child hung on its first lane kernel")
    assert child.exitcode == 0
    assert done.get(timeout=5) == list(range(2 * CHUNKS_PER_THREAD))


def test_softndcg_gives_the_same_numbers_on_one_thread_as_on_two():
    """Through the public knob (numba's thread count): the kernels' lanes deal the pivots differently, and
    each pivot's result is made from the inputs alone."""
    numba = pytest.importorskip("numba")
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
    lane_kernel(_recording_kernel([]))(2)
    helper = _compiled_setup._lanes.helpers[0]
    kept = os.sched_getaffinity(helper)
    assert kept < cores and len(kept) == len(cores) - 1


def test_an_interrupt_leaves_no_lane_and_waits_for_the_helpers_lanes_under_way():
    """Ctrl-C in the caller: the lanes not yet taken are never run, and the call ends only once the helper's
    lane under way has finished, so nothing writes into the caller's arrays after it."""
    finished, by_caller, helper_started = [], [], threading.Event()

    def kernel(lane, lanes):
        if threading.current_thread() is threading.main_thread():
            by_caller.append(lane)
            helper_started.wait(timeout=10)
            raise KeyboardInterrupt
        helper_started.set()
        time.sleep(0.3)
        finished.append((lane, time.perf_counter()))

    with pytest.raises(KeyboardInterrupt):
        lane_kernel(kernel)(2)
    ended = time.perf_counter()
    time.sleep(0.5)  # a helper that went on taking lanes would finish another in this time
    assert len(by_caller) == 1  # the caller took no lane after the interrupt
    assert len(finished) == 1 and finished[0][1] <= ended


@pytest.mark.skipif(not hasattr(signal, "pthread_kill"), reason="signals to a thread are POSIX")
def test_a_signal_while_the_caller_waits_ends_the_call_only_after_the_helper_s_lane():
    """A signal handler that raises (as Ctrl-C's does) while the caller waits for a helper's lane: the call
    ends only once that lane has finished writing."""

    class Interrupted(Exception):
        pass

    def interrupt(*_):
        raise Interrupted

    finished, helper_started = [], threading.Event()

    def kernel(lane, lanes):
        if threading.current_thread() is threading.main_thread():
            helper_started.wait(timeout=10)
            return
        helper_started.set()
        time.sleep(1.0)
        finished.append(time.perf_counter())

    previous = signal.signal(signal.SIGUSR1, interrupt)
    try:
        threading.Timer(0.2, signal.pthread_kill, (threading.main_thread().ident, signal.SIGUSR1)).start()
        with pytest.raises(Interrupted):
            lane_kernel(kernel)(2)
        ended = time.perf_counter()
    finally:
        signal.signal(signal.SIGUSR1, previous)
    time.sleep(1.2)
    assert len(finished) == 1 and finished[0] <= ended


def test_helpers_do_not_keep_the_last_call_s_arrays_alive():
    class Array:
        pass

    array = Array()
    kept = weakref.ref(array)
    lane_kernel(lambda array, lane, lanes: None)(array, 2)
    del array
    for _ in range(100):  # a helper lets go as it goes back to its queue, just after its last lane
        gc.collect()
        if kept() is None:
            break
        time.sleep(0.01)
    assert kept() is None
