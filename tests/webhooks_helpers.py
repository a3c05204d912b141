"""A real HTTP receiver on loopback, scripted answer by answer, for webhook tests."""

import socket
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler

from loopback import LoopbackServer


@dataclass
class Reply:
    """One scripted answer: status, headers, body; `delay` seconds before it;
    `drip` seconds between body bytes (a slow body)."""

    status: int = 200
    headers: dict = field(default_factory=dict)
    body: bytes = b"ok"
    delay: float = 0.0
    drip: float = 0.0


@dataclass
class Received:
    method: str
    path: str
    headers: dict
    body: bytes
    at: float
    peer: tuple = ()  # the client's (address, port): which connection it came on


class Receiver:
    """A ThreadingHTTPServer in a thread; answers the scripted replies in order,
    then `default`. `requests` records everything received."""

    def __init__(self, host="127.0.0.1", port=0, default=None):
        self.requests = []
        self.script = deque()
        self.default = default or Reply()
        self.lock = threading.Lock()
        self.server = LoopbackServer((host, port), _handler(self))
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self.thread.start()

    @property
    def port(self):
        return self.server.server_address[1]

    @property
    def url(self):
        host = self.server.server_address[0]
        return f"http://{host}:{self.port}/hook"

    def reply(self, *replies):
        with self.lock:
            self.script.extend(replies)

    def next_reply(self):
        with self.lock:
            return self.script.popleft() if self.script else self.default

    def record(self, received):
        with self.lock:
            self.requests.append(received)

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def _handler(receiver):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def setup(self):
            super().setup()
            # Headers and body go out in two writes: without this, Nagle's
            # algorithm and delayed ACKs add 40 ms to every answer.
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def _answer(self):
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            receiver.record(
                Received(
                    self.command,
                    self.path,
                    dict(self.headers),
                    body,
                    time.time(),
                    self.client_address,
                )
            )
            reply = receiver.next_reply()
            if reply.delay:
                time.sleep(reply.delay)
            try:
                self._reply(reply)
            except OSError:
                pass  # the client gave up (timeouts, truncated reads): at any write

        def _reply(self, reply):
            self.send_response(reply.status)
            for name, value in reply.headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(reply.body)))
            self.end_headers()
            self._write(reply)

        def _write(self, reply):
            if not reply.drip:
                self.wfile.write(reply.body)
                return
            for index in range(len(reply.body)):
                self.wfile.write(reply.body[index : index + 1])
                self.wfile.flush()
                time.sleep(reply.drip)

        do_GET = do_POST = do_PUT = _answer

        def log_message(self, *args):
            pass

    return Handler


def register(caller, url, events=("*",), **values):
    """Register a webhook through the API; returns its JSON (with the secret)."""
    response = caller.post("/v1/webhooks", json={"url": url, "events": list(events), **values})
    assert response.status_code == 201, response.get_data(as_text=True)
    return response.get_json()["data"]


def raise_event(workspace_id, name="contact.created", data=None, now=None):
    """Emit an event in its own transaction, as a service would."""
    from agent_platform.db import transaction
    from agent_platform.events import emit

    with transaction():
        return emit(workspace_id, name, data if data is not None else {"id": "c-1"}, now=now)


def deliveries_of(webhook_id):
    from agent_platform.models.webhooks import Delivery

    # Deliveries queued in one instant come in the order they were queued.
    in_order = (Delivery.created_at, Delivery.id)  # ids are time-ordered
    return list(Delivery.select().where(Delivery.webhook == webhook_id).order_by(*in_order))


class SmtpSink:
    """A real SMTP server (aiosmtpd) on loopback that keeps what it receives."""

    def __init__(self):
        import socket

        from aiosmtpd.controller import Controller

        self.messages = []
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.controller = Controller(self, hostname="127.0.0.1", port=self.port)
        self.controller.start()

    async def handle_DATA(self, server, session, envelope):
        self.messages.append(envelope)
        return "250 Message accepted"

    def close(self):
        self.controller.stop()
