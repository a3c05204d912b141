"""A local stand-in for an OpenAI-compatible chat-completions server.

It records every request (path, headers, JSON body) and answers from a
script: `answer(text)`, `tool_calls(("add", {"a": 1}), ...)`, `failure(500)`
or `hang(seconds)`; with the script empty it answers "stub answer". A
ThreadingHTTPServer on a loopback port, in a thread.

    with OpenAIStub() as stub:
        stub.script(answer("Hi!"))
        ... point an agent's base_url at stub.url ...
        stub.requests[0]["body"]["messages"]
"""

import itertools
import json
import threading
import time
from http.server import BaseHTTPRequestHandler

from loopback import LoopbackServer


def answer(text, usage=None, model="stub-model"):
    return {"kind": "answer", "text": text, "usage": usage, "model": model}


def tool_calls(*calls, usage=None):
    """calls: (function name, arguments dict or raw string) pairs."""
    return {"kind": "tools", "calls": calls, "usage": usage}


def failure(status=500, body='{"error": {"message": "boom"}}'):
    return {"kind": "failure", "status": status, "body": body}


def hang(seconds):
    return {"kind": "hang", "seconds": seconds}


class OpenAIStub:
    def __init__(self, default=None):
        self.requests = []
        self.default = default or answer("stub answer")
        self._script = []
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self.server = LoopbackServer(("127.0.0.1", 0), self._handler())
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def script(self, *items):
        with self._lock:
            self._script.extend(items)

    def bodies(self):
        return [request["body"] for request in self.requests]

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc_info):
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(5)

    def _next(self):
        with self._lock:
            return self._script.pop(0) if self._script else self.default

    def _reply(self, item, body):
        if item["kind"] == "answer":
            message = {"role": "assistant", "content": item["text"]}
        else:
            message = {"role": "assistant", "content": None, "tool_calls": []}
            for name, arguments in item["calls"]:
                if not isinstance(arguments, str):
                    arguments = json.dumps(arguments)
                message["tool_calls"].append(
                    {
                        "id": f"call_{next(self._ids)}",
                        "type": "function",
                        "function": {"name": name, "arguments": arguments},
                    }
                )
        reply = {
            "id": f"chatcmpl-{next(self._ids)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": item.get("model") or body.get("model"),
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        }
        if item.get("usage"):
            reply["usage"] = item["usage"]
        return reply

    def _handler(self):
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                length = int(self.headers.get("Content-Length", 0))
                raw = self.rfile.read(length)
                body = json.loads(raw or b"{}")
                stub.requests.append(
                    {"path": self.path, "headers": dict(self.headers), "body": body}
                )
                item = stub._next()
                if item["kind"] == "hang":
                    time.sleep(item["seconds"])
                    item = stub.default
                if item["kind"] == "failure":
                    self._send(item["status"], item["body"].encode())
                    return
                self._send(200, json.dumps(stub._reply(item, body)).encode())

            def _send(self, status, payload):
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        return Handler
