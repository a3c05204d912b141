"""Idle and slow connections: /v1/me p99 with N of them held open, against none.

`agent-platform serve` (gunicorn's gevent worker) and, in the same run, the
bare Flask endpoint of bench/api_overhead.py under the same server
(bench/bare_server.py) each get the same treatment: /v1/me (the bare
endpoint: /) is measured by wrk as in bench/widget.py (16 paced connections,
each pausing 20-60 ms, 10 s windows), in windows with no other connection
and windows with --connections (500) held open, in turn, --rounds times each.
Each held connection comes from a loopback address of its own (127.2.x.y;
the service caps connections per address) and is, by --kind:

- idle: it sent GET /v1/health, read the answer and stays open, kept alive
  and silent (a browser's connection between requests);
- partial: it sent `GET /v1/health HTTP/1.1` and a Host header and nothing
  more (the request of issue 38's four-connection outage).

The server closes them in time (idle past server.keepalive_seconds, partial
past server.header_timeout_seconds); each is opened again at once, so that
N stay open through a window: the reopenings are counted. Printed per
target: the pooled p99 (and p50) without and with them, the ratio, each
round's p99, and the server's PSS and RSS (all its processes) in each.

    .venv/bin/python bench/connections.py [--connections 500] [--kind idle|partial]
        [--rounds 3] [--api-seconds 10]
"""

import argparse
import asyncio
import os
import statistics
import threading
import time
from collections import Counter

from loadgen import (
    PACED_SCRIPT,
    Service,
    bare_flask,
    free_port,
    histogram_percentile,
    resident_mb,
    wrk,
)

REQUEST = {
    "idle": b"GET /v1/health HTTP/1.1\r\nHost: bench\r\n\r\n",
    "partial": b"GET /v1/health HTTP/1.1\r\nHost: bench\r\n",
}


class Holder:
    """N connections held open from an asyncio loop in a thread of its own."""

    def __init__(self, port, count, kind):
        self.port, self.count, self.kind = port, count, kind
        self.opened, self.open = 0, 0
        self.loop = self.hold = self.release = self.stop = None
        self.thread = threading.Thread(target=asyncio.run, args=(self.all_of_them(),))

    async def all_of_them(self):
        self.loop = asyncio.get_running_loop()
        self.hold, self.release, self.stop = asyncio.Event(), asyncio.Event(), asyncio.Event()
        addresses = (f"127.2.{number // 250}.{number % 250 + 1}" for number in range(self.count))
        await asyncio.gather(*(self.keep(address) for address in addresses))

    async def keep(self, address):
        while not self.stop.is_set():
            await self.hold.wait()
            if self.stop.is_set():
                return
            reader, writer = await asyncio.open_connection(
                "127.0.0.1", self.port, local_addr=(address, 0)
            )
            writer.write(REQUEST[self.kind])
            self.opened, self.open = self.opened + 1, self.open + 1
            try:
                if self.kind == "idle":
                    await read_answer(reader)
                closed = asyncio.ensure_future(reader.read())  # b"" once the server closes it
                released = asyncio.ensure_future(self.release.wait())
                await asyncio.wait({closed, released}, return_when=asyncio.FIRST_COMPLETED)
                closed.cancel()
                released.cancel()
            finally:
                self.open -= 1
                writer.close()

    def start(self):
        self.thread.start()
        while self.loop is None:
            time.sleep(0.01)

    def held(self, seconds=30):
        """Open them all; wait until they are."""
        self.loop.call_soon_threadsafe(self.release.clear)
        self.loop.call_soon_threadsafe(self.hold.set)
        deadline = time.monotonic() + seconds
        while self.open < self.count and time.monotonic() < deadline:
            time.sleep(0.05)

    def let_go(self):
        self.loop.call_soon_threadsafe(self.hold.clear)
        self.loop.call_soon_threadsafe(self.release.set)
        deadline = time.monotonic() + 10
        while self.open and time.monotonic() < deadline:
            time.sleep(0.05)

    def finish(self):
        self.loop.call_soon_threadsafe(self.stop.set)
        self.loop.call_soon_threadsafe(self.hold.set)
        self.let_go()
        self.thread.join(timeout=30)


async def read_answer(reader):
    length = 0
    while (line := await reader.readline()) not in (b"\r\n", b""):
        name, _, value = line.decode().partition(":")
        if name.lower() == "content-length":
            length = int(value)
    await reader.readexactly(length)


class Window:
    """The windows of one kind: pooled latencies, each one's p99, memory."""

    def __init__(self):
        self.latency, self.p99s, self.memory, self.reopened = Counter(), [], [], 0

    def measure(self, url, headers, pid, options):
        result = wrk(url, 16, options.api_seconds, headers, script=PACED_SCRIPT, jitter=0.5)
        self.latency.update(result["histogram"])
        self.p99s.append(result["p99_ms"])
        self.memory.append(resident_mb(pid))

    def percentile(self, fraction):
        return histogram_percentile(self.latency, fraction)


def measure(name, url, headers, process, port, options):
    holder = Holder(port, options.connections, options.kind)
    holder.start()
    quiet, held = Window(), Window()
    try:
        for _ in range(options.rounds):
            holder.let_go()
            time.sleep(1)
            quiet.measure(url, headers, process.pid, options)
            holder.held()
            time.sleep(1)
            before = holder.opened
            if holder.open < options.connections:
                print(f"  only {holder.open} of {options.connections} open", flush=True)
            held.measure(url, headers, process.pid, options)
            held.reopened += holder.opened - before
    finally:
        holder.finish()
    report(name, options, quiet, held)


def report(name, options, quiet, held):
    ratio = held.percentile(0.99) / quiet.percentile(0.99)
    print(
        f"{name}: /v1/me p99 {quiet.percentile(0.99):.1f} ms with none, "
        f"{held.percentile(0.99):.1f} ms with {options.connections} {options.kind} "
        f"connections ({ratio:.2f}x); p50 {quiet.percentile(0.5):.2f} -> "
        f"{held.percentile(0.5):.2f} ms"
    )
    rounds = zip(quiet.p99s, held.p99s, strict=True)
    print("  each round's: " + ", ".join(f"{a:.1f} -> {b:.1f} ms" for a, b in rounds))
    print(f"  reopened while measured (the server closed them): {held.reopened}")
    for label, window in (("none", quiet), ("held", held)):
        pss = statistics.median(m[1] for m in window.memory)
        rss = statistics.median(m[0] for m in window.memory)
        print(f"  memory with {label}: PSS {pss:.0f} MB, RSS {rss:.0f} MB")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--connections", type=int, default=500)
    parser.add_argument("--kind", choices=sorted(REQUEST), default="idle")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--api-seconds", type=int, default=10)
    options = parser.parse_args()
    print(f"load average (1 min) before the run: {os.getloadavg()[0]:.2f}", flush=True)
    environ = {
        "AGENT_PLATFORM_RATE_LIMIT_REQUESTS": "100000000",
        "AGENT_PLATFORM_SERVER_MAX_CONNECTIONS": str(options.connections + 100),
    }
    service = Service(environ).start()
    try:
        headers = {"x-api-key": service.admin_key}
        measure("service", service.base + "/v1/me", headers, service.process, service.port, options)
    finally:
        service.cleanup()
    port = free_port()
    bare = bare_flask("bare_app:app", port, environ)
    try:
        measure("bare", f"http://127.0.0.1:{port}/", {}, bare, port, options)
    finally:
        bare.terminate()
        bare.wait(timeout=60)


if __name__ == "__main__":
    main()
