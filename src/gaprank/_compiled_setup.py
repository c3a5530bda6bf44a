"""How gaprank's compiled (numba) kernels are built and which threads run them: the one setup that
:mod:`gaprank._elementwise`, :mod:`gaprank._engine.compiled`, :mod:`gaprank._engine.soft_compiled` and
:mod:`gaprank._engine.soft_rank` share.

* **Disk cache.** Kernels are compiled once and kept in numba's disk cache. Where numba has no writable place
  for it (a read-only install with no writable home or ``NUMBA_CACHE_DIR``) they are compiled without it, in
  each process on first use, and one :class:`CompileCacheWarning` says so.
* **Lanes.** A kernel that shares its work among threads is a lane kernel (:func:`run_lanes`): compiled
  without the GIL, its work cut into lanes that the calling thread and helper threads take in turn as each
  finishes one. The helpers are gaprank's own Python threads, which sleep on a queue between calls, so they
  never spin against torch's and XGBoost's OpenMP threads; the calling thread works instead of waiting; and
  a helper held up by a thread that spins on its core (torch's and XGBoost's OpenMP threads spin for
  milliseconds after a parallel region) leaves its lanes to the others. numba's own threads run none of
  gaprank's kernels, so neither numba's threading layer nor the order in which torch and xgboost are imported
  matters to them. The thread count is numba's (``numba.set_num_threads``, ``NUMBA_NUM_THREADS``).
* **numba's threading layer.** Reading numba's thread count starts numba's thread pool. Unless the user chose a
  layer (``NUMBA_THREADING_LAYER`` or its priority, or ``numba.config``) or numba's threads were started
  before gaprank was imported, that pool runs on numba's ``workqueue`` layer, which loads no OpenMP runtime
  and whose idle threads sleep.
* **fork.** In a child process forked from one that imported gaprank, torch and numba run on one thread, as
  PyTorch's DataLoader does in its workers: GNU OpenMP's thread pool does not survive ``fork()`` (a
  parallel torch operation in the child would wait forever for the parent's threads). The parent's helper
  threads are not in the child either: the child starts its own when it asks for more than one thread.
"""

from __future__ import annotations

import functools
import itertools
import os
import sys
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from queue import SimpleQueue
from typing import Any

try:
    import numba
except ImportError:  # pragma: no cover - numba is a dependency; without it the torch paths serve
    numba = None  # type: ignore[assignment]

CHUNKS_PER_THREAD = 4  # the lanes a lane kernel's work is cut into, per thread (_Lanes)
QUIET_LAYER = "workqueue"  # numba's threading layer that loads no OpenMP runtime, whose idle threads sleep


class CompileCacheWarning(UserWarning):
    """numba has no writable cache location: the kernels are compiled in each process, on first use."""


_cache_warned = False
_layer_at_fork: str | None = None


def available() -> bool:
    """Whether numba is installed (without it the torch paths serve)."""
    return numba is not None


def threading_layer() -> str | None:
    """The threading layer numba's threads run on, or None before they have started."""
    if numba is None:
        return None
    try:
        return str(numba.threading_layer())
    except ValueError:  # not started yet
        return None


def choose_threading_layer() -> None:
    """Start numba's threads on the ``workqueue`` layer, unless the user chose a layer or numba's threads have
    started already (the layer is then fixed)."""
    if numba is None or {"NUMBA_THREADING_LAYER", "NUMBA_THREADING_LAYER_PRIORITY"} & set(os.environ):
        return
    if str(getattr(numba.config, "THREADING_LAYER", "default")).lower() != "default" or threading_layer() is not None:
        return
    setattr(numba.config, "THREADING_LAYER", QUIET_LAYER)  # noqa: B010 - numba's config attributes are made at run time


def thread_count() -> int:
    """The threads a lane kernel called from this thread runs on: numba's thread count
    (``numba.get_num_threads``); 1 without numba."""
    return int(numba.get_num_threads()) if numba is not None else 1


def _before_fork() -> None:
    global _layer_at_fork
    _layer_at_fork = threading_layer()


