"""The database as people and logs are told it: the SQLite file's path, or
the PostgreSQL URL without its password (which a log, a terminal or a
screenshot must never carry)."""

from .db import database, is_postgresql


def described():
    """The configured database's name for messages."""
    return described_url(database.database) if is_postgresql() else str(database.database)


def described_url(url):
    """postgresql://user@host:port/name: `url` without its password or options."""
    from psycopg.conninfo import conninfo_to_dict  # psycopg: an optional extra

    parts = conninfo_to_dict(url)
    user = f"{parts['user']}@" if parts.get("user") else ""
    where = parts.get("host", "localhost") + (f":{parts['port']}" if parts.get("port") else "")
    return f"postgresql://{user}{where}/{parts.get('dbname', '')}"
