"""The database on a PostgreSQL server (`database.url = "postgresql://…"`).

Needs psycopg 3 (the `postgresql` extra). psycopg chooses how it waits on
the server when it is imported (peewee imports it): through gevent only if
gevent has patched `select` by then, else in C, which would stop every
greenlet of `serve`'s worker while one waits. (Not yet checked under serve,
whose master imports the package before forking the worker: issue 42.)

A thread that ends holding a connection hands it back, as on SQLite
(leased_pool.LeasedPool): the pool would keep it in use for good, and a server
refuses connections past its max_connections. What else db.py does for
SQLite has no work here: PostgreSQL locks rows, not the
database, so writers need no turns; a transaction starts with a plain BEGIN
whatever SQLite lock type a caller names (READ COMMITTED, the server's
default); SQLite's DEFERRED, a read that must see one snapshot throughout
(models/pagination.py), is REPEATABLE READ. A storage incident (storage.py)
is told once when it starts and once when a write commits again; no
connection is spent by it, as a server connection does not turn read-only.

Statements written by hand for SQLite, with `?` parameters, run here in
PostgreSQL's form (postgresql_statement): `%s` parameters, each other `%`
doubled (psycopg's), and the boolean columns (INTEGER 0/1 on SQLite,
BOOLEAN here) compared with false/true, and INSERT OR IGNORE is INSERT ...
ON CONFLICT DO NOTHING. A statement may be part peewee's,
built for PostgreSQL already (pagination wraps a peewee query in SQL of its
own): its `%s` parameters stay as they are. In a statement run without
parameters, which psycopg sends as it is, only the booleans and the hints
change (the PostgreSQL migrations have neither).
"""

import contextlib
import logging
import re
import select
import threading
import time
from functools import lru_cache

from gevent import monkey
from peewee import __exception_wrapper__
from playhouse.pool import PooledPostgresqlDatabase

from .leased_pool import LeasedPool

log = logging.getLogger("agent_platform.db")
SCHEMES = ("postgresql", "postgres")


class _IncidentLog:
    """The start and the end of a storage incident, each logged once."""

    storage_failing_since = None
    _incident_lock = threading.Lock()

    def storage_failed(self, report, spends=True):
        with self._incident_lock:
            starts = self.storage_failing_since is None
            if starts:
                self.storage_failing_since = time.time()
        if starts:
            log.error(report)

    def writes_work(self):
        with self._incident_lock:
            since, self.storage_failing_since = self.storage_failing_since, None
        if since is not None:
            log.info("The database takes writes again, after %.0f s.", time.time() - since)


class PostgresqlPooledDatabase(_IncidentLog, LeasedPool, PooledPostgresqlDatabase):
    def _is_closed(self, connection):
        """Whether a pooled connection cannot be used. peewee's pool asked
        the server (SELECT 1) at every check-out: one of an API request's
        two round trips. An idle connection gets nothing from the server
        unless it is ending (a restart, a connection it terminated: its
        last message and the close reach the socket at once), so only one
        with something to read, or left in a transaction, is asked."""
        adapter = self._adapter
        if connection.closed or adapter.txn_status(connection) != adapter.txn_idle:
            return super()._is_closed(connection)
        import psycopg  # the postgresql extra; this module is loaded on SQLite too

        try:
            socket = connection.pgconn.socket
        except psycopg.OperationalError:  # libpq has none: the connection is bad
            return True
        return super()._is_closed(connection) if _has_input(socket) else False

    def begin(self, lock_type=None):
        # SQLite's lock types name no isolation level (see the docstring).
        if lock_type == "DEFERRED":
            with __exception_wrapper__:
                self.cursor().execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
        else:
            super().begin()

    def connection_in_transaction(self):
        """Whether the thread's connection is inside a transaction (one
        that holds none is not: none is taken to tell)."""
        if self.is_closed():
            return False
        adapter = self._adapter
        return adapter.txn_status(self.connection()) != adapter.txn_idle

    def commit(self):
        super().commit()
        if self.storage_failing_since is not None:
            self.writes_work()

    def execute_sql(self, sql, params=None):
        return super().execute_sql(postgresql_statement(sql, bool(params)), params)

    def write_nothing(self):
        """A write that changes no data (storage.writes_problem): a row
        rewritten with its own values (a new row version, in the server's
        log at commit), which a server that takes no writes refuses: a
        standby, a read-only database. (A transaction id alone is taken
        even where the database is read-only.)"""
        self.execute_sql(
            'UPDATE "schema_migration" SET "applied_at" = "applied_at"'
            ' WHERE "name" = (SELECT min("name") FROM "schema_migration")'
        )

    def turn_for(self, sql):
        """No write turns on PostgreSQL (see db.py): nothing to wait for."""
        return _NO_TURN


