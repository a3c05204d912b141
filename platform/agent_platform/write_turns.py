"""The write transactions of one process, one at a time, in the order they asked.

SQLite lets one writer in at a time. A transaction that finds the write lock
held would wait in SQLite's busy handler, which sleeps inside the C library:
under gevent a sleep there stops every greenlet of the process, the one
holding SQLite's lock included, until the busy timeout. So the service's
write transactions take turns on a lock of their own before BEGIN IMMEDIATE
(db.py). The locks are made when the database is configured, so in `serve`'s
worker (monkey-patched by then) they are gevent's.
"""

import collections
import contextlib
import threading

from peewee import OperationalError


class WriteTurns:
    """This process's write transactions, one at a time (see the module's
    docstring), in the order they asked. Waiting longer than SQLite's busy
    timeout fails as SQLite would ("database is locked"). The turn belongs
    to a connection, ended when it commits, rolls back or goes back to the
    pool (db._ThreadPooledSqliteDatabase).

    An ended turn is handed to the first in line, never left free: a plain
    lock is free again at once, and a greenlet that ends its turn and asks
    again before the loop runs the waiter it woke (a client sending its next
    write the moment it has its answer) took it back every time, while the
    others waited out the busy timeout and failed."""

    def __init__(self, timeout):
        self.timeout, self.holder = timeout, None
        self._guard = threading.Lock()  # held for a few lines, never across a wait
        self._line = collections.deque()  # the waiters, first come first

    def take(self, connection):
        with self._guard:
            if self.holder is None and not self._line:
                self.holder = connection
                return
            waiter = _Waiter(connection)
            self._line.append(waiter)
        try:
            handed = waiter.wait(self.timeout)
        except BaseException:  # interrupted (a timeout, a kill): out of the line
            if not self._leave(waiter):
                self.end(connection)  # handed to it meanwhile: on to the next
            raise
        if not handed and self._leave(waiter):
            raise OperationalError("database is locked")

    def _leave(self, waiter):
        """Whether `waiter` left the line before its turn came (else the turn
        was handed to it while its wait ended: it is its turn now)."""
        with self._guard:
            if waiter in self._line:
                self._line.remove(waiter)
                return True
            return False

    def end(self, connection):
        # Asked of every connection going back to the pool, most holding no
        # turn: no lock for them. Only a handover makes a connection the
        # holder, and a connection in line is not ending anything.
        if connection is None or self.holder is not connection:
            return
        with self._guard:
            if not self._line:
                self.holder = None
                return
            waiter = self._line.popleft()
            self.holder = waiter.connection
            waiter.wake()

    @contextlib.contextmanager
    def turn(self, connection):
        self.take(connection)
        try:
            yield
        finally:
            self.end(connection)


class _Waiter:
    """A connection in line for the write turn; its lock is let go when the
    turn is handed to it."""

    __slots__ = ("connection", "_lock")

    def __init__(self, connection):
        self.connection, self._lock = connection, threading.Lock()
        self._lock.acquire()

    def wait(self, timeout):
        return self._lock.acquire(timeout=timeout)

    def wake(self):
        self._lock.release()


_WRITES = ("INSERT", "UPDATE", "DELETE", "REPLAC", "CREATE", "DROP", "ALTER")


def takes_write_lock(sql):
    """Whether a statement run on its own (no transaction) takes the write lock."""
    return sql.lstrip()[:6].upper() in _WRITES
