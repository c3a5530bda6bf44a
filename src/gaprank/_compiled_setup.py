"""How gaprank's compiled (numba) kernels are built and which threads run them: the one setup that
:mod:`gaprank._elementwise`, :mod:`gaprank._engine.compiled`, :mod:`gaprank._engine.soft_compiled` and
:mod:`gaprank._engine.soft_rank` share.

* **Disk cache.** Kernels are compiled once and kept in numba's disk cache. Where numba has no writable place
  for it (a read-only install with no writable home or ``NUMBA_CACHE_DIR``) they are compiled without it, in
  each process on first use, and one :class:`CompileCacheWarning` says so.
* **Lanes.** A kernel that shares its work among threads is a lane kernel (:func:`run_lanes`): compiled
  without the GIL, its work cut into lanes that the calling thread and helper threads take in turn as each
  finishes one. The helpers are gaprank's own threads, which wait between calls inside compiled code, asleep on
  a futex word (:class:`_Lanes`): they never spin against torch's and XGBoost's OpenMP threads, and they wake,
  take lanes and finish without the GIL. The calling thread works instead of waiting, and a helper held up by
  a thread that spins on its core (torch's and XGBoost's OpenMP threads spin for milliseconds after a parallel
  region) leaves its lanes to the others. numba's own threads run none of gaprank's kernels, so neither
  numba's threading layer nor the order in which torch and xgboost are imported matters to them. The thread
  count is numba's (``numba.set_num_threads``, ``NUMBA_NUM_THREADS``).
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
import hashlib
import importlib.util
import inspect
import os
import sys
import tempfile
import threading
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import platformdirs

from . import _native_sync

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
    """The threads that run a lane kernel: the calling thread and helper threads (daemon threads, started on first
    use). Between runs a helper waits inside compiled code (:func:`_helper_loop`), asleep on a futex word, so it
    never spins against torch's or XGBoost's threads and needs no GIL to wake, take lanes or finish: a run is
    posted through a control block and a run block (:func:`_post`), and every thread claims lanes by
    compare-exchange on a counter tagged with the run (a helper late for a run never runs a lane with another
    run's arguments). The threads take the lanes in turn, each as it finishes one, so a
    helper held up (its core taken by another process or by a spinning OpenMP thread) leaves its share to the
    others, and the caller waits only for lanes a helper took. One run at a time (``lock``; a lane kernel must
    not call :func:`run_lanes`). Every lane runs; a lane's error is caught where it is raised, and the caller runs
    that lane again once every lane has finished, so that the error is raised in the caller. An interrupt in the
    caller leaves no lane for anyone to take and waits for the lanes under way before it is raised, so nothing
    writes into the arrays once the call has ended.

    The kernel's arguments go through the run block: C-contiguous arrays (their address and shape), integers,
    floats, booleans and None. For each kernel and kinds of arguments, a driver (read by the helpers) and a
    launcher (the caller's) are written once to a module in the cache folder and compiled with numba's disk cache
    (:func:`_lane_module`). Arguments of other kinds, one thread, or a system without futexes: every lane runs
    on the calling thread."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.control = np.zeros(CONTROL_SIZE, dtype=np.int64)
        self.block = np.zeros(BLOCK_SIZE, dtype=np.int64)
        self.helpers: list[threading.Thread] = []
        self.caller_core: int | None = None  # the core the helpers were last kept off
        self.generation = 0
        self.compiled = False  # the compiled functions of a run, made ready before the first

    def _start_helpers(self, count: int) -> None:
        if len(self.helpers) < count and not self.compiled:
            # compiled (or loaded from the disk cache) here, before any helper starts or any run is posted: not
            # in a helper while the caller goes on (a fork then would leave numba's compiler lock held), nor on
            # an interrupt's way out
            signature = (numba.typeof(self.control), numba.typeof(self.block))
            _helper_loop.compile((*signature, numba.types.int64, numba.types.int64))  # type: ignore[attr-defined]
            _take_lane.compile(signature)  # type: ignore[attr-defined]
            _finish(self.control, self.generation, 0, 0)  # no lanes: returns at once
            _close_and_wait(self.control, self.generation, 0)
            self.compiled = True
        while len(self.helpers) < count:
            # the runs posted so far: a helper slow to reach its loop still takes part in the next one
            posted = int(self.control[POSTED])
            helper = threading.Thread(target=_helper_loop,
                                      args=(self.control, self.block, len(self.helpers), posted),
                                      daemon=True, name=f"gaprank-lane-{len(self.helpers) + 1}")
            helper.start()
            self.helpers.append(helper)
            self.caller_core = None  # the new helper is kept to the other cores on this run

    def _keep_helpers_off_this_core(self) -> None:
        """Keep the helpers to the process's cores other than the calling thread's (Linux): a woken helper is
        otherwise often placed on the caller's core, and the two share it for the whole call."""
        core = _current_core()
        if core is None or _PROCESS_CORES is None or core == self.caller_core:
            return
        self.caller_core = core
        cores = _PROCESS_CORES - {core}
        if not cores:
            return
        for helper in self.helpers:
            if helper.native_id is None:  # (never 0: that would be the calling thread)
                continue
            try:
                os.sched_setaffinity(helper.native_id, cores)
            except OSError:  # cores the process may no longer use, or a helper that has gone
                continue

    def wake(self, helpers: int) -> None:
        """Wake the helpers (when a run may use ``helpers`` of them) to wait for the next run awake, for a while,
        rather than asleep."""
        if helpers > 0 and self.helpers:
            _wake(self.control)

    def run(self, kernel: Callable[..., Any], args: tuple[Any, ...], lanes: int, threads: int) -> None:
        with self.lock:
            launcher = _launcher(kernel, args) if threads > 1 and lanes <= LANE_MASK else None
            if launcher is None:
                self._run_here(kernel, args, lanes)
                return
            try:
                self._start_helpers(threads - 1)
            except RuntimeError:  # no thread can start (a process limit, or the interpreter shutting down)
                self._run_here(kernel, args, lanes)
                return
            self._keep_helpers_off_this_core()
            self.generation += 1
            self.control[HELPERS] = threads - 1
            launch, driver = launcher
            posted = int(self.control[POSTED])
            try:
                launch(self.control, self.block, self.generation, lanes, driver, *args)
                # one lane at a time, and the wait in chunks: back in Python between them, where an interrupt
                # is raised; the run is closed for good by the call that sees its last lane finish
                while _take_lane(self.control, self.block):
                    pass
                while not _finish(self.control, self.generation, lanes, WAIT_CHUNK_NS):
                    pass
            except BaseException as exc:
                if int(self.control[POSTED]) != posted:
                    # one compiled call: no lane left to take, and back only once the lanes taken have finished;
                    # a second interrupt meanwhile does not end the call before them
                    for _ in range(1000):  # (compiled beforehand: only an interrupt's handler raises here)
                        try:
                            _close_and_wait(self.control, self.generation, lanes)
                            break
                        except BaseException:  # noqa: S112 - the lanes under way must finish first
                            continue
                    raise
                if not isinstance(exc, Exception):
                    raise
                _cannot_build(kernel, args, exc)  # the launcher did not compile: this thread alone, from now on
                self._run_here(kernel, args, lanes)
                return
            failed = int(self.control[ERROR])
        if failed:
            kernel(*args, failed - 1, lanes)  # the lane's own error, raised here
            raise RuntimeError(f"lane {failed - 1} of {getattr(kernel, '__name__', kernel)} failed on a helper "
                               "thread and not again on the calling thread")

    @staticmethod
    def _run_here(kernel: Callable[..., Any], args: tuple[Any, ...], lanes: int) -> None:
        """Every lane on the calling thread; the first error raised once every lane has run."""
        failure: BaseException | None = None
        for lane in range(lanes):
            try:
                kernel(*args, lane, lanes)
            except Exception as exc:
                failure = failure or exc
        if failure is not None:
            raise failure


# The control block (int64, one per process): runs posted, the helpers' futex word, the tagged lane counter
# (run << LANE_BITS | next lane), lanes finished (the caller's futex word), the first failed lane + 1, and the
# helpers a run may use. The run block: the run's number (written last), the driver's
# address and number, the lanes, then the kernel's arguments.
POSTED, WAKES, CLAIM, DONE, ERROR, HELPERS, CONTROL_SIZE = 0, 1, 2, 3, 4, 5, 16
GENERATION, DRIVER, DRIVER_NUMBER, LANES, ARGS, BLOCK_SIZE = 0, 1, 2, 3, 4, 512
LANE_BITS = 24
LANE_MASK = (1 << LANE_BITS) - 1
CALLER_SPIN_NS = 200_000  # how long the caller polls for the helpers' last lanes before it sleeps
HELPER_AWAKE_NS = 500_000  # how long a helper woken ahead of a run waits for it awake before it sleeps again
WAIT_CHUNK_NS = 20_000_000  # the caller's waits between returns to Python (where an interrupt is raised)
SLEEP_NS = 1_000_000_000


if _native_sync.AVAILABLE:
    from ._native_sync import (
        atomic_add,
        atomic_load,
        atomic_store,
        call_driver,
        compare_exchange,
        futex_wait,
        futex_wake,
        monotonic_ns,
    )

    def _helper_loop(control, block, index, seen):  # pragma: no cover - compiled
        """A helper's life: asleep on ``control[WAKES]`` until a run is posted after the ``seen`` th (or awake
        for a while after a wake-up), then the run's driver, which takes lanes while any is left."""
        while True:
            posted = atomic_load(control, POSTED)
            if posted != seen:
                seen = posted
                if index < atomic_load(control, HELPERS):
                    call_driver(atomic_load(block, DRIVER), control, block, LANE_MASK)
                continue
            wakes = atomic_load(control, WAKES)
            if atomic_load(control, POSTED) != seen:
                continue
            futex_wait(control, WAKES, wakes, SLEEP_NS)
            if atomic_load(control, WAKES) != wakes:
                start = monotonic_ns()
                while atomic_load(control, POSTED) == seen and monotonic_ns() - start < HELPER_AWAKE_NS:
                    pass

    def _wait(control, lanes, budget):  # pragma: no cover - compiled
        """Until ``lanes`` lanes have finished (True) or ``budget`` ns have passed (False): polling first, then
        asleep on ``control[DONE]``, which the last lane wakes."""
        start = monotonic_ns()
        while True:
            done = atomic_load(control, DONE)
            if done >= lanes:
                return True
            elapsed = monotonic_ns() - start
            if elapsed >= budget:
                return False
            if elapsed >= CALLER_SPIN_NS:
                futex_wait(control, DONE, done, budget - elapsed)

    def _post(control, block, generation):  # pragma: no cover - compiled
        """Post the run written in ``block`` (its number written last) and wake the helpers."""
        atomic_store(control, DONE, 0)
        atomic_store(control, ERROR, 0)
        atomic_store(block, GENERATION, generation)
        atomic_store(control, CLAIM, generation << LANE_BITS)
        atomic_add(control, POSTED, 1)
        _wake(control)

    def _take_lane(control, block):  # pragma: no cover - compiled
        """Take one lane of the posted run on this thread and run it: False when none was left."""
        return call_driver(block[DRIVER], control, block, 1) > 0

    def _close(control, generation, lanes):  # pragma: no cover - compiled
        """Leave no lane of the run to take (its counter parked past any run's lanes, so that a helper late for
        it finds none, even while the next run's block is written); the lanes taken."""
        while True:
            claim = atomic_load(control, CLAIM)
            taken = min(claim & LANE_MASK, lanes) if (claim >> LANE_BITS) == generation else 0
            if compare_exchange(control, CLAIM, claim, (generation << LANE_BITS) | LANE_MASK):
                return taken

    def _finish(control, generation, lanes, budget):  # pragma: no cover - compiled
        """:func:`_wait` for every lane, then close the run (True), or False when ``budget`` ns have passed."""
        if not _wait(control, lanes, budget):
            return False
        _close(control, generation, lanes)
        return True

    def _close_and_wait(control, generation, lanes):  # pragma: no cover - compiled
        """Close the run and wait for the lanes already taken (an interrupt's way out: no return to Python in
        between, where a second interrupt could end the call with lanes still writing)."""
        taken = _close(control, generation, lanes)
        while atomic_load(control, DONE) < taken:
            futex_wait(control, DONE, atomic_load(control, DONE), 1_000_000)

    def _wake(control):  # pragma: no cover - compiled
        atomic_add(control, WAKES, 1)
        futex_wake(control, WAKES, 1 << 30)


_LANE_MODULE = '''"""Written by gaprank._compiled_setup: the lanes of {key} for one set of argument kinds."""
import numba

from gaprank._compiled_setup import (ARGS, BLOCK_SIZE, CLAIM, CONTROL_SIZE, DONE, DRIVER, DRIVER_NUMBER, ERROR,
                                     GENERATION, LANE_BITS, LANE_MASK, LANES, _post, registered_kernel)
from gaprank._native_sync import (address_as_pointer, atomic_add, atomic_load, bits_as_float, compare_exchange,
                                  float_bits, futex_wake)

kernel = registered_kernel("{key}")
NUMBER = {number}


@numba.cfunc("int64(CPointer(int64), CPointer(int64), int64)", cache=True)
def driver(control_pointer, block_pointer, limit):
    control = numba.carray(control_pointer, (CONTROL_SIZE,))
    block = numba.carray(block_pointer, (BLOCK_SIZE,))
    generation = atomic_load(block, GENERATION)
    if block[DRIVER_NUMBER] != NUMBER:
        return 0
{unpack}
    lanes = block[LANES]
    ran = 0
    while ran < limit:
        claim = atomic_load(control, CLAIM)
        if (claim >> LANE_BITS) != generation:
            return ran
        lane = claim & LANE_MASK
        if lane >= lanes:
            return ran
        if not compare_exchange(control, CLAIM, claim, claim + 1):
            continue
        ran += 1
        failed = False
        try:
            kernel({names}lane, lanes)
        except Exception:
            failed = True
        if failed:
            compare_exchange(control, ERROR, 0, lane + 1)
        if atomic_add(control, DONE, 1) + 1 == lanes:
            futex_wake(control, DONE, 1 << 30)
    return ran


@numba.njit(nogil=True, cache=True)
def launch(control, block, generation, lanes, driver_address, {params}):
{marshal}
    block[DRIVER] = driver_address
    block[DRIVER_NUMBER] = NUMBER
    block[LANES] = lanes
    _post(control, block, generation)
'''
# the lane modules' format; a change to it, to numba or to gaprank's compiled code writes new modules
_LANE_MODULE_VERSION = 1
# the scalars the run block carries as the kernel's own types (numba types a Python int as int64)
_SCALAR_KINDS = {type(None): "n", bool: "b", np.bool_: "b", int: "i", np.int64: "i", float: "f", np.float64: "f"}
_ARRAY_TYPES = {"d": "numba.float64", "f": "numba.float32", "q": "numba.int64", "l": "numba.int64",
                "i": "numba.int32", "?": "numba.boolean", "B": "numba.uint8"}
_KERNELS: dict[str, Any] = {}
_launchers: dict[tuple[Any, ...], Any] = {}
_UNBUILT = object()
_lane_folder: str | None = None


def registered_kernel(key: str) -> Any:
    """The lane kernel a lane module was written for (:func:`_lane_module`)."""
    return _KERNELS[key]


def _kinds(args: tuple[Any, ...]) -> tuple[Any, ...] | None:
    kinds: list[Any] = []
    for value in args:
        kind: Any = _SCALAR_KINDS.get(type(value))
        if kind == "i" and not -(1 << 63) <= value < 1 << 63:
            return None
        if kind is None:
            if not (type(value) is np.ndarray and value.dtype.char in _ARRAY_TYPES and value.dtype.isnative
                    and value.ndim and value.flags.c_contiguous and value.flags.aligned and value.flags.writeable):
                return None  # another kind of argument: every lane on the calling thread
            kind = (value.dtype.char, value.ndim)
        kinds.append(kind)
    return tuple(kinds)


def _launcher(kernel: Callable[..., Any], args: tuple[Any, ...]) -> Any:
    """The compiled launcher for ``kernel`` with these arguments' kinds, or None where the compiled lanes do not
    serve them (a kernel numba did not compile, other kinds of arguments, no futexes)."""
    if not _native_sync.AVAILABLE or not hasattr(kernel, "py_func") or not hasattr(kernel, "overloads"):
        return None
    kinds = _kinds(args)
    if kinds is None:
        return None
    launcher = _launchers.get((kernel, kinds), _UNBUILT)
    if launcher is _UNBUILT:
        try:
            launcher = _launchers[(kernel, kinds)] = _lane_module(kernel, kinds)
        except Exception as exc:  # the helpers' code could not be written or compiled: the calling thread alone
            _cannot_build(kernel, args, exc)
            launcher = None
    return launcher


def _cannot_build(kernel: Any, args: tuple[Any, ...], exc: Exception) -> None:
    """From now on ``kernel`` with these kinds of arguments runs on the calling thread alone; one warning."""
    _launchers[(kernel, _kinds(args))] = None  # before the warning, which may be raised as an error
    warnings.warn(f"gaprank: {getattr(kernel, '__name__', kernel)} runs on the calling thread alone: the code for "
                  f"its helper threads could not be built ({type(exc).__name__}: {exc})", RuntimeWarning,
                  stacklevel=4)


@functools.lru_cache(maxsize=1)
def _compiled_sources_digest() -> bytes:
    """What the lane modules' compiled code depends on in gaprank (its compiled modules), with numba's version."""
    root = os.path.dirname(os.path.abspath(__file__))
    digest = hashlib.sha256(f"{_LANE_MODULE_VERSION} {numba.__version__}".encode())
    for name in sorted(os.listdir(os.path.join(root, "_engine"))):
        if name.endswith(".py"):
            with open(os.path.join(root, "_engine", name), "rb") as source:
                digest.update(source.read())
    for name in ("_compiled_setup.py", "_native_sync.py", "_elementwise.py"):
        with open(os.path.join(root, name), "rb") as source:
            digest.update(source.read())
    return digest.digest()


def _lane_module(kernel: Any, kinds: tuple[Any, ...]) -> Any:
    """Write (once) and import the module of ``kernel``'s driver and launcher for ``kinds``; its launcher."""
    function = kernel.py_func
    name = f"{function.__module__}.{function.__qualname__}"
    source_file = inspect.getsourcefile(function)
    if source_file is None or function.__closure__:
        return None  # no source to key the cached code on, or a closure's values: the calling thread alone
    with open(source_file, "rb") as source:
        kernel_source = source.read()
    options = sorted((option, sorted(value) if isinstance(value, (set, frozenset)) else value)
                     for option, value in kernel.targetoptions.items())
    # what the cached driver compiles in: gaprank's compiled code, the kernel's source and options, and the
    # arguments' kinds
    fingerprint = hashlib.sha256(_compiled_sources_digest() + kernel_source + repr(
        (name, options, kinds)).encode()).hexdigest()
    key = f"{name}:{fingerprint[:16]}"
    _KERNELS[key] = kernel
    unpack, marshal, names, at = [], [], [], ARGS
    for i, kind in enumerate(kinds):
        argument = f"a{i}"
        names.append(argument)
        if kind == "n":
            unpack.append(f"    {argument} = None")
        elif kind in ("b", "i", "f"):
            read = {"b": f"block[{at}] != 0", "i": f"block[{at}]", "f": f"bits_as_float(block[{at}])"}[kind]
            write = {"b": f"1 if {argument} else 0", "i": argument, "f": f"float_bits({argument})"}[kind]
            unpack.append(f"    {argument} = {read}")
            marshal.append(f"    block[{at}] = {write}")
            at += 1
        else:
            char, ndim = kind
            shape = ", ".join(f"block[{at + 1 + d}]" for d in range(ndim))
            unpack.append(f"    {argument} = numba.carray(address_as_pointer(block[{at}], {_ARRAY_TYPES[char]}), ({shape},))")
            marshal.append(f"    block[{at}] = {argument}.ctypes.data")
            marshal.extend(f"    block[{at + 1 + d}] = {argument}.shape[{d}]" for d in range(ndim))
            at += 1 + ndim
    if at > BLOCK_SIZE:
        return None
    number = int(fingerprint[:12], 16)
    text = _LANE_MODULE.format(key=key, number=number, unpack="\n".join(unpack) or "    pass",
                               names="".join(n + ", " for n in names), params=", ".join(names) or "_unused=None",
                               marshal="\n".join(marshal) or "    pass")
    module_name = f"gaprank_lanes_{fingerprint[:24]}"
    path = os.path.join(_lane_modules_folder(), module_name + ".py")
    if not os.path.exists(path):
        handle, temporary = tempfile.mkstemp(dir=os.path.dirname(path), suffix=".tmp")
        try:
            with os.fdopen(handle, "w") as out:
                out.write(text)
            os.chmod(temporary, 0o644)  # readable as the cache folder's other files are
            os.replace(temporary, path)  # atomic: a concurrent process reads a whole module or none
        finally:
            if os.path.exists(temporary):
                os.remove(temporary)
    spec = importlib.util.spec_from_file_location(module_name, path)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    sys.modules[module_name] = module  # where numba's disk cache looks the module up when it loads from it
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    # the driver's address is this process's: passed to launch on each run, never compiled into it
    return module.launch, module.driver.address


def _lane_modules_folder() -> str:
    """Where lane modules are written: under ``NUMBA_CACHE_DIR`` where it is set, else under the user's cache
    folder; a temporary folder (compiled in each process, one warning) where neither can be written."""
    global _lane_folder
    if _lane_folder is None:
        numba_cache = os.environ.get("NUMBA_CACHE_DIR")
        folder = (os.path.join(numba_cache, "gaprank-lanes") if numba_cache
                  else os.path.join(platformdirs.user_cache_dir("gaprank"), "lanes"))
        try:
            os.makedirs(folder, exist_ok=True)
            probe = tempfile.NamedTemporaryFile(dir=folder, delete=True)
            probe.close()
        except OSError:
            folder = tempfile.mkdtemp(prefix="gaprank-lanes-")
            _warn_compiled_in_each_process()
        _lane_folder = folder
    return _lane_folder


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


def _warn_compiled_in_each_process() -> None:
    global _cache_warned
    if not _cache_warned:
        _cache_warned = True
        warnings.warn("gaprank: numba has no writable cache folder here (a read-only install and no writable home); "
                      "the compiled kernels are compiled in each process on first use (set NUMBA_CACHE_DIR to a "
                      "writable folder to keep them)", CompileCacheWarning, stacklevel=5)


def _compile_without_cache(function: Callable[..., Any], options: dict[str, Any]) -> Any:
    _warn_compiled_in_each_process()
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


if _native_sync.AVAILABLE:
    _helper_loop = jit(_helper_loop, nogil=True)
    _wait = jit(_wait, nogil=True)
    _post = jit(_post, nogil=True)
    _take_lane = jit(_take_lane, nogil=True)
    _close = jit(_close, nogil=True)
    _finish = jit(_finish, nogil=True)
    _close_and_wait = jit(_close_and_wait, nogil=True)
    _wake = jit(_wake, nogil=True)


def wake_helpers() -> None:
    """Wake the lane kernels' helpers ahead of a run, so that their wake-up overlaps the caller's own work
    (a helper asleep on an idle core takes tens of microseconds to wake)."""
    _lanes.wake(thread_count() - 1)
