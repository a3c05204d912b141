"""`serve` for real on loopback: open, idle and slow connections cost no
thread, slow clients are cut off, each address holds a bounded number of
connections, a stuck worker is replaced, and SIGTERM leaves no process and
no delivery behind (agent_platform.gevent_worker)."""

import importlib.util
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, closing, contextmanager
from pathlib import Path

import pytest
import requests

from test_cli import ROOT, free_port, serving
from test_service_jobs import wait_for
from webhooks_helpers import Receiver, Reply

IDLE = b"GET /v1/health HTTP/1.1\r\nHost: x\r\n"  # the blank line never comes
PARTIAL = b"GET /v1/me HTTP/1.1\r\nHost: x\r\nX-Api-K"
BODY_HEAD = (
    b"POST /v1/custom-fields HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
    b"Content-Length: 40\r\n\r\n"
)


class Served:
    def __init__(self, base, key, port, master, log):
        self.base, self.key, self.port, self.master, self.log = base, key, port, master, log

    def timed(self, path, headers=None):
        """(status, seconds) of GET `path` on a new connection from 127.0.0.1."""
        started = time.monotonic()
        answer = requests.get(self.base + path, headers=headers, timeout=5)
        return answer.status_code, time.monotonic() - started

    def me(self):
        return self.timed("/v1/me", {"X-API-Key": self.key})

    def created(self, path, body):
        """POST `body` to the API as the admin key; it must answer 201."""
        made = requests.post(
            self.base + path, json=body, headers={"X-API-Key": self.key}, timeout=5
        )
        assert made.status_code == 201, made.text

    def connect(self, source="127.0.0.1"):
        sock = socket.create_connection(("127.0.0.1", self.port), 5, (source, 0))
        sock.settimeout(5)
        return sock


def least_held(measure, most, tries=5):
    """What `measure()` gave (a tuple, the waits of /v1/me second) on its
    first run whose every wait was a 200 under `most` seconds, else on its
    last of `tries`: a service that holds the others does so on every run,
    a host busy elsewhere only now and then."""
    for _ in range(tries):
        run = measure()
        if all(code == 200 and seconds < most for code, seconds in run[1]):
            break
    return run


def waits_beside(served, send, times=3):
    """The answers of `send()` made `times` in a row, and the waits of
    /v1/me asked meanwhile by another client."""
    answers = []
    sending = threading.Thread(target=lambda: answers.extend(send() for _ in range(times)))
    sending.start()
    waits = []
    while sending.is_alive():
        waits.append(served.me())
    return answers, waits


@pytest.fixture
def served(tmp_path, request):
    settings = getattr(request, "param", {})
    yield from serve(tmp_path, settings)


def serve(tmp_path, settings):
    port, started = free_port(), []
    environ = dict(os.environ)
    environ["AGENT_PLATFORM_DATABASE_PATH"] = json.dumps(str(tmp_path / "served.db"))
    environ.update({f"AGENT_PLATFORM_{k}": json.dumps(v) for k, v in settings.items()})
    log = tmp_path / "served.log"
    with log.open("w") as stderr:
        with serving(["--port", str(port)], environ, port, started, stderr) as (base, lines):
            yield Served(base, lines[1].strip(), port, started[0].pid, log)


def opened(stack, served, count, source, first_bytes):
    socks = []
    for _ in range(count):
        sock = stack.enter_context(closing(served.connect(source)))
        sock.sendall(first_bytes)
        socks.append(sock)
    return socks


def drip(sock, stop):
    """A body one byte a second, until `stop` or the server closes."""
    while not stop.wait(1):
        try:
            sock.sendall(b" ")
        except OSError:
            return


