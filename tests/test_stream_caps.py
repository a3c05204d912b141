"""Push streams hold their connections for minutes, and visitor tokens cost
nothing to make: one client address holds at most
`widget.streams_per_address` widget streams, and streams of every kind take
at most three quarters of `server.max_connections`, so API clients always
find a connection. Real served instances, streams from loopback addresses
of their own."""

import json
import os
import socket
import time

import pytest
import requests

from test_cli import free_port, serving
from test_widget_push import SITE, Visitor, website

PER_ADDRESS, MAX_CONNECTIONS = 2, 8  # 6 streams in all


@pytest.fixture
def service(tmp_path):
    port = free_port()
    environ = {
        **os.environ,
        "AGENT_PLATFORM_DATABASE_PATH": str(tmp_path / "caps.db"),
        "AGENT_PLATFORM_WIDGET_STREAMS_PER_ADDRESS": str(PER_ADDRESS),
        "AGENT_PLATFORM_SERVER_MAX_CONNECTIONS": str(MAX_CONNECTIONS),
        "AGENT_PLATFORM_WIDGET_STREAM_HEARTBEAT_SECONDS": "0.5",
    }
    with serving(["--port", str(port)], environ, port) as (base, lines):
        api = requests.Session()
        api.headers["x-api-key"] = lines[1].strip()
        yield base, api, environ


class RawStream:
    """A widget stream opened from `source` (a loopback address), held open."""

    def __init__(self, service, channel_id, source):
        self.visitor = Visitor(service, channel_id)
        host, port = service[0].removeprefix("http://").split(":")
        self.sock = socket.create_connection((host, int(port)), 10, (source, 0))
        path = f"/widget/{channel_id}/api/events?token={self.visitor.token}"
        head = f"GET {path} HTTP/1.1\r\nHost: x\r\nOrigin: {SITE}\r\nAccept: text/event-stream\r\n"
        self.sock.sendall((head + "\r\n").encode())
        self.status, self.headers, self.body = _answer(self.sock)

    def close(self):
        self.sock.close()


def _answer(sock):
    received = b""
    while b"\r\n\r\n" not in received:
        received += sock.recv(65536)
    head, _, body = received.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = dict(line.split(": ", 1) for line in lines[1:])
    length = int(headers.get("Content-Length", 0))
    while len(body) < length:
        body += sock.recv(65536)
    return int(lines[0].split()[1]), headers, body


def refusal(stream):
    assert stream.status == 429, stream.body
    assert stream.headers["Retry-After"] == "60"
    error = json.loads(stream.body)["error"]
    assert error["code"] == "TOO_MANY_STREAMS"
    return error["message"]


def opened_again(service, channel_id, source, seconds=10):
    """A stream from `source`, once the server has seen a closed one go (at
    its next heartbeat)."""
    deadline = time.monotonic() + seconds
    while (stream := RawStream(service, channel_id, source)).status == 429:
        stream.close()
        assert time.monotonic() < deadline
        time.sleep(0.2)
    return stream


def test_one_address_holds_at_most_its_share_of_widget_streams(service):
    channel = website(service)
    office = [RawStream(service, channel, "127.0.0.2") for _ in range(PER_ADDRESS)]
    try:
        assert [stream.status for stream in office] == [200] * PER_ADDRESS
        one_more = RawStream(service, channel, "127.0.0.2")  # another visitor, same address
        assert "This address has 2 widget streams open already" in refusal(one_more)
        one_more.close()
        elsewhere = RawStream(service, channel, "127.0.0.3")
        office.append(elsewhere)
        assert elsewhere.status == 200
        office.pop(0).close()
        office.append(opened_again(service, channel, "127.0.0.2"))
    finally:
        for stream in office:
            stream.close()


def test_streams_in_all_leave_a_quarter_of_the_connections_to_others(service):
    channel = website(service)
    sources = [f"127.0.0.{n}" for n in (2, 3, 4) for _ in range(PER_ADDRESS)]
    held = [RawStream(service, channel, source) for source in sources]
    try:
        assert [stream.status for stream in held] == [200] * 6
        one_more = RawStream(service, channel, "127.0.0.5")
        assert "The server holds 6 push streams already" in refusal(one_more)
        one_more.close()
        started = time.monotonic()
        assert requests.get(f"{service[0]}/v1/health", timeout=5).status_code == 200
        assert service[1].get(f"{service[0]}/v1/me", timeout=5).status_code == 200
        assert time.monotonic() - started < 1
        held.pop().close()
        held.append(opened_again(service, channel, "127.0.0.5"))
    finally:
        for stream in held:
            stream.close()
