"""Load run of the REST API: N concurrent clients for D seconds on loopback, then every acknowledged write re-read.

:func:`run_load` starts ``memory serve`` in a subprocess on a fresh SQLite
file (or targets a given URL and key), drives it with asyncio clients mixing
remember / recall / get / list, and reports error counts, throughput and
latency percentiles per operation. Afterwards each write the server
acknowledged (201) is read back and compared: ``missing`` must be 0.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import random
import re
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlsplit

import httpx

from memory.bench.procfs import status_mb

__all__ = ["run_load", "run_embedders", "summary", "percentile"]

_WORDS = (
    "alice bob carol dave likes prefers visited moved works studies tea coffee berlin paris tokyo jazz "
    "cello marathon garden python rust project deadline meeting friday birthday sister brother cat dog"
).split()


def percentile(values: list[float], q: float) -> float:
    """The ``q``-th percentile (0..100) by nearest rank; 0.0 for no values."""
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = max(1, min(len(ordered), math.ceil(q / 100 * len(ordered))))
    return ordered[rank - 1]


@dataclass
class _Stats:
    latencies: dict[str, list[float]] = field(default_factory=dict)
    errors: dict[str, int] = field(default_factory=dict)
    error_samples: list[str] = field(default_factory=list)
    acked: list[tuple[str, str, str]] = field(default_factory=list)  # namespace, id, content

    def record(self, op: str, seconds: float, ok: bool, detail: str = "") -> None:
        self.latencies.setdefault(op, []).append(seconds)
        if not ok:
            self.errors[op] = self.errors.get(op, 0) + 1
            if len(self.error_samples) < 5:
                self.error_samples.append(f"{op}: {detail[:200]}")


def _cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds of a process (Linux /proc), or None elsewhere."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


#: The namespace a preload fills (the clients with index 0, N, 2N, … search and write there).
PRELOAD_NAMESPACE = "load-0"


def _preload(path: Path, embedder: str, options: dict[str, Any] | None, count: int, batch: int = 500) -> float:
    """Store ``count`` generated memories in :data:`PRELOAD_NAMESPACE` of the file at ``path``; returns seconds."""
    from memory.bench.corpus import generate_texts, load_corpus
    from memory.embedders import create_embedder
    from memory.memory import Memory

    texts = generate_texts(load_corpus(None), count, seed=0)
    started = time.perf_counter()
    with Memory(f"sqlite:///{path}", embedder=create_embedder(embedder, options)) as mem:
        for start in range(0, count, batch):
            mem.remember_batch(texts[start : start + batch], namespace=PRELOAD_NAMESPACE)
    return time.perf_counter() - started


def _first_recall_ms(url: str, key: str) -> float:
    """Milliseconds of one recall in :data:`PRELOAD_NAMESPACE` (raises RuntimeError when it fails)."""
    started = time.perf_counter()
    answer = httpx.post(
        f"{url}/v1/namespaces/{PRELOAD_NAMESPACE}/search", json={"query": "tea in berlin", "limit": 10},
        headers={"Authorization": f"Bearer {key}"}, timeout=120,
    )  # fmt: skip
    if answer.status_code != 200:
        raise RuntimeError(f"the first recall failed: {answer.status_code} {answer.text[:200]}")
    return round((time.perf_counter() - started) * 1000, 1)


@contextmanager
def _server(
    embedder: str,
    workdir: Path,
    options: dict[str, Any] | None = None,
    threads: int | None = None,
    namespace: str | None = None,
) -> Iterator[tuple[str, str, int]]:
    """``memory serve`` on a free loopback port over ``workdir``/load.db (SQLite); yields (url, key, pid).

    ``namespace`` is the server's default namespace (warmed before it listens).
    """
    if threads is not None:  # the server's worker threads ([server] threads of its config file)
        (workdir / "none.toml").write_text(f"[server]\nthreads = {int(threads)}\n", encoding="utf-8")
    env = {
        **os.environ,
        "MEMORY_DATABASE": f"sqlite:///{workdir / 'load.db'}",
        "MEMORY_EMBEDDER": embedder,
        "MEMORY_CONFIG": str(workdir / "none.toml"),
    }
    if namespace is not None:
        env["MEMORY_NAMESPACE"] = namespace
    env.pop("MEMORY_EMBEDDER_OPTIONS", None)
    if options:
        env["MEMORY_EMBEDDER_OPTIONS"] = json.dumps(options)
    exe = [sys.executable, "-c", "from memory.cli.main import main; main()"]
    created = subprocess.run(
        [*exe, "keys", "create", "load", "--namespace", "*"], env=env, capture_output=True, text=True, check=False
    )
    if created.returncode != 0:
        raise RuntimeError(f"cannot create a key: {created.stderr.strip()}")
    key = created.stdout.strip()
    proc = subprocess.Popen(
        [*exe, "serve", "--port", "0"], env=env, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True
    )
    try:
        assert proc.stderr is not None
        deadline = time.monotonic() + 120
        while True:
            line = proc.stderr.readline()
            match = re.search(r"http://127\.0\.0\.1:(\d+)", line)
            if match:
                break
            if not line and proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"memory serve did not start: {line.strip()}")
        yield f"http://127.0.0.1:{match.group(1)}", key, proc.pid
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stderr is not None:
            proc.stderr.close()


def _sentence(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(8)) + f" #{n}"


class _Connection:
    """A minimal HTTP/1.1 keep-alive client on asyncio streams: a load generator far cheaper than httpx."""

    def __init__(self, host: str, port: int, key: str) -> None:
        self.host, self.port = host, port
        self._auth = f"Authorization: Bearer {key}\r\n"
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None

    async def request(self, method: str, path: str, body: Any = None, params: dict[str, Any] | None = None) -> Any:
        """Send one request; returns (status, parsed JSON body or None)."""
        if params:
            path += "?" + urlencode(params)
        data = json.dumps(body).encode() if body is not None else b""
        head = (
            f"{method} {path} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\n{self._auth}"
            f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n\r\n"
        )
        if self._writer is None:
            self._reader, self._writer = await asyncio.open_connection(self.host, self.port)
            sock = self._writer.get_extra_info("socket")
            if sock is not None:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        assert self._reader is not None
        try:
            self._writer.write(head.encode() + data)
            await self._writer.drain()
            status = int((await self._reader.readline()).split()[1])
            length, close = 0, False
            while (line := await self._reader.readline()) not in (b"\r\n", b""):
                name, _, value = line.decode("latin-1").partition(":")
                name = name.strip().lower()
                if name == "content-length":
                    length = int(value)
                elif name == "connection" and "close" in value.lower():
                    close = True
            payload = await self._reader.readexactly(length) if length else b""
        except (OSError, asyncio.IncompleteReadError, ValueError, IndexError):
            await self.close()
            raise
        if close:
            await self.close()
        return status, json.loads(payload) if payload else None

    async def close(self) -> None:
        """Close the connection (reopened by the next request)."""
        if self._writer is not None:
            self._writer.close()
            self._writer = None


async def _client(index: int, conn: _Connection, stop: float, stats: _Stats, namespaces: int) -> None:
    rng = random.Random(index)
    namespace = f"load-{index % namespaces}"
    base = f"/v1/namespaces/{namespace}"
    mine: list[str] = []
    n = 0
    while time.monotonic() < stop:
        roll = rng.random()
        started = time.perf_counter()
        op = "transport"
        try:
            if roll < 0.4 or not mine:
                op, n = "remember", n + 1
                content = f"client {index}: {_sentence(rng, n)}"
                status, body = await conn.request("POST", f"{base}/memories", {"content": content, "user": f"u{index}"})
                ok = status == 201
                if ok:
                    stats.acked.append((namespace, body["id"], content))
                    mine.append(body["id"])
            elif roll < 0.7:
                op = "recall"
                status, body = await conn.request("POST", f"{base}/search", {"query": _sentence(rng, 0), "limit": 10})
                ok = status == 200
            elif roll < 0.9:
                op = "get"
                status, body = await conn.request("GET", f"{base}/memories/{rng.choice(mine)}")
                ok = status == 200
            else:
                op = "list"
                status, body = await conn.request("GET", f"{base}/memories", params={"limit": 20, "user": f"u{index}"})
                ok = status == 200
            stats.record(op, time.perf_counter() - started, ok, "" if ok else f"{status} {body}")
        except (OSError, asyncio.IncompleteReadError, ValueError, IndexError) as exc:
            stats.record(op, time.perf_counter() - started, False, repr(exc))
    await conn.close()


async def _verify(url: str, key: str, acked: list[tuple[str, str, str]]) -> list[str]:
    missing: list[str] = []
    headers = {"Authorization": f"Bearer {key}"}
    semaphore = asyncio.Semaphore(16)
    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=60) as client:

        async def check(namespace: str, item_id: str, content: str) -> None:
            async with semaphore:
                r = await client.get(f"/v1/namespaces/{namespace}/memories/{item_id}")
                if r.status_code != 200 or r.json().get("content") != content:
                    missing.append(item_id)

        await asyncio.gather(*(check(*entry) for entry in acked))
    return missing


async def _drive(url: str, key: str, clients: int, duration: float, namespaces: int) -> dict[str, Any]:
    stats = _Stats()
    parsed = urlsplit(url)
    host, port = parsed.hostname or "127.0.0.1", parsed.port or 80
    started = time.monotonic()
    stop = started + duration
    await asyncio.gather(*(_client(i, _Connection(host, port, key), stop, stats, namespaces) for i in range(clients)))
    elapsed = time.monotonic() - started
    missing = await _verify(url, key, stats.acked)
    all_latencies = [x for values in stats.latencies.values() for x in values]
    per_op = {
        op: {
            "requests": len(values),
            "errors": stats.errors.get(op, 0),
            "p50_ms": round(percentile(values, 50) * 1000, 2),
            "p95_ms": round(percentile(values, 95) * 1000, 2),
        }
        for op, values in sorted(stats.latencies.items())
    }
    return {
        "clients": clients,
        "duration_s": round(elapsed, 2),
        "requests": len(all_latencies),
        "requests_per_s": round(len(all_latencies) / elapsed, 1) if elapsed else 0.0,
        "errors": sum(stats.errors.values()),
        "error_samples": stats.error_samples,
        "p50_ms": round(percentile(all_latencies, 50) * 1000, 2),
        "p95_ms": round(percentile(all_latencies, 95) * 1000, 2),
        "p99_ms": round(percentile(all_latencies, 99) * 1000, 2),
        "writes_acknowledged": len(stats.acked),
        "writes_verified": len(stats.acked) - len(missing),
        "missing": len(missing),
        "operations": per_op,
    }


def run_load(
    *,
    clients: int = 50,
    duration: float = 20.0,
    url: str | None = None,
    key: str | None = None,
    embedder: str = "hashing",
    namespaces: int = 5,
    embedder_options: dict[str, Any] | None = None,
    threads: int | None = None,
    preload: int = 0,
) -> dict[str, Any]:
    """Drive a REST server with ``clients`` concurrent clients for ``duration`` seconds; returns the report.

    Without ``url`` a fresh ``memory serve`` (SQLite, ``embedder`` with
    ``embedder_options``, ``threads`` worker threads, default: the
    server's) is started and stopped; ``preload`` memories (generated
    sentences) are stored in namespace ``load-0`` first, the server's
    default namespace (warmed before it listens), so its clients search a
    large namespace; its first recall is timed before the load, and the
    server's RSS is read when it is listening and at its peak. The report
    includes the 1-minute load average before and after.
    """
    if preload < 0:
        raise ValueError("preload must be 0 or more")
    if preload and url is not None:
        raise ValueError("preload fills the store of a started server: not with a url")
    load_before = os.getloadavg()
    if url is not None:
        if key is None:
            raise ValueError("give the key for the url")
        report = asyncio.run(_drive(url, key, clients, duration, namespaces))
        report["server"] = url
    else:
        with tempfile.TemporaryDirectory(prefix="memory-load-") as tmp:
            preloaded: dict[str, Any] | None = None
            if preload:
                seconds = _preload(Path(tmp) / "load.db", embedder, embedder_options, preload)
                preloaded = {"memories": preload, "namespace": PRELOAD_NAMESPACE, "seconds": round(seconds, 1)}
            namespace = PRELOAD_NAMESPACE if preload else None  # a large store's namespace is the default one
            with _server(embedder, Path(tmp), embedder_options, threads, namespace) as started:
                found, token, pid = started
                rss_listening = status_mb("VmRSS", pid)
                if preloaded is not None:  # the first search of the large namespace, before the timed load
                    preloaded["first_recall_ms"] = _first_recall_ms(found, token)
                server_cpu = _cpu_seconds(pid)
                client_cpu = time.process_time()
                report = asyncio.run(_drive(found, token, clients, duration, namespaces))
                client_cpu = time.process_time() - client_cpu
                after = _cpu_seconds(pid)
                report["server_rss_listening_mb"] = rss_listening
                report["server_peak_rss_mb"] = status_mb("VmHWM", pid)
            served = report["requests"] + report["writes_acknowledged"]  # the load, then the read-back
            if server_cpu is not None and after is not None and served:
                report["server_cpu_ms_per_request"] = round((after - server_cpu) * 1000 / served, 2)
            report["client_cpu_ms_per_request"] = round(client_cpu * 1000 / served, 2) if served else None
            report["server"] = f"memory serve (subprocess, sqlite, embedder={embedder}, threads={threads or 'default'})"
            if preloaded is not None:
                report["preload"] = preloaded
    report["loadavg_before"] = [round(x, 2) for x in load_before]
    report["loadavg_after"] = [round(x, 2) for x in os.getloadavg()]
    return report


def run_embedders(embedders: list[str], **options: Any) -> dict[str, Any]:
    """:func:`run_load` once per embedder, one after the other in this process; the reports side by side.

    With several embedders the report is ``{"runs": [...], "relative": {name: requests/s over
    the first's}}``; with one, that run's report.
    """
    runs = [{"embedder": name, **run_load(embedder=name, **options)} for name in embedders]
    if len(runs) == 1:
        return runs[0]
    first = runs[0]["requests_per_s"] or 1.0
    return {"runs": runs, "relative": {r["embedder"]: round(r["requests_per_s"] / first, 3) for r in runs}}


def _summary_lines(report: dict[str, Any]) -> list[str]:
    lines = [
        f"{report['requests']} requests in {report['duration_s']} s ({report['requests_per_s']}/s), "
        f"{report['clients']} clients, errors {report['errors']}",
        f"latency p50 {report['p50_ms']} ms, p95 {report['p95_ms']} ms, p99 {report['p99_ms']} ms",
        *(f"  {op:<10} n={v['requests']:<6} errors={v['errors']:<3} p50={v['p50_ms']} ms p95={v['p95_ms']} ms"
          for op, v in report["operations"].items()),
        f"writes acknowledged {report['writes_acknowledged']}, verified {report['writes_verified']}, "
        f"missing {report['missing']}",
        f"load average before {report['loadavg_before']}, after {report['loadavg_after']}",
    ]  # fmt: skip
    if report.get("server_cpu_ms_per_request") is not None:
        lines.append(
            f"CPU per request: server {report['server_cpu_ms_per_request']} ms, "
            f"load generator {report['client_cpu_ms_per_request']} ms"
        )
    if report.get("preload"):
        loaded = report["preload"]
        lines.append(
            f"preloaded {loaded['memories']} memories into {loaded['namespace']} (the server's default namespace) "
            f"in {loaded['seconds']} s; its first recall {loaded.get('first_recall_ms')} ms"
        )
    if report.get("server_peak_rss_mb") is not None:
        listening = report.get("server_rss_listening_mb")
        lines.append(
            f"server peak RSS {report['server_peak_rss_mb']} MB"
            + (f" ({listening} MB when it started listening)" if listening is not None else "")
        )
    return lines


def summary(report: dict[str, Any]) -> str:
    """The report of :func:`run_embedders` as text for people."""
    if "runs" not in report:
        return "\n".join(_summary_lines(report))
    lines: list[str] = []
    for run in report["runs"]:
        lines += [f"== embedder {run['embedder']}", *_summary_lines(run)]
    first = report["runs"][0]["embedder"]
    lines.append(
        "requests/s relative to " + first + ": " + ", ".join(f"{k} {v}" for k, v in report["relative"].items())
    )
    return "\n".join(lines)