def test_idle_and_slow_connections_do_not_delay_the_api(served):
    """50 connections that stop before the blank line ending their headers,
    50 half-way through a header, 5 sending a body a byte a second (each
    group from an address of its own, 127.0.0.2-4): /v1/health and /v1/me
    still answer within a second. (Four of the first kind took a server of
    four threads down.)"""
    stop = threading.Event()
    with ExitStack() as stack:
        opened(stack, served, 50, "127.0.0.2", IDLE)
        opened(stack, served, 50, "127.0.0.3", PARTIAL)
        for sock in opened(stack, served, 5, "127.0.0.4", BODY_HEAD):
            dripping = threading.Thread(target=drip, args=(sock, stop), daemon=True)
            dripping.start()
            stack.callback(dripping.join, 5)
        stack.callback(stop.set)
        time.sleep(0.5)  # every connection reached the server
        for _ in range(5):
            for status, seconds in (served.timed("/v1/health"), served.me()):
                assert status == 200 and seconds < 1, (status, seconds)
            time.sleep(0.3)


def read_all(sock, since):
    """Everything the server sends until it closes; seconds since `since`."""
    received = b""
    while chunk := sock.recv(65536):
        received += chunk
    return received, time.monotonic() - since


SHORT = {
    "SERVER_HEADER_TIMEOUT_SECONDS": 2,
    "SERVER_KEEPALIVE_SECONDS": 2,
    "SERVER_BODY_TIMEOUT_SECONDS": 3,
}


@pytest.mark.parametrize("served", [SHORT], indirect=True)
def test_slow_clients_are_cut_off_after_their_timeouts(served):
    with ExitStack() as stack:
        [idle, partial] = [
            opened(stack, served, 1, "127.0.0.2", sent)[0] for sent in (IDLE, PARTIAL)
        ]
        [body] = opened(stack, served, 1, "127.0.0.3", BODY_HEAD + b'{"name": "slow",')
        [kept] = opened(
            stack, served, 1, "127.0.0.4", b"GET /v1/health HTTP/1.1\r\nHost: x\r\n\r\n"
        )
        since = time.monotonic()
        for sock in (idle, partial):  # headers: closed with nothing sent
            received, seconds = read_all(sock, since)
            assert received == b"" and 1 < seconds < 4
        received, seconds = read_all(body, since)
        head, _, answer = received.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 408 ") and 2 < seconds < 6
        assert json.loads(answer) == {
            "error": {
                "code": "REQUEST_TIMEOUT",
                "message": "The request body did not arrive within 3 s.",
                "status": 408,
            }
        }
        received, seconds = read_all(kept, since)  # answered, then idle for the keepalive time
        assert received.startswith(b"HTTP/1.1 200 ") and 1 < seconds < 5
    assert served.me()[0] == 200


@pytest.mark.parametrize("served", [{"SERVER_MAX_CONNECTIONS_PER_ADDRESS": 5}], indirect=True)
def test_an_address_holds_at_most_its_share_of_connections(served):
    with ExitStack() as stack:
        held = opened(stack, served, 5, "127.0.0.5", b"")
        time.sleep(0.3)
        [refused] = opened(stack, served, 1, "127.0.0.5", b"GET /v1/health HTTP/1.1\r\n\r\n")
        try:
            assert refused.recv(100) == b""
        except ConnectionResetError:
            pass  # closed with the request unread
        assert served.timed("/v1/health") == (200, pytest.approx(0, abs=1))
        held[0].close()
        time.sleep(0.3)
        [again] = opened(stack, served, 1, "127.0.0.5", b"GET /v1/health HTTP/1.1\r\n\r\n")
        assert again.recv(12) == b"HTTP/1.1 200"


def children(pid):
    try:
        listed = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    except FileNotFoundError:
        return []
    return [int(child) for child in listed.split()]


def descendants(pid):
    found = children(pid)
    for child in list(found):
        found += descendants(child)
    return found


def alive(pid):
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"  # a zombie has ended


def signed_in_wrongly(served, number):
    """A sign-in with an unknown e-mail (hashed all the same): its status."""
    session = requests.Session()
    page = session.get(f"{served.base}/app/sign-in", timeout=10).text
    token = re.search(r'name="csrf_token" value="([^"]+)"', page).group(1)
    form = {"csrf_token": token, "email": f"nobody{number}@example.com", "password": "x" * 12}
    answer = session.post(f"{served.base}/app/sign-in", data=form, timeout=30)
    return answer.status_code


