"""API requests are served before widget requests (agent_platform.workers):
the pool's order and share; in the served process, an API request answered
while widget requests hold every thread they may; and widget requests and
background jobs in a process of their own, at a lower priority, which the
worker passes widget connections to and takes API requests back from."""

import ctypes
import http.client
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from contextlib import closing
from pathlib import Path

import pytest
import requests

from agent_platform.autogroup import has_autogroups
from agent_platform.workers import (
    API,
    WIDGET,
    WIDGET_NICENESS,
    ApiFirstPool,
    Heartbeat,
    is_widget_request,
    request_kind,
    widget_share,
)
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
    "first_bytes, kind",
    [
        (b"GET /widget/ch_1/api/messages?seen=x HTTP/1.1\r\n", WIDGET),
        (b"POST /widget/ch_1/api/messages HTTP/1.1\r\n", WIDGET),
        (b"OPTIONS /widget/ch_1/api/session HTTP/1.1\r\n", WIDGET),
        (b"GET /widget/ch_1/widget.js HTTP/1.1\r\n", WIDGET),
        (b"GET /v1/me HTTP/1.1\r\n", API),
        (b"GET /v1/widget/x HTTP/1.1\r\n", API),
        (b"GET /widgets HTTP/1.1\r\n", API),
        (b"GET /wid", None),  # not all there yet: the API's, never held back
        (b"GET", None),
        (b"", None),  # a new connection that has sent nothing yet
        (b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03/widget/", None),  # TLS
    ],
)
def test_a_widget_request_is_known_by_its_first_bytes_which_stay_unread(conns, first_bytes, kind):
    """Unknown yet counts as the API's in the pool's order, and is not
    passed to the other process."""
    conn = conns(first_bytes)
    assert request_kind(conn) == kind
    assert is_widget_request(conn) is (kind == WIDGET)
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


def children(pid):
    try:
        listed = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    except FileNotFoundError:
        return []
    return [int(child) for child in listed.split()]


def alive(pid):
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"  # a zombie has ended


class Served:
    """`agent-platform serve` and its processes: gunicorn's master, the
    worker (the API), the widget process the worker forks."""

    def __init__(self, port, key, master, log):
        self.port, self.key, self.master, self.log = port, key, master, log

    def processes(self):
        """(worker, widget process) once both are up."""
        return wait_for(self.pair, "started a worker and its widget process", 20)

    def pair(self):
        """(worker, widget process) as they are now; None while either is missing."""
        workers = children(self.master)
        widgets = children(workers[0]) if len(workers) == 1 else []
        return (workers[0], widgets[0]) if len(widgets) == 1 else None

    def connect(self):
        return closing(http.client.HTTPConnection("127.0.0.1", self.port, timeout=5))

    def me(self, connection):
        return get(connection, "/v1/me", {"X-API-Key": self.key})


def get(connection, path, headers=None):
    """The status of GET `path` on a kept-alive connection."""
    connection.request("GET", path, headers=headers or {})
    response = connection.getresponse()
    response.read()
    assert not response.will_close, "the connection was closed"
    return response.status


WIDGET_PATH = "/widget/ch_x/widget.js"
WATCHED_TIMEOUT = 10  # server.timeout_seconds's least


@pytest.fixture
def served(tmp_path):
    yield from serve(tmp_path)


@pytest.fixture
def served_watched(tmp_path):
    """Served with gunicorn's shortest timeout allowed."""
    yield from serve(tmp_path, AGENT_PLATFORM_SERVER_TIMEOUT_SECONDS=str(WATCHED_TIMEOUT))


def serve(tmp_path, **settings):
    port, started = free_port(), []
    environ = dict(os.environ, **settings)
    environ["AGENT_PLATFORM_DATABASE_PATH"] = json.dumps(str(tmp_path / "served.db"))
    environ["AGENT_PLATFORM_RATE_LIMIT_REQUESTS"] = "4"
    log = tmp_path / "served.log"
    with log.open("w") as stderr:
        with serving(["--port", str(port)], environ, port, started, stderr) as (_, lines):
            yield Served(port, lines[1].strip(), started[0].pid, log)


