"""The package's public surface: __all__ matches exports; AsyncMemory mirrors Memory."""

from __future__ import annotations

import asyncio
import inspect
import types
from pathlib import Path

import memory
from memory import AsyncMemory, Memory
from memory.embedders.hashing import HashingEmbedder


def test_all_matches_exports() -> None:
    # Submodules appear as attributes once anything (another test, say) has imported them.
    public = {
        name
        for name in dir(memory)
        if not name.startswith("_") and not isinstance(getattr(memory, name), types.ModuleType)
    }
    assert public == set(memory.__all__) - {"__version__"}


def _public_methods(cls: type) -> set[str]:
    return {
        name
        for name, value in inspect.getmembers(cls)
        if not name.startswith("_") and (inspect.isfunction(value) or inspect.iscoroutinefunction(value))
    }


def test_async_twin_has_every_method() -> None:
    assert _public_methods(Memory) == _public_methods(AsyncMemory)
    for name in _public_methods(AsyncMemory) - {"close"}:
        assert inspect.iscoroutinefunction(getattr(AsyncMemory, name)), name


def test_async_round_trip_matches_sync() -> None:
    async def scenario() -> tuple[list[str], list[str]]:
        async with AsyncMemory("memory://", embedder=HashingEmbedder()) as amem:
            ids = await amem.remember(["Ivan rides horses", "Judy paints"], user="x")
            assert isinstance(ids, list)
            hits = await amem.recall("horses", user="x")
            await amem.update(ids[1], tags=["art"])
            assert (await amem.get(ids[1])).tags == ("art",)
            assert [e.op for e in await amem.history(ids[1])] == ["add", "update"]
            assert (await amem.stats()).total == 2
            assert (await amem.list()).items[0].id == ids[1]
            assert await amem.forget(ids[0]) == 1
            return ids, [h.id for h in hits]

    ids, hit_ids = asyncio.run(scenario())
    sync = Memory("memory://", embedder=HashingEmbedder())
    sync_ids = sync.remember(["Ivan rides horses", "Judy paints"], user="x")
    assert hit_ids[0] == ids[0]
    assert [h.content for h in sync.recall("horses", user="x")][0] == "Ivan rides horses"
    assert len(sync_ids) == 2
    sync.close()


def test_close_closes_an_embedder_memory_created_but_not_one_passed_in() -> None:
    from memory.registry import register

    class Closable(HashingEmbedder):
        closed = 0

        def close(self) -> None:
            Closable.closed += 1

    register("embedder", "closable-test", Closable)
    Memory("memory://", embedder="closable-test").close()
    assert Closable.closed == 1
    Memory("memory://", embedder=Closable()).close()
    assert Closable.closed == 1


def test_warm_records_no_access_and_writes_nothing(tmp_path: Path) -> None:
    with Memory(f"sqlite:///{tmp_path / 'w.db'}", embedder=HashingEmbedder()) as mem:
        ids = mem.remember_batch([f"note {i} about trams" for i in range(30)])
        before = [(i.id, i.accessed_at, i.access_count) for i in mem.list(limit=50).items]
        ledger = mem.stats().ledger_entries
        mem.warm()
        mem.warm("elsewhere")  # a namespace with nothing in it is fine too
        assert [(i.id, i.accessed_at, i.access_count) for i in mem.list(limit=50).items] == before
        assert mem.stats().ledger_entries == ledger and len(ids) == 30


def test_async_warm() -> None:
    async def scenario() -> int:
        async with AsyncMemory("memory://", embedder=HashingEmbedder()) as amem:
            await amem.remember("Ivan rides horses")
            await amem.warm()
            return (await amem.get((await amem.recall("horses"))[0].item.id)).access_count

    assert asyncio.run(scenario()) == 1  # the recall's access, none from warm