_NO_TURN = contextlib.nullcontext()
# The system's poll, not gevent's: this asks without waiting, and gevent's
# answers only after its loop has run.
_poll = monkey.get_original("select", "poll")


def _has_input(socket):
    """Whether the socket has something to read (or has been closed) now."""
    poller = _poll()
    poller.register(socket, select.POLLIN)
    return bool(poller.poll(0))


# The boolean columns (models' BooleanFields) compared with 0 or 1, a unary
# + before a quoted name, qualified or not (SQLite's hint not to use a
# column's index), a string literal or a quoted name (kept as they are), a
# parameter. The hint holds on PostgreSQL too, as COALESCE(name, name),
# which no index on the column serves: its statistics, until autovacuum
# analyzes a table that has just grown (a new service's first minute, a
# restore), had the contact's current conversation looked up through the
# channel's index, reading every conversation of the channel per message.
_BOOLEAN_COLUMN = r"(?:is_[a-z_]+|success|auto_create_leads)"
_SQLITE_FORMS = re.compile(
    rf"(?P<flag>(?:\w+\.)?\"?{_BOOLEAN_COLUMN}\"?\s*=\s*)(?P<bit>[01])\b"
    r"|(?<=[\s(])\+(?P<hint>(?:\w+\.)?\"(?:[^\"]|\"\")*\")"
    r"|(?P<literal>'(?:[^']|'')*')|\"(?:[^\"]|\"\")*\"|(?P<parameter>\?|%s)|(?P<percent>%)"
)
_TRUTH = {"0": "false", "1": "true"}


@lru_cache(maxsize=4096)
def postgresql_statement(sql, parameters=True):
    """A statement written for SQLite, as PostgreSQL and psycopg take it.
    One run without `parameters` is sent as it is written: its `%` stay."""
    sql = _SQLITE_FORMS.sub(_with_parameters if parameters else _postgresql_form, sql)
    if sql.startswith(_INSERT_OR_IGNORE):  # a row a unique index already holds is skipped
        sql = f"INSERT INTO{sql[len(_INSERT_OR_IGNORE) :]} ON CONFLICT DO NOTHING"
    return sql


_INSERT_OR_IGNORE = "INSERT OR IGNORE INTO"


def _with_parameters(match):
    if match["parameter"]:
        return "%s"
    if match["literal"] or match["percent"]:
        return match.group().replace("%", "%%")
    return _postgresql_form(match)


def _postgresql_form(match):
    if match["bit"]:
        return match["flag"] + _TRUTH[match["bit"]]
    if match["hint"]:
        return f"COALESCE({match['hint']}, {match['hint']})"
    return match.group()


def connection_url(url):
    """The URL as psycopg takes it: postgres:// is spelled postgresql://."""
    scheme, rest = url.split("://", 1)
    return f"postgresql://{rest}" if scheme in SCHEMES else url


def postgresql_database(url, timeout_seconds):
    """A pooled database on the server at `url`; `timeout_seconds` bounds
    the wait for a free pooled connection."""
    return PostgresqlPooledDatabase(
        connection_url(url),
        max_connections=64,
        stale_timeout=600,
        timeout=timeout_seconds,
        prefer_psycopg3=True,
    )
