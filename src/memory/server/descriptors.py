"""The ``kom.memory.v1`` resource descriptors (seed 004): JSON Schemas of what the MCP resources return.

Three files ship in the package under ``memory/server/kom.memory.v1/`` and are
served as MCP resources (``memory://schemas/kom.memory.v1/<file>``,
``application/schema+json``):

- ``episodic.json`` — a thread's timeline, ``memory://{namespace}/threads/{thread}``;
- ``semantic.json`` — one semantic memory (its embedding model and status, and the
  episodic message ids it came from in ``source_ids``), ``memory://{namespace}/memories/{id}``;
- ``jobs/semantic_sync.json`` — the sync job's contract, ``memory://{namespace}/jobs/sync``.

Each schema is generated from the pydantic models the server serialises
(:func:`generate`), so it says exactly what is returned; the shipped files are
checked against :func:`generate` by the tests, and ``python -m memory.server.descriptors``
rewrites them after a model changes.
"""

from __future__ import annotations

import json
import sys
from importlib import resources
from typing import Any

from pydantic import BaseModel, ConfigDict

from memory.episodic.types import JobState
from memory.server import models as m
from memory.types import MemoryItem

__all__ = ["VERSION", "DESCRIPTORS", "URI_PREFIX", "generate", "load", "uri"]

VERSION = "kom.memory.v1"
URI_PREFIX = f"memory://schemas/{VERSION}/"
MIME = "application/schema+json"


class SyncStatusBody(BaseModel):
    """The sync job's status as ``sync_status`` returns it (SyncStatus.to_dict)."""

    model_config = ConfigDict(extra="forbid")

    messages: dict[str, int]
    items: dict[str, int]
    pending: int
    claimed: dict[str, int]
    state: JobState | None


class SyncStatusResource(BaseModel):
    """``memory://{namespace}/jobs/sync``."""

    model_config = ConfigDict(extra="forbid")

    status: SyncStatusBody


#: file -> (resource template it describes, operation behind it, model serialised, description)
DESCRIPTORS: dict[str, tuple[str, str, type[BaseModel], str]] = {
    "episodic.json": (
        "memory://{namespace}/threads/{thread}", "recent_messages", m.MessagesOut,
        "Raw conversation timeline: a thread's latest messages, oldest first (namespace, thread, turn, role, "
        "speaker, content, sensitivity, tags, created_at, embedding status).",
    ),
    "semantic.json": (
        "memory://{namespace}/memories/{id}", "get", MemoryItem,
        "A semantic memory with its embedding metadata: embedding_model, embedding_status, content_hash, and "
        "source_ids, the episodic message ids it was learned from. Long texts are embedded as the mean of "
        "2,000-character chunks; chunk vectors are not kept, so no chunk ids or vector references are served.",
    ),
    "jobs/semantic_sync.json": (
        "memory://{namespace}/jobs/sync", "sync_status", SyncStatusResource,
        "The episodic->semantic sync job: rows by embedding status, pending count, claims in flight, and the "
        "job state (cursor, runs, processed/failed/skipped totals, last error). Secret and expired rows are "
        "skipped; every row embedded gets an 'embed' audit entry in the ledger (see history).",
    ),
}  # fmt: skip


def uri(name: str) -> str:
    """The MCP resource URI of descriptor ``name``."""
    return URI_PREFIX + name


def generate(name: str) -> dict[str, Any]:
    """The JSON Schema descriptor ``name`` from the models the server serialises."""
    resource, operation, model, description = DESCRIPTORS[name]
    schema = model.model_json_schema(mode="serialization")
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": uri(name),
        "title": f"{VERSION} {name.removesuffix('.json')}",
        "description": description,
        "x-kom-resource": resource,
        "x-kom-operation": operation,
        **{k: v for k, v in schema.items() if k not in ("title", "description")},
    }


def load(name: str) -> str:
    """The shipped text of descriptor ``name``. Raises KeyError for an unknown name."""
    if name not in DESCRIPTORS:
        raise KeyError(name)
    return resources.files("memory.server").joinpath(VERSION, name).read_text(encoding="utf-8")


def render(name: str) -> str:
    """The file text :func:`generate` gives for ``name`` (sorted keys, 2-space indent, final newline)."""
    return json.dumps(generate(name), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


if __name__ == "__main__":  # python -m memory.server.descriptors: rewrite the shipped files
    from pathlib import Path

    base = Path(__file__).with_name(VERSION)
    for file in DESCRIPTORS:
        (base / file).parent.mkdir(parents=True, exist_ok=True)
        (base / file).write_text(render(file), encoding="utf-8")
        sys.stdout.write(f"wrote {base / file}\n")
