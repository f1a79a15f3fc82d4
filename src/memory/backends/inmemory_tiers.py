"""The in-process :class:`~memory.backends.tiers.TierStore` (documents in dicts under the backend's lock)."""

from __future__ import annotations

import builtins
import itertools
import threading
from collections.abc import Sequence

from memory.backends.tiers import Doc, DocumentTierStore

__all__ = ["InMemoryTierStore"]


class InMemoryTierStore(DocumentTierStore):
    """Tier documents keyed by (namespace, kind, owner, id), insertion-ordered, thread-safe."""

    def __init__(self, lock: threading.RLock) -> None:
        """Share ``lock`` with the backend."""
        self._lock = lock
        self._docs: dict[tuple[str, str, str, str], tuple[int, str]] = {}
        self._seq = itertools.count()

    def _get(self, namespace: str, kind: str, owner: str, id: str) -> str | None:
        with self._lock:
            found = self._docs.get((namespace, kind, owner, id))
            return found[1] if found else None

    def _list(self, namespace: str, kind: str, owner: str | None) -> builtins.list[tuple[str, str, str]]:
        with self._lock:
            rows = [
                (seq, key[2], key[3], data)
                for key, (seq, data) in self._docs.items()
                if key[0] == namespace and key[1] == kind and (owner is None or key[2] == owner)
            ]
        return [(o, i, d) for _, o, i, d in sorted(rows)]

    def _owners(self, namespace: str, kinds: Sequence[str]) -> builtins.list[str]:
        with self._lock:
            return sorted({key[2] for key in self._docs if key[0] == namespace and key[1] in kinds})

    def _namespaces(self) -> builtins.list[str]:
        with self._lock:
            return sorted({key[0] for key in self._docs})

    def _apply(self, namespace: str, puts: Sequence[Doc], deletes: Sequence[tuple[str, str, str]]) -> None:
        with self._lock:  # nothing below can fail half-way: dict operations only
            for kind, owner, id in deletes:
                self._docs.pop((namespace, kind, owner, id), None)
            for kind, owner, id, data in puts:
                key = (namespace, kind, owner, id)
                old = self._docs.get(key)
                self._docs[key] = (old[0] if old else next(self._seq), data)