def autogroup(pid):
    """(name, niceness) of the kernel's scheduling group for `pid`'s
    session; None on a kernel without autogroups. A process whose session
    was never made by setsid() (one started by init without one, as CI runs
    its commands) is in the kernel's default group, which it prints as
    nothing: ("", 0)."""
    try:
        shown = Path(f"/proc/{pid}/autogroup").read_text()
    except FileNotFoundError:
        return None
    if not shown.strip():
        return "", 0
    name, _, niceness = shown.split()
    return name, int(niceness)


# In a session of its own: takes the kernel's one change of a group's
# niceness per tenth of a second, checks that a second is refused now (or
# takes it again, should the tenth have passed), then lowers its group as
# the widget process does.
SECOND_CHANGE = """
import os
from agent_platform.autogroup import AUTOGROUP, lower_group
os.setsid()
for _ in range(20):
    lower_group(1, attempts=50)
    try:
        lower_group(2, attempts=1)
    except BlockingIOError:
        lower_group(19)
        print(open(AUTOGROUP).read())
        break
"""
CAP_SYS_ADMIN, PR_CAPBSET_DROP = 21, 24


def without_sys_admin():
    """For a child that is root: drop CAP_SYS_ADMIN, which lifts the
    kernel's limit on group changes, from what it will run."""
    if os.geteuid() == 0:
        assert ctypes.CDLL(None).prctl(PR_CAPBSET_DROP, CAP_SYS_ADMIN, 0, 0, 0) == 0


