"""API requests are served before widget requests (agent_platform.workers):
the pool's order and share, and in the served process, an API request
answered while widget requests hold every thread they may."""

import json
import os
import socket
import threading
import time

import pytest
import requests

from agent_platform.workers import ApiFirstPool, is_widget_request, widget_share
from test_cli import free_port, serving
from test_service_jobs import wait_for


class Conn:
    """What the pool reads of gthread's TConn: its socket."""

    def __init__(self, first_bytes=b""):
        self.sock, self.peer = socket.socketpair()
        self.sock.setblocking(False)  # as gthread leaves it for the poller
        if first_bytes:
            self.peer.sendall(first_bytes)

    def close(self):
        self.sock.close()
        self.peer.close()


@pytest.fixture
def conns():
    made = []

    def make(first_bytes=b""):
        made.append(Conn(first_bytes))
        return made[-1]

    yield make
    for conn in made:
        conn.close()


@pytest.mark.parametrize(
    "first_bytes, widget",
    [
        (b"GET /widget/ch_1/api/messages?seen=x HTTP/1.1\r\n", True),
        (b"POST /widget/ch_1/api/messages HTTP/1.1\r\n", True),
        (b"OPTIONS /widget/ch_1/api/session HTTP/1.1\r\n", True),
        (b"GET /widget/ch_1/widget.js HTTP/1.1\r\n", True),
        (b"GET /v1/me HTTP/1.1\r\n", False),
        (b"GET /v1/widget/x HTTP/1.1\r\n", False),
        (b"GET /widgets HTTP/1.1\r\n", False),
        (b"GET /wid", False),  # not all there yet: the API's, never held back
        (b"", False),  # a new connection that has sent nothing yet
        (b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03/widget/", False),  # TLS
    ],
)
def test_a_widget_request_is_known_by_its_first_bytes_which_stay_unread(conns, first_bytes, widget):
    conn = conns(first_bytes)
    assert is_widget_request(conn) is widget
    if first_bytes:
        assert conn.sock.recv(100) == first_bytes  # peeked, not consumed


def test_widgets_may_hold_all_threads_but_one():
    assert [widget_share(n) for n in (1, 2, 4, 8)] == [1, 1, 3, 7]


def recorder(order, gate=None):
    def handle(conn):
        if gate is not None:
            assert gate.wait(10)
        order.append(conn)
        return conn

    return handle


def test_waiting_api_requests_are_served_before_waiting_widget_requests(conns):
    pool = ApiFirstPool(threads=1, widget_threads=1)
    order, gate = [], threading.Event()
    blocker = conns()
    pool.submit(recorder(order, gate), blocker)
    widget = [conns(b"GET /widget/c/api/messages HTTP/1.1\r\n") for _ in range(3)]
    api = [conns(b"GET /v1/me HTTP/1.1\r\n") for _ in range(2)]
    queued = [widget[0], widget[1], api[0], widget[2], api[1]]
    futures = [pool.submit(recorder(order), conn) for conn in queued]
    gate.set()
    assert [future.result(10) for future in futures] == queued
    assert order == [blocker, api[0], api[1], widget[0], widget[1], widget[2]]
    pool.shutdown()


def test_an_api_request_finds_a_thread_while_widget_requests_fill_their_share(conns):
    pool = ApiFirstPool(threads=3, widget_threads=2)
    started, gate = [], threading.Event()

    def slow_widget(conn):
        started.append(conn)
        assert gate.wait(10)

    widget = [conns(b"GET /widget/c/api/messages HTTP/1.1\r\n") for _ in range(4)]
    held = [pool.submit(slow_widget, conn) for conn in widget]
    api = pool.submit(lambda conn: "answered", conns(b"GET /v1/me HTTP/1.1\r\n"))
    assert api.result(5) == "answered"
    # The share's second thread may start a moment after the API's answer.
    wait_for(lambda: len(started) == 2, "started the widgets' share", seconds=5)
    time.sleep(0.2)
    assert len(started) == 2  # the widgets' share, not the third thread
    gate.set()
    for future in held:
        future.result(10)
    assert started == widget
    pool.shutdown()


def test_a_failing_handler_fails_its_future_and_the_thread_serves_on(conns):
    pool = ApiFirstPool(threads=1, widget_threads=1)

    def broken(conn):
        raise RuntimeError("handler bug")

    failed = pool.submit(broken, conns(b"GET /widget/c/api/messages HTTP/1.1\r\n"))
    with pytest.raises(RuntimeError, match="handler bug"):
        failed.result(5)
    assert pool.submit(lambda conn: "next", conns()).result(5) == "next"
    pool.shutdown()


def test_shutdown_serves_what_was_queued_then_ends_every_thread(conns):
    pool = ApiFirstPool(threads=2, widget_threads=1)
    order, gate = [], threading.Event()
    widget = [conns(b"GET /widget/c/api/messages HTTP/1.1\r\n") for _ in range(3)]
    futures = [pool.submit(recorder(order, gate), conn) for conn in widget]
    pool.shutdown(wait=False)
    gate.set()
    for thread in pool.threads:
        thread.join(10)
        assert not thread.is_alive()
    assert all(future.done() for future in futures) and order == widget


def test_the_served_api_answers_while_widget_requests_hold_their_threads(tmp_path):
    """Four threads (the default): three clients start widget requests and
    stop half-way through their headers, so each holds a thread reading; a
    fourth waits for one. Under plain gthread the fourth would hold the last
    thread and the API request would wait behind them all."""
    port = free_port()
    environ = dict(os.environ)
    environ["AGENT_PLATFORM_DATABASE_PATH"] = json.dumps(str(tmp_path / "served.db"))
    with serving(["--port", str(port)], environ, port) as (base, _):
        stalled = []
        try:
            for _ in range(4):
                sock = socket.create_connection(("127.0.0.1", port))
                sock.sendall(b"GET /widget/ch_x/api/messages HTTP/1.1\r\nHost: x\r\n")
                stalled.append(sock)
                time.sleep(0.2)  # each reaches a thread before the next
            answer = requests.get(base + "/v1/health", timeout=3)
            assert answer.status_code == 200
        finally:
            for sock in stalled:
                sock.close()
