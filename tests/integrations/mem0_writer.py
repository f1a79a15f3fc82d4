"""Writes a mem0 get_all JSON with the real mem0 library, offline (run as a script in a subprocess).

mem0's open-source Memory with an embedded Qdrant in a folder, a SQLite history
file, ``add(..., infer=False)`` (no LLM call; the OpenAI key is a dummy it never
uses) and this project's hashing embedder behind mem0's ``EmbeddingBase``.
Usage: python mem0_writer.py WORKDIR OUT.json
"""

from __future__ import annotations

import json
import os
import sys

os.environ["MEM0_TELEMETRY"] = "False"
os.environ.setdefault("OPENAI_API_KEY", "sk-dummy-never-used")

from mem0 import Memory as Mem0  # noqa: E402
from mem0.embeddings.base import EmbeddingBase  # noqa: E402

from memory.embedders.hashing import HashingEmbedder  # noqa: E402


class LocalEmbedder(EmbeddingBase):
    """mem0 embedder calling this project's hashing embedder (384-d, no network)."""

    def __init__(self) -> None:
        super().__init__()
        self._inner = HashingEmbedder()

    def embed(self, text, memory_action=None):  # type: ignore[no-untyped-def]
        return [float(x) for x in self._inner.embed_batch([text])[0]]


def main(workdir: str, out: str) -> None:
    config = {
        "vector_store": {
            "provider": "qdrant",
            "config": {"path": os.path.join(workdir, "qdrant"), "embedding_model_dims": 384, "on_disk": True},
        },
        "embedder": {"provider": "openai", "config": {"api_key": "sk-dummy", "embedding_dims": 384}},
        "llm": {"provider": "openai", "config": {"api_key": "sk-dummy"}},
        "history_db_path": os.path.join(workdir, "history.db"),
    }
    m = Mem0.from_config(config)
    m.embedding_model = LocalEmbedder()
    first = m.add("Alice prefers dark mode", user_id="alice", infer=False, metadata={"topic": "ui"})
    m.add("Alice is allergic to peanuts", user_id="alice", agent_id="helper", run_id="run-1", infer=False)
    m.add("Bob moved to Lisbon", user_id="bob", infer=False, expiration_date="2999-01-01")
    doomed = m.add("Alice owns a red bicycle", user_id="alice", infer=False)
    first_id = first["results"][0]["id"]
    m.update(first_id, "Alice prefers dark mode in every app")
    doomed_id = doomed["results"][0]["id"]
    m.delete(doomed_id)
    results = []
    for user in ("alice", "bob"):
        for record in m.get_all(filters={"user_id": user})["results"]:
            results.append({**record, "history": m.history(record["id"])})
    with open(out, "w", encoding="utf-8") as handle:
        json.dump({"results": results, "deleted_history": m.history(doomed_id)}, handle, default=str, indent=1)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
