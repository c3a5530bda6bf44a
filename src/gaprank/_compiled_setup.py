"""How gaprank's compiled (numba) kernels are built and which threads run them: the one setup that
:mod:`gaprank._elementwise`, :mod:`gaprank._engine.compiled` and :mod:`gaprank._engine.soft_compiled` share.

* **Disk cache.** Kernels are compiled once and kept in numba's disk cache. Where numba has no writable place
  for it (a read-only install with no writable home or ``NUMBA_CACHE_DIR``) they are compiled without it, in
  each process on first use, and one :class:`CompileCacheWarning` says so.
* **Lanes.** The SoftRank kernels (:mod:`gaprank._engine.soft_compiled`, :mod:`gaprank._engine.soft_rank`) are
  lane kernels (:func:`lane_kernel`): compiled without the GIL, their work cut into lanes that the calling
  thread and sleeping helper threads take as each finishes one. The calling thread works instead of waiting,
  and a helper held up by a thread that spins on its core (torch's OpenMP threads spin for milliseconds after
  a parallel operation) leaves its lanes to the others.
* **Threading layer.** Unless the user chose one (``NUMBA_THREADING_LAYER`` or its priority, or
  ``numba.config``) or numba's threads were started before gaprank was imported, numba runs the parallel
  (``prange``) kernel, the LambdaMART kernel of :mod:`gaprank._engine.compiled`, on its ``workqueue`` layer:
  its idle threads sleep on a condition variable instead of spinning against torch's and XGBoost's OpenMP
  threads, it loads no OpenMP runtime of its own (so the order in which torch and xgboost are imported does
  not matter to it), and it survives ``fork()``. gaprank's parallel kernels hold the GIL, so they never enter
  the layer from two threads at once (the workqueue layer refuses that).
* **fork.** In a child process forked from one that imported gaprank, torch and numba run on one thread, as
  PyTorch's DataLoader does in its workers: GNU OpenMP's thread pool does not survive ``fork()`` (a
  parallel torch operation in the child would wait forever for the parent's threads). In a child forked
  after numba's threads started on its GNU OpenMP layer (the user's choice), where numba would stop the
  process (``SIGTERM``) at the first parallel kernel, a parallel kernel raises a one-line
  :class:`ForkedKernelError` asking for the ``spawn`` start method.
"""

from __future__ import annotations

import functools
import itertools
import os
import sys
import threading
import warnings
from collections.abc import Callable, Iterator
from queue import SimpleQueue
from typing import Any

try:
    import numba
except ImportError:  # pragma: no cover - numba is a dependency; without it the torch paths serve
    numba = None  # type: ignore[assignment]

CHUNKS_PER_THREAD = 4  # the lanes a lane kernel's work is cut into, per thread (_Lanes)
QUIET_LAYER = "workqueue"  # numba's threading layer whose idle threads sleep, and which survives fork()


class CompileCacheWarning(UserWarning):
    """numba has no writable cache location: the kernels are compiled in each process, on first use."""


class ForkedKernelError(RuntimeError):
    """A parallel kernel was called in a process forked after numba's threads started on GNU OpenMP."""


FORK_MESSAGE = ("gaprank's compiled kernels cannot run in a process forked after numba's threads started on its "
                "GNU OpenMP threading layer: start the process with the 'spawn' method (multiprocessing.get_context('spawn'), "
                "DataLoader(multiprocessing_context='spawn')) or use NUMBA_THREADING_LAYER=workqueue")

_cache_warned = False
_forked_from_gnu_omp = False  # this process was forked after numba's threads started on GNU OpenMP
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
    """Run numba's parallel kernels on the ``workqueue`` layer, unless the user chose a layer or numba's
    threads have started already (the layer is then fixed)."""
    if numba is None or {"NUMBA_THREADING_LAYER", "NUMBA_THREADING_LAYER_PRIORITY"} & set(os.environ):
        return
    if str(getattr(numba.config, "THREADING_LAYER", "default")).lower() != "default" or threading_layer() is not None:
        return
    setattr(numba.config, "THREADING_LAYER", QUIET_LAYER)  # noqa: B010 - numba's config attributes are made at run time


def thread_count() -> int:
    """The threads numba's parallel kernels run on in this thread (``numba.get_num_threads``); 1 without
    numba."""
    return int(numba.get_num_threads()) if numba is not None else 1


def _before_fork() -> None:
    global _layer_at_fork
    _layer_at_fork = threading_layer()


def _after_fork_in_child() -> None:
    global _forked_from_gnu_omp, _lanes
    _lanes = _Lanes()  # the parent's lane threads are not in the child (and its lock may be held)
    if _layer_at_fork == "omp":
        omppool = sys.modules.get("numba.np.ufunc.omppool")  # loaded: the layer runs on it
        _forked_from_gnu_omp = _forked_from_gnu_omp or getattr(omppool, "openmp_vendor", "GNU") == "GNU"
    elif _layer_at_fork is not None and numba is not None:
        numba.set_num_threads(1)  # as torch below: a pool's children share the parent's cores
    torch = sys.modules.get("torch")
    if torch is not None and torch.get_num_threads() > 1:
        torch.set_num_threads(1)  # the parent's OpenMP threads are gone: a parallel torch operation would hang


