"""What compiled (numba) code needs to share work between threads without the GIL: atomic operations on int64
arrays, futex waits and wakes, a monotonic clock, and calls through a function pointer.

Each is a numba intrinsic that emits the LLVM instruction, or a call to a C library function by its name
(``syscall``, ``clock_gettime``), so compiled functions that use them keep numba's disk cache (no ctypes address
is baked in). The futex calls are Linux's (x86-64 and aarch64; elsewhere :data:`AVAILABLE` is False and the
lanes run on the calling thread alone). An atomic load is read again on every call, so a loop that polls one is
never hoisted out of its loop by the compiler."""

from __future__ import annotations

import platform
import sys

try:
    import numba
    from llvmlite import ir
    from numba import types
    from numba.core import cgutils
    from numba.extending import intrinsic
except ImportError:  # pragma: no cover - numba is a dependency
    numba = None  # type: ignore[assignment]

# Linux's system call numbers: futex and gettid
_SYSCALLS = {"x86_64": (202, 186), "aarch64": (98, 178)}
FUTEX, GETTID = _SYSCALLS.get(platform.machine(), (-1, -1))
AVAILABLE = numba is not None and sys.platform.startswith("linux") and FUTEX >= 0
FUTEX_WAIT_PRIVATE, FUTEX_WAKE_PRIVATE = 128, 129
CLOCK_MONOTONIC = 1


