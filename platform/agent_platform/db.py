"""The one SQLite database, configured by the app factory or the CLI.

Created unconfigured so models can be declared at import time; `init_database`
points it at a file. Every write transaction is BEGIN IMMEDIATE: taking the
write lock up front means a transaction never fails half-way with SQLITE_BUSY
when a reader upgrades, it waits on the busy timeout instead.
"""

from peewee import SqliteDatabase

from .config import resolve_path

database = SqliteDatabase(None, lock_type="IMMEDIATE")


def init_database(path, busy_timeout_seconds=10):
    """Open `path` (creating its directory) with the pragmas the service relies on."""
    file_path = resolve_path(path)
    file_path.parent.mkdir(parents=True, exist_ok=True)
    database.init(
        str(file_path),
        timeout=busy_timeout_seconds,
        pragmas={
            # WAL lets readers run while one writer commits.
            "journal_mode": "wal",
            # With WAL, NORMAL is durable against process crashes; only an OS
            # crash or power loss can roll back the very last commits.
            "synchronous": "normal",
            "foreign_keys": 1,
            "busy_timeout": int(busy_timeout_seconds * 1000),
            "cache_size": -16000,
        },
    )
    return database


def transaction():
    """A write transaction (BEGIN IMMEDIATE); nests as a savepoint."""
    return database.atomic()
