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

A write that fails for want of storage (see storage.py) is an incident,
which the log tells once when it starts and once when writes work again.
While one goes on because the file is read-only, no connection is reused:
SQLite keeps a connection it opened on a read-only file read-only for good,
and reused, it would fail long after the file is writable again.
"""

import logging
import sqlite3
import threading
import time
import unicodedata
from datetime import datetime

from playhouse.pool import PooledSqliteDatabase

from .config import resolve_path

log = logging.getLogger("agent_platform.db")
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

    _incident_lock = threading.Lock()

    def init(self, *args, **kwargs):
        # A storage incident (see storage_failed), which a new configuration
        # starts without: since when writes fail (time.time()), and the
        # connections not to reuse: those open until then, or every one.
        self.storage_failing_since, self.spent_until, self.spending = None, 0.0, False
        super().init(*args, **kwargs)

    def _is_stale(self, timestamp):
        # Asked as a connection leaves the pool and as it comes back.
        return self.spending or timestamp <= self.spent_until or super()._is_stale(timestamp)

    def is_spent(self):
        """Whether this thread's connection is not to be kept for its next use."""
        if self.spending:
            return True
        if not self.spent_until:
            return False
        held = self._in_use.get(self.conn_key(self._state.conn))
        return held is not None and held.timestamp <= self.spent_until

    def storage_failed(self, report, spends=True):
        """A write failed for want of storage: `report` is logged if it
        starts an incident. A failure that `spends` connections (a read-only
        file) has none reused of those open now or opened until writes work
        again, as SQLite keeps one it opened read-only read-only for good."""
        now = time.time()
        with self._incident_lock:
            starts = self.storage_failing_since is None
            if starts:
                self.storage_failing_since = now
            if spends:
                self.spent_until, self.spending = now, True
        if starts:
            log.error(report)

    def writes_work(self):
        """A write has reached the disk: an incident, if any, is over."""
        with self._incident_lock:
            since, self.storage_failing_since = self.storage_failing_since, None
            self.spending = False
        if since is not None:
            log.info(
                "The database %s takes writes again, after %.0f s.",
                self.database,
                time.time() - since,
            )

    def begin(self, *args, **kwargs):
        super().begin(*args, **kwargs)
        if self.storage_failing_since is not None:
            self._state.changes_at_begin = self._state.conn.total_changes

    def commit(self):
        super().commit()
        if self.storage_failing_since is not None and self._changed_rows():
            self.writes_work()

    def _changed_rows(self):
        """Whether the transaction just committed changed rows (begun while
        writes were failing): only that proves writes work again, as one
        that only read commits on a full disk too."""
        began, self._state.changes_at_begin = getattr(self._state, "changes_at_begin", None), None
        return began is not None and self._state.conn.total_changes != began

    def rollback(self):
        # SQLite ends a transaction itself when its COMMIT fails on a full
        # disk or an I/O error: a ROLLBACK then failed with "cannot rollback
        # - no transaction is active", a second traceback hiding the first.
        if self.is_closed() or self.connection().in_transaction:
            super().rollback()


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
    request. (So does one spent by a storage failure, which the pool closes.)"""
    if database.is_closed():
        return
    if database.connection().in_transaction or database.is_spent():
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
