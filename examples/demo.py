"""Demo: store a handful of memories in a SQLite file, recall them, print scored hits.

Run it with `make demo` (sets everything up) or `python examples/demo.py [DB_PATH]`.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from rich.console import Console
from rich.table import Table

from memory import Memory

MEMORIES = [
    ("Alice prefers dark mode in every editor she uses", "alice", ["ui", "prefs"]),
    ("Alice is allergic to peanuts and carries an EpiPen", "alice", ["health"]),
    ("Alice moved from Lisbon to Berlin in March 2024", "alice", ["home"]),
    ("Alice's daughter Mia starts school in September", "alice", ["family"]),
    ("Bob drinks his coffee black, no sugar", "bob", ["food"]),
    ("Bob is training for the Berlin marathon", "bob", ["sport"]),
]
QUERIES = [
    ("what does alice like?", "alice"),
    ("which city does she live in now?", "alice"),
    ("food she has to avoid", "alice"),
    ("how does he take his coffee", "bob"),
]


def main() -> None:
    """Store the demo memories, run the demo queries, print the hits with channel scores."""
    console = Console()
    path = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp()) / "demo.db"
    with Memory(f"sqlite:///{path}") as mem:
        for content, user, tags in MEMORIES:
            mem.remember(content, user=user, tags=tags, kind="fact")
        stats = mem.stats()
        console.print(
            f"[bold]memory demo[/bold] — {stats.total} memories in {path} "
            f"(backend {stats.backend}, embedder {stats.embedding_model}, dim {stats.embedding_dim})\n"
        )
        for query, user in QUERIES:
            table = Table(title=f"recall({query!r}, user={user!r})", title_justify="left")
            table.add_column("#", justify="right")
            table.add_column("score", justify="right")
            table.add_column("memory")
            table.add_column("vector (rank, cos)")
            table.add_column("lexical (rank, bm25)")
            for rank, hit in enumerate(mem.recall(query, user=user, limit=3), start=1):
                vec = hit.channels.get("vector")
                lex = hit.channels.get("lexical")
                table.add_row(
                    str(rank),
                    f"{hit.score:.3f}",
                    hit.content,
                    f"#{vec.rank}  {vec.raw:.3f}" if vec else "—",
                    f"#{lex.rank}  {lex.raw:.2f}" if lex else "—",
                )
            console.print(table)


if __name__ == "__main__":
    main()
