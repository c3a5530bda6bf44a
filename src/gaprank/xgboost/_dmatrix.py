"""A DMatrix's labels, query boundaries and query weights, as a custom objective reads them every round.

A DMatrix can change between rounds (``set_label``, ``set_group``, ``set_weight``), so the objective reads all
three afresh each time. XGBoost's Python accessors (``get_label``, ``get_weight``, ``get_uint_info``) parse a JSON
description of the array and define a wrapper class on every call; here each read is one call of XGBoost's C
API (``XGDMatrixGetFloatInfo``, ``XGDMatrixGetUIntInfo``), through the library XGBoost itself loaded, and one
copy. Where that library or those functions are missing, or an array is not one value per row or query
(multi-target labels), the public accessor answers instead, so the values and errors are the accessors' own.
"""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np


def _c_api() -> Any:
    """The C library XGBoost's Python package loaded, or None where it cannot be found."""
    import xgboost.core

    lib = getattr(xgboost.core, "_LIB", None)
    if lib is None or not all(hasattr(lib, name) for name in ("XGDMatrixGetFloatInfo", "XGDMatrixGetUIntInfo",
                                                               "XGBGetLastError")):
        return None
    return lib


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
