"""SQLite statements that keep it at work for long, run off the loop.

A training's text of megabytes is indexed (or taken out of the index) by
its triggers within the one statement that writes it, 150-220 ms for 5 MB;
a search for a part of a text reads every message of a workspace, a second
at a million messages. Under gevent such a call holds every other
connection of the process while it lasts: the statements of a
`long_statements()` block go to the runner `run_in` sets (serve's worker:
a native thread of their own, not the commits', which a search would hold
up), and their rows are read there too, since a scan goes on as they are
fetched. Without a runner nothing changes.
"""

import contextlib
import contextvars

_IN_BLOCK = contextvars.ContextVar("long_statements", default=False)
_run = None


def run_in(run):
    """Run the statements of long_statements blocks as `run(function, *args)`
    (None: in place)."""
    global _run
    _run = run


def in_block():
    """Whether a statement now goes to the runner."""
    return _run is not None and _IN_BLOCK.get()


@contextlib.contextmanager
def long_statements(applies=True):
    """The statements of this block go to the runner, when there is one
    (and `applies`: a query only some of whose forms read for long)."""
    token = _IN_BLOCK.set(_IN_BLOCK.get() or bool(applies))  # never off inside a block
    try:
        yield
    finally:
        _IN_BLOCK.reset(token)


def executed(cursor, sql, params):
    """`cursor.execute(sql, params)`: through the runner in a
    long_statements block, its rows read there (a _ReadCursor). The cursor
    is the caller's connection's, taken by the caller."""
    if not in_block():
        return cursor.execute(sql, params)
    return _run(_read_through, cursor, sql, params)


def _read_through(cursor, sql, params):
    cursor.execute(sql, params)
    return _ReadCursor(cursor, cursor.fetchall())


class _ReadCursor:
    """A cursor whose statement has run and whose rows have been read, as
    peewee and fastsql use a cursor."""

    def __init__(self, cursor, rows):
        self.description, self.lastrowid = cursor.description, cursor.lastrowid
        self.rowcount, self._rows = cursor.rowcount, iter(rows)

    def __iter__(self):
        return self._rows

    def fetchone(self):
        return next(self._rows, None)

    def fetchall(self):
        return list(self._rows)

    def close(self):
        self._rows = iter(())
