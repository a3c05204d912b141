"""The Graph API, as the WhatsApp channel uses it: JSON requests with the
channel's access token, streamed media downloads, errors mapped to GraphError.

The base URL is configuration (WHATSAPP_GRAPH_API_BASE), set by the operator,
not by API users, so a plain requests.Session with timeouts is used, without
the SSRF guard of user-given URLs. Redirects are never followed: the token
must not travel to wherever a redirect points.
"""

import hashlib
import time

import requests
from flask import current_app

from ... import jsonbody
from .meta_errors import error_fields

# Error codes that mean "too fast" or "try later" (besides HTTP 429 and 5xx):
# 4 app rate limit, 80007 account rate limit, 130429 throughput, 131048 spam
# rate limit, 131056 pair rate limit, 1/2/131000/131016 temporary failures.
RETRYABLE_CODES = {1, 2, 4, 80007, 130429, 131000, 131016, 131048, 131056}
CHUNK = 64 * 1024

_session = requests.Session()


class GraphError(Exception):
    """The Graph API refused or could not be reached; `retryable` says
    whether trying again later can help."""

    def __init__(self, code, title, details=None, retryable=False, status=None):
        super().__init__(f"{code}: {title}")
        self.code, self.title, self.details = str(code), title, details
        self.retryable, self.status = retryable, status

    def as_dict(self):
        return {"code": self.code, "title": self.title, "details": self.details}


class TooLarge(GraphError):
    def __init__(self, size, limit):
        title = f"The media file is larger than the limit of {limit} bytes"
        super().__init__("MEDIA_TOO_LARGE", title, {"size": size, "limit": limit})


def client():
    config = current_app.config
    return GraphClient(config["WHATSAPP_GRAPH_API_BASE"], config["WHATSAPP_TIMEOUT_SECONDS"])


class GraphClient:
    def __init__(self, base, timeout, session=None):
        self.base = base.rstrip("/")
        self.timeout = timeout
        self.session = session or _session

    def url(self, path):
        return f"{self.base}/{path.lstrip('/')}"

    def get(self, path, token, params=None):
        return self._json("GET", self.url(path), token, params=params)

    def post(self, path, token, body):
        return self._json("POST", self.url(path), token, json=body)

    def _json(self, method, url, token, **options):
        response = self._send(method, url, token, stream=False, **options)
        body = _decoded(response)
        if 200 <= response.status_code < 300 and isinstance(body, dict):
            return body
        if 200 <= response.status_code < 300:
            raise GraphError(
                "INVALID_RESPONSE", "The Graph API answered no JSON object", None, True
            )
        raise error_from(response.status_code, body)

    def download(self, url, token, sink, max_bytes):
        """Stream `url` into `sink` (a binary file); returns (size, sha256 digest
        bytes, content type). At most `max_bytes` are read (TooLarge beyond)."""
        deadline = time.monotonic() + self.timeout
        response = self._send("GET", url, token, stream=True)
        with response:
            if response.status_code != 200:
                raise error_from(response.status_code, _decoded(response), any_status=True)
            declared = declared_size(response.headers.get("Content-Length"))
            if declared > max_bytes:
                raise TooLarge(declared, max_bytes)
            size, digest = 0, hashlib.sha256()
            for chunk in response.iter_content(CHUNK):
                size += len(chunk)
                if size > max_bytes:
                    raise TooLarge(size, max_bytes)
                if time.monotonic() > deadline:
                    raise GraphError("TIMEOUT", "The media download took too long", None, True)
                digest.update(chunk)
                sink.write(chunk)
            return size, digest.digest(), response.headers.get("Content-Type")

    def _send(self, method, url, token, stream, **options):
        headers = {"Authorization": f"Bearer {token}", "User-Agent": "agent-platform"}
        try:
            return self.session.request(
                method,
                url,
                headers=headers,
                timeout=self.timeout,
                allow_redirects=False,
                stream=stream,
                **options,
            )
        except requests.Timeout:
            title = f"The Graph API did not answer within {self.timeout} seconds"
            raise GraphError("TIMEOUT", title, None, True) from None
        except requests.RequestException as error:
            title = "The Graph API could not be reached"
            raise GraphError("UNREACHABLE", title, str(error), True) from None


def declared_size(value):
    """A size the server or the metadata declared, in bytes: 0 when it is
    not a plain whole number ("", "12.5", "²", a list), which the download
    then measures as it goes; a number too long to read is over any limit."""
    text = str(value).strip() if isinstance(value, (str, int)) else ""
    if not (text.isascii() and text.isdigit()):
        return 0
    return int(text) if len(text) <= 18 else 10**18


def _decoded(response):
    try:
        return jsonbody.loads(response.content)  # its limits: no RecursionError
    except ValueError:
        return None


def error_from(status, body, any_status=False):
    """The GraphError of an HTTP answer: Meta's `error` object (code, message,
    error_data.details) when there is one. Retryable: 5xx, 429 and the rate
    limit / temporary codes; other 4xx are final (any_status: every status,
    for downloads whose URL may simply have expired)."""
    error = body.get("error") if isinstance(body, dict) else None
    code, title, details = error_fields(error)
    retryable = any_status or status >= 500 or status == 429 or _retryable_code(error)
    title = title or f"The Graph API answered HTTP {status}"
    return GraphError(code or f"HTTP_{status}", title, details, retryable, status)


def _retryable_code(error):
    code = error.get("code") if isinstance(error, dict) else None
    return type(code) is int and code in RETRYABLE_CODES