@pytest.mark.skipif(not has_autogroups(), reason="no autogroups")
def test_a_group_change_the_kernel_refuses_at_first_is_made_a_moment_later():
    changed = subprocess.run(
        [sys.executable, "-c", SECOND_CHANGE],
        preexec_fn=without_sys_admin,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert changed.returncode == 0, changed.stderr
    assert re.fullmatch(r"/autogroup-\d+ nice 19\n\n", changed.stdout)


def test_widget_requests_are_served_by_a_process_of_lower_priority(served):
    """Stopped, the widget process holds back a widget request, not the API."""
    worker, widgets = served.processes()
    expected = min(os.getpriority(os.PRIO_PROCESS, worker) + WIDGET_NICENESS, 19)
    assert os.getpriority(os.PRIO_PROCESS, widgets) == expected
    worker_group, widget_group = autogroup(worker), autogroup(widgets)
    if worker_group is None:
        assert widget_group is None and os.getsid(widgets) == os.getsid(worker)
    else:  # a session, so a scheduling group, of its own, lowered
        assert os.getsid(widgets) == widgets
        assert widget_group[0] != worker_group[0] and widget_group[1] == WIDGET_NICENESS
    os.kill(widgets, signal.SIGSTOP)
    try:
        waiting = socket.create_connection(("127.0.0.1", served.port))
        with waiting, served.connect() as api:
            waiting.sendall(f"GET {WIDGET_PATH} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
            assert served.me(api) == 200
            waiting.settimeout(1)
            with pytest.raises(TimeoutError):
                waiting.recv(1)
            os.kill(widgets, signal.SIGCONT)
            waiting.settimeout(5)
            assert waiting.recv(12) == b"HTTP/1.1 404"
    finally:
        os.kill(widgets, signal.SIGCONT)


def test_an_api_request_on_a_widget_connection_counts_in_the_api_process(served):
    """The per-key limit (4 here) lives in the worker's memory: a kept-alive
    connection that began with a widget request brings its API requests back
    to it, so the fifth request of the key is refused whichever connection
    it came on."""
    with served.connect() as plain, served.connect() as mixed:
        assert get(mixed, WIDGET_PATH) == 404
        statuses = [served.me(plain), served.me(mixed), served.me(plain), served.me(mixed)]
        assert statuses == [200, 200, 200, 200]
        assert get(mixed, WIDGET_PATH) == 404
        assert served.me(mixed) == 429


def test_a_widget_process_that_lingers_does_not_hold_the_database(served):
    """The serving lock goes with the worker: a new worker starts while the
    old widget process still exists (stopped here), which then ends."""
    worker, widgets = served.processes()
    os.kill(widgets, signal.SIGSTOP)
    try:
        os.kill(worker, signal.SIGKILL)
        wait_for(lambda: served.pair() not in (None, (worker, widgets)), "started anew", 20)
        with served.connect() as connection:
            assert served.me(connection) == 200
    finally:
        os.kill(widgets, signal.SIGCONT)
    wait_for(lambda: not alive(widgets), "ended the old widget process", 15)


@pytest.mark.parametrize("killed", ["worker", "widget process"])
def test_either_process_ending_ends_the_other_and_both_start_anew(served, killed):
    worker, widgets = served.processes()
    os.kill(worker if killed == "worker" else widgets, signal.SIGKILL)
    wait_for(lambda: not alive(worker) and not alive(widgets), "ended both processes", 15)
    new_worker, new_widgets = served.processes()
    assert {new_worker, new_widgets}.isdisjoint({worker, widgets})
    log = served.log.read_text()
    assert "Error submitting job" not in log
    if killed == "worker":  # the widget process stopped its jobs before it exited
        assert "Scheduler has been shut down" in log
    with served.connect() as connection:
        assert get(connection, WIDGET_PATH) == 404
        assert served.me(connection) == 200


def test_a_silent_widget_process_is_killed_and_both_start_anew(served_watched):
    """gunicorn's liveness check, which watches the worker, covers the widget
    process too: stopped, it is killed once silent for server.timeout_seconds,
    the worker stops, and gunicorn starts both anew; the widgets and the jobs
    are never left without a process."""
    served = served_watched
    worker, widgets = served.processes()
    os.kill(widgets, signal.SIGSTOP)
    stopped = time.monotonic()
    try:
        wait_for(lambda: not alive(widgets), "killed the widget process", WATCHED_TIMEOUT + 10)
        assert time.monotonic() - stopped > WATCHED_TIMEOUT - 1  # not before its time
        wait_for(lambda: not alive(worker), "ended the worker", 15)
    finally:
        if alive(widgets):
            os.kill(widgets, signal.SIGCONT)
    new_worker, new_widgets = served.processes()
    assert {new_worker, new_widgets}.isdisjoint({worker, widgets})
    killed = r"The widget process has ended \(killed, silent for 1\d s\)"
    assert re.search(killed, served.log.read_text())
    with served.connect() as connection:
        assert get(connection, WIDGET_PATH) == 404
        assert served.me(connection) == 200


def test_a_widget_process_beating_all_the_time_is_never_heard_silent():
    """The worker reads the beats while the widget process writes them, in
    another process on another CPU: a read in the middle of a write must not
    look like silence. (Reading a time written there, the worker once saw
    0.0, a half-written beat, and killed a busy widget process as silent for
    the machine's uptime; in this loop that happened to 2% of the reads.)"""
    heartbeat = Heartbeat()
    beating = os.fork()
    if not beating:
        while True:
            heartbeat.beat()
    try:
        deadline, loudest = time.monotonic() + 1, 0.0
        while time.monotonic() < deadline:
            loudest = max(loudest, heartbeat.silence())
        assert loudest < 0.5
        os.kill(beating, signal.SIGSTOP)
        heartbeat.silence()  # the last beat, heard
        time.sleep(0.3)
        assert 0.3 <= heartbeat.silence() < 1
    finally:
        os.kill(beating, signal.SIGKILL)
        os.waitpid(beating, 0)


def test_a_widget_process_that_beats_is_left_alone(served_watched):
    """Busy or idle, a widget process that turns its loop is not killed."""
    served = served_watched
    pair = served.processes()
    deadline = time.monotonic() + WATCHED_TIMEOUT + 3
    with served.connect() as connection:
        while time.monotonic() < deadline:
            assert get(connection, WIDGET_PATH) == 404
            time.sleep(0.5)
    assert served.pair() == pair
    assert "silent for" not in served.log.read_text()
