"""Configuration: defaults < TOML file < AGENT_PLATFORM_* environment < dict.

TOML sections are flattened to upper-case keys: ``[database] path`` is
``DATABASE_PATH``. Every key must be known here, so a typo fails at start
instead of being silently ignored.
"""

import json
import os
import tomllib
from pathlib import Path

from . import config_rules

ENV_PREFIX = "AGENT_PLATFORM_"
CONFIG_FILE_ENV = ENV_PREFIX + "CONFIG"

# Every setting with its default. A default of None means "unset / no limit";
# such keys accept any value of the types listed in NULLABLE_TYPES.
DEFAULTS = {
    "SERVER_HOST": "127.0.0.1",
    "SERVER_PORT": 8080,
    "SERVER_PUBLIC_URL": None,  # derived from host and port (public_url())
    "SERVER_ACCESS_LOG": False,
    "SERVER_PROXY_HOPS": 0,
    "SERVER_TIMEOUT_SECONDS": 60,
    "SERVER_MAX_CONNECTIONS": 1000,
    "SERVER_MAX_CONNECTIONS_PER_ADDRESS": 100,
    "SERVER_HEADER_TIMEOUT_SECONDS": 10,
    "SERVER_BODY_TIMEOUT_SECONDS": 60,
    "SERVER_KEEPALIVE_SECONDS": 20,
    "SERVER_JOBS": True,
    "DATABASE_PATH": "data/agent_platform.db",
    "DATABASE_BUSY_TIMEOUT_SECONDS": 10,
    # postgresql://user:password@host:port/name: PostgreSQL instead of the file.
    "DATABASE_URL": None,
    "RATE_LIMIT_REQUESTS": 100,
    "RATE_LIMIT_WINDOW_SECONDS": 60,
    "LIMITS_MAX_BODY_BYTES": 5 * 1024 * 1024,
    "MAINTENANCE": False,
    "LOG_LEVEL": "INFO",
    "LOG_FORMAT": "text",
    "PLAN_MAX_AGENTS": None,
    "PLAN_MAX_CHANNELS": None,
    "PLAN_CREDITS": None,
    "PLAN_DEFAULT": "free",
    "PLAN_TRIAL_DAYS": None,
    "PLAN_TRIAL_WARNING_DAYS": 3,
    "PLAN_TRIAL_CHECK_SECONDS": 300.0,
    "TRAININGS_ALLOW_PRIVATE_URLS": False,
    "TRAININGS_URL_TIMEOUT_SECONDS": 10,
    "TRAININGS_URL_MAX_BYTES": 2 * 1024 * 1024,
    "TRAININGS_DOCUMENT_MAX_BYTES": 5 * 1024 * 1024,
    "MCP_ALLOW_PRIVATE_URLS": False,
    "MCP_TIMEOUT_SECONDS": 15,
    "MCP_MAX_RESPONSE_BYTES": 5 * 1024 * 1024,
    "WEBHOOKS_POLL_SECONDS": 1.0,
    "WEBHOOKS_TIMEOUT_SECONDS": 10,
    "WEBHOOKS_RETRY_SCHEDULE": [5, 15, 60, 300, 900],
    "WEBHOOKS_FAILURE_POLICY": "failing",
    "WEBHOOKS_DEACTIVATE_AFTER": 5,
    "WEBHOOKS_ALLOW_PRIVATE_TARGETS": False,
    "WEBHOOKS_ALLOWED_PORTS": [80, 443, 8080, 8443],
    "WEBHOOKS_LEASE_SECONDS": 60,
    "WEBHOOKS_CONCURRENCY": 4,
    "WEBHOOKS_RETENTION_DAYS": 30,
    "WEBHOOKS_PRUNE_SECONDS": 3600,
    "WHATSAPP_GRAPH_API_BASE": "https://graph.facebook.com/v21.0",
    "WHATSAPP_TIMEOUT_SECONDS": 15,
    "WHATSAPP_CHECK_SERVICE_WINDOW": True,
    "WHATSAPP_MEDIA_HOSTS": ["fbsbx.com", "facebook.com", "fbcdn.net", "whatsapp.net"],
    "TELEGRAM_API_BASE": "https://api.telegram.org",
    "TELEGRAM_TIMEOUT_SECONDS": 15,
    "TELEGRAM_POLL_SECONDS": 2.0,
    "EMAIL_POLL_SECONDS": 30.0,
    "EMAIL_TIMEOUT_SECONDS": 20,
    "EMAIL_ALLOW_PRIVATE_HOSTS": False,
    "MEDIA_DIR": "media",
    "MEDIA_MAX_BYTES": 100 * 1024 * 1024,
    "MEDIA_POLL_SECONDS": 2.0,
    "INBOUND_MAX_REQUESTS_PER_MINUTE": 12000,
    "WIDGET_VISITOR_REQUESTS_PER_MINUTE": 120,
    "WIDGET_ADDRESS_REQUESTS_PER_MINUTE": 600,
    "WIDGET_ADDRESS_NEW_VISITORS_PER_MINUTE": 20,
    "WIDGET_MESSAGE_MAX_CHARS": 2000,
    "WIDGET_STREAMS_PER_VISITOR": 3,
    "WIDGET_STREAMS_PER_ADDRESS": 50,
    "WIDGET_STREAM_HEARTBEAT_SECONDS": 15.0,
    "WIDGET_STREAM_MAX_SECONDS": 300.0,
    "WIDGET_ALLOW_LOCALHOST": False,
    "ALERTS_EMAIL": None,
    "SMTP_HOST": None,
    "SMTP_PORT": 25,
    "SMTP_USERNAME": None,
    "SMTP_PASSWORD": None,
    "SMTP_FROM": "agent-platform@localhost",
    "SMTP_STARTTLS": False,
    "SMTP_TIMEOUT_SECONDS": 10,
    "MESSAGES_SEND_POLL_SECONDS": 2.0,
    "MESSAGES_SEND_BATCH": 20,
    "MESSAGES_SEND_LEASE_SECONDS": 60,
    "MESSAGES_SEND_MAX_ATTEMPTS": 5,
    "MESSAGES_IDEMPOTENCY_HOURS": 24,
    "MESSAGES_IDEMPOTENCY_PURGE_SECONDS": 3600,
    "CREDITS_PER_REPLY": 1.0,
    "CREDITS_PER_1K_TOKENS": None,
    "REPLIES_DEBOUNCE_SECONDS": 2.0,
    "REPLIES_POLL_SECONDS": 0.1,
    "REPLIES_BATCH": 20,
    "REPLIES_CONCURRENCY": 4,
    "REPLIES_LEASE_SECONDS": 120,
    "REPLIES_RETRY_SCHEDULE": [5, 30, 120],
    "REPLIES_MAX_TOOL_STEPS": 5,
    "REPLIES_OPENAI_BASE_URL": "https://api.openai.com/v1",
    "REPLIES_OPENAI_API_KEY": None,
    "REPLIES_OLLAMA_BASE_URL": "http://127.0.0.1:11434/v1",
    "REPLIES_MODEL_TIMEOUT_SECONDS": 30,
    "REPLIES_MODEL_MAX_RESPONSE_BYTES": 2 * 1024 * 1024,
    "REPLIES_ALLOW_PRIVATE_MODEL_URLS": True,
    "REPLIES_IDLE_POLL_SECONDS": 30.0,
    "REPLIES_JOB_RETENTION_DAYS": 7,
    "SECRETS_KEY_FILE": None,
    "SECRETS_KEY": None,
    "APPOINTMENTS_REMINDER_POLL_SECONDS": 60.0,
    # The inbox at /app: its people's sessions, sign-in links and attempt limit.
    "INBOX_SESSION_IDLE_SECONDS": 8 * 3600.0,
    "INBOX_SESSION_MAX_HOURS": 7 * 24,
    "INBOX_SIGN_IN_LINK_HOURS": 24,
    "INBOX_SIGN_IN_ATTEMPTS": 5,
    "INBOX_SIGN_IN_ADDRESS_ATTEMPTS": 20,
    "INBOX_SIGN_IN_WINDOW_SECONDS": 900.0,
    # The inbox's live stream (GET /app/events), as the widget's.
    "INBOX_STREAMS_PER_USER": 5,
    "INBOX_STREAM_HEARTBEAT_SECONDS": 15.0,
    "INBOX_STREAM_MAX_SECONDS": 300.0,
    # host:port of the operator's Prometheus endpoint: every workspace and the
    # database's size, no key (docs/operations.md#metrics). Unset: none.
    "METRICS_LISTEN": None,
}

