"""The Telegram Bot API, as the Telegram channel uses it: POST
{base}/bot<token>/<method> with a JSON body, answers `{"ok": true, "result":
...}` or `{"ok": false, "error_code", "description", "parameters"}`.

The base URL is configuration (TELEGRAM_API_BASE), set by the operator, so a
plain requests.Session with timeouts is used. The bot token is part of every
URL: no URL and no requests exception text (which quotes the URL) ever goes
into an error, a log line or a stored field.
"""

import requests
from flask import current_app

from ... import jsonbody

_session = requests.Session()
# A retry_after beyond a day is a broken answer, not a wait to keep (and a
# huge one would overflow the date it is added to).
MAX_RETRY_AFTER_SECONDS = 86400


class BotApiError(Exception):
    """The Bot API refused or could not be reached. `retryable`: trying again
    later can help (429, 5xx, network trouble); `retry_after` (seconds) is
    the wait a 429 asks for."""

    def __init__(self, code, title, retryable=False, retry_after=None):
        super().__init__(f"{code}: {title}")
        self.code, self.title = str(code), title
        self.retryable, self.retry_after = retryable, retry_after

    def as_dict(self):
        details = {"retry_after": self.retry_after} if self.retry_after else None
        return {"code": self.code, "title": self.title, "details": details}


def client(token, timeout=None):
    config = current_app.config
    return BotApi(config["TELEGRAM_API_BASE"], token, timeout or config["TELEGRAM_TIMEOUT_SECONDS"])


class BotApi:
    def __init__(self, base, token, timeout, session=None):
        self.base = base.rstrip("/")
        self.token = token
        self.timeout = timeout
        self.session = session or _session

    def call(self, method, params=None, timeout=None):
        """The `result` of `method`, else BotApiError."""
        url = f"{self.base}/bot{self.token}/{method}"
        try:
            response = self.session.post(
                url, json=params or {}, timeout=timeout or self.timeout, allow_redirects=False
            )
        except requests.Timeout:
            title = f"The Bot API did not answer {method} within {timeout or self.timeout} s"
            raise BotApiError("TIMEOUT", title, True) from None
        except requests.RequestException as error:
            title = f"The Bot API could not be reached ({type(error).__name__})"
            raise BotApiError("UNREACHABLE", title, True) from None
        return _result(response)

    def file_url(self, file_path):
        """Where getFile's file_path downloads from (holds the token: never shown)."""
        return f"{self.base}/file/bot{self.token}/{file_path}"


def _result(response):
    try:
        body = jsonbody.loads(response.content)  # its limits: no RecursionError
    except ValueError:
        body = None
    if isinstance(body, dict) and body.get("ok") is True and "result" in body:
        return body["result"]
    raise error_from(response.status_code, body)


def error_from(status, body):
    """The BotApiError of a refusal: Telegram's error_code and
    description; 429 and 5xx retryable (with parameters.retry_after)."""
    body = body if isinstance(body, dict) else {}
    code, description = body.get("error_code"), body.get("description")
    # Of another type (an object, true), either was stored as it came.
    code = code if type(code) is int and code else status
    title = (
        description
        if isinstance(description, str) and description
        else f"The Bot API answered HTTP {status} without a result"
    )
    parameters = body.get("parameters") if isinstance(body.get("parameters"), dict) else {}
    retry_after = parameters.get("retry_after")
    valid = isinstance(retry_after, int) and not isinstance(retry_after, bool) and retry_after > 0
    retry_after = min(retry_after, MAX_RETRY_AFTER_SECONDS) if valid else None
    retryable = code == 429 or status >= 500 or (200 <= status < 300)
    return BotApiError(code, title, retryable, retry_after)