if numba is not None:

    def _element(context, builder, array_type, array, index):
        data = context.make_array(array_type)(context, builder, array)
        return cgutils.get_item_pointer(context, builder, array_type, data, [index])

    def _syscall(builder, arguments):
        i64 = ir.IntType(64)
        function = cgutils.get_or_insert_function(builder.module, ir.FunctionType(i64, [i64], var_arg=True),
                                                  "syscall")
        return builder.call(function, [builder.sext(a, i64) if a.type != i64 else a for a in arguments])

    @intrinsic
    def atomic_add(typingctx, array, index, value):
        """``array[index] += value`` (int64), atomically, in sequential consistency; the value before."""
        def codegen(context, builder, signature, args):
            pointer = _element(context, builder, signature.args[0], args[0], args[1])
            return builder.atomic_rmw("add", pointer, args[2], "seq_cst")
        return types.int64(array, index, types.int64), codegen

    @intrinsic
    def atomic_load(typingctx, array, index):
        """``array[index]`` (int64), read atomically (acquire)."""
        def codegen(context, builder, signature, args):
            pointer = _element(context, builder, signature.args[0], args[0], args[1])
            return builder.load_atomic(pointer, "acquire", 8)
        return types.int64(array, index), codegen

    @intrinsic
    def atomic_store(typingctx, array, index, value):
        """``array[index] = value`` (int64), written atomically (release)."""
        def codegen(context, builder, signature, args):
            pointer = _element(context, builder, signature.args[0], args[0], args[1])
            builder.store_atomic(args[2], pointer, "release", 8)
            return context.get_dummy_value()
        return types.void(array, index, types.int64), codegen

    @intrinsic
    def compare_exchange(typingctx, array, index, expected, new):
        """Where ``array[index] == expected``, set it to ``new``: True where it did (sequential consistency)."""
        def codegen(context, builder, signature, args):
            pointer = _element(context, builder, signature.args[0], args[0], args[1])
            return builder.extract_value(builder.cmpxchg(pointer, args[2], args[3], "seq_cst", "seq_cst"), 1)
        return types.boolean(array, index, types.int64, types.int64), codegen

    @intrinsic
    def address_as_pointer(typingctx, address, dtype):
        """The int64 ``address`` as a pointer to ``dtype`` (a numba scalar type), for ``numba.carray``."""
        target = dtype.instance_type if isinstance(dtype, types.TypeRef) else dtype.dtype
        def codegen(context, builder, signature, args):
            return builder.inttoptr(args[0], context.get_value_type(signature.return_type))
        return types.CPointer(target)(address, dtype), codegen

    @intrinsic
    def bits_as_float(typingctx, bits):
        """The float64 with the int64 ``bits``."""
        def codegen(context, builder, signature, args):
            return builder.bitcast(args[0], ir.DoubleType())
        return types.float64(types.int64), codegen

    @intrinsic
    def float_bits(typingctx, value):
        """The int64 with the bits of the float64 ``value``."""
        def codegen(context, builder, signature, args):
            return builder.bitcast(args[0], ir.IntType(64))
        return types.int64(types.float64), codegen

    @intrinsic
    def call_driver(typingctx, address, first, second, limit):
        """``f(first, second, limit)`` for the C function ``int64 f(int64 *, int64 *, int64)`` at ``address``
        (``first`` and ``second``: int64 arrays, passed as their data)."""
        def codegen(context, builder, signature, args):
            i64 = ir.IntType(64)
            function_type = ir.FunctionType(i64, [i64.as_pointer(), i64.as_pointer(), i64])
            function = builder.inttoptr(args[0], function_type.as_pointer())
            data = [builder.bitcast(context.make_array(t)(context, builder, v).data, i64.as_pointer())
                    for t, v in zip(signature.args[1:3], args[1:3], strict=True)]
            return builder.call(function, [*data, args[3]])
        return types.int64(types.int64, first, second, types.int64), codegen

    @intrinsic
    def monotonic_ns(typingctx):
        """``clock_gettime(CLOCK_MONOTONIC)`` in nanoseconds."""
        def codegen(context, builder, signature, args):
            i64, i32 = ir.IntType(64), ir.IntType(32)
            timespec = ir.LiteralStructType([i64, i64])
            function = cgutils.get_or_insert_function(builder.module,
                                                      ir.FunctionType(i32, [i32, timespec.as_pointer()]),
                                                      "clock_gettime")
            slot = cgutils.alloca_once(builder, timespec)
            builder.call(function, [ir.Constant(i32, CLOCK_MONOTONIC), slot])
            zero = ir.Constant(i32, 0)
            seconds = builder.load(builder.gep(slot, [zero, zero]))
            nanoseconds = builder.load(builder.gep(slot, [zero, ir.Constant(i32, 1)]))
            return builder.add(builder.mul(seconds, ir.Constant(i64, 1_000_000_000)), nanoseconds)
        return types.int64(), codegen

    @intrinsic
    def futex_wait(typingctx, array, index, expected, timeout_ns):
        """Sleep while the low 32 bits of ``array[index]`` equal those of ``expected`` (Linux's futex word),
        until woken or ``timeout_ns`` has passed (spurious returns happen: callers check their condition again)."""
        def codegen(context, builder, signature, args):
            i64 = ir.IntType(64)
            timespec = ir.LiteralStructType([i64, i64])
            slot = cgutils.alloca_once(builder, timespec)
            billion = ir.Constant(i64, 1_000_000_000)
            zero, one = ir.Constant(ir.IntType(32), 0), ir.Constant(ir.IntType(32), 1)
            builder.store(builder.sdiv(args[3], billion), builder.gep(slot, [zero, zero]))
            builder.store(builder.srem(args[3], billion), builder.gep(slot, [zero, one]))
            pointer = _element(context, builder, signature.args[0], args[0], args[1])
            return _syscall(builder, [ir.Constant(i64, FUTEX), builder.ptrtoint(pointer, i64),
                                      ir.Constant(i64, FUTEX_WAIT_PRIVATE), args[2], builder.ptrtoint(slot, i64)])
        return types.int64(array, index, types.int64, types.int64), codegen

    @intrinsic
    def futex_wake(typingctx, array, index, count):
        """Wake up to ``count`` threads sleeping on ``array[index]``."""
        def codegen(context, builder, signature, args):
            i64 = ir.IntType(64)
            pointer = _element(context, builder, signature.args[0], args[0], args[1])
            return _syscall(builder, [ir.Constant(i64, FUTEX), builder.ptrtoint(pointer, i64),
                                      ir.Constant(i64, FUTEX_WAKE_PRIVATE), args[2], ir.Constant(i64, 0)])
        return types.int64(array, index, types.int64), codegen

    @intrinsic
    def thread_id(typingctx):
        """The calling thread's id (Linux's ``gettid``), as ``threading.get_native_id()`` gives it."""
        def codegen(context, builder, signature, args):
            i64 = ir.IntType(64)
            zero = ir.Constant(i64, 0)
            return _syscall(builder, [ir.Constant(i64, GETTID), zero, zero, zero, zero])
        return types.int64(), codegen
