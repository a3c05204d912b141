"""Logging set up from the configuration: `log.level`, and `log.format`
"text" (one readable line per record) or "json" (one JSON object per line,
for log collectors: time, level, logger, message, and the traceback)."""

import json
import logging
from datetime import UTC, datetime

TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class JsonFormatter(logging.Formatter):
    def format(self, record):
        entry = {
            "time": datetime.fromtimestamp(record.created, UTC)
            .isoformat(timespec="milliseconds")
            .replace("+00:00", "Z"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, ensure_ascii=False)


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
