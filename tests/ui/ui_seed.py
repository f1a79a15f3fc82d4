"""A small, varied store for the inspector's tests and screenshots (real SQLite file, hashing embedder)."""

from __future__ import annotations

import struct
import zlib
from datetime import UTC, datetime, timedelta

from memory import Memory


def png(width: int = 96, height: int = 64) -> bytes:
    """A real RGB PNG (a colour gradient) for the media view."""
    rows = b"".join(
        b"\x00" + b"".join(bytes((255 * x // width, 255 * y // height, 180)) for x in range(width))
        for y in range(height)
    )

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


def seed(mem: Memory, namespace: str = "a") -> dict[str, str]:
    """Fill ``namespace`` with memories, a graph, threads (one with an image), blocks, tiers and prompts.

    Returns ids the tests use: ``berlin`` (a fact about Alice), ``closed`` (a superseded fact),
    ``secret`` (a secret memory).
    """
    ns = namespace
    ids: dict[str, str] = {}
    ids["berlin"] = mem.remember(
        "Alice moved to Berlin in 2021.", user="alice", kind="fact", tags=["home"], importance=0.8,
        namespace=ns, extract=True,
    )  # fmt: skip
    ids["closed"] = mem.remember(
        "Alice works at Acme Corp.", user="alice", kind="fact", tags=["work"], namespace=ns, extract=True,
        valid_from=datetime(2019, 1, 1, tzinfo=UTC),
    )  # fmt: skip
    mem.update(ids["closed"], namespace=ns, valid_to=datetime(2023, 6, 30, tzinfo=UTC), reason="left Acme")
    mem.remember("Alice works at Globex.", user="alice", kind="fact", tags=["work"], namespace=ns, extract=True)
    mem.remember("Alice prefers dark mode in every editor.", user="alice", kind="trait", tags=["ui"], namespace=ns)
    mem.remember("Bob likes green tea and hiking.", user="bob", kind="fact", tags=["food"], namespace=ns)
    mem.remember("Bob lives in Paris.", user="bob", kind="fact", namespace=ns, extract=True)
    ids["secret"] = mem.remember(
        "Alice's door code is 4711.", user="alice", kind="fact", sensitivity="secret", namespace=ns
    )
    mem.link(ids["berlin"], ids["closed"], "relates_to", namespace=ns)
    # Alice left Acme: the relation extracted from the closed fact is closed too (kept, with its dates).
    graph = mem.graph.store
    acme = [r.id for r in graph.relations(ns, None) if r.object == "Acme Corp"]
    graph.invalidate_relations(ns, acme, datetime(2023, 6, 30, tzinfo=UTC))
    for i in range(60):
        mem.remember(f"Meeting note {i}: the team discussed release {i % 5} and the roadmap.", user="alice",
                     kind="document", tags=["meeting"], namespace=ns)  # fmt: skip
    start = datetime.now(UTC) - timedelta(hours=2)
    turns = [
        ("user", "Hi, I just moved to Berlin and need a new dentist."),
        ("assistant", "Welcome to Berlin! Do you prefer a dentist near Mitte or Kreuzberg?"),
        ("user", "Near Kreuzberg, please. Here is a photo of my street."),
        ("assistant", "Thanks, that helps. I found three dentists within a ten-minute walk."),
    ]
    for i, (role, text) in enumerate(turns):
        fields = (
            {"content_type": "image", "media": png(), "mime": "image/png", "media_name": "street.png"} if i == 2 else {}
        )
        mem.messages.append("t-berlin", text, role=role, user="alice", agent="helper", namespace=ns,
                            created_at=start + timedelta(minutes=i), **fields)  # fmt: skip
    mem.messages.append("t-tea", "Which tea should I try next?", user="bob", namespace=ns)
    mem.messages.append("t-tea", "Try a Japanese sencha.", role="assistant", user="bob", namespace=ns)
    mem.blocks.replace("user_info", "Alice lives in Berlin.", user="alice", namespace=ns, reason="first conversation")
    mem.blocks.append("user_info", "Prefers dark mode.", user="alice", namespace=ns, reason="noticed preference")
    mem.blocks.replace("goals_and_status", "Find a dentist in Kreuzberg.", user="alice", namespace=ns)
    for q, r in [
        ("Where can I find a dentist?", "There are three dentists near Kreuzberg."),
        ("What about opening hours?", "Most open at 8 am on weekdays."),
        ("Can I book online?", "Yes, two of them take online bookings."),
        ("Which dentist speaks English?", "Dr. Weber's practice speaks English."),
        ("Is Dr. Weber covered by my insurance?", "Yes, public insurance is accepted there."),
        ("How do I get there by tram?", "Take the M10 tram to Warschauer Strasse."),
        ("Any good coffee nearby?", "There is a cafe next to the dentist."),
        ("What should I bring to the appointment?", "Bring your insurance card and ID."),
        ("Can I reschedule later?", "Yes, up to 24 hours before the appointment."),
        ("Do they do teeth cleaning?", "Yes, professional cleaning takes 45 minutes."),
    ]:
        mem.tiers.add_page(q, r, agent="helper", user="alice", namespace=ns, record=False)
    mem.prompts.create("support", "You are a helpful support agent.", namespace=ns)
    mem.prompts.add_version("support", "You are a concise, friendly support agent.", namespace=ns)
    mem.feedback.record("t-berlin", rating=5, prompt="support", prompt_version=1, namespace=ns)
    mem.feedback.record("t-tea", rating=3, prompt="support", prompt_version=1, namespace=ns)
    return ids
