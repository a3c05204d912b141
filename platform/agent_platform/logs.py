"""Logging set up from the configuration: `log.level`, and `log.format`
"text" (one readable line per record) or "json" (one JSON object per line,
for log collectors: time, level, logger, message, the traceback, and the
ids a line is about as fields of their own: a failure's log call passes
them as `extra=`, its text saying them for people)."""

import json
import logging
from datetime import UTC, datetime

TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
# What every LogRecord carries; anything else on a record came from `extra=`.
_STANDARD = set(vars(logging.makeLogRecord({}))) | {"message", "asctime", "taskName"}


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


def configure(config):
    """The root logger writes to stderr at `log.level`, in `log.format`."""
    handler = logging.StreamHandler()
    json_lines = config["LOG_FORMAT"] == "json"
    handler.setFormatter(JsonFormatter() if json_lines else logging.Formatter(TEXT_FORMAT))
    root = logging.getLogger()
    for previous in [h for h in root.handlers if getattr(h, "_agent_platform", False)]:
        root.removeHandler(previous)
    handler._agent_platform = True  # ours to replace when an app is built again
    root.addHandler(handler)
    root.setLevel(config["LOG_LEVEL"])
