"""What each configuration value may be, beyond its type: ranges, choices,
lists, URLs. load_config checks every source against these, so a bad value
stops the start with the key, the value and what is allowed, instead of a
traceback later or a silent misbehaviour."""

import json
import re
from urllib.parse import urlsplit

# TOML sections, longest first where one is the prefix of another.
SECTIONS = (
    "rate_limit", "database", "trainings", "webhooks", "whatsapp", "telegram", "messages",
    "inbound", "replies", "secrets", "credits", "server", "limits", "alerts", "media", "plan",
    "smtp", "mcp", "log", "widget", "email", "appointments", "inbox", "metrics",
)  # fmt: skip
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
FAILURE_POLICIES = ("failing", "deactivate")


def toml_name(key):
    """DATABASE_PATH -> database.path, as written in the configuration file."""
    for section in SECTIONS:
        prefix = section.upper() + "_"
        if key.startswith(prefix):
            return f"{section}.{key[len(prefix) :].lower()}"
    return key.lower()


def problem(key, value):
    """Why `value` (of the right type) cannot be `key`'s, or None."""
    rule = _rule(key)
    return None if rule is None or value is None else rule(value)


def _rule(key):
    if key in _BY_KEY:
        return _BY_KEY[key]
    for suffix, rule in _BY_SUFFIX:
        if key.endswith(suffix):
            return rule
    return None


def _one_of(choices):
    listed = ", ".join(json.dumps(choice) for choice in choices)
    return lambda value: None if value in choices else f"must be one of {listed}"


def _at_least(minimum):
    return lambda value: None if value >= minimum else f"must be at least {minimum}"


def _plan_name(value):
    # As services.billing.PLAN_NAME, which imports Flask: not worth it here.
    if re.fullmatch(r"[a-z0-9][a-z0-9_.-]{0,49}", value):
        return None
    return "must be 1 to 50 of a-z, 0-9, '_', '.', '-', starting with a letter or digit"


def _between(minimum, maximum):
    return lambda value: None if minimum <= value <= maximum else f"must be {minimum} to {maximum}"


def _port(value):
    return None if 1 <= value <= 65535 else "must be a port, 1 to 65535"


def _ports(value):
    wrong = [port for port in value if not _is_int(port) or _port(port)]
    return f"must be a list of ports, 1 to 65535 (not {json.dumps(wrong[0])})" if wrong else None


def _schedule(value):
    # 0 is "at once": the spec's variant 1 for webhooks is [0, 60, 300, 900, 3600].
    wrong = [step for step in value if not _is_number(step) or step < 0]
    if not value or wrong:
        return "must be a non-empty list of seconds, each 0 or more, e.g. [5, 30, 120]"
    return None


def _hosts(value):
    wrong = [host for host in value if not isinstance(host, str) or not _HOST.match(host)]
    return f"must be a list of host names (not {json.dumps(wrong[0])})" if wrong else None


def _http_url(value):
    parts = urlsplit(value)
    ok = parts.scheme in ("http", "https") and parts.netloc
    return None if ok else "must be an http:// or https:// URL"


def _database_url(value):
    # The password may hold any character: only the scheme and the rest's
    # shape are checked here; the server says the rest when connecting.
    try:
        parts = urlsplit(value)
        parts.port  # noqa: B018 (raises on a port that is not a number)
    except ValueError as error:
        return f"must be a postgresql:// URL ({error})"
    if parts.scheme not in ("postgresql", "postgres") or not (parts.netloc or parts.path[1:]):
        return 'must be a postgresql:// URL, e.g. "postgresql://user:password@host:5432/name"'
    return None


def listen_address(value):
    """("host", port) of "host:port" ("[::1]:9464" for IPv6), or None."""
    host, _, port = value.rpartition(":")
    host = host.removeprefix("[").removesuffix("]")
    if not host or not (port.isascii() and port.isdigit()) or _port(int(port)):
        return None
    return host, int(port)


def _listen(value):
    return None if listen_address(value) else 'must be "host:port", e.g. "127.0.0.1:9464"'


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value):
    return isinstance(value, int | float) and not isinstance(value, bool)


_HOST = re.compile(r"^[A-Za-z0-9.-]{1,253}$")
_BY_KEY = {
    "LOG_LEVEL": _one_of(LOG_LEVELS),
    "LOG_FORMAT": _one_of(("text", "json")),
    "WEBHOOKS_FAILURE_POLICY": _one_of(FAILURE_POLICIES),
    "SERVER_PORT": _port,
    "METRICS_LISTEN": _listen,
    "DATABASE_URL": _database_url,
    "SMTP_PORT": _port,
    "WEBHOOKS_ALLOWED_PORTS": _ports,
    "WEBHOOKS_RETRY_SCHEDULE": _schedule,
    "REPLIES_RETRY_SCHEDULE": _schedule,
    "WHATSAPP_MEDIA_HOSTS": _hosts,
    "SERVER_PUBLIC_URL": _http_url,
    "WHATSAPP_GRAPH_API_BASE": _http_url,
    "REPLIES_OPENAI_BASE_URL": _http_url,
    "REPLIES_OLLAMA_BASE_URL": _http_url,
    "REPLIES_DEBOUNCE_SECONDS": _at_least(0),
    "PLAN_MAX_AGENTS": _at_least(0),
    "PLAN_MAX_CHANNELS": _at_least(0),
    "PLAN_CREDITS": _at_least(0),
    "PLAN_DEFAULT": _plan_name,
    # Past ten years a date would only be a typo (and far beyond, an overflow).
    "PLAN_TRIAL_DAYS": _between(1, 3660),
    "PLAN_TRIAL_WARNING_DAYS": _between(1, 366),
    "CREDITS_PER_REPLY": _at_least(0),
    "CREDITS_PER_1K_TOKENS": _at_least(0),
    "WIDGET_MESSAGE_MAX_CHARS": _at_least(1),
    "WIDGET_STREAMS_PER_VISITOR": _at_least(0),
    "WIDGET_STREAMS_PER_ADDRESS": _at_least(1),
    "INBOX_STREAMS_PER_USER": _at_least(0),
    "SERVER_PROXY_HOPS": _at_least(0),
    "SERVER_MAX_CONNECTIONS": _at_least(1),
    "SERVER_MAX_CONNECTIONS_PER_ADDRESS": _at_least(0),  # 0: no cap
    # gunicorn counts the worker's start (loading the app, a few seconds on
    # a slow machine) against it; past a day nothing would be watching.
    "SERVER_TIMEOUT_SECONDS": _between(10, 86400),
}
_BY_SUFFIX = (
    ("_SECONDS", _at_least(0.001)),
    ("_BYTES", _at_least(1)),
    ("_CONCURRENCY", _at_least(1)),
    ("_BATCH", _at_least(1)),
    ("_ATTEMPTS", _at_least(1)),
    ("_REQUESTS", _at_least(1)),
    ("_DAYS", _at_least(1)),
    ("_HOURS", _at_least(1)),
    ("_AFTER", _at_least(1)),
    ("_PER_MINUTE", _at_least(1)),
)
