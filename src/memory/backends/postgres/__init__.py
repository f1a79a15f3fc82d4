"""The PostgreSQL backend: pgvector HNSW, tsvector/GIN BM25, a pool, SKIP LOCKED job claims.

``postgresql://user@host/db`` opens it through the backend registry (install
``llm-agent-memory[postgres]``). Needs PostgreSQL >= 15 with pgvector >= 0.5.
"""

from __future__ import annotations

from memory.backends.postgres.backend import PostgresBackend

__all__ = ["PostgresBackend"]
