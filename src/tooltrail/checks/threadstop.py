"""Raise an exception inside another thread: the one place that reaches into CPython for it.

Python has no way to kill a thread. CPython's C API can ask a thread to raise an exception
at its next bytecode (``PyThreadState_SetAsyncExc``), which stops a busy or allocating Python
loop; a thread blocked inside C (``time.sleep``, a socket read) only sees it when that call
returns. ``AVAILABLE`` says whether the call was found (it is not on PyPy, nor without
``ctypes``); without it ``raise_in`` does nothing and returns False.
"""

from __future__ import annotations

import sys
from typing import Any


def _probe() -> Any:
    """The C function, with its argument types, or ``None`` where it cannot be used."""
    if sys.implementation.name != "cpython":
        return None
    try:
        import ctypes

        function = ctypes.pythonapi.PyThreadState_SetAsyncExc
    except (ImportError, AttributeError, OSError):
        return None
    function.argtypes = (ctypes.c_ulong, ctypes.py_object)
    function.restype = ctypes.c_int
    return function


_SET_ASYNC_EXC = _probe()
#: Whether ``raise_in`` can stop a thread on this interpreter.
AVAILABLE = _SET_ASYNC_EXC is not None


def raise_in(thread_id: int, exc_type: type[BaseException]) -> bool:
    """Ask thread ``thread_id`` (``Thread.ident``) to raise ``exc_type``; whether it was
    asked (False when the thread is gone or the interpreter cannot do it)."""
    if _SET_ASYNC_EXC is None:
        return False
    return bool(_SET_ASYNC_EXC(thread_id, exc_type) == 1)
