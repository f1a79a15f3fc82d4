"""Working-memory blocks and job state of the SQLite episodic store (tables ``blocks``,
``block_history``, ``job_state``); mixed into :class:`~.episodic.SQLiteEpisodicStore`.

A block's scope is (namespace, user, agent); an unset user or agent is stored as
``''`` in the key columns (names are never empty), so the primary key works.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable
from typing import TYPE_CHECKING

from memory.episodic.types import Block, BlockChange, JobState

if TYPE_CHECKING:
    from memory.backends.sqlite.backend import SQLiteBackend

__all__ = ["BlocksAndJobsMixin"]


def _key(value: str | None) -> str:
    return value or ""


class BlocksAndJobsMixin:
    """Block and job-state methods; the host class sets ``_b`` to its SQLiteBackend."""

    _b: SQLiteBackend

    # -- blocks ------------------------------------------------------------
    def get_block(self, namespace: str, user: str | None, agent: str | None, label: str) -> Block | None:
        """The block, or None."""
        with self._b._read() as conn:
            row = conn.execute(
                "SELECT data FROM blocks WHERE namespace = ? AND user_key = ? AND agent_key = ? AND label = ?",
                (namespace, _key(user), _key(agent), label),
            ).fetchone()
        return None if row is None else Block.model_validate_json(row[0])

    def list_blocks(self, namespace: str, user: str | None, agent: str | None) -> builtins.list[Block]:
        """Blocks of exactly this scope, by label."""
        with self._b._read() as conn:
            rows = conn.execute(
                "SELECT data FROM blocks WHERE namespace = ? AND user_key = ? AND agent_key = ? ORDER BY label",
                (namespace, _key(user), _key(agent)),
            ).fetchall()
        return [Block.model_validate_json(r[0]) for r in rows]

    def iter_blocks(self, namespace: str) -> builtins.list[Block]:
        """Every block of the namespace."""
        with self._b._read() as conn:
            rows = conn.execute(
                "SELECT data FROM blocks WHERE namespace = ? ORDER BY user_key, agent_key, label", (namespace,)
            ).fetchall()
        return [Block.model_validate_json(r[0]) for r in rows]

    def write_block(self, block: Block, expected_version: int, change: BlockChange) -> bool:
        """Compare-and-set on the version, and a history row, in one transaction."""
        key = (block.namespace, _key(block.user), _key(block.agent), block.label)
        with self._b._write() as conn:
            row = conn.execute(
                "SELECT version FROM blocks WHERE namespace = ? AND user_key = ? AND agent_key = ? AND label = ?", key
            ).fetchone()
            if (int(row[0]) if row is not None else 0) != expected_version:
                return False
            conn.execute(
                "INSERT INTO blocks (namespace, user_key, agent_key, label, data, version) VALUES (?, ?, ?, ?, ?, ?) "
                "ON CONFLICT (namespace, user_key, agent_key, label) DO UPDATE SET data = excluded.data, "
                "version = excluded.version",
                (*key, block.model_dump_json(), block.version),
            )
            conn.execute(
                "INSERT INTO block_history (namespace, user_key, agent_key, label, data) VALUES (?, ?, ?, ?, ?)",
                (*key, change.model_dump_json()),
            )
            return True

    def block_history(
        self, namespace: str, user: str | None, agent: str | None, label: str
    ) -> builtins.list[BlockChange]:
        """Changes of a block, oldest first."""
        with self._b._read() as conn:
            rows = conn.execute(
                "SELECT data FROM block_history WHERE namespace = ? AND user_key = ? AND agent_key = ? AND label = ? "
                "ORDER BY seq",
                (namespace, _key(user), _key(agent), label),
            ).fetchall()
        return [BlockChange.model_validate_json(r[0]) for r in rows]

    # -- job state ---------------------------------------------------------
    def get_job_state(self, name: str) -> JobState | None:
        """The job's state, or None."""
        with self._b._read() as conn:
            row = conn.execute("SELECT data FROM job_state WHERE name = ?", (name,)).fetchone()
        return None if row is None else JobState.model_validate_json(row[0])

    def update_job_state(self, name: str, change: Callable[[JobState | None], JobState]) -> JobState:
        """Apply ``change`` to the job's state inside one immediate transaction."""
        with self._b._write() as conn:
            row = conn.execute("SELECT data FROM job_state WHERE name = ?", (name,)).fetchone()
            state = change(None if row is None else JobState.model_validate_json(row[0]))
            conn.execute(
                "INSERT INTO job_state (name, data) VALUES (?, ?) "
                "ON CONFLICT (name) DO UPDATE SET data = excluded.data",
                (name, state.model_dump_json()),
            )
            return state

    def put_job_state(self, state: JobState) -> None:
        """Replace the job's state."""
        with self._b._write() as conn:
            conn.execute(
                "INSERT INTO job_state (name, data) VALUES (?, ?) "
                "ON CONFLICT (name) DO UPDATE SET data = excluded.data",
                (state.name, state.model_dump_json()),
            )
