"""How gaprank's compiled (numba) kernels are built and which threads run them: the one setup that
:mod:`gaprank._elementwise`, :mod:`gaprank._engine.compiled`, :mod:`gaprank._engine.soft_compiled` and
:mod:`gaprank._engine.soft_rank` share.

* **Disk cache.** Kernels are compiled once and kept in numba's disk cache. Where numba has no writable place
  for it (a read-only install with no writable home or ``NUMBA_CACHE_DIR``) they are compiled without it, in
  each process on first use, and one :class:`CompileCacheWarning` says so.
* **Lanes.** A kernel that shares its work among threads is a lane kernel, ``kernel(*args, lane, lanes)``: it
  does lane ``lane``'s share of the tasks and writes only that share of the outputs, each from the inputs
  alone. Its driver is a ``numba.prange`` loop over the lanes, compiled with ``parallel=True``, so numba's own
  threads run the lanes, on the threading layer numba picks or the user chose; ``numba.set_num_threads`` (or
  ``NUMBA_NUM_THREADS``) sets how many. No result depends on the number of threads, nor on which thread ran a
  lane.
* **When the lanes run one after another on the calling thread** (the same numbers): a call with one lane; a
  call made while another thread of this process runs gaprank's lanes on numba's threads (numba's
  ``workqueue`` layer must not be entered by two threads at once; the second caller works alone rather than
  wait, and so does a signal handler that calls gaprank in the middle of a call); a process forked after
  numba's threads had started (GNU OpenMP's threads do not survive ``fork()``, and a forked worker shares its
  parent's cores); and every call after a threading layer failed to load, or of a driver
  numba could not compile (one :class:`RuntimeWarning` each).

Nothing here changes numba's or torch's settings.
"""

from __future__ import annotations

import functools
import logging
import os
import threading
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

try:
    import numba
except ImportError:  # pragma: no cover - numba is a dependency; without it the torch paths serve
    numba = None  # type: ignore[assignment]


class CompileCacheWarning(UserWarning):
    """numba has no writable cache location: the kernels are compiled in each process, on first use."""


_cache_warned = False
# held by the thread whose lanes run on numba's threads; another caller meanwhile runs its lanes alone
_threads_in_use = threading.Lock()
# why lanes run on the calling thread in this process from now on (a fork, a layer that failed), or None
_one_thread_reason: str | None = None
# drivers numba could not compile: their lanes run on the calling thread
_unbuilt_drivers: set[Any] = set()


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


def thread_count() -> int:
    """The threads a lane kernel called from this thread may run on: numba's thread count
    (``numba.get_num_threads``, or ``NUMBA_NUM_THREADS`` before numba's threads have started, so that reading it
    starts none); 1 without numba or where the lanes run on the calling thread alone."""
    if numba is None or _one_thread_reason is not None:
        return 1
    if threading_layer() is None:
        return int(getattr(numba.config, "NUMBA_NUM_THREADS", 1))  # (made at run time: getattr for mypy)
    return int(numba.get_num_threads())


def _after_fork_in_child() -> None:
    global _one_thread_reason, _threads_in_use
    _threads_in_use = threading.Lock()  # a parent's thread that held it is not in the child
    # the parent's threads are not in the child; GNU OpenMP's would never answer there, and a forked worker (a
    # DataLoader's, a fork pool's) shares its parent's cores: the lanes run on the calling thread, whatever the layer
    if threading_layer() is not None:
        _one_thread_reason = "a process forked after numba's threads had started"


def _cannot_run_threaded(driver: Any, exc: Exception) -> None:
    """From now on ``driver``'s lanes run on the calling thread; one warning says why."""
    _unbuilt_drivers.add(driver)
    warnings.warn(f"gaprank: {getattr(driver, '__name__', driver)} runs on the calling thread alone: its threaded "
                  f"driver could not be built ({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''})",
                  RuntimeWarning, stacklevel=4)


