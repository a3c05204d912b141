"""`serve` for real on loopback: connections and writers take turns. A
client that sends request after request without waiting (HTTP pipelining,
or a fast client on a kept-alive connection) is served while others are too,
not before them (agent_platform.gevent_worker's turns of the loop, and
db.py's write turns in the order they were asked for)."""

import socket
import subprocess
import sys
import threading
import time

import pytest

from test_cli import ROOT
from test_serving import GEVENT_APP, served  # noqa: F401  (served: the fixture)

BATCH = 4000  # requests sent at once on one connection: seconds of work


class Pipelined:
    """`count` copies of `request` sent on one connection at once, every
    answer read by a thread: `finished` is when the last one came."""

    def __init__(self, port, request, count):
        self.count, self.finished, self.received = count, None, bytearray()
        self.sock = socket.create_connection(("127.0.0.1", port), 5)
        self.sock.settimeout(60)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        self.sock.sendall(request * count)

    def _read(self):
        while self.received.count(b"HTTP/1.1 ") < self.count:
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                break
            self.received.extend(chunk)
        self.finished = time.monotonic()

    def answered(self):
        """The statuses of the answers, once all came."""
        self.reader.join(60)
        self.sock.close()
        answers = bytes(self.received).split(b"HTTP/1.1 ")[1:]
        assert len(answers) == self.count
        return {answer[:3] for answer in answers}


def answered_beside(pipelined, ask):
    """Five requests (`ask()` gives status and seconds) while the batch is
    served: their statuses, their longest wait, and when the last ended."""
    time.sleep(0.2)  # the batch is being served
    asked = [ask() for _ in range(5)]
    return {status for status, _ in asked}, max(seconds for _, seconds in asked), time.monotonic()


@pytest.mark.parametrize("served", [{"RATE_LIMIT_REQUESTS": 100_000}], indirect=True)
def test_a_client_sending_requests_without_waiting_does_not_hold_the_others(served):  # noqa: F811
    """gevent switches only where a greenlet would block: a connection whose
    next request is always there was served to its end (4.2 s for 10,000)
    while a new client waited."""
    request = f"GET /v1/me HTTP/1.1\r\nHost: x\r\nX-API-Key: {served.key}\r\n\r\n".encode()
    batch = Pipelined(served.port, request, BATCH)
    statuses, longest, ended = answered_beside(batch, served.me)
    assert batch.answered() == {b"200"}
    assert statuses == {200} and longest < 0.5, longest
    assert ended < batch.finished  # answered while the batch still was


def test_writers_take_the_write_turn_in_the_order_they_asked(served):  # noqa: F811
    """A health check writes (a commit proves the disk takes writes). A
    connection ending its write turn and asking again before the loop ran
    the writer it woke took the turn back every time: the other writer
    waited for the whole batch, or failed at the busy timeout."""
    batch = Pipelined(served.port, b"GET /v1/health HTTP/1.1\r\nHost: x\r\n\r\n", BATCH // 2)
    statuses, longest, ended = answered_beside(batch, lambda: served.timed("/v1/health"))
    assert batch.answered() == {b"200"}
    assert statuses == {200} and longest < 0.5, longest
    assert ended < batch.finished


A_WAITER_GIVES_UP = (
    GEVENT_APP
    + """
def write(pause=0, after=0, give_up=None):
    gevent.sleep(after)
    with app.app_context(), gevent.Timeout(give_up):
        try:
            with transaction():
                database.execute_sql("CREATE TABLE IF NOT EXISTS t (x)")
                database.execute_sql("INSERT INTO t VALUES (1)")
                gevent.sleep(pause)
        finally:
            database.close()
    return time.monotonic() - started

started = time.monotonic()
holding = gevent.spawn(write, pause=0.3)
impatient = gevent.spawn(write, after=0.05, give_up=0.1)
later = gevent.spawn(write, after=0.15)
gevent.joinall([holding, impatient, later])
print(type(impatient.exception).__name__, round(later.get(), 2))
"""
)


def test_a_writer_that_gives_up_waiting_leaves_the_line(tmp_path):
    """A writer interrupted while in line (its request's timeout) is not
    handed the turn afterwards: the next one in line gets it when the
    holder ends, instead of waiting out the busy timeout."""
    result = subprocess.run(
        [sys.executable, "-c", A_WAITER_GIVES_UP, str(tmp_path / "line.db")],
        cwd=ROOT, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    interruption, later_done = result.stdout.split()
    assert interruption == "Timeout"
    assert 0.3 <= float(later_done) < 1, later_done
