"""Working-memory blocks and job state, written once for SQLite and PostgreSQL (mixed into the episodic store).

Tables ``blocks``, ``block_history`` and ``job_state`` (SQLite migration
``0006_episodic``, PostgreSQL ``0004_episodic``). A block's scope is
(namespace, user, agent); an unset user or agent is stored as ``''`` in the
key columns (names are never empty), so the primary key works.
``write_block`` is compare-and-set on the stored version; ``update_job_state``
holds the job's row (``FOR UPDATE`` where the engine needs it) while it
applies the change.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable

from memory.backends.dialect import Dialect
from memory.episodic.types import Block, BlockChange, JobState

__all__ = ["SQLBlocksAndJobs"]

_SCOPE = "namespace = ? AND user_key = ? AND agent_key = ?"


def _key(value: str | None) -> str:
    return value or ""


class SQLBlocksAndJobs:
    """Block and job-state methods; the host class sets ``_d`` to its dialect."""

    _d: Dialect

    # -- blocks ------------------------------------------------------------
    def get_block(self, namespace: str, user: str | None, agent: str | None, label: str) -> Block | None:
        """The block, or None."""
        d = self._d
        if not d.storable(namespace, _key(user), _key(agent), label):
            return None
        with d.read() as conn:
            rows = d.rows(conn, f"SELECT data FROM blocks WHERE {_SCOPE} AND label = ?",
                          (namespace, _key(user), _key(agent), label))  # fmt: skip
        return Block.model_validate_json(rows[0][0]) if rows else None

    def list_blocks(self, namespace: str, user: str | None, agent: str | None) -> builtins.list[Block]:
        """Blocks of exactly this scope, by label."""
        d = self._d
        if not d.storable(namespace, _key(user), _key(agent)):
            return []
        with d.read() as conn:
            rows = d.rows(conn, f"SELECT data FROM blocks WHERE {_SCOPE} ORDER BY label",
                          (namespace, _key(user), _key(agent)))  # fmt: skip
        return [Block.model_validate_json(r[0]) for r in rows]

    def iter_blocks(self, namespace: str) -> builtins.list[Block]:
        """Every block of the namespace."""
        d = self._d
        if not d.storable(namespace):
            return []
        with d.read() as conn:
            rows = d.rows(conn, "SELECT data FROM blocks WHERE namespace = ? ORDER BY user_key, agent_key, label",
                          (namespace,))  # fmt: skip
        return [Block.model_validate_json(r[0]) for r in rows]

    def write_block(self, block: Block, expected_version: int, change: BlockChange) -> bool:
        """Compare-and-set on the version, and a history row, in one transaction."""
        d = self._d
        key = (block.namespace, _key(block.user), _key(block.agent), block.label)
        with d.write() as conn:
            if expected_version == 0:
                written = d.rows(
                    conn,
                    "INSERT INTO blocks (namespace, user_key, agent_key, label, data, version) "
                    "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING RETURNING 1",
                    (*key, block.model_dump_json(), block.version),
                )
            else:
                written = d.rows(
                    conn,
                    f"UPDATE blocks SET data = ?, version = ? WHERE {_SCOPE} AND label = ? AND version = ? RETURNING 1",
                    (block.model_dump_json(), block.version, *key, expected_version),
                )
            if not written:
                return False
            d.run(conn, "INSERT INTO block_history (namespace, user_key, agent_key, label, data) "
                  "VALUES (?, ?, ?, ?, ?)", (*key, change.model_dump_json()))  # fmt: skip
            return True

    def block_history(
        self, namespace: str, user: str | None, agent: str | None, label: str
    ) -> builtins.list[BlockChange]:
        """Changes of a block, oldest first."""
        d = self._d
        if not d.storable(namespace, _key(user), _key(agent), label):
            return []
        with d.read() as conn:
            rows = d.rows(conn, f"SELECT data FROM block_history WHERE {_SCOPE} AND label = ? ORDER BY seq",
                          (namespace, _key(user), _key(agent), label))  # fmt: skip
        return [BlockChange.model_validate_json(r[0]) for r in rows]

    # -- job state ---------------------------------------------------------
    def get_job_state(self, name: str) -> JobState | None:
        """The job's state, or None."""
        d = self._d
        if not d.storable(name):
            return None
        with d.read() as conn:
            rows = d.rows(conn, "SELECT data FROM job_state WHERE name = ?", (name,))
        return JobState.model_validate_json(rows[0][0]) if rows and rows[0][0] else None

    def update_job_state(self, name: str, change: Callable[[JobState | None], JobState]) -> JobState:
        """Apply ``change`` to the job's state in one transaction holding its row."""
        d = self._d
        with d.write() as conn:
            # make sure the row exists, so a row lock has something to hold ('' reads as no state)
            d.run(conn, "INSERT INTO job_state (name, data) VALUES (?, '') ON CONFLICT (name) DO NOTHING", (name,))
            ((data,),) = d.rows(conn, f"SELECT data FROM job_state WHERE name = ?{d.for_update}", (name,))
            state = change(JobState.model_validate_json(data) if data else None)
            d.run(conn, "UPDATE job_state SET data = ? WHERE name = ?", (state.model_dump_json(), name))
            return state

    def put_job_state(self, state: JobState) -> None:
        """Replace the job's state."""
        d = self._d
        with d.write() as conn:
            d.run(conn, "INSERT INTO job_state (name, data) VALUES (?, ?) "
                  "ON CONFLICT (name) DO UPDATE SET data = excluded.data",
                  (state.name, state.model_dump_json()))  # fmt: skip
