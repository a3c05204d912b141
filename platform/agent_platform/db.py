"""The one database, configured by the app factory or the CLI: a SQLite file
(the default) or a PostgreSQL server (`database.url`, see db_postgresql.py).

`database` is a proxy, so models can be declared at import time and modules
can import it before the engine is chosen; `init_database` points it at a
file or a server, and binds the models to that database itself (a model's
query then costs no proxy look-ups).

On SQLite every write transaction is BEGIN IMMEDIATE: taking the write lock
up front means a transaction never fails half-way with SQLITE_BUSY
when a reader upgrades, it waits on the busy timeout instead.

Connections are pooled: opening a SQLite connection per request costs more
than the request itself (the pragmas, and a WAL checkpoint whenever the last
connection closes). Each request hands its connection back when it ends
(`end_request`): under `serve`'s gevent worker a kept-alive connection is a
greenlet that may sit idle for long, and hundreds of them must not hold
hundreds of SQLite connections. A thread (or greenlet) that ends holding one
hands it back too (leased_pool.py).

The write transactions of one process take turns on a lock of their own
before BEGIN IMMEDIATE, instead of in SQLite's busy handler (write_turns.py).

A write that fails for want of storage (see storage.py) is an incident,
which the log tells once when it starts and once when writes work again.
While one goes on because the file is read-only, no connection is reused:
SQLite keeps a connection it opened on a read-only file read-only for good,
and reused, it would fail long after the file is writable again.
"""

import contextlib
import logging
import sqlite3
import threading
import time
import unicodedata
from datetime import datetime

from peewee import DatabaseProxy, Model, __exception_wrapper__
from playhouse.pool import PooledDatabase, PooledSqliteDatabase

from . import long_statements
from .config import resolve_path
from .leased_pool import LeasedPool
from .private import create_file, make_dirs
from .write_turns import WriteTurns, takes_write_lock

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


_NO_TURN = contextlib.nullcontext()


class _ThreadPooledSqliteDatabase(LeasedPool, PooledSqliteDatabase):
    write_turns = None  # a WriteTurns, once configured
    run_commits = None  # see run_commits_in

    def _close(self, connection, close_conn=False):
        if self.write_turns is not None:  # rolled back in the pool, if open
            self.write_turns.end(connection)
        super()._close(connection, close_conn)

    def check_in(self, connection):
        self.write_turns.end(connection)
        super().check_in(connection)

    _incident_lock = threading.Lock()

    def init(self, *args, **kwargs):
        # A storage incident (see storage_failed), which a new configuration
        # starts without: since when writes fail (time.time()), and the
        # connections not to reuse: those open until then, or every one.
        self.storage_failing_since, self.spent_until, self.spending = None, 0.0, False
        self._close_apart()
        super().init(*args, **kwargs)
        self.write_turns = WriteTurns(kwargs.get("timeout") or -1)

    _apart = None  # the connection for reads apart and when it was opened, once it is
    _apart_lock = threading.Lock()

    def read_apart(self, sql, params):
        """(description, rows) of `sql`, read on one connection the process
        keeps apart from the pool: for the API key every request reads
        first, so that a request whose view reads nothing else (GET /v1/me)
        takes no pooled connection at all; the checkout and return were a
        tenth of its CPU. Outside a transaction each read sees what was
        committed before it (a revoked key fails at once); a thread inside
        one reads on its own connection, which holds its uncommitted writes.
        Like the pool's, it is closed before serve forks (close_all)."""
        if self.connection_in_transaction():
            cursor = self.execute_sql(sql, params)
            return cursor.description, cursor.fetchall()
        with self._apart_lock, __exception_wrapper__:
            cursor = self._apart_connection().execute(sql, params)
            return cursor.description, cursor.fetchall()  # read whole: no snapshot kept

    def _apart_connection(self):
        """Opened as the pool opens one, and anew where the pool would not
        reuse one as old (a storage incident: see storage_failed)."""
        if self._apart is None or self._is_stale(self._apart[1]):
            self._close_apart()
            self._apart = (super(PooledDatabase, self)._connect(), time.time())
        return self._apart[0]

    def _close_apart(self):
        apart, self._apart = self._apart, None
        if apart is not None:
            apart[0].close()

    def close_all(self):
        self._close_apart()
        super().close_all()

    def _is_stale(self, timestamp):
        # Asked as a connection leaves the pool and as it comes back.
        return self.spending or timestamp <= self.spent_until or super()._is_stale(timestamp)

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

    def begin(self, lock_type=None):
        deferred = (lock_type or self._lock_type) == "DEFERRED"  # a read: no turn
        connection = self.connection()  # opened first: the turn is its
        if not deferred:
            self.write_turns.take(connection)
        try:
            super().begin(lock_type)
        except BaseException:
            self.write_turns.end(connection)
            raise
        if self.storage_failing_since is not None:
            self._state.changes_at_begin = self._state.conn.total_changes

    def commit(self):
        try:
            self._commit()
        finally:
            if not self._state.conn.in_transaction:  # else rollback() ends it
                self.write_turns.end(self._state.conn)
        if self.storage_failing_since is not None and self._changed_rows():
            self.writes_work()

    def _commit(self):
        """COMMIT; a write transaction's through `run_commits` when set (a
        read's writes nothing). The connection is this thread's (or
        greenlet's), taken here, not in the thread that runs it."""
        cursor = self.cursor()
        wrote = self.write_turns.holder is self._state.conn
        with __exception_wrapper__:
            if self.run_commits is None or not wrote:
                cursor.execute("COMMIT")
            else:
                self.run_commits(cursor.execute, "COMMIT")

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
        try:
            if self.is_closed() or self.connection().in_transaction:
                super().rollback()
        finally:
            self.write_turns.end(self._state.conn)

    def connection_in_transaction(self):
        """Whether the thread's connection is inside a transaction (one
        that holds none is not: none is taken to tell)."""
        if self.is_closed():
            return False
        return self.connection().in_transaction

    def write_nothing(self):
        """A write that changes nothing (storage.writes_problem): the user
        version set to itself, which SQLite writes all the same."""
        version = self.execute_sql("PRAGMA user_version").fetchone()[0]
        self.execute_sql(f"PRAGMA user_version = {int(version)}")

    def execute_sql(self, sql, params=None):
        with self.turn_for(sql):
            if long_statements.in_block():
                with __exception_wrapper__:
                    return long_statements.executed(self.cursor(), sql, params or ())
            return super().execute_sql(sql, params)

    def turn_for(self, sql):
        """A write outside any transaction takes its turn for its statement
        (see write_turns.py); anything else goes straight on."""
        if self.in_transaction() or not takes_write_lock(sql):
            return _NO_TURN
        return self.write_turns.turn(self.connection())


