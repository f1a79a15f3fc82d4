"""A process's memory figures from Linux's /proc (the benchmarks' RSS readings); None elsewhere."""

from __future__ import annotations

from pathlib import Path

__all__ = ["status_mb"]


def status_mb(field: str, pid: int | None = None) -> float | None:
    """``field`` of ``/proc/<pid>/status`` (``VmRSS``, ``VmHWM``, …) in MB; this process without ``pid``.

    None where /proc is missing or the field is not there.
    """
    path = Path(f"/proc/{'self' if pid is None else pid}/status")
    try:
        for line in path.read_text().splitlines():
            if line.startswith(field + ":"):
                return round(int(line.split()[1]) / 1024, 1)
    except (OSError, IndexError, ValueError):
        return None
    return None
