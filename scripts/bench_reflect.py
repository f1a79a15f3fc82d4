"""Time one reflection pass over N scored conversations (rules path; SQLite file by default).

    .venv/bin/python scripts/bench_reflect.py --conversations 500 [--database URL] [--embedder hashing]

Builds N conversations of 4 messages each (half of them with a correction),
ends each (summary + record), records a rating and feedback for it, then times
``mem.reflect(limit=N)`` (one pass, every record) and a second pass (nothing to do).
Prints one JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

from memory import Memory
from memory.config import FeedbackSettings, Settings


def main() -> None:
    """Run the measurement and print the figures as JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conversations", type=int, default=500)
    parser.add_argument("--database", default=None, help="a database URL (default: a new SQLite file)")
    parser.add_argument("--embedder", default="hashing")
    args = parser.parse_args()
    n = args.conversations
    database = args.database or f"sqlite:///{Path(tempfile.mkdtemp()) / 'reflect.db'}"
    settings = Settings(
        database=database, embedder={"provider": args.embedder},  # type: ignore[arg-type]
        feedback=FeedbackSettings(reflect_batch=max(n, 1)),
    )  # fmt: skip
    with Memory(settings=settings) as mem:
        mem.prompts.create("support", "You are a support agent.")
        started = time.perf_counter()
        for i in range(n):
            thread = f"t{i}"
            user = f"user{i % 20}"
            mem.prompts.use(thread, "support", user=user)
            mem.messages.append(thread, f"How do I export dataset {i} to CSV?", user=user)
            mem.messages.append(thread, "Use the export menu.", role="assistant")
            follow = "No, I meant from the API" if i % 2 else "Thanks, that worked"
            mem.messages.append(thread, follow, user=user)
            mem.messages.append(thread, "Call GET /export?format=csv.", role="assistant")
            mem.end_conversation(thread)
            if i % 2:
                mem.feedback.record(thread, rating=2, feedback=f"too vague about dataset {i}",
                                    example="Give the exact API call")  # fmt: skip
            else:
                mem.feedback.record(thread, rating=5, example=f"The exact menu path for dataset {i}")
        setup = time.perf_counter() - started
        started = time.perf_counter()
        first = mem.reflect(limit=n)
        first_s = time.perf_counter() - started
        started = time.perf_counter()
        second = mem.reflect(limit=n)
        second_s = time.perf_counter() - started
    print(json.dumps({
        "conversations": n, "embedder": args.embedder, "backend": database.split(":", 1)[0], "setup_s": round(setup, 3),
        "reflect_s": round(first_s, 3), "per_conversation_ms": round(first_s * 1000 / max(n, 1), 3),
        "written": first.written, "examined": first.examined, "second_pass_s": round(second_s, 4),
        "second_written": second.written, "loadavg": os.getloadavg(),
    }))  # fmt: skip


if __name__ == "__main__":
    main()
