"""A local stand-in of the Telegram Bot API, on loopback.

A real HTTP server (ThreadingHTTPServer in a thread) that answers
`POST /bot<token>/<method>` (JSON bodies) the way api.telegram.org does:
`{"ok": true, "result": ...}`, or `{"ok": false, "error_code", "description"}`
(with `parameters.retry_after` for 429), and 401 "Unauthorized" for any
other token than `token` and those of the bots added with `add_bot`.

- getMe; setWebhook / deleteWebhook / getWebhookInfo (the webhook is kept,
  per bot: `webhook` is the main bot's, `webhooks` every bot's);
- getUpdates: the updates queued with `push` whose update_id >= offset,
  409 while a webhook is set (as Telegram does);
- sendMessage, sendPhoto, sendDocument, sendAudio, sendVideo: a Message
  object with a new message_id per chat, or the answer scripted with
  `fail_next`;
- answerCallbackQuery;
- getFile and `GET /file/bot<token>/<file_path>` for files added with `add_file`.

Every request is recorded in `requests` (method, path, json).
"""

import itertools
import json
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from urllib.parse import urlsplit

from loopback import LoopbackServer

TOKEN = "7234567890:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw1"
BOT = {"id": 7234567890, "is_bot": True, "first_name": "Loja", "username": "loja_da_ana_bot"}
CUSTOMER = {"id": 55501234, "is_bot": False, "first_name": "Bia", "last_name": "Souza"}
T0 = 1767323045
SEND_METHODS = {
    "sendMessage": "text",
    "sendPhoto": "photo",
    "sendDocument": "document",
    "sendAudio": "audio",
    "sendVideo": "video",
}


@dataclass
class Seen:
    method: str
    path: str
    body: bytes
    headers: dict = field(default_factory=dict)

    @property
    def json(self):
        return json.loads(self.body) if self.body else {}

    @property
    def api_method(self):
        return self.path.rsplit("/", 1)[-1]


@dataclass
class Scripted:
    status: int
    body: object


def refusal(code, description, retry_after=None):
    body = {"ok": False, "error_code": code, "description": description}
    if retry_after is not None:
        body["parameters"] = {"retry_after": retry_after}
    return Scripted(code, body)