sqlite_database = _ThreadPooledSqliteDatabase(
    None, lock_type="IMMEDIATE", max_connections=64, stale_timeout=600
)
database = DatabaseProxy()
database.initialize(sqlite_database)


def folded(text):
    """A name as compared for uniqueness: full Unicode case folding of its
    compatibility form ("Straße" is "STRASSE", "ＡＢＣ" is "abc", "Σ" is "ς")."""
    return unicodedata.normalize("NFKC", unicodedata.normalize("NFKD", text).casefold())


@sqlite_database.collation("UNICODE_NOCASE")
def _unicode_nocase(left, right):
    # SQLite's NOCASE folds only ASCII: "É" and "é" were two names.
    left, right = folded(left), folded(right)
    return (left > right) - (left < right)


def run_commits_in(run):
    """Run every SQLite COMMIT as `run(function, *args)` (None: in place).

    `serve`'s worker runs them on a native thread (gevent_worker.py): a
    commit writes the transaction's pages and, every thousand pages, copies
    the write-ahead log into the database file with two fsyncs, which can
    take tens of milliseconds; SQLite lets go of the interpreter lock while
    it works, but under gevent a call that does not yield still holds every
    other connection of the process. Only commits: a statement is far
    shorter than the hand-over to a thread and back, and each hand-over
    would lengthen a transaction that holds the write turn."""
    sqlite_database.run_commits = run


def end_request():
    """A request's connection goes back to the pool, which rolls back a
    transaction left open on it, so no snapshot or write lock outlives the
    request (and closes one spent by a storage failure)."""
    if not database.is_closed():
        database.close()


def is_postgresql():
    """Whether the configured database is PostgreSQL (else SQLite)."""
    return database.obj is not sqlite_database


def init_database(path, busy_timeout_seconds=10, url=None):
    """Open the PostgreSQL database at `url` when given, else the SQLite
    file at `path`, and bind the models to it."""
    if not database.deferred:
        database.close_all()  # connections of a previous configuration
    if url:
        from .db_postgresql import postgresql_database  # psycopg: an optional extra

        return _use(postgresql_database(url, busy_timeout_seconds))
    return _use(_init_sqlite(path, busy_timeout_seconds))


def _use(engine_database):
    bound = (database, database.obj)  # the models of this service, not others'
    database.initialize(engine_database)
    for model in _models(Model):
        if model._meta.database in bound:
            model._meta.set_database(engine_database)
    return database


def _models(model):
    for subclass in model.__subclasses__():
        yield subclass
        yield from _models(subclass)


def _init_sqlite(path, busy_timeout_seconds):
    """Open `path` (creating it and its directory, private: private.py) with
    the pragmas the service relies on."""
    file_path = resolve_path(path)
    make_dirs(file_path.parent)
    create_file(file_path)
    sqlite_database.init(
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
    return sqlite_database


# PostgreSQL's SQLSTATEs of a transaction that failed for another's locks.
_CONFLICTS = ("40P01", "40001")  # deadlock_detected, serialization_failure


def conflicted(error):
    """Whether `error` (or one in its chain) is a transaction that lost to a
    concurrent one (PostgreSQL ends one of two that deadlock): trying the
    whole transaction again is the answer. Never on SQLite, whose writers
    take turns."""
    for _ in range(8):
        if error is None:
            return False
        if getattr(error, "sqlstate", None) in _CONFLICTS:
            return True
        error = error.__cause__ or error.__context__
    return False


def transaction():
    """A write transaction (on SQLite BEGIN IMMEDIATE); nests as a savepoint."""
    return database.atomic()


@contextlib.contextmanager
def claiming(kind):
    """A write transaction in which to claim queued work of `kind` (sends,
    replies, deliveries, channel tasks) with a lease: the processes claiming
    one kind take turns, so none sees rows another is leasing. SQLite's
    write transaction holds the whole file already; on PostgreSQL, whose
    transactions see only committed rows, a lock on the kind's name, held
    to the commit (pg_advisory_xact_lock), does the same across machines.
    Claims are a few short statements: turns cost little, and unlike
    skipping locked rows they keep a webhook's deliveries in order."""
    with transaction():
        if is_postgresql():
            database.execute_sql(
                f"SELECT pg_advisory_xact_lock(hashtext({database.param}))", (kind,)
            )
        yield
