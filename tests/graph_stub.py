"""A local stand-in of the WhatsApp Cloud API's Graph API, on loopback.

A real HTTP server (ThreadingHTTPServer in a thread) that answers what the
channel asks for, the way Meta does:

- `GET /{phone_number_id}`: the number's fields, when the bearer token is the
  stub's `token` (else Meta's OAuth error, code 190, HTTP 401);
- `POST /{phone_number_id}/messages`: a new `wamid.` id per message, or the
  error scripted with `fail_next(status, error)`; read receipts answer success;
- `GET /{media_id}`: the media's url, mime_type, sha256 (hex) and file_size
  for files added with `add_media`; the url points back at `/files/...` here;
- `GET /files/{name}`: the file itself, only with the token;
- `GET /{business_account_id}/message_templates`: the account's `templates`
  (Meta's objects: name, language, status, components), those of the
  `status` asked for.

Every request is recorded in `requests` (method, path, query, headers, body,
json) for the tests to check what was sent.
"""

import hashlib
import itertools
import json
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from urllib.parse import parse_qs, urlsplit

from loopback import LoopbackServer

TOKEN = "EAAG-secret-token-value"
PHONE_NUMBER_ID = "106540352242922"


@dataclass
class Seen:
    method: str
    path: str
    query: dict
    headers: dict
    body: bytes

    @property
    def json(self):
        return json.loads(self.body) if self.body else None


@dataclass
class Scripted:
    status: int
    body: object
    delay: float = 0.0
    headers: dict = field(default_factory=dict)


@dataclass
class Media:
    content: bytes
    mime_type: str
    sha256: str | None = None  # what the metadata claims (None: the real hex; "": none)
    file_size: int | None = None  # what the metadata claims (None: the real size)
    url: str | None = None  # where the metadata says it is (None: here, /files/<id>)
    failures: list = field(default_factory=list)  # Scripted answers of the file URL first


class GraphStub:
    def __init__(self, token=TOKEN, phone_number_id=PHONE_NUMBER_ID):
        self.token = token
        self.phone_number_id = phone_number_id
        self.requests = []
        self.media = {}
        self.script = deque()  # answers of the next POST .../messages, then success
        self.number_fields = {
            "display_phone_number": "+55 11 98765-4321",
            "verified_name": "Loja da Ana",
            "quality_rating": "GREEN",
            "code_verification_status": "VERIFIED",
        }
        self.templates = []
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self.server = LoopbackServer(("127.0.0.1", 0), _handler(self))
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self.thread.start()

    @property
    def base(self):
        return f"http://127.0.0.1:{self.server.server_address[1]}/v21.0"

    def close(self):
        self.server.shutdown()
        self.server.server_close()

    # -- scripting ---------------------------------------------------------------

    def fail_next(self, status, error=None, delay=0.0):
        """The next POST .../messages answers `status` with Meta's error object."""
        body = {"error": error} if error is not None else {"error": {"message": "Oops"}}
        with self._lock:
            self.script.append(Scripted(status, body, delay))

    def add_media(self, media_id, content, mime_type="image/jpeg", **options):
        self.media[media_id] = Media(content, mime_type, **options)

    def sent(self):
        """The bodies of the messages POSTed (read receipts excluded)."""
        return [
            seen.json
            for seen in self.requests
            if seen.method == "POST" and (seen.json or {}).get("status") != "read"
        ]

    # -- answers -----------------------------------------------------------------

    def answer(self, seen):
        parts = seen.path.removeprefix("/v21.0").strip("/").split("/")
        if seen.headers.get("authorization") != f"Bearer {self.token}":
            return Scripted(401, _oauth_error())
        if seen.method == "POST" and parts == [self.phone_number_id, "messages"]:
            return self._send(seen)
        if seen.method == "GET" and parts == [self.phone_number_id]:
            return Scripted(200, {"id": self.phone_number_id, **self.number_fields})
        if seen.method == "GET" and len(parts) == 2 and parts[1] == "message_templates":
            return self._templates(seen)
        if seen.method == "GET" and len(parts) == 2 and parts[0] == "files":
            return self._file(parts[1])
        if seen.method == "GET" and len(parts) == 1 and parts[0] in self.media:
            return Scripted(200, self._media_info(parts[0]))
        error = {"message": "Unsupported get request.", "type": "GraphMethodException"}
        return Scripted(400, {"error": {**error, "code": 100, "error_subcode": 33}})

    def _send(self, seen):
        with self._lock:
            if seen.json.get("status") == "read":
                return Scripted(200, {"success": True})
            if self.script:
                return self.script.popleft()
            wamid = f"wamid.OUT{next(self._ids)}"
        to = seen.json["to"]
        body = {
            "messaging_product": "whatsapp",
            "contacts": [{"input": to, "wa_id": to}],
            "messages": [{"id": wamid}],
        }
        return Scripted(200, body)

    def _templates(self, seen):
        wanted = seen.query.get("status", [None])[0]
        found = [item for item in self.templates if wanted in (None, item["status"])]
        return Scripted(200, {"data": found, "paging": {"cursors": {"before": "", "after": ""}}})

    def _media_info(self, media_id):
        media = self.media[media_id]
        here = f"http://127.0.0.1:{self.server.server_address[1]}/files/{media_id}"
        info = {
            "messaging_product": "whatsapp",
            "url": media.url or here,
            "mime_type": media.mime_type,
            "sha256": media.sha256 or hashlib.sha256(media.content).hexdigest(),
            "file_size": media.file_size if media.file_size is not None else len(media.content),
            "id": media_id,
        }
        if media.sha256 == "":
            del info["sha256"]
        return info

    def _file(self, media_id):
        media = self.media.get(media_id)
        if media is None:
            return Scripted(404, {"error": {"message": "not found", "code": 100}})
        if media.failures:
            return media.failures.pop(0)
        return Scripted(200, media.content, headers={"Content-Type": media.mime_type})


def _oauth_error():
    return {
        "error": {
            "message": "Invalid OAuth access token - Cannot parse access token",
            "type": "OAuthException",
            "code": 190,
            "fbtrace_id": "Aj3bX9",
        }
    }


def _handler(stub):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self):
            self._serve()

        def do_POST(self):
            self._serve()

        def _serve(self):
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            url = urlsplit(self.path)
            headers = {name.lower(): value for name, value in self.headers.items()}
            seen = Seen(self.command, url.path, parse_qs(url.query), headers, body)
            with stub._lock:
                stub.requests.append(seen)
            answer = stub.answer(seen)
            if answer.delay:
                time.sleep(answer.delay)
            content = answer.body
            if not isinstance(content, bytes):
                content = json.dumps(content).encode()
                answer.headers.setdefault("Content-Type", "application/json")
            self.send_response(answer.status)
            for name, value in answer.headers.items():
                self.send_header(name, value)
            if "Content-Length" in answer.headers:  # scripted, whatever it says:
                self.close_connection = True  # the body ends with the connection
            else:
                self.send_header("Content-Length", str(len(content)))
            self.end_headers()
            self.wfile.write(content)

        def log_message(self, *args):
            pass

    return Handler
