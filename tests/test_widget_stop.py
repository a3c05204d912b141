"""Open push streams do not hold up a stop: SIGTERM to a real `serve` with
twenty widgets streaming ends each stream cleanly at once (events.live's
close_all) and every process within seconds, not at gunicorn's graceful
timeout; a widget reconnecting to the next server with its Last-Event-ID
gets what changed in between."""

import os
import signal
import subprocess
import sys
import time

import requests

from test_cli import ROOT, free_port, serving
from test_one_server import answers
from test_service_jobs import wait_for
from test_serving import alive, descendants
from test_widget_push import ANSWER, QUESTION, Visitor, website

STREAMS = 20
STOPPED_WITHIN = 3  # seconds; gunicorn's graceful timeout is 30


def restarted(environ, port):
    """`serve` again on the same database and port (no key printed this time)."""
    process = subprocess.Popen(
        [sys.executable, "app.py", "--port", str(port)], cwd=ROOT, env=environ,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    assert answers(f"http://127.0.0.1:{port}/v1/health")
    return process


def ended(stream):
    """Whether the server ended the stream (its last chunk came) rather than
    cutting it off."""
    try:
        while stream.event() is not None:
            pass
        return True
    except requests.RequestException:
        return False
    finally:
        stream.close()


def test_sigterm_ends_open_streams_at_once_and_a_reconnect_misses_nothing(tmp_path):
    port, started = free_port(), []
    environ = {
        **os.environ,
        "AGENT_PLATFORM_DATABASE_PATH": str(tmp_path / "stop.db"),
        "AGENT_PLATFORM_REPLIES_DEBOUNCE_SECONDS": "0",
        "AGENT_PLATFORM_MESSAGES_SEND_POLL_SECONDS": "0.2",
    }
    with serving(["--port", str(port)], environ, port, started) as (base, lines):
        api = requests.Session()
        api.headers["x-api-key"] = lines[1].strip()
        channel = website((base, api))
        visitors = [Visitor((base,), channel) for _ in range(STREAMS)]
        streams = [visitor.stream() for visitor in visitors]
        for stream in streams:
            assert stream.changes()["messages"] == []
        left_at = streams[0].last_id
        master = started[0].pid
        processes = [master, *descendants(master)]
        os.kill(master, signal.SIGTERM)
        stopped = time.monotonic()
        wait_for(lambda: not any(map(alive, processes)), "ended every process", 40)
        took = time.monotonic() - stopped
        assert took < STOPPED_WITHIN, f"stopped in {took:.1f} s"
        assert all(map(ended, streams))
    server = restarted(environ, port)
    try:
        visitors[0].say(QUESTION, "c-1")  # after the stream ended, before it is back
        with visitors[0].stream(last_event_id=left_at) as stream:
            seen = stream.until(lambda m: m["from"] == "agent")
            assert [m["text"] for m in seen.values()] == [QUESTION, ANSWER]
    finally:
        server.terminate()
        server.wait(timeout=40)