@pytest.mark.parametrize("served", [{"RATE_LIMIT_REQUESTS": 100_000}], indirect=True)
def test_password_hashes_run_beside_the_loop_not_on_it(served):
    # About 90 ms each: on the loop, ten sign-ins at once held every request
    # for about a second.
    with ThreadPoolExecutor(10) as pool:
        started = time.monotonic()
        signing = [pool.submit(signed_in_wrongly, served, number) for number in range(10)]
        waits = []
        while not all(sign_in.done() for sign_in in signing):
            status, seconds = served.me()
            assert status == 200
            waits.append(seconds)
        took = time.monotonic() - started
    assert [sign_in.result() for sign_in in signing] == [401] * 10
    assert took > 0.5 and len(waits) > 5  # the hashes, one at a time, took that long
    assert max(waits) < 0.3, waits


def test_a_worker_on_sqlite_leaves_the_postgresql_driver_unloaded(served):
    """peewee imports psycopg whenever it is installed (as it is here, for
    the PostgreSQL pass); a worker serving a SQLite file never maps it."""
    assert importlib.util.find_spec("psycopg")  # installed with the test extra
    [worker] = wait_for(lambda: children(served.master) or None, "started its worker", 20)
    assert served.me()[0] == 200  # peewee and the models are loaded by now
    mapped = Path(f"/proc/{worker}/maps").read_text()
    assert "libsqlite3" in mapped or "_sqlite3" in mapped
    assert "psycopg" not in mapped


WATCHED_TIMEOUT = 10  # server.timeout_seconds's least


@pytest.mark.parametrize("served", [{"SERVER_TIMEOUT_SECONDS": WATCHED_TIMEOUT}], indirect=True)
def test_a_stuck_worker_is_killed_and_started_anew(served):
    """gunicorn's liveness check: a worker whose loop does not turn for
    server.timeout_seconds (stopped here) is killed and replaced."""
    [worker] = wait_for(lambda: children(served.master) or None, "started its worker", 20)
    os.kill(worker, signal.SIGSTOP)
    stopped = time.monotonic()
    wait_for(lambda: not alive(worker), "killed the stuck worker", WATCHED_TIMEOUT + 15)
    assert time.monotonic() - stopped > WATCHED_TIMEOUT - 1  # not before its time
    new = wait_for(lambda: [p for p in children(served.master) if p != worker], "started anew", 20)
    assert len(new) == 1
    wait_for(lambda: served.me()[0] == 200, "answered again", 20)


CONTACTS = 40


def test_sigterm_with_a_webhook_backlog_leaves_no_process_and_loses_no_delivery(tmp_path):
    """A receiver that takes a second per delivery, 40 events due: SIGTERM
    stops every process of `serve` at once (the delivery in flight is
    recorded, the others left to a later run), and the next `serve` on the
    database delivers each event once."""
    receiver = Receiver(default=Reply(delay=1.0))
    settings = {"WEBHOOKS_ALLOW_PRIVATE_TARGETS": True, "WEBHOOKS_ALLOWED_PORTS": [receiver.port]}
    try:
        with ExitStack() as stack:
            served = stack.enter_context(closing(serve(tmp_path, settings)))
            served = next(served)
            served.created("/v1/webhooks", {"url": receiver.url, "events": ["contact.created"]})
            for n in range(CONTACTS):
                served.created("/v1/contacts", {"name": f"C{n}", "phone": f"+551191111{n:04d}"})
            wait_for(lambda: len(receiver.requests) >= 2, "began delivering", 20)
            processes = [served.master, *descendants(served.master)]
            os.kill(served.master, signal.SIGTERM)
            stopped = time.monotonic()
            wait_for(lambda: not any(map(alive, processes)), "ended every process", 10)
            assert time.monotonic() - stopped < 10
            delivered_before = len(receiver.requests)
        assert delivered_before < CONTACTS
        receiver.default = Reply()  # answers at once from now on
        with restarted(tmp_path, settings):
            wait_for(lambda: len(receiver.requests) >= CONTACTS, "delivered the rest", 30)
            time.sleep(1.5)  # one more poll: nothing is delivered twice
        events = Counter(json.loads(r.body)["event_id"] for r in receiver.requests)
        assert len(events) == CONTACTS and set(events.values()) == {1}, events
    finally:
        receiver.close()