def run_lanes(kernel: Callable[..., Any], driver: Callable[..., Any], args: tuple[Any, ...], lanes: int) -> None:
    """Every lane ``0 .. lanes - 1`` of the lane kernel ``kernel(*args, lane, lanes)``: by ``driver(*args, done,
    lanes)`` (its ``numba.prange`` loop over the lanes, compiled with ``parallel=True``, which sets ``done[lane]``
    as each lane returns) on numba's threads, or one lane after another on the calling thread (see the module's
    docstring for when). A lane that raised on numba's threads (whose error numba's layers lose or garble) runs
    again on the calling thread, where its own error is raised; a driver numba cannot compile, or a threading
    layer that cannot load, leaves the lanes to the calling thread from then on, with one warning."""
    global _one_thread_reason
    left: Any = range(lanes)
    if lanes > 1 and _one_thread_reason is None and driver not in _unbuilt_drivers:
        done = np.zeros(lanes, dtype=np.uint8)  # (before the lock: nothing between taking it and the try)
        if _threads_in_use.acquire(blocking=False):
            try:
                driver(*args, done, lanes)
            except Exception as exc:  # noqa: BLE001 - sorted below; a lane that raised runs again on this thread
                if isinstance(exc, ValueError) and threading_layer() is None:  # "No threading layer could be loaded"
                    _one_thread_reason = str(exc).splitlines()[0]
                    warnings.warn(f"gaprank: the compiled kernels run on one thread: numba's threads cannot start "
                                  f"({_one_thread_reason})", RuntimeWarning, stacklevel=3)
                elif numba is not None and isinstance(exc, numba.core.errors.NumbaError):
                    _cannot_run_threaded(driver, exc)
            finally:
                _threads_in_use.release()
            left = np.flatnonzero(done == 0)
    for lane in left:
        kernel(*args, int(lane), lanes)


def lane_kernel(kernel: Callable[..., Any], driver: Callable[..., Any]) -> Callable[..., None]:
    """``run(*args, threads)``: :func:`run_lanes` with one lane per thread, for a kernel that deals its tasks to
    the lanes in turn (``lane, lane + lanes, ...``), and its driver (compiled here with ``parallel=True``)."""
    parallel = jit(driver, parallel=True, nogil=True)

    def run(*args: Any) -> None:
        *inputs, threads = args
        run_lanes(kernel, parallel, tuple(inputs), max(1, int(threads)))

    functools.update_wrapper(run, getattr(kernel, "py_func", kernel))
    return run


def _warn_compiled_in_each_process() -> None:
    global _cache_warned
    if not _cache_warned:
        _cache_warned = True
        warnings.warn("gaprank: numba has no writable cache folder here (a read-only install and no writable home); "
                      "the compiled kernels are compiled in each process on first use (set NUMBA_CACHE_DIR to a "
                      "writable folder to keep them)", CompileCacheWarning, stacklevel=5)


COMPILE_NOTICE = ("gaprank: compiling its numba kernels for this machine (a few seconds for each kind of "
                  "call, once: numba caches them for later processes); `gaprank warmup` compiles them all ahead")
_compile_notice = {"listening": False, "given": False}


def _listen_for_the_first_compile() -> None:
    """Have numba's compile event (fired on a cache miss only, never on a cache load) say once, through the
    ``gaprank`` logger, that a gaprank kernel is being compiled: the first call's pause is then never silent."""
    if _compile_notice["listening"] or numba is None:
        return
    _compile_notice["listening"] = True

    class _FirstCompile(numba.core.event.Listener):
        def on_start(self, event: Any) -> None:
            if _compile_notice["given"]:
                return
            dispatcher = (event.data or {}).get("dispatcher")
            module = getattr(getattr(dispatcher, "py_func", None), "__module__", "") or ""
            if module.startswith("gaprank."):
                _compile_notice["given"] = True
                logging.getLogger("gaprank").warning(COMPILE_NOTICE)

        def on_end(self, event: Any) -> None:
            pass

    numba.core.event.register("numba:compile", _FirstCompile())


def jit(function: Callable[..., Any], **options: Any) -> Any:
    """``numba.njit(cache=True, **options)(function)``, without the disk cache where numba has no writable place
    for it. The first compile of a process is announced (:data:`COMPILE_NOTICE`)."""
    _listen_for_the_first_compile()
    try:
        return numba.njit(cache=True, **options)(function)
    except RuntimeError as exc:  # numba's "cannot cache function ...: no locator available for file ..."
        if "no locator available" not in str(exc):
            raise
        _warn_compiled_in_each_process()
        return numba.njit(cache=False, **options)(function)


def compiled(**options: Any) -> Callable[[Callable[..., Any]], Any]:
    """The decorator form of :func:`jit`: ``@compiled(nogil=True)``."""
    return functools.partial(jit, **options)


if numba is not None and hasattr(os, "register_at_fork"):  # POSIX
    os.register_at_fork(after_in_child=_after_fork_in_child)