def _after_fork_in_child() -> None:
    global _lanes
    _lanes = _Lanes()  # the parent's helper threads are not in the child (and its lock may be held)
    if _layer_at_fork is not None and numba is not None:
        numba.set_num_threads(1)  # as torch below: a pool's children share the parent's cores
    torch = sys.modules.get("torch")
    if torch is not None and torch.get_num_threads() > 1:
        torch.set_num_threads(1)  # the parent's OpenMP threads are gone: a parallel torch operation would hang


class _Lanes:
    """The threads that run a lane kernel: the calling thread and helper threads (daemon Python threads, started
    on first use, that sleep on their queues between calls, so that they never spin against torch's or
    XGBoost's threads). The threads take the lanes in turn, each as it finishes one. A helper held up (its
    core taken by another process, or by an OpenMP thread that spins after a parallel region; or slow to wake)
    leaves its share to the others, and the caller waits only for the lanes a helper took, never for a helper
    that took none: one that wakes after the last lane was taken finds nothing to do. One run at a time
    (``lock``; a lane kernel must not call :func:`run_lanes`); every lane runs, and a lane's exception is
    raised in the caller once every lane has finished, since they all write into the caller's arrays. An
    interrupt (Ctrl-C) in the caller leaves no lane for anyone to take and waits for the helpers' lanes under
    way before it is raised, so no helper writes into the arrays once the call has ended."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.queues: list[SimpleQueue[Any]] = []
        self.helpers: list[int | None] = []  # the helpers' native thread ids
        self.helper_cores: list[frozenset[int] | None] = []  # the cores each helper was last kept to
        self.busy: list[int | None] = []  # the run each helper is taking lanes of, if any
        self.done: SimpleQueue[Any] = SimpleQueue()  # (run number, exception or None) per lane a helper ran
        self.run_number = 0

    def _serve(self, index: int, queue: SimpleQueue[Any]) -> None:
        while True:
            job = queue.get()
            self.busy[index] = job[0]
            try:
                self._take_lanes(*job)
            finally:
                self.busy[index] = None
            del job  # not to keep the last call's arrays alive while waiting for the next

    def _take_lanes(self, run_number: int, kernel: Callable[..., Any], args: tuple[Any, ...], lanes: int,
                    counter: Iterator[int]) -> None:
        for lane in counter:  # next() on itertools.count is atomic under the GIL
            if lane >= lanes:
                return
            try:
                kernel(*args, lane, lanes)
            except BaseException as exc:  # raised by the caller once every lane has finished
                self.done.put((run_number, exc))
            else:
                self.done.put((run_number, None))

    def _keep_helpers_off_this_core(self, helpers: int) -> None:
        """Keep the helpers to the process's cores other than the calling thread's (Linux): a woken helper is
        otherwise often placed on the caller's core, and the two share it for the whole call."""
        core = _current_core()
        if core is None or _PROCESS_CORES is None:
            return
        cores = _PROCESS_CORES - {core}
        if not cores:
            return
        for i in range(helpers):
            helper = self.helpers[i]
            if helper is not None and self.helper_cores[i] != cores:
                try:
                    os.sched_setaffinity(helper, cores)
                except OSError:  # cores the process may no longer use, or a helper that has gone
                    continue
                self.helper_cores[i] = cores

    def _start_helpers(self, count: int) -> None:
        while len(self.queues) < count:
            index, queue = len(self.queues), SimpleQueue[Any]()
            self.queues.append(queue)
            self.busy.append(None)
            helper = threading.Thread(target=self._serve, args=(index, queue), daemon=True,
                                      name=f"gaprank-lane-{index + 1}")
            helper.start()
            self.helpers.append(helper.native_id)
            self.helper_cores.append(None)

    def run(self, kernel: Callable[..., Any], args: tuple[Any, ...], lanes: int, threads: int) -> None:
        with self.lock:
            helpers = threads - 1
            self.run_number += 1
            run_number, counter, ran = self.run_number, itertools.count(), 0
            failure: BaseException | None = None
            if helpers:
                self._start_helpers(helpers)
                self._keep_helpers_off_this_core(helpers)
                for queue in self.queues[:helpers]:
                    queue.put((run_number, kernel, args, lanes, counter))
            try:
                for lane in counter:
                    if lane >= lanes:
                        break
                    try:
                        kernel(*args, lane, lanes)
                    except Exception as exc:  # raised once every lane has finished
                        failure = failure or exc
                    ran += 1
                waiting = lanes - ran
                while waiting:  # the lanes the helpers took
                    number, error = self.done.get()
                    if number == run_number:  # not a lane of a run an interrupt left behind
                        waiting -= 1
                        failure = failure or error
            except BaseException:  # an interrupt: no lane is left to take; the helpers' lanes under way finish
                for lane in counter:
                    if lane >= lanes:
                        break
                while run_number in self.busy[:helpers]:
                    time.sleep(0.001)
                raise
            if failure is not None:
                raise failure


