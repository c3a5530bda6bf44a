"""A DMatrix's labels, query boundaries and query weights, as a custom objective reads them every round.

A DMatrix can change between rounds (``set_label``, ``set_group``, ``set_weight``), so the objective reads all
three afresh each time. XGBoost's Python accessors (``get_label``, ``get_weight``, ``get_uint_info``) parse a JSON
description of the array and define a wrapper class on every call; here each read is one call of XGBoost's C
API (``XGDMatrixGetFloatInfo``, ``XGDMatrixGetUIntInfo``), through the library XGBoost itself loaded, and one
copy. Those functions return host memory in every XGBoost up to 3.2 (read in its source), and in any build
without CUDA; elsewhere (a later CUDA build might return device memory), where the library or the functions are
missing, or where an array is not one value per row or query (multi-target labels), the public accessor answers
instead, so the values and errors are the accessors' own.
"""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np

HOST_MEMORY_UP_TO = (3, 2)  # the last XGBoost whose info arrays were checked to be host memory in any build


def _c_api() -> Any:
    """The C library XGBoost's Python package loaded, or None where it cannot be found or its info arrays may
    not be host memory."""
    import xgboost
    import xgboost.core

    lib = getattr(xgboost.core, "_LIB", None)
    if lib is None or not all(hasattr(lib, name) for name in ("XGDMatrixGetFloatInfo", "XGDMatrixGetUIntInfo")):
        return None
    try:
        version = tuple(int(part) for part in xgboost.__version__.split(".")[:2])
        with_cuda = bool(xgboost.build_info().get("USE_CUDA", True))
    except (ValueError, AttributeError, TypeError):
        return None
    return lib if version <= HOST_MEMORY_UP_TO or not with_cuda else None


_UNREAD = object()
_library: Any = _UNREAD


def _read(dmatrix: Any, field: bytes, dtype: type) -> np.ndarray | None:
    """A copy of the DMatrix's ``field`` as a 1-D array, or None where the C API is not at hand."""
    global _library
    if _library is _UNREAD:
        _library = _c_api()
    lib = _library
    if lib is None:
        return None
    length, pointer = ctypes.c_uint64(), ctypes.c_void_p()
    read = lib.XGDMatrixGetFloatInfo if dtype is np.float32 else lib.XGDMatrixGetUIntInfo
    if read(dmatrix.handle, ctypes.c_char_p(field), ctypes.byref(length), ctypes.byref(pointer)) != 0:
        return None  # the accessor then raises XGBoost's own error
    if length.value == 0:
        return np.empty(0, dtype=dtype)
    if pointer.value is None:
        return None
    size = length.value * np.dtype(dtype).itemsize
    return np.frombuffer(memoryview((ctypes.c_char * size).from_address(pointer.value)), dtype=dtype).copy()


def labels(dmatrix: Any) -> np.ndarray:
    """``dmatrix.get_label()``: one label per row."""
    values = _read(dmatrix, b"label", np.float32)
    return values if values is not None and values.size == dmatrix.num_row() else dmatrix.get_label()


def weights(dmatrix: Any) -> np.ndarray:
    """``dmatrix.get_weight()``: empty, or the weights as set."""
    values = _read(dmatrix, b"weight", np.float32)
    return values if values is not None else dmatrix.get_weight()


def group_pointer(dmatrix: Any) -> np.ndarray:
    """``dmatrix.get_uint_info("group_ptr")``: the first row of each query, then the number of rows."""
    values = _read(dmatrix, b"group_ptr", np.uint32)
    return values if values is not None else dmatrix.get_uint_info("group_ptr")