# Keys that meant something once: named as such, not as typos.
RETIRED = {
    "SERVER_THREADS": "serve runs one gevent worker, where an open connection costs no "
    "thread; server.max_connections bounds the connections served at once",
}

# Keys whose default is None, with the types a value may have.
NULLABLE_TYPES = {
    "PLAN_MAX_AGENTS": (int,),
    "PLAN_MAX_CHANNELS": (int,),
    "PLAN_CREDITS": (int, float),
    "PLAN_TRIAL_DAYS": (int,),
    "ALERTS_EMAIL": (str,),
    "SERVER_PUBLIC_URL": (str,),
    "METRICS_LISTEN": (str,),
    "DATABASE_URL": (str,),
    "SMTP_HOST": (str,),
    "SMTP_USERNAME": (str,),
    "SMTP_PASSWORD": (str,),
    "CREDITS_PER_1K_TOKENS": (int, float),
    "REPLIES_OPENAI_API_KEY": (str,),
    "SECRETS_KEY_FILE": (str,),
    "SECRETS_KEY": (str,),
}


class ConfigError(Exception):
    """The configuration cannot be used; the message names the key at fault."""


def load_config(path=None, overrides=None, environ=None):
    """Build the effective configuration dict from every source, in order."""
    environ = os.environ if environ is None else environ
    config = dict(DEFAULTS)
    path = config_file(path, environ)
    if path:
        config.update(_checked(_read_toml(path), f"config file {path}"))
    config.update(_checked(_read_environ(environ), "environment"))
    config.update(_checked(dict(overrides or {}), "settings"))
    return _derived(config, path)