def _load_sched_getcpu() -> Callable[[], int] | None:
    if not hasattr(os, "sched_setaffinity"):  # Linux only
        return None
    try:
        import ctypes

        return ctypes.CDLL(None, use_errno=True).sched_getcpu  # type: ignore[no-any-return]
    except (OSError, AttributeError):
        return None


_sched_getcpu = _load_sched_getcpu()
# the cores the process may use, read at import (a thread's own mask may be narrower: the caller's, pinned)
_PROCESS_CORES = frozenset(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None


def _current_core() -> int | None:
    """The core the calling thread runs on now, or None where that cannot be read."""
    if _sched_getcpu is None:
        return None
    core = int(_sched_getcpu())
    return core if core >= 0 else None


_lanes = _Lanes()


def run_lanes(kernel: Callable[..., Any], args: tuple[Any, ...], lanes: int, threads: int) -> None:
    """The compiled (``nogil``) lane kernel ``kernel(*args, lane, lanes)`` for every lane 0 .. lanes - 1, on
    ``threads`` threads at once (at most one per lane), the calling thread among them (:class:`_Lanes`).
    A lane writes only its own share of the outputs, each from the inputs alone, so the result does not depend
    on ``threads`` nor on which thread took which lane. One run at a time in the process: a call from a second
    thread waits for the first."""
    _lanes.run(kernel, args, lanes, max(1, min(int(threads), lanes)))


def lane_kernel(kernel: Callable[..., Any]) -> Callable[..., None]:
    """``run(*args, threads)``: :func:`run_lanes` with ``CHUNKS_PER_THREAD`` lanes per thread (one lane on one
    thread), for a kernel that deals its tasks to the lanes in turn (``lane, lane + lanes, ...``)."""

    def run(*args: Any) -> None:
        *inputs, threads = args
        threads = int(threads)
        run_lanes(kernel, tuple(inputs), CHUNKS_PER_THREAD * threads if threads > 1 else 1, threads)

    functools.update_wrapper(run, getattr(kernel, "py_func", kernel))
    return run


def _compile_without_cache(function: Callable[..., Any], options: dict[str, Any]) -> Any:
    global _cache_warned
    if not _cache_warned:
        _cache_warned = True
        warnings.warn("gaprank: numba has no writable cache folder here (a read-only install and no writable home); "
                      "the compiled kernels are compiled in each process on first use (set NUMBA_CACHE_DIR to a "
                      "writable folder to keep them)", CompileCacheWarning, stacklevel=4)
    return numba.njit(cache=False, **options)(function)


def jit(function: Callable[..., Any], **options: Any) -> Any:
    """``numba.njit(cache=True, **options)(function)``, without the disk cache where numba has no writable place
    for it."""
    try:
        return numba.njit(cache=True, **options)(function)
    except RuntimeError as exc:  # numba's "cannot cache function ...: no locator available for file ..."
        if "no locator available" not in str(exc):
            raise
        return _compile_without_cache(function, options)


def compiled(**options: Any) -> Callable[[Callable[..., Any]], Any]:
    """The decorator form of :func:`jit`: ``@compiled(nogil=True)``."""
    return functools.partial(jit, **options)


if numba is not None:
    choose_threading_layer()
    if hasattr(os, "register_at_fork"):  # POSIX
        os.register_at_fork(before=_before_fork, after_in_child=_after_fork_in_child)