class _Lanes:
    """The threads that run a lane kernel: the calling thread and helper threads (daemon Python threads, started
    on first use, that sleep on their queues between calls, so that they never spin against torch's or
    XGBoost's threads). The work is cut into ``CHUNKS_PER_THREAD`` lanes per thread, which the threads take in
    turn as each finishes one: a helper held up (its core taken by another process, or by an OpenMP thread
    that spins after a parallel torch operation) leaves its share to the others instead of making the caller
    wait for it. One run at a time (``lock``); an exception is raised in the caller once every thread has
    stopped, since they all write into the caller's arrays."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.queues: list[SimpleQueue[Any]] = []
        self.done: SimpleQueue[Any] = SimpleQueue()
        self.run_number = 0

    @staticmethod
    def _take_lanes(kernel: Callable[..., Any], args: tuple[Any, ...], lanes: int, counter: Iterator[int]) -> None:
        for lane in counter:  # next() on itertools.count is atomic under the GIL
            if lane >= lanes:
                return
            kernel(*args, lane, lanes)

    @classmethod
    def _serve(cls, queue: SimpleQueue[Any], done: SimpleQueue[Any]) -> None:
        while True:
            run_number, kernel, args, lanes, counter = queue.get()
            try:
                cls._take_lanes(kernel, args, lanes, counter)
            except BaseException as exc:  # handed to the caller, which raises it
                done.put((run_number, exc))
            else:
                done.put((run_number, None))

    def run(self, kernel: Callable[..., Any], args: tuple[Any, ...], threads: int) -> None:
        if threads <= 1:
            kernel(*args, 0, 1)
            return
        lanes, counter = CHUNKS_PER_THREAD * threads, itertools.count()
        with self.lock:
            while len(self.queues) < threads - 1:
                queue: SimpleQueue[Any] = SimpleQueue()
                threading.Thread(target=self._serve, args=(queue, self.done), daemon=True,
                                 name=f"gaprank-lane-{len(self.queues) + 1}").start()
                self.queues.append(queue)
            self.run_number += 1
            for queue in self.queues[:threads - 1]:
                queue.put((self.run_number, kernel, args, lanes, counter))
            failure: BaseException | None = None
            try:
                self._take_lanes(kernel, args, lanes, counter)
            except BaseException as exc:
                failure = exc
            waiting = threads - 1
            while waiting:
                run_number, error = self.done.get()
                if run_number == self.run_number:  # not a run an interrupt left behind
                    waiting -= 1
                    failure = failure or error
            if failure is not None:
                raise failure


_lanes = _Lanes()


def lane_kernel(kernel: Callable[..., Any]) -> Callable[..., None]:
    """``run(*args, threads)``: the compiled (``nogil``) ``kernel(*args, lane, lanes)`` for every lane
    0 .. lanes - 1, on ``threads`` threads at once, the calling thread among them (:class:`_Lanes`). A lane
    kernel does the tasks ``lane, lane + lanes, ...`` and writes only those tasks' outputs, each from the
    inputs alone, so its result does not depend on ``threads`` nor on which thread took which lane."""

    def run(*args: Any) -> None:
        *inputs, threads = args
        _lanes.run(kernel, tuple(inputs), int(threads))

    run.kernel = kernel  # type: ignore[attr-defined]  # the numba dispatcher itself
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
    for it. A parallel kernel (``parallel=True``) refuses, in one line, to run in a process forked after numba's
    threads started on GNU OpenMP."""
    try:
        kernel = numba.njit(cache=True, **options)(function)
    except RuntimeError as exc:  # numba's "cannot cache function ...: no locator available for file ..."
        if "no locator available" not in str(exc):
            raise
        kernel = _compile_without_cache(function, options)
    if not options.get("parallel"):
        return kernel

    @functools.wraps(function)
    def parallel_kernel(*args: Any) -> Any:
        if _forked_from_gnu_omp:
            raise ForkedKernelError(FORK_MESSAGE)
        return kernel(*args)

    parallel_kernel.kernel = kernel  # type: ignore[attr-defined]  # the numba dispatcher itself
    return parallel_kernel


def compiled(**options: Any) -> Callable[[Callable[..., Any]], Any]:
    """The decorator form of :func:`jit`: ``@compiled(nogil=True)``."""
    return functools.partial(jit, **options)


if numba is not None:
    choose_threading_layer()
    if hasattr(os, "register_at_fork"):  # POSIX
        os.register_at_fork(before=_before_fork, after_in_child=_after_fork_in_child)
