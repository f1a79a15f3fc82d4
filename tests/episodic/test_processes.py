"""Real processes on one SQLite file, a real embedding server on loopback.

Turn numbers under concurrent appends; the sync job killed with SIGKILL and
rerun (nothing lost, nothing embedded twice); a failing and a hanging
embedder; the worker stopped with SIGTERM; `memory tail` following a thread.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest
from embed_server import EmbedServer
from episodic_helpers import HANG_GUARD, SCRIPT, cli_env, run_cli, wait_for

from memory import Memory
from memory.embedders.http import OpenAIEmbedder
from memory.episodic.sync import SyncReport

pytestmark = pytest.mark.slow

APPENDER = textwrap.dedent(
    """
    import json, sys
    from memory import Memory
    db, tag, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
    with Memory(db, embedder="hashing") as mem:
        turns = [mem.messages.append("shared", f"{tag} says {i}").turn for i in range(count)]
    print(json.dumps(turns))
    """
)


def test_processes_appending_to_one_thread_never_share_a_turn(tmp_path: Path) -> None:
    db = str(tmp_path / "turns.db")
    Memory(db, embedder="hashing").close()  # schema first, so the race is on appends
    env = {**os.environ, "PYTHONWARNINGS": "error"}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", APPENDER, db, f"p{i}", "40"], stdout=subprocess.PIPE, text=True, env=env
        )
        for i in range(3)
    ]
    results = []
    for proc in procs:
        out, _ = proc.communicate(timeout=120)
        assert proc.returncode == 0
        results.append(json.loads(out))
    for turns in results:
        assert turns == sorted(turns)  # each process sees its own turns increase
    assert sorted(t for turns in results for t in turns) == list(range(1, 121))
    with Memory(db, embedder="hashing") as mem:
        stored = mem.messages.get_thread("shared")
        assert [m.turn for m in stored] == list(range(1, 121))
        assert mem.messages.threads()[0].last_turn == 120


def _seed(db: Path, server: EmbedServer, count: int) -> list[str]:
    texts = [f"message {i} about topic {i % 7}" for i in range(count)]
    with Memory(str(db), embedder=OpenAIEmbedder(**server.options())) as mem:
        mem.messages.append_many([{"thread": f"t{i % 3}", "content": t} for i, t in enumerate(texts)])
    assert server.requests == []  # appending never called the embedder
    return texts


def _statuses(db: Path, server: EmbedServer) -> dict[str, int]:
    with Memory(str(db), embedder=OpenAIEmbedder(**server.options())) as mem:
        return mem.sync_status().messages


def test_sync_killed_midway_then_rerun_loses_nothing_and_embeds_nothing_twice(
    tmp_path: Path, server: EmbedServer
) -> None:
    db = tmp_path / "kill.db"
    texts = _seed(db, server, 50)
    server.block_at = 3  # the third batch hangs; the job is killed while waiting for it
    env = cli_env(server, timeout=60)
    proc = subprocess.Popen(
        [str(SCRIPT), "--db", str(db), "sync", "--batch-size", "10"],  # default lease: 300 s
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    wait_for(server.reached.is_set, proc, "the sync job reached its third batch")
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    assert _statuses(db, server) == {"done": 20, "pending": 30}  # two batches committed, one claimed in flight
    claimed = json.loads(run_cli(db, "sync", "--status", "--json", env=env).stdout)["claimed"]
    assert list(claimed.values()) == [10] and list(claimed)[0].split(":")[1] == str(proc.pid)
    assert sum(server.delivered.values()) == 20
    server.block_at = None
    rerun = run_cli(db, "sync", "--batch-size", "10", "--json", env=env)  # at once: the dead worker's claim goes back
    assert rerun.returncode == 0, rerun.stderr
    assert json.loads(rerun.stdout)["messages_done"] == 30 and json.loads(rerun.stdout)["released"] == 10
    assert _statuses(db, server) == {"done": 50}
    assert server.delivered == {t: 1 for t in texts}  # every text answered exactly once
    status = run_cli(db, "sync", "--status", "--json", env=env)
    data = json.loads(status.stdout)
    assert data["pending"] == 0 and data["state"]["processed"] == 50 and data["state"]["runs"] == 2


def test_failing_embedder_endpoint_leaves_rows_failed_and_the_next_run_succeeds(
    tmp_path: Path, server: EmbedServer
) -> None:
    db = tmp_path / "fail.db"
    texts = _seed(db, server, 12)
    env = cli_env(server)
    server.script = ["ok", "500"]  # the second batch fails mid-run
    failed = run_cli(db, "sync", "--batch-size", "5", env=env)
    assert failed.returncode == 1 and "HTTP 500" in failed.stderr
    assert _statuses(db, server) == {"done": 5, "failed": 5, "pending": 2}
    status = json.loads(run_cli(db, "sync", "--status", "--json", env=env).stdout)
    assert "HTTP 500" in status["state"]["last_error"] and status["pending"] == 7
    with Memory(str(db), embedder=OpenAIEmbedder(**server.options())) as mem:
        errors = {m.embedding_error for t in ("t0", "t1", "t2") for m in mem.messages.get_thread(t)
                  if m.embedding_status == "failed"}  # fmt: skip
        assert len(errors) == 1 and "HTTP 500" in errors.pop()  # type: ignore[operator]
    ok = run_cli(db, "sync", "--batch-size", "5", env=env)
    assert ok.returncode == 0, ok.stderr
    assert _statuses(db, server) == {"done": 12}
    assert set(server.delivered) == set(texts)


def test_hanging_embedder_times_out_and_the_next_run_succeeds(tmp_path: Path, server: EmbedServer) -> None:
    db = tmp_path / "hang.db"
    texts = _seed(db, server, 6)
    server.default = "hang"
    embedder = OpenAIEmbedder(**server.options(timeout=0.5))
    with Memory(str(db), embedder=embedder) as mem:
        started = time.monotonic()
        report = mem.run_sync(batch_size=3)
        assert isinstance(report, SyncReport) and report.error and "timed out" in report.error
        assert time.monotonic() - started < 120  # timed out, not hung (the server never answers)
        assert mem.sync_status().messages == {"failed": 3, "pending": 3}
        server.default = "ok"
        again = mem.run_sync(batch_size=3)
        assert isinstance(again, SyncReport) and again.messages_done == 6 and again.error is None
    assert set(server.delivered) == set(texts) and sum(server.delivered.values()) == 6


def test_worker_stops_gracefully_on_sigterm_and_nothing_is_lost(tmp_path: Path, server: EmbedServer) -> None:
    db = tmp_path / "worker.db"
    texts = _seed(db, server, 40)
    server.default = "delay:0.3"
    env = cli_env(server, timeout=30)
    proc = subprocess.Popen(
        [str(SCRIPT), "--db", str(db), "worker", "--interval", "0.2", "--batch-size", "4", "--jobs", "sync,prune"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    wait_for(lambda: len(server.requests) >= 3, proc, "the worker sent three batches")
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert "SIGTERM" in err
    with Memory(str(db), embedder=OpenAIEmbedder(**server.options())) as mem:
        done = {
            m.content for t in ("t0", "t1", "t2") for m in mem.messages.get_thread(t) if m.embedding_status == "done"
        }
    assert done == set(server.delivered)  # every answered batch was committed before exit
    assert 0 < len(done) < 40
    server.default = "ok"
    finish = run_cli(db, "sync", env=env)
    assert finish.returncode == 0, finish.stderr
    assert server.delivered == {t: 1 for t in texts}


def test_tail_follows_a_thread(tmp_path: Path) -> None:
    db = tmp_path / "tail.db"
    with Memory(str(db), embedder="hashing") as mem:
        mem.messages.append("t1", "first words", user="alice")
    proc = subprocess.Popen(
        [str(SCRIPT), "--db", str(db), "tail", "t1", "--json", "--timeout", "900", "--interval", "0.1"],
        env={**cli_env(None), "PYTHONFAULTHANDLER": "1"}, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        # As a terminal would: a run started in the background (`cmd &`) ignores SIGINT, and children
        # inherit that, so `tail` would rightly keep ignoring Ctrl-C.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )  # fmt: skip
    lines: queue.Queue[str] = queue.Queue()
    assert proc.stdout is not None
    reader = threading.Thread(target=lambda: [lines.put(line) for line in proc.stdout], daemon=True)  # type: ignore[union-attr]
    reader.start()
    assert json.loads(lines.get(timeout=HANG_GUARD))["content"] == "first words"
    with Memory(str(db), embedder="hashing") as mem:
        mem.messages.append("t1", "second words", role="assistant")
        mem.messages.append("other", "not this thread")
    follow = json.loads(lines.get(timeout=HANG_GUARD))
    assert (follow["content"], follow["turn"], follow["role"]) == ("second words", 2, "assistant")
    proc.send_signal(signal.SIGINT)
    try:
        proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:  # say where it hangs: faulthandler dumps every thread on SIGABRT
        proc.send_signal(signal.SIGABRT)
        _, err = proc.communicate(timeout=30)
        raise AssertionError(f"tail did not stop on SIGINT; its threads:\n{err}") from None
    assert proc.returncode == 0
    assert lines.empty()


def test_two_sync_processes_share_the_work_without_overlap(tmp_path: Path, server: EmbedServer) -> None:
    db = tmp_path / "shared.db"
    texts = _seed(db, server, 60)
    server.default = "delay:0.5"  # ~6 s of work: both processes are running long before it is done
    env = cli_env(server)
    procs = [
        subprocess.Popen([str(SCRIPT), "--db", str(db), "sync", "--batch-size", "5", "--json"], env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(2)
    ]  # fmt: skip
    reports = []
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        reports.append(json.loads(out))
    assert sum(r["messages_done"] for r in reports) == 60
    assert all(r["messages_done"] > 0 for r in reports)  # both took part
    assert server.delivered == {t: 1 for t in texts}
    assert _statuses(db, server) == {"done": 60}
