"""Connections take turns: what a client waits for while another sends
request after request without waiting (HTTP pipelining).

Starts `agent-platform serve` and sends --batch copies of a request on one
connection at once, reading the answers as they come; meanwhile another
client asks the same of a new connection, --asks times in a row. Printed,
--rounds times, for GET /v1/me (a read) and GET /v1/health (which commits a
write), and for a batch of --batch / 10 GET /openapi.json (600 KB, no key)
while the other client asks /v1/me: how long the batch took, the other
client's longest and median wait, and whether it was answered while the
batch was still being served.
Before the worker's turns (agent_platform.gevent_worker._give_way) and the
write turns handed on in order (write_turns.WriteTurns), the other client waited
for the whole batch.

The latency of 16 busy kept-alive connections, the other face of the same
fix, is bench/api_overhead.py's saturated p99.

    .venv/bin/python bench/turns.py [--batch 10000] [--asks 5] [--rounds 2]
"""

import argparse
import socket
import statistics
import threading
import time

import requests
from loadgen import Service


class Batch:
    """`count` copies of `request` on one connection, sent at once."""

    def __init__(self, port, request, count):
        self.count, self.answers, self.finished = count, 0, None
        self.started = time.monotonic()
        self.sock = socket.create_connection(("127.0.0.1", port), 5)
        self.reader = threading.Thread(target=self._read)
        self.reader.start()
        self.sock.sendall(request * count)

    def _read(self):
        tail = b""
        while self.answers < self.count:
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                break
            self.answers += (tail + chunk).count(b"HTTP/1.1 ")
            tail = chunk[-8:]
        self.finished = time.monotonic()

    def wait(self):
        self.reader.join()
        self.sock.close()
        return self.finished - self.started


def round_of(service, path, headers, raw, batch_size, asks, label=None):
    """A batch of `raw` requests; meanwhile the other client GETs `path`."""
    batch = Batch(service.port, raw, batch_size)
    time.sleep(0.2)  # the batch is being served
    waits = []
    for _ in range(asks):
        started = time.monotonic()
        answer = requests.get(service.base + path, headers=headers, timeout=120)
        assert answer.status_code == 200, answer.text
        waits.append(time.monotonic() - started)
    asked_until = time.monotonic()
    took = batch.wait()
    during = "during the batch" if asked_until < batch.finished else "AFTER the batch"
    longest, median = max(waits) * 1000, statistics.median(waits) * 1000
    print(
        f"  {label or path:<13} batch of {batch.answers:,} took {took:5.2f} s; the other client "
        f"waited at most {longest:7.1f} ms (median {median:.1f}), answered {during}",
        flush=True,
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=10_000)
    parser.add_argument("--asks", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    service = Service({"AGENT_PLATFORM_RATE_LIMIT_REQUESTS": "100000000"}).start()
    try:
        key = {"X-API-Key": service.admin_key}
        me = f"GET /v1/me HTTP/1.1\r\nHost: x\r\nX-API-Key: {service.admin_key}\r\n\r\n"
        health = b"GET /v1/health HTTP/1.1\r\nHost: x\r\n\r\n"
        document = b"GET /openapi.json HTTP/1.1\r\nHost: x\r\n\r\n"
        for number in range(1, args.rounds + 1):
            print(f"round {number}")
            round_of(service, "/v1/me", key, me.encode(), args.batch, args.asks)
            round_of(service, "/v1/health", None, health, args.batch // 4, args.asks)
            # The OpenAPI document (600 KB, no key needed), while the other client asks /v1/me.
            round_of(service, "/v1/me", key, document, args.batch // 10, args.asks, "openapi.json")
    finally:
        service.cleanup()


if __name__ == "__main__":
    main()
