"""The one SQLite database, configured by the app factory or the CLI.

Created unconfigured so models can be declared at import time; `init_database`
points it at a file. Every write transaction is BEGIN IMMEDIATE: taking the
write lock up front means a transaction never fails half-way with SQLITE_BUSY
when a reader upgrades, it waits on the busy timeout instead.

Connections are pooled. Opening a SQLite connection per request costs more
than the request itself (the pragmas, and a WAL checkpoint whenever the last
connection closes), and even checking one out of the pool and back in costs
about 57 k instructions, 7% of a small request: so a request's thread keeps
its connection for its next request (`end_request`) unless a transaction is
open on it, and a thread that ends hands its connection back (`_Lease`).
"""

import sqlite3
import unicodedata
from datetime import datetime

from playhouse.pool import PooledSqliteDatabase

from .config import resolve_path

_last_time = (None, None)  # the last time bound, and its stored form


def _stored_time(value):
    """A time as sqlite3's default adapter stores it, dt.isoformat(" "), that
    is str(dt), which costs more than the rest of binding a value. The times
    of one change are one object (its `now`, bound to several columns and
    statements), so the last one formatted is kept (by identity: the same
    object always has the same text; holding it keeps its id from reuse)."""
    global _last_time
    last, text = _last_time
    if value is not last:
        text = str(value)
        _last_time = (value, text)
    return text


sqlite3.register_adapter(datetime, _stored_time)
# None is bound as NULL; without an adapter of its own, sqlite3 first looks for
# __adapt__ and __conform__ methods, and each failed lookup formats an
# AttributeError: the dozen empty columns of a new message paid for twelve.
# (An empty dict's get is a builtin that answers None for any value.)
sqlite3.register_adapter(type(None), {}.get)


class _Lease:
    """A thread's hold on its pooled connection. Kept in the thread's own
    state, it is dropped when the thread ends (a development server starts one
    per request): an uncancelled lease then checks the connection back in,
    which rolls back anything left open, so no pool slot leaks."""

    __slots__ = ("pool", "connection")

    def __init__(self, pool, connection):
        self.pool, self.connection = pool, connection

    def cancel(self):
        self.connection = None

    def __del__(self):
        if self.connection is not None:
            self.pool.check_in(self.connection)


class _ThreadPooledSqliteDatabase(PooledSqliteDatabase):
    def _connect(self):
        connection = super()._connect()
        self._state.lease = _Lease(self, connection)
        return connection

    def _close(self, connection, close_conn=False):
        lease = getattr(self._state, "lease", None)
        if lease is not None and lease.connection is connection:
            lease.cancel()
        super()._close(connection, close_conn)

    def check_in(self, connection):
        """Return a connection whose thread is gone to the pool."""
        super()._close(connection)


database = _ThreadPooledSqliteDatabase(
    None, lock_type="IMMEDIATE", max_connections=64, stale_timeout=600
)


def folded(text):
    """A name as compared for uniqueness: full Unicode case folding of its
    compatibility form ("Straße" is "STRASSE", "ＡＢＣ" is "abc", "Σ" is "ς")."""
    return unicodedata.normalize("NFKC", unicodedata.normalize("NFKD", text).casefold())


@database.collation("UNICODE_NOCASE")
def _unicode_nocase(left, right):
    # SQLite's NOCASE folds only ASCII: "É" and "é" were two names.
    left, right = folded(left), folded(right)
    return (left > right) - (left < right)


def end_request():
    """At the end of a request its thread keeps its connection for the next
    one, outside any transaction: a connection left inside one goes back to
    the pool, which rolls it back, so no snapshot or write lock outlives the
    request."""
    if not database.is_closed() and database.connection().in_transaction:
        database.close()


def init_database(path, busy_timeout_seconds=10):
    """Open `path` (creating its directory) with the pragmas the service relies on."""
    file_path = resolve_path(path)
    file_path.parent.mkdir(parents=True, exist_ok=True)
    if not database.deferred:
        database.close_all()  # connections of a previous configuration
    database.init(
        str(file_path),
        # How long a thread waits for a free pooled connection.
        timeout=busy_timeout_seconds,
        # A pooled connection serves one thread at a time, but not always the
        # thread that opened it.
        check_same_thread=False,
        pragmas={
            # WAL lets readers run while one writer commits.
            "journal_mode": "wal",
            # With WAL, NORMAL is durable against process crashes; only an OS
            # crash or power loss can roll back the very last commits.
            "synchronous": "normal",
            "foreign_keys": 1,
            "busy_timeout": int(busy_timeout_seconds * 1000),
            "cache_size": -16000,
            # Temporary files in memory: the statement journal of every
            # savepoint (each service call nested in a transaction) was a file
            # created, written and deleted each time: about 12 system calls
            # per stored message.
            "temp_store": "memory",
        },
    )
    return database


def transaction():
    """A write transaction (BEGIN IMMEDIATE); nests as a savepoint."""
    return database.atomic()
