"""Four `memory worker` processes share the sync work on one PostgreSQL store; nothing is done twice.

A real server (scripts/pg.sh), a real loopback embedding server that counts
every text it answers, real worker processes stopped with SIGTERM.
"""

from __future__ import annotations

import json
import queue
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from typing import IO

import pytest
from embed_server import EmbedServer
from episodic_helpers import SCRIPT, cli_env, wait_for

from memory import Memory
from memory.embedders.http import OpenAIEmbedder
from pg_support import fresh_database, postgres_dsn

pytestmark = pytest.mark.slow

WORKERS = 4
MESSAGES = 120
MEMORIES = 20


@pytest.fixture
def pg_url() -> Iterator[str]:
    """A new, empty database on the test server."""
    with fresh_database(postgres_dsn()) as url:
        yield url


def _pump(stream: IO[str], sink: queue.Queue[str]) -> None:
    for line in stream:
        sink.put(line)


def _status(url: str, server: EmbedServer) -> tuple[dict[str, int], dict[str, int], dict[str, int]]:
    with Memory(url, embedder=OpenAIEmbedder(**server.options())) as mem:
        status = mem.sync_status()
    return status.messages, status.items, status.claimed


def test_four_workers_share_the_sync_work_and_nothing_is_embedded_twice(pg_url: str, server: EmbedServer) -> None:
    memories = [f"memory fact {i} about the harbour" for i in range(MEMORIES)]
    texts = [f"message {i} about topic {i % 7}" for i in range(MESSAGES)]
    server.default = "500"  # the memories are stored pending: the workers embed them too
    with Memory(pg_url, embedder=OpenAIEmbedder(**server.options())) as mem:
        for text in memories:
            mem.remember(text)
    assert _status(pg_url, server)[1] == {"pending": MEMORIES}
    assert not server.delivered
    server.default = "delay:0.5"  # every batch takes a while: all four workers are busy at once
    env = cli_env(server, timeout=60)
    procs = [
        subprocess.Popen(
            [str(SCRIPT), "--db", pg_url, "worker", "--jobs", "sync", "--interval", "0.2", "--batch-size", "5"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )  # fmt: skip
        for _ in range(WORKERS)
    ]
    outs: list[queue.Queue[str]] = []
    errs: list[queue.Queue[str]] = []
    pumps: list[threading.Thread] = []
    for proc in procs:
        out: queue.Queue[str] = queue.Queue()
        err: queue.Queue[str] = queue.Queue()
        for stream, sink in ((proc.stdout, out), (proc.stderr, err)):
            pumps.append(threading.Thread(target=_pump, args=(stream, sink), daemon=True))
            pumps[-1].start()
        outs.append(out)
        errs.append(err)
    try:
        stderr: list[list[str]] = [[] for _ in procs]
        deadline = time.monotonic() + 120
        while not all(any("worker started" in line for line in lines) for lines in stderr):
            assert time.monotonic() < deadline, f"workers did not start: {stderr}"
            assert all(p.poll() is None for p in procs), f"a worker exited early: {stderr}"
            for i, sink in enumerate(errs):
                while not sink.empty():
                    stderr[i].append(sink.get())
            time.sleep(0.05)
        with Memory(pg_url, embedder=OpenAIEmbedder(**server.options())) as mem:  # work arrives while all run
            mem.messages.append_many([{"thread": f"t{i % 5}", "content": t} for i, t in enumerate(texts)])

        def finished() -> bool:
            messages, items, claimed = _status(pg_url, server)
            return messages == {"done": MESSAGES} and items == {"done": MEMORIES} and not claimed

        wait_for(finished, procs, "the workers embedded everything")
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in procs:
            proc.wait(timeout=60)
        for pump in pumps:
            pump.join(timeout=10)
        for proc in procs:
            for stream in (proc.stdout, proc.stderr):
                if stream is not None:
                    stream.close()
    assert [p.returncode for p in procs] == [0] * WORKERS
    done: list[int] = []
    for sink in outs:
        total = 0
        while not sink.empty():
            report = json.loads(sink.get()).get("sync", {})
            total += int(report.get("messages_done", 0)) + int(report.get("items_done", 0))
        done.append(total)
    print(f"rows embedded per worker: {done}; embedder requests: {len(server.requests)}")
    assert sum(done) == MESSAGES + MEMORIES
    assert all(n > 0 for n in done), f"every worker took part: {done}"
    # the embedder answered every text exactly once: no message or memory was embedded twice
    assert server.delivered == {t: 1 for t in [*texts, *memories]}
    with Memory(pg_url, embedder=OpenAIEmbedder(**server.options())) as mem:  # no counter update lost
        state = mem.backend.episodic.get_job_state("semantic_sync")  # type: ignore[attr-defined]
        assert state is not None and state.processed == MESSAGES + MEMORIES and state.failed == 0
    with Memory(pg_url, embedder=OpenAIEmbedder(**server.options())) as mem:
        hits = mem.messages.search("topic 3 message 10", limit=3)
        assert hits and all(h.message.embedding_status == "done" for h in hits)


def test_sync_killed_midway_on_postgres_then_rerun_embeds_the_rest_once(pg_url: str, server: EmbedServer) -> None:
    texts = [f"kill test message {i} on topic {i % 5}" for i in range(50)]
    with Memory(pg_url, embedder=OpenAIEmbedder(**server.options())) as mem:
        mem.messages.append_many([{"thread": f"t{i % 3}", "content": t} for i, t in enumerate(texts)])
    server.block_at = 3  # the third batch hangs; the job is killed while waiting for it
    env = cli_env(server, timeout=60)
    proc = subprocess.Popen(
        [str(SCRIPT), "--db", pg_url, "sync", "--batch-size", "10"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    wait_for(server.reached.is_set, proc, "the sync job reached its third batch")
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    messages, _, claimed = _status(pg_url, server)
    assert messages == {"done": 20, "pending": 30} and list(claimed.values()) == [10]
    assert list(claimed)[0].split(":")[1] == str(proc.pid)
    server.block_at = None
    rerun = subprocess.run(
        [str(SCRIPT), "--db", pg_url, "sync", "--batch-size", "10", "--json"],
        env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert rerun.returncode == 0, rerun.stderr
    report = json.loads(rerun.stdout)
    assert (report["messages_done"], report["released"]) == (30, 10)
    assert _status(pg_url, server)[0] == {"done": 50}
    assert server.delivered == {t: 1 for t in texts}  # the killed batch was never answered; now once
