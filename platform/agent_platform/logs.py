"""Logging set up from the configuration: `log.level`, and `log.format`
"text" (one readable line per record) or "json" (one JSON object per line,
for log collectors: time, level, logger, message, the traceback, and the
ids a line is about as fields of their own: a failure's log call passes
them as `extra=`, its text saying them for people). No line holds a
visitor token or a one-time sign-in link's token (RedactTokens)."""

import json
import logging
import re
from datetime import UTC, datetime

TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
# What every LogRecord carries; anything else on a record came from `extra=`.
_STANDARD = set(vars(logging.makeLogRecord({}))) | {"message", "asctime", "taskName"}
# A `token` query parameter's value, in a URL or a query string.
_TOKEN = re.compile(r"(^|[?&;])token=[^&;\s\"]*")
REDACTED = "token=[redacted]"
# A one-time sign-in link's token is in its path (/app/welcome/<token>):
# whoever reads the log before the person opens it must not be able to.
_LINK_TOKEN = re.compile(r"(/app/welcome/)[^/?;\s\"]+")


class JsonFormatter(logging.Formatter):
    def format(self, record):
        entry = {
            "time": datetime.fromtimestamp(record.created, UTC)
            .isoformat(timespec="milliseconds")
            .replace("+00:00", "Z"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            **fields_of(record),
        }
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, ensure_ascii=False, default=str)


def fields_of(record):
    """The `extra=` fields of a record."""
    return {
        name: value
        for name, value in vars(record).items()
        if name not in _STANDARD and not name.startswith("_")
    }


def redacted(text):
    """`text` with every `token=` query parameter's value, and every sign-in
    link's token, hidden."""
    if "/app/welcome/" in text:
        text = _LINK_TOKEN.sub(r"\1[redacted]", text)
    if "token=" not in text:
        return text
    return _TOKEN.sub(lambda found: found[1] + REDACTED, text)


class RedactTokens(logging.Filter):
    """The widget's push stream takes the visitor token in its URL (an
    EventSource cannot send headers), and the token lets one read that
    visitor's chat: whatever logs a URL or a query string (gunicorn's access
    and error lines, Werkzeug's request lines, ours) says `token=[redacted]`.
    On a handler, so it sees every record that handler writes."""

    def filter(self, record):
        try:
            message = record.getMessage()
        except Exception:
            return True  # a broken record: the handler reports it as it would have
        if "token=" in message or "/app/welcome/" in message:
            record.msg, record.args = redacted(message), ()
        for name, value in fields_of(record).items():
            if isinstance(value, str):
                setattr(record, name, redacted(value))
        return True


def configure(config):
    """The root logger writes to stderr at `log.level`, in `log.format`."""
    handler = logging.StreamHandler()
    json_lines = config["LOG_FORMAT"] == "json"
    handler.setFormatter(JsonFormatter() if json_lines else logging.Formatter(TEXT_FORMAT))
    handler.addFilter(RedactTokens())
    root = logging.getLogger()
    for previous in [h for h in root.handlers if getattr(h, "_agent_platform", False)]:
        root.removeHandler(previous)
    handler._agent_platform = True  # ours to replace when an app is built again
    root.addHandler(handler)
    root.setLevel(config["LOG_LEVEL"])
