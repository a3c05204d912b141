"""The SQL statements run on this thread's connection, on either engine:
sqlite3's trace callback, or a psycopg cursor that notes each statement.
On SQLite, those read on the process's connection for reads apart too
(db.read_apart: the API key, the version of a page kept)."""

import contextlib

from agent_platform.db import database
from conftest import ON_POSTGRESQL

# What the page renders rows with (models/sqljson.py): SQLite's printf(),
# PostgreSQL's format().
RENDERING = "format(" if ON_POSTGRESQL else "printf("


@contextlib.contextmanager
def statements_traced():
    """A list of the statements run meanwhile, filled as they run."""
    seen = []
    connection = database.connection()
    if ON_POSTGRESQL:
        kept, connection.cursor_factory = connection.cursor_factory, _noting(seen)
        try:
            yield seen
        finally:
            connection.cursor_factory = kept
        return
    connections = (connection, _apart_connection())
    for traced in connections:
        traced.set_trace_callback(seen.append)
    try:
        yield seen
    finally:
        for traced in connections:
            traced.set_trace_callback(None)


def _apart_connection():
    database.read_apart("SELECT 1", ())  # opened, if it was not yet
    return database.obj._apart[0]


def _noting(seen):
    import psycopg

    class NotingCursor(psycopg.Cursor):
        def execute(self, query, params=None, **options):
            seen.append(query if isinstance(query, str) else query.as_string(self))
            return super().execute(query, params, **options)

    return NotingCursor
