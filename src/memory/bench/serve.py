"""Load run of the REST API: N concurrent clients for D seconds on loopback, then every acknowledged write re-read.

:func:`run_load` starts ``memory serve`` in a subprocess on a fresh SQLite
file (or targets a given URL and key), drives it with asyncio clients mixing
remember / recall / get / list, and reports error counts, throughput and
latency percentiles per operation. Afterwards each write the server
acknowledged (201) is read back and compared: ``missing`` must be 0.
"""

from __future__ import annotations

import asyncio
import math
import os
import random
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

__all__ = ["run_load", "percentile"]

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


@contextmanager
def _server(embedder: str, workdir: Path) -> Iterator[tuple[str, str, int]]:
    """``memory serve`` on a free loopback port over a new SQLite file; yields (url, key, pid)."""
    env = {
        **os.environ,
        "MEMORY_DATABASE": f"sqlite:///{workdir / 'load.db'}",
        "MEMORY_EMBEDDER": embedder,
        "MEMORY_CONFIG": str(workdir / "none.toml"),
    }
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


async def _client(index: int, client: httpx.AsyncClient, stop: float, stats: _Stats, namespaces: int) -> None:
    rng = random.Random(index)
    namespace = f"load-{index % namespaces}"
    base = f"/v1/namespaces/{namespace}"
    mine: list[str] = []
    n = 0
    while time.monotonic() < stop:
        roll = rng.random()
        started = time.perf_counter()
        try:
            if roll < 0.4 or not mine:
                n += 1
                content = f"client {index}: {_sentence(rng, n)}"
                r = await client.post(f"{base}/memories", json={"content": content, "user": f"u{index}"})
                ok = r.status_code == 201
                if ok:
                    stats.acked.append((namespace, r.json()["id"], content))
                    mine.append(r.json()["id"])
                op = "remember"
            elif roll < 0.7:
                r = await client.post(f"{base}/search", json={"query": _sentence(rng, 0), "limit": 10})
                ok, op = r.status_code == 200, "recall"
            elif roll < 0.9:
                r = await client.get(f"{base}/memories/{rng.choice(mine)}")
                ok, op = r.status_code == 200, "get"
            else:
                r = await client.get(f"{base}/memories", params={"limit": 20, "user": f"u{index}"})
                ok, op = r.status_code == 200, "list"
            stats.record(op, time.perf_counter() - started, ok, "" if ok else f"{r.status_code} {r.text}")
        except httpx.HTTPError as exc:
            stats.record("transport", time.perf_counter() - started, False, repr(exc))


async def _verify(client: httpx.AsyncClient, acked: list[tuple[str, str, str]]) -> list[str]:
    missing: list[str] = []
    semaphore = asyncio.Semaphore(16)

    async def check(namespace: str, item_id: str, content: str) -> None:
        async with semaphore:
            r = await client.get(f"/v1/namespaces/{namespace}/memories/{item_id}")
            if r.status_code != 200 or r.json().get("content") != content:
                missing.append(item_id)

    await asyncio.gather(*(check(*entry) for entry in acked))
    return missing


async def _drive(url: str, key: str, clients: int, duration: float, namespaces: int) -> dict[str, Any]:
    stats = _Stats()
    limits = httpx.Limits(max_connections=clients + 16, max_keepalive_connections=clients + 16)
    headers = {"Authorization": f"Bearer {key}"}
    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=60, limits=limits) as client:
        started = time.monotonic()
        stop = started + duration
        await asyncio.gather(*(_client(i, client, stop, stats, namespaces) for i in range(clients)))
        elapsed = time.monotonic() - started
        missing = await _verify(client, stats.acked)
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
) -> dict[str, Any]:
    """Drive a REST server with ``clients`` concurrent clients for ``duration`` seconds; returns the report.

    Without ``url`` a fresh ``memory serve`` (SQLite, ``embedder``) is started
    and stopped. The report includes the 1-minute load average before and after.
    """
    load_before = os.getloadavg()
    if url is not None:
        if key is None:
            raise ValueError("give the key for the url")
        report = asyncio.run(_drive(url, key, clients, duration, namespaces))
        report["server"] = url
    else:
        with tempfile.TemporaryDirectory(prefix="memory-load-") as tmp, _server(embedder, Path(tmp)) as started:
            found, token, pid = started
            server_cpu = _cpu_seconds(pid)
            client_cpu = time.process_time()
            report = asyncio.run(_drive(found, token, clients, duration, namespaces))
            client_cpu = time.process_time() - client_cpu
            after = _cpu_seconds(pid)
            served = report["requests"] + report["writes_acknowledged"]  # the load, then the read-back
            if server_cpu is not None and after is not None and served:
                report["server_cpu_ms_per_request"] = round((after - server_cpu) * 1000 / served, 2)
            report["client_cpu_ms_per_request"] = round(client_cpu * 1000 / served, 2) if served else None
            report["server"] = f"memory serve (subprocess, sqlite, embedder={embedder})"
    report["loadavg_before"] = [round(x, 2) for x in load_before]
    report["loadavg_after"] = [round(x, 2) for x in os.getloadavg()]
    return report