def restarted(tmp_path, settings):
    """`serve` again on the database (no key printed this time)."""
    return beside(tmp_path, settings, ["app.py", "--port", str(free_port())])


def working(tmp_path, settings):
    """`agent-platform worker` on the served database."""
    return beside(tmp_path, settings, ["-m", "agent_platform", "worker"])


@contextmanager
def beside(tmp_path, settings, arguments):
    """`python ARGUMENTS` on the served database, stopped by SIGTERM."""
    environ = dict(os.environ, AGENT_PLATFORM_DATABASE_PATH=str(tmp_path / "served.db"))
    environ.update({f"AGENT_PLATFORM_{k}": json.dumps(v) for k, v in settings.items()})
    process = subprocess.Popen(
        [sys.executable, *arguments],
        cwd=ROOT, env=environ, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        yield process
    finally:
        process.terminate()
        assert process.wait(timeout=40) == 0


# A script under gevent, on a migrated SQLite file (its argument): its app and database.
GEVENT_APP = """
from gevent import monkey
monkey.patch_all()
import sys, time, gevent
from agent_platform import create_app
from agent_platform.db import database, transaction
from agent_platform.migrate import apply_migrations

app = create_app({"DATABASE_PATH": sys.argv[1], "DATABASE_BUSY_TIMEOUT_SECONDS": 3})
with app.app_context():
    apply_migrations()
database.close_all()
"""

GREENLETS_TAKE_TURNS = (
    GEVENT_APP
    + """
ticks = []

def writer(pause):
    with app.app_context():
        with transaction():
            database.execute_sql("CREATE TABLE IF NOT EXISTS t (x)")
            database.execute_sql("INSERT INTO t VALUES (1)")
            gevent.sleep(pause)  # a write transaction that yields (a network call)
        database.close()

def ticker():
    for _ in range(20):
        ticks.append(time.monotonic())
        gevent.sleep(0.05)

started = time.monotonic()
gevent.joinall([gevent.spawn(writer, 1.0), gevent.spawn(writer, 0), gevent.spawn(ticker)],
               raise_error=True)
gaps = [b - a for a, b in zip(ticks, ticks[1:])]
print(round(max(gaps), 2), round(time.monotonic() - started, 2))
"""
)


def test_greenlets_take_turns_to_write_without_stopping_the_process(tmp_path):
    """Under gevent, a write waiting in SQLite's busy handler would stop every
    greenlet of the process, the one holding the lock included, until the
    busy timeout: the second writer waits its turn in gevent instead."""
    result = subprocess.run(
        [sys.executable, "-c", GREENLETS_TAKE_TURNS, str(tmp_path / "turns.db")],
        cwd=ROOT, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    longest_gap, total = map(float, result.stdout.split())
    assert longest_gap < 0.5 and total < 2.5


def test_with_jobs_off_serve_answers_and_a_worker_beside_it_delivers(tmp_path):
    """server.jobs = false: `serve` stores the event and delivers nothing;
    `agent-platform worker` on the same database delivers it."""
    receiver = Receiver()
    settings = {
        "SERVER_JOBS": False,
        "WEBHOOKS_ALLOW_PRIVATE_TARGETS": True,
        "WEBHOOKS_ALLOWED_PORTS": [receiver.port],
    }
    try:
        with closing(serve(tmp_path, settings)) as serving_:
            served = next(serving_)
            served.created("/v1/webhooks", {"url": receiver.url, "events": ["contact.created"]})
            served.created("/v1/contacts", {"name": "Ana", "phone": "+5511911110000"})
            time.sleep(3)  # three webhook polls of a serve that ran its jobs
            assert receiver.requests == []
            with working(tmp_path, settings):
                wait_for(lambda: len(receiver.requests) == 1, "the worker delivered", 20)
        assert json.loads(receiver.requests[0].body)["event"] == "contact.created"
    finally:
        receiver.close()