# Settings that name files: a relative one is taken from the configuration
# file's directory, so a command run from elsewhere finds the same database.
PATH_KEYS = ("DATABASE_PATH", "MEDIA_DIR", "SECRETS_KEY_FILE")
_EVERY_ADDRESS = ("", "0.0.0.0", "::")


def _derived(config, path):
    if path:
        base = Path(path).expanduser().resolve().parent
        for key in PATH_KEYS:
            if config[key] is not None:
                config[key] = str(base / Path(config[key]).expanduser())
    if config["SERVER_PUBLIC_URL"] is None:
        config["SERVER_PUBLIC_URL"] = public_url(config["SERVER_HOST"], config["SERVER_PORT"])
    return config


def public_url(host, port):
    """Where a client on this machine reaches a server listening on host:port."""
    host = "127.0.0.1" if host in _EVERY_ADDRESS else host
    host = f"[{host}]" if ":" in host else host
    return f"http://{host}:{port}"


def config_file(path=None, environ=None):
    """The configuration file in use: `path`, else AGENT_PLATFORM_CONFIG, else None."""
    environ = os.environ if environ is None else environ
    return path or environ.get(CONFIG_FILE_ENV)


def _read_toml(path):
    try:
        with open(path, "rb") as handle:
            document = tomllib.load(handle)
    except FileNotFoundError as error:
        raise ConfigError(f"config file not found: {path}") from error
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"config file {path} is not valid TOML: {error}") from error
    return flatten(document)


def flatten(document, prefix=""):
    """Turn nested TOML tables into upper-case keys joined by underscores."""
    flat = {}
    for name, value in document.items():
        key = f"{prefix}{name}".upper()
        if isinstance(value, dict):
            flat.update(flatten(value, key + "_"))
        else:
            flat[key] = value
    return flat


def _read_environ(environ):
    values = {}
    for name, raw in environ.items():
        if not name.startswith(ENV_PREFIX) or name == CONFIG_FILE_ENV:
            continue
        try:
            values[name[len(ENV_PREFIX) :]] = json.loads(raw)
        except ValueError:
            values[name[len(ENV_PREFIX) :]] = raw
    return values


def _checked(values, source):
    for key, value in values.items():
        if key in RETIRED:
            raise ConfigError(f"configuration key {_named(key, source)} is no longer used: "
                              f"{RETIRED[key]}")  # fmt: skip
        if key not in DEFAULTS:
            raise ConfigError(f"unknown configuration key {_named(key, source)}")
        expected = _expected_types(key)
        if not _has_type(value, expected):
            names = " or ".join(_TYPE_NAMES.get(kind, kind.__name__) for kind in expected)
            raise ConfigError(_bad(key, value, source, f"must be {names}"))
        reason = config_rules.problem(key, value)
        if reason:
            raise ConfigError(_bad(key, value, source, reason))
    return values


_TYPE_NAMES = {int: "an integer", float: "a number", str: "a string", bool: "true or false",
               list: "a list", type(None): "unset"}  # fmt: skip


def _named(key, source):
    """The key as the source spells it: the TOML name, and the variable's."""
    if source == "environment":
        return f"{ENV_PREFIX}{key} ({config_rules.toml_name(key)})"
    if source == "settings":
        return f"{key} (from settings)"
    return f"{config_rules.toml_name(key)} (from {source})"


def _bad(key, value, source, reason):
    try:
        shown = json.dumps(value)
    except (TypeError, ValueError):
        shown = repr(value)
    return f"configuration key {_named(key, source)} = {shown}: {reason}"


def _expected_types(key):
    default = DEFAULTS[key]
    if default is None:
        return NULLABLE_TYPES.get(key, (str,)) + (type(None),)
    if isinstance(default, float):
        return (float, int)
    return (type(default),)


def _has_type(value, expected):
    # bool is an int subclass in Python; a boolean is never a number setting.
    if isinstance(value, bool) and bool not in expected:
        return False
    return isinstance(value, expected)


def resolve_path(path):
    """The absolute path (load_config already anchored a relative one at the
    configuration file; without a file it is taken from the working directory)."""
    return Path(path).expanduser().resolve()
