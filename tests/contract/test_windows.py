"""Context windows and time words in the index key, on every backend (memory.retrieval.window)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

import numpy as np
import pytest

from memory import Memory
from memory.backends.base import Backend, NewRecord
from memory.errors import InvalidInputError
from memory.filters import Filter
from memory.records import build_item, ledger_entry
from memory.retrieval.config import CONTENT_ONLY, PRESETS, RetrievalConfig
from memory.retrieval.window import window_model, window_vector
from vector_storage import as_stored

NOW = datetime(2026, 3, 1, tzinfo=UTC)
WINDOW_ONLY = {"window": 1.0}
TURNS = [
    "Ann: I adopted a kitten called Pixel",
    "Bob: what colour is it",
    "Ann: grey with white paws",
    "Bob: my sister bakes sourdough",
    "Ann: does she sell it at the market",
    "Bob: only on saturdays",
    "Ann: I will visit her stall",
]


def _record(content: str, *, created_at: datetime = NOW, **fields: object) -> NewRecord:
    item = build_item(content=content, namespace="ns", now=created_at, **fields)  # type: ignore[arg-type]
    return NewRecord(item, None, ledger_entry("add", item.id, item.namespace, created_at, after=item))


def _flt() -> Filter:
    return Filter(namespace="ns", now=NOW)


def _window_hits(mem: Memory, word: str, namespace: str | None = None) -> set[str]:
    """Contents of memories whose window (not their own words) contains ``word``."""
    flt = mem.filter(namespace, clearance="secret")
    hits = mem.backend.search_lexical(flt, [word], 50, fields=WINDOW_ONLY)
    return {item.content for item in mem.backend.get(flt.namespace, [h.id for h in hits])}


# -- the backend contract ---------------------------------------------------
def test_fields_weigh_content_window_and_time(backend: Backend) -> None:
    a, b = _record("the red kite", created_at=datetime(2023, 5, 8, tzinfo=UTC)), _record("a blue heron")
    backend.add([a, b])
    assert backend.set_windows("ns", None, [(b.item.id, "a kite flew over", None)]) == 1
    assert [h.id for h in backend.search_lexical(_flt(), ["kite"], 10)] == [a.item.id]  # default: content only
    both = backend.search_lexical(_flt(), ["kite"], 10, fields={"content": 1.0, "window": 0.3})
    assert [h.id for h in both] == [a.item.id, b.item.id]  # own words outrank the window's
    assert [h.id for h in backend.search_lexical(_flt(), ["kite"], 10, fields=WINDOW_ONLY)] == [b.item.id]
    assert [h.id for h in backend.search_lexical(_flt(), ["may"], 10, fields={"time": 1.0})] == [a.item.id]
    assert [h.id for h in backend.search_lexical(_flt(), ["2023"], 10, fields={"time": 1.0})] == [a.item.id]
    assert backend.search_lexical(_flt(), ["may"], 10) == []
    with pytest.raises(InvalidInputError):
        backend.search_lexical(_flt(), ["kite"], 10, fields={"title": 1.0})
    with pytest.raises(InvalidInputError):
        backend.search_lexical(_flt(), ["kite"], 10, fields={"content": -1.0})


def test_window_text_survives_replace_and_goes_with_delete(backend: Backend) -> None:
    rec = _record("plain words")
    backend.add([rec])
    backend.set_windows("ns", None, [(rec.item.id, "neighbour talk", None)])
    changed = rec.item.model_copy(update={"content": "other words"})
    backend.replace(changed, None, ledger_entry("update", rec.item.id, "ns", NOW, before=rec.item, after=changed))
    assert [h.id for h in backend.search_lexical(_flt(), ["neighbour"], 10, fields=WINDOW_ONLY)] == [rec.item.id]
    assert [h.id for h in backend.search_lexical(_flt(), ["other"], 10)] == [rec.item.id]
    backend.delete("ns", [rec.item.id], [ledger_entry("delete", rec.item.id, "ns", NOW, before=changed)])
    assert backend.search_lexical(_flt(), ["neighbour"], 10, fields=WINDOW_ONLY) == []
    assert backend.set_windows("ns", None, [(rec.item.id, "gone", None)]) == 0


def test_window_vectors_leave_embedding_status_alone(backend: Backend) -> None:
    backend.ensure_vector_space("m", 4)
    backend.ensure_vector_space(window_model("m"), 4)
    item = build_item(content="x", namespace="ns", now=NOW).model_copy(
        update={"embedding_status": "done", "embedding_model": "m"}
    )
    own = np.array([1, 0, 0, 0], dtype=np.float32)
    backend.add([NewRecord(item, own, ledger_entry("add", item.id, "ns", NOW, after=item))])
    blended = np.array([0.6, 0.8, 0, 0], dtype=np.float32)
    backend.set_windows("ns", window_model("m"), [(item.id, "", blended)])
    assert backend.get("ns", [item.id])[0].embedding_model == "m"
    np.testing.assert_allclose(
        backend.get_vectors("ns", window_model("m"), [item.id])[item.id], as_stored(backend, blended)
    )
    np.testing.assert_allclose(backend.get_vectors("ns", "m", [item.id])[item.id], own)
    backend.set_windows("ns", window_model("m"), [(item.id, "", None)])
    assert backend.get_vectors("ns", window_model("m"), [item.id]) == {}
    with pytest.raises(InvalidInputError):
        backend.set_windows("ns", "unregistered", [(item.id, "", blended)])


def test_the_last_window_of_an_item_listed_twice_wins(backend: Backend) -> None:
    backend.ensure_vector_space(window_model("m"), 4)
    a, b = _record("plain words"), _record("other words")
    backend.add([a, b])
    first, last = np.array([1, 0, 0, 0], dtype=np.float32), np.array([0, 1, 0, 0], dtype=np.float32)
    updates = [(a.item.id, "kite talk", first), (b.item.id, "heron talk", first), (a.item.id, "plain", last)]
    assert backend.set_windows("ns", window_model("m"), [*updates, ("missing", "x", None)]) == 3
    assert backend.search_lexical(_flt(), ["kite"], 10, fields=WINDOW_ONLY) == []
    assert [h.id for h in backend.search_lexical(_flt(), ["plain"], 10, fields=WINDOW_ONLY)] == [a.item.id]
    stored = backend.get_vectors("ns", window_model("m"), [a.item.id, b.item.id])
    np.testing.assert_allclose(stored[a.item.id], last)
    np.testing.assert_allclose(stored[b.item.id], first)
    # back to the stored text last: the window is "plain" again, not the text in between
    assert backend.set_windows("ns", None, [(a.item.id, "kite talk", None), (a.item.id, "plain", None)]) == 2
    assert backend.search_lexical(_flt(), ["kite"], 10, fields=WINDOW_ONLY) == []
    with pytest.raises(InvalidInputError):
        backend.set_windows("ns", None, [(a.item.id, None, None)])  # type: ignore[list-item]
    assert [h.id for h in backend.search_lexical(_flt(), ["plain"], 10, fields=WINDOW_ONLY)] == [a.item.id]


# -- the facade keeps windows current ---------------------------------------
def test_windows_span_two_turns_each_side_of_the_thread(mem: Memory) -> None:
    mem.remember(TURNS, thread="t1")
    mem.remember("Cid: pixel art is fun", thread="t2")  # another thread: never in t1's windows
    # "pixel" is said in turn 0 (and in t2): turns 1 and 2 of t1 carry it in their windows
    assert _window_hits(mem, "pixel") == {TURNS[1], TURNS[2]}
    assert _window_hits(mem, "saturdays") == {TURNS[3], TURNS[4], TURNS[6]}


def test_turn_by_turn_equals_one_batch(make_memory: Callable[..., Memory]) -> None:
    batch = make_memory(namespace="batch")
    batch.remember(TURNS, thread="t")
    single = make_memory(namespace="single")
    for turn in TURNS:
        single.remember(turn, thread="t")
    for word in ("pixel", "grey", "sourdough", "market", "stall"):
        assert _window_hits(batch, word) == _window_hits(single, word)
    model = window_model(batch.embedder.model_name)
    by_content = {}
    for mem in (batch, single):
        ids = [h.id for h in mem.list(limit=50).items]
        items = {i.id: i.content for i in mem.list(limit=50).items}
        vectors = mem.backend.get_vectors(mem.namespace, model, ids)
        by_content[mem.namespace] = {items[i]: v for i, v in vectors.items()}
    assert by_content["batch"].keys() == set(TURNS)
    for content, vector in by_content["batch"].items():
        np.testing.assert_allclose(vector, by_content["single"][content], atol=1e-6)


def test_window_vector_is_the_blend_of_stored_vectors(mem: Memory) -> None:
    ids = mem.remember(TURNS[:3], thread="t")
    own = [mem.vector_of(i) for i in ids]
    stored = mem.backend.get_vectors(mem.namespace, window_model(mem.embedder.model_name), ids)
    blend = as_stored(mem.backend, window_vector(own[0], [own[1], own[2]]))
    np.testing.assert_allclose(stored[ids[0]], blend, atol=1e-6)
    lone = mem.remember("no thread here")  # no window vector: recall uses its own
    assert mem.backend.get_vectors(mem.namespace, window_model(mem.embedder.model_name), [lone]) == {}
    hits = mem.recall("no thread here", limit=4)
    assert hits[0].id == lone and hits[0].channels["vector"].raw == pytest.approx(1.0, abs=1e-5)


def test_vector_channel_ranks_as_one_full_window_space(mem: Memory) -> None:
    """Threaded memories by window vector, thread-less ones by their own: one list, cosine order."""
    ids = mem.remember(TURNS, thread="t") + mem.remember(["Ann: kittens are grey", "Bob: sourdough needs time"])
    config = PRESETS["balanced"].model_copy(update={"channels": ("vector",)})
    query = mem.embedder.embed_batch(["grey kitten sourdough"])[0]
    query = query / np.linalg.norm(query)
    space = window_model(mem.embedder.model_name)
    expected = {}
    for memory_id in ids:
        stored = mem.backend.get_vectors(mem.namespace, space, [memory_id]).get(memory_id)
        vector = stored if stored is not None else mem.vector_of(memory_id)
        expected[memory_id] = float(vector @ query / np.linalg.norm(vector))  # stored vectors: unit up to rounding
    hits = mem.recall("grey kitten sourdough", limit=len(ids), retrieval=config)
    assert [h.id for h in hits] == sorted(ids, key=lambda i: (-expected[i], i))
    assert [h.channels["vector"].raw for h in hits] == pytest.approx(sorted(expected.values(), reverse=True), abs=1e-5)


def test_forget_and_update_rewrite_the_neighbours(mem: Memory) -> None:
    ids = mem.remember(TURNS, thread="t1")
    mem.forget(ids[0])
    assert _window_hits(mem, "pixel") == set()  # a forgotten text leaves its neighbours' windows at once
    assert _window_hits(mem, "colour") == {TURNS[2], TURNS[3]}  # turn 1 is first now: 2 and 3 follow it
    mem.update(ids[3], content="Bob: my brother brews kombucha")
    assert _window_hits(mem, "sourdough") == set()
    assert _window_hits(mem, "kombucha") == {TURNS[1], TURNS[2], TURNS[4], TURNS[5]}
    mem.forget_all(thread="t1")
    assert mem.stats().total == 0


def test_more_sensitive_neighbours_stay_out(mem: Memory) -> None:
    mem.remember(
        [
            {"content": "Ann: the weather is mild", "thread": "t"},
            {"content": "Ann: my pin is 4711 zebra", "thread": "t", "sensitivity": "secret"},
            {"content": "Ann: private diary about zucchini", "thread": "t", "sensitivity": "private"},
            {"content": "Ann: lunch was good", "thread": "t"},
        ]
    )
    assert _window_hits(mem, "zebra") == set()
    assert _window_hits(mem, "zucchini") == {"Ann: my pin is 4711 zebra"}
    # without clearance nothing the caller may see matches the secret's words
    assert [h for h in mem.recall("zebra 4711") if "lexical" in h.channels] == []


def test_windows_never_cross_namespaces(mem: Memory) -> None:
    mem.remember("Ann: the llama is called Dolly", thread="t", namespace="a")
    mem.remember("Bob: nice to meet you", thread="t", namespace="b")
    assert _window_hits(mem, "llama", namespace="b") == set()
    assert _window_hits(mem, "llama", namespace="a") == set()


def test_recall_finds_a_reply_by_the_question_it_answers(mem: Memory) -> None:
    ids = mem.remember(
        [
            "Ann: where did you go on holiday",
            "Bob: we went to the Lofoten islands",
            "Ann: how was the food",
            "Bob: the fish was amazing",
        ],
        thread="t",
    )
    hits = mem.recall("holiday", limit=4)
    assert hits[0].id == ids[0]  # its own words rank first
    assert ids[1] in [h.id for h in hits if "lexical" in h.channels]  # the reply, through its window
    plain = mem.recall("holiday", limit=4, retrieval=PRESETS["plain"])
    assert [h.id for h in plain if "lexical" in h.channels] == [ids[0]]
    assert PRESETS["plain"].fields == CONTENT_ONLY


def test_pending_memories_get_window_vectors_when_embedded(make_memory: Callable[..., Memory]) -> None:
    from memory.embedders.hashing import HashingEmbedder

    class Flaky(HashingEmbedder):
        down = True

        def embed_batch(self, texts):  # type: ignore[no-untyped-def]
            if self.down:
                raise RuntimeError("embedder offline")
            return super().embed_batch(texts)

    flaky = Flaky()
    _ = flaky.dimension
    mem = make_memory(embedder=flaky)
    ids = mem.remember(TURNS[:3], thread="t")
    space = window_model(flaky.model_name)
    assert mem.backend.get_vectors(mem.namespace, space, ids) == {}
    flaky.down = False
    assert mem.embed_pending() == 3
    assert set(mem.backend.get_vectors(mem.namespace, space, ids)) == set(ids)


def test_context_window_zero_writes_no_windows(make_memory: Callable[..., Memory]) -> None:
    from memory.config import Settings

    mem = make_memory(settings=Settings(database="memory://", context_window=0))
    mem.remember(TURNS, thread="t")
    assert _window_hits(mem, "pixel") == set()
    assert mem.recall("pixel kitten")[0].content == TURNS[0]


def test_short_texts_add_a_feedback_channel(mem: Memory) -> None:
    ids = mem.remember(
        [
            "Ann: I fired a vase in the kiln at pottery class",
            "Ann: the kiln reached 1200 degrees overnight",
            "Bob: my cat sleeps all day",
        ]
    )
    for preset in ("balanced", "best"):
        hits = mem.recall("pottery", limit=3, retrieval=preset)
        by_id = {h.id: h for h in hits}
        # "kiln" comes from the top lexical hit; the second memory is found through it
        assert "feedback" in by_id[ids[1]].channels and "lexical" not in by_id[ids[1]].channels
        assert hits[0].id == ids[0]
    assert all("feedback" not in h.channels for h in mem.recall("pottery", limit=3, retrieval="fast"))


def test_long_texts_add_no_feedback_channel(mem: Memory) -> None:
    filler = " ".join(f"word{i}" for i in range(40))  # 40 more content words: a long text
    ids = mem.remember([f"Ann: I fired a vase in the kiln at pottery class. {filler}", "the kiln reached 1200 degrees"])
    assert all("feedback" not in h.channels for h in mem.recall("pottery", limit=3))
    always = RetrievalConfig(feedback_max_words=None)
    hits = {h.id: h for h in mem.recall("pottery", limit=3, retrieval=always)}
    assert "feedback" in hits[ids[1]].channels


def test_first_windows_in_an_existing_store_index_every_memory(make_memory: Callable[..., Memory]) -> None:
    """A store written without windows (or before they existed) gets all of them at its next write."""
    from memory.config import Settings
    from memory.embedders.hashing import HashingEmbedder
    from memory.retrieval.recall import Recall

    embedder = HashingEmbedder()
    old = make_memory(embedder=embedder, settings=Settings(database="memory://", context_window=0))
    ids = old.remember(TURNS, thread="t") + [old.remember("elsewhere", namespace="other", thread="x")]
    space = window_model(embedder.model_name)
    assert space not in [s.model for s in old.backend.vector_spaces()]
    assert Recall(old.core).vector_space(PRESETS["balanced"]) == embedder.model_name  # no window space: content vectors
    new = Memory(backend=old.backend, embedder=embedder, settings=Settings(database="memory://"))
    new.remember("Bob: see you soon", thread="t")
    assert set(new.backend.get_vectors("default", space, ids[:-1])) == set(ids[:-1])
    assert set(new.backend.get_vectors("other", space, ids[-1:])) == {ids[-1]}
    assert _window_hits(new, "pixel") == {TURNS[1], TURNS[2]}
    assert Recall(new.core).vector_space(PRESETS["balanced"]) == space


def test_windows_of_an_older_rule_are_recomputed_at_the_next_write(make_memory: Callable[..., Memory]) -> None:
    """Windows computed by another window rule (an upgraded store) are all recomputed at its next write."""
    from memory.config import Settings
    from memory.embedders.hashing import HashingEmbedder
    from memory.retrieval.window import WINDOW_RULE

    embedder = HashingEmbedder()
    old = make_memory(embedder=embedder, settings=Settings(database="memory://"))
    ids = old.remember(TURNS, thread="t")
    index = old.backend.windows
    assert index is not None and index.window_rule() == WINDOW_RULE  # the first windows record their rule
    # Pretend the store was windowed by an older rule: a far memory's window says something else.
    index.set_windows("default", None, [(ids[0], "stale zebra", None)])
    index.set_window_rule("1")
    assert _window_hits(old, "zebra") == {TURNS[0]}
    new = Memory(backend=old.backend, embedder=embedder, settings=Settings(database="memory://"))
    new.remember("Carol: a new thread", thread="elsewhere")  # far from ids[0]: only a full rebuild reaches it
    assert _window_hits(new, "zebra") == set()
    assert _window_hits(new, "pixel") == {TURNS[1], TURNS[2]}
    assert index.window_rule() == WINDOW_RULE
    # Once recorded, a write re-windows only around itself.
    index.set_windows("default", None, [(ids[0], "stale zebra", None)])
    new.remember("Carol: still here", thread="elsewhere")
    assert _window_hits(new, "zebra") == {TURNS[0]}


def test_an_older_rule_is_caught_up_a_bounded_batch_per_write(
    make_memory: Callable[..., Memory], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A write in a store of an older window rule re-windows at most REWINDOW_BATCH memories, then goes on."""
    import memory.windows
    from memory.config import Settings
    from memory.embedders.hashing import HashingEmbedder
    from memory.retrieval.window import WINDOW_RULE

    embedder = HashingEmbedder()
    old = make_memory(embedder=embedder, settings=Settings(database="memory://"))
    ids = old.remember(TURNS, thread="t")
    index = old.backend.windows
    assert index is not None
    index.set_windows("default", None, [(i, "stale zebra", None) for i in ids])
    index.set_window_rule("1")
    monkeypatch.setattr(memory.windows, "REWINDOW_BATCH", 3)
    new = Memory(backend=old.backend, embedder=embedder, settings=Settings(database="memory://"))
    stale = [len(_window_hits(new, "zebra"))]
    states = []
    for n in range(5):  # 7 memories and the notes written meanwhile, 3 a write
        new.remember(f"Carol: note {n}", thread="elsewhere")
        stale.append(len(_window_hits(new, "zebra")))
        states.append(index.window_rule())
    # 3 memories (oldest first) per write, with the windows around them (2 each side): 5, then the rest
    assert stale[:3] == [7, 2, 0]
    assert states[0] != WINDOW_RULE and states[-1] == WINDOW_RULE
