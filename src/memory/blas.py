"""numpy's BLAS kept on one thread around the calls that would start its threads.

Idle OpenBLAS threads spin after a multi-threaded call (~20 ms a call here),
holding a core that the embedder, the server or another process needs. The
MiniLM numpy runtime does its own threading and caps BLAS while it runs; the
SQLite engine caps it around the rotation of a batch of vectors (measured on
a LongMemEval ingest: 6 s of the second core spinning in 18 s without the cap).
"""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Callable
from typing import Any

__all__ = ["SingleThreadBlas", "single_thread_blas"]


class SingleThreadBlas:
    """Keeps numpy's BLAS on one thread while the calls inside ``with`` run, then restores it.

    Idle OpenBLAS threads spin, and a pass split over every core stalls when
    another process holds one (docs/embedders.md); the numpy runtime does its
    own threading instead. The cap is process-wide while any user is inside
    (embedder passes and vector writes share one count), whichever thread
    they run on. It uses
    OpenBLAS's own setter, found among the libraries loaded (Linux), else
    ``threadpoolctl`` when installed (other BLAS libraries); without either,
    BLAS keeps its default and ``available`` is False.

    Not ``threadpoolctl`` first: it lets only the first thread that set an
    OpenBLAS limit (while it lives) set one, and ignores the others. The cap of
    the embedding batcher's worker thread was a silent no-op that way whenever
    the main thread had embedded first (found in issue 22).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._users = 0
        self._restore: Callable[[], None] | None = None
        self._cap = self._find()

    @staticmethod
    def _find() -> Callable[[], Callable[[], None]] | None:
        """A function that caps BLAS at one thread and returns the function undoing it."""
        return _openblas_cap() or _threadpoolctl_cap()

    @property
    def available(self) -> bool:
        """Whether BLAS threads can be capped here."""
        return self._cap is not None

    def __enter__(self) -> None:
        if self._cap is not None:
            with self._lock:
                self._users += 1
                if self._users == 1:
                    self._restore = self._cap()

    def __exit__(self, *exc: object) -> None:
        if self._cap is not None:
            with self._lock:
                self._users -= 1
                if self._users == 0 and self._restore is not None:
                    self._restore()
                    self._restore = None


def _openblas_cap() -> Callable[[], Callable[[], None]] | None:
    """OpenBLAS's own thread setter among the loaded libraries (Linux), as a cap; None if none is loaded."""
    try:
        with open("/proc/self/maps", encoding="utf-8") as maps:
            paths = sorted({line.split()[-1] for line in maps if "openblas" in line.lower() and ".so" in line})
    except OSError:
        return None
    for path in paths:
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for name in ("scipy_openblas{}64_", "scipy_openblas{}", "openblas{}64_", "openblas{}"):
            getter = getattr(lib, name.format("_get_num_threads"), None)
            setter = getattr(lib, name.format("_set_num_threads"), None)
            if getter is None or setter is None:
                continue
            getter.restype, getter.argtypes, setter.argtypes = ctypes.c_int, [], [ctypes.c_int]

            def cap_openblas(get: Any = getter, put: Any = setter) -> Callable[[], None]:
                before = int(get())
                put(1)
                return lambda: put(before)

            return cap_openblas
    return None


def _threadpoolctl_cap() -> Callable[[], Callable[[], None]] | None:
    """A cap through ``threadpoolctl`` for the BLAS libraries it knows; None without it or without BLAS."""
    try:
        from threadpoolctl import ThreadpoolController

        blas = ThreadpoolController().select(user_api="blas")
    except Exception:  # noqa: BLE001 - optional package; any failure means "not available"
        return None
    if not blas.lib_controllers:
        return None
    return lambda: blas.limit(limits=1).restore_original_limits


_BLAS_LOCK = threading.Lock()
_BLAS: SingleThreadBlas | None = None


def single_thread_blas() -> SingleThreadBlas:
    """The process's one BLAS cap, created on first use (after numpy has loaded its BLAS)."""
    global _BLAS
    with _BLAS_LOCK:
        if _BLAS is None:
            _BLAS = SingleThreadBlas()
        return _BLAS
