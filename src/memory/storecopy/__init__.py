"""Copy a whole store to another backend, losslessly (``memory migrate``): a service over the Backend protocol.

It lives beside the other services, not under ``backends/``: it knows no
engine, only the stores every backend declares (:mod:`.store`).
"""

from memory.storecopy.store import CopyReport, copy_store

__all__ = ["CopyReport", "copy_store"]
