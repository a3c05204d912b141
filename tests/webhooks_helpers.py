"""A real HTTP receiver on loopback, scripted answer by answer, for webhook tests."""

import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


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


class Receiver:
    """A ThreadingHTTPServer in a thread; answers the scripted replies in order,
    then `default`. `requests` records everything received."""

    def __init__(self, host="127.0.0.1", port=0, default=None):
        self.requests = []
        self.script = deque()
        self.default = default or Reply()
        self.lock = threading.Lock()
        self.server = ThreadingHTTPServer((host, port), _handler(self))
        self.server.daemon_threads = True
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

        def _answer(self):
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            receiver.record(
                Received(self.command, self.path, dict(self.headers), body, time.time())
            )
            reply = receiver.next_reply()
            if reply.delay:
                time.sleep(reply.delay)
            self.send_response(reply.status)
            for name, value in reply.headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(reply.body)))
            self.end_headers()
            try:
                self._write(reply)
            except OSError:
                pass  # the client gave up (timeouts, truncated reads)

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