class TelegramStub:
    def __init__(self, token=TOKEN):
        self.token = token
        self.requests = []
        self.updates = []
        self.files = {}
        self.webhooks = {}  # {token: the setWebhook parameters} while one is set
        self.other_tokens = set()
        self.refuse = {}  # {method: (code, description)} answered while set
        self.script = deque()  # answers of the next send* calls, then success
        self._message_ids = {}
        self._update_ids = itertools.count(400000001)
        self._lock = threading.Lock()
        self.server = LoopbackServer(("127.0.0.1", 0), _handler(self))
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self.thread.start()

    @property
    def webhook(self):
        """The main bot's webhook (its setWebhook parameters), or None."""
        return self.webhooks.get(self.token)

    def add_bot(self, token):
        """Answer `token` too, as a second bot of the same API."""
        self.other_tokens.add(token)

    @property
    def base(self):
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self):
        self.server.shutdown()
        self.server.server_close()

    # -- scripting -----------------------------------------------------------

    def fail_next(self, code, description, retry_after=None):
        with self._lock:
            self.script.append(refusal(code, description, retry_after))

    def push(self, update):
        """Queue an Update for getUpdates; returns it with its update_id."""
        with self._lock:
            update = {"update_id": next(self._update_ids), **update}
            self.updates.append(update)
        return update

    def add_file(self, file_id, content, file_path="photos/file_1.jpg"):
        self.files[file_id] = (file_path, content)

    def sent(self, method="sendMessage"):
        return [seen.json for seen in self.requests if seen.api_method == method]

    def calls(self):
        return [seen.api_method for seen in self.requests]

    # -- answers -------------------------------------------------------------

    def answer(self, seen):
        if seen.method == "GET" and seen.path.startswith(f"/file/bot{self.token}/"):
            return self._download(seen.path.removeprefix(f"/file/bot{self.token}/"))
        token, _, method = seen.path.removeprefix("/bot").partition("/")
        if not seen.path.startswith("/bot") or token not in {self.token, *self.other_tokens}:
            return refusal(401, "Unauthorized")
        params = seen.json
        if method in self.refuse:
            return refusal(*self.refuse[method])
        if method in SEND_METHODS:
            return self._send(method, params)
        handler = getattr(self, f"_{method}", None)
        if handler is None:
            return refusal(404, "Not Found")
        return handler(params, token)

    def _getMe(self, params, token):
        return _ok(BOT)

    def _setWebhook(self, params, token):
        url = params.get("url", "")
        if not url.startswith("https://"):
            return refusal(
                400, "Bad Request: bad webhook: An HTTPS URL must be provided for webhook"
            )
        self.webhooks[token] = params
        return _ok(True, description="Webhook was set")

    def _deleteWebhook(self, params, token):
        was_set = self.webhooks.pop(token, None) is not None
        return _ok(
            True, description="Webhook was deleted" if was_set else "Webhook is already deleted"
        )

    def _getWebhookInfo(self, params, token):
        url = self.webhooks.get(token, {}).get("url", "")
        return _ok({"url": url, "has_custom_certificate": False, "pending_update_count": 0})

    def _getUpdates(self, params, token):
        if token in self.webhooks:
            return refusal(
                409,
                "Conflict: can't use getUpdates method while webhook is active; "
                "use deleteWebhook to delete the webhook first",
            )
        offset = params.get("offset") or 0
        with self._lock:
            self.updates = [u for u in self.updates if u["update_id"] >= offset]
            return _ok(self.updates[: params.get("limit", 100)])

    def _answerCallbackQuery(self, params, token):
        if not params.get("callback_query_id"):
            return refusal(400, "Bad Request: query is too old and response timeout expired")
        return _ok(True)

    def _getFile(self, params, token):
        file_id = params.get("file_id")
        if file_id not in self.files:
            return refusal(400, "Bad Request: invalid file_id")
        path, content = self.files[file_id]
        result = {"file_id": file_id, "file_unique_id": "u" + file_id, "file_size": len(content)}
        return _ok({**result, "file_path": path})

    def _download(self, path):
        for file_path, content in self.files.values():
            if file_path == path:
                return Scripted(200, content)
        return Scripted(404, {"ok": False, "error_code": 404, "description": "Not Found"})

    def _send(self, method, params):
        with self._lock:
            scripted = self.script.popleft() if self.script else None
            if scripted is not None:  # None in the script: this one succeeds
                return scripted
            chat_id = int(params["chat_id"])
            counter = self._message_ids.setdefault(chat_id, itertools.count(1001))
            message_id = next(counter)
        chat = {"id": chat_id, "first_name": "Bia", "type": "private"}
        message = {"message_id": message_id, "from": BOT, "chat": chat, "date": int(time.time())}
        field_name = SEND_METHODS[method]
        if field_name == "text":
            message["text"] = params["text"]
        else:
            message[field_name] = _sent_media(field_name)
            if params.get("caption"):
                message["caption"] = params["caption"]
        return _ok(message)


def _sent_media(field_name):
    media = {"file_id": f"AgAC-{field_name}", "file_unique_id": f"AQAD-{field_name}"}
    if field_name == "photo":
        return [{**media, "width": 90, "height": 90}, {**media, "width": 800, "height": 800}]
    return media


def _ok(result, description=None):
    body = {"ok": True, "result": result}
    if description:
        body["description"] = description
    return Scripted(200, body)


# -- Updates as the Bot API sends them ----------------------------------------


def private_message(text="Oi, tudo bem?", message_id=1, user=CUSTOMER, date=T0, **content):
    """An Update's `message` in a private chat with `user`."""
    chat = {"id": user["id"], "first_name": user["first_name"], "type": "private"}
    if user.get("last_name"):
        chat["last_name"] = user["last_name"]
    message = {"message_id": message_id, "from": user, "chat": chat, "date": date}
    if text is not None:
        message["text"] = text
    message.update(content)
    return message


def message_update(text="Oi, tudo bem?", **options):
    return {"message": private_message(text, **options)}


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
            headers = {name.lower(): value for name, value in self.headers.items()}
            seen = Seen(self.command, urlsplit(self.path).path, body, headers)
            with stub._lock:
                stub.requests.append(seen)
            answer = stub.answer(seen)
            content = answer.body
            content_type = "application/octet-stream"
            if not isinstance(content, bytes):
                content, content_type = json.dumps(content).encode(), "application/json"
            self.send_response(answer.status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(content)))
            self.end_headers()
            self.wfile.write(content)

        def log_message(self, *args):
            pass

    return Handler
