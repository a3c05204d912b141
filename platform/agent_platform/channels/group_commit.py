"""Group commit for the network intakes: concurrent callbacks share one
transaction (see GroupCommit). Used by the WhatsApp and Telegram intakes."""

import threading

from .. import storage
from ..db import conflicted, transaction

# Tries of a batch whose transaction lost to a concurrent one (a deadlock
# between servers on PostgreSQL): every unit of work is idempotent.
TRIES = 3


class GroupCommit:
    """Concurrent POSTs share one transaction (group commit).

    SQLite has one writer at a time. Left to itself, every request would
    BEGIN IMMEDIATE and wait its turn for the write lock (db.py's in the
    serving process; SQLite's busy handler, which sleeps in steps of up to
    100 ms while the lock may already be free, against another process),
    and every POST would pay its own COMMIT. Instead the first request to
    arrive leads: it takes every unit of work waiting, runs them in one
    transaction (each item atomically, so one that fails rolls back alone),
    commits once, and wakes the requests that brought them; work that
    arrived meanwhile is led by its first request. Every POST is still
    answered only after the COMMIT that stored it.

    `hold(names)` takes the locks that the units of a batch name (`holds`
    of run), all of them before any unit runs (see _commit).
    """

    def __init__(self, max_batch=64, hold=None):
        self.max_batch = max_batch
        self.hold = hold
        self._lock = threading.Lock()
        self._pending = []
        self._leading = False

    def run(self, work, holds=()):
        unit = _Unit(work, holds)
        with self._lock:
            self._pending.append(unit)
            if not self._leading:
                self._leading = unit.leads = True
            else:  # it will wait: only then does it need something to wait on
                unit.wake = threading.Event()
        while not unit.finished:
            if unit.leads:
                self._lead()
            else:
                unit.wake.wait()
                unit.wake.clear()
        if unit.error is not None:
            raise unit.error
        return unit.result

    def _lead(self):
        with self._lock:
            batch = self._pending[: self.max_batch]
            del self._pending[: self.max_batch]
        try:
            _commit(batch, self.hold)
        except Exception as error:  # the COMMIT itself failed: nothing was stored
            for unit in batch:
                unit.result, unit.error = None, error
        finally:
            with self._lock:
                successor = self._pending[0] if self._pending else None
                if successor is None:
                    self._leading = False
                else:
                    successor.leads = True
            for unit in batch:
                unit.leads, unit.finished = False, True
                if unit.wake is not None:
                    unit.wake.set()
            if successor is not None:
                successor.wake.set()


def _commit(batch, hold):
    """The batch in one transaction, tried again whole when it lost to a
    concurrent one. The locks its units name are taken first, all at once:
    taken one unit at a time, two servers' batches could each hold a lock
    the other waits for (a deadlock on PostgreSQL)."""
    for tried in range(1, TRIES + 1):
        try:
            with transaction():
                if hold is not None:
                    hold([name for unit in batch for name in unit.holds])
                for unit in batch:
                    unit.execute()
                    _abort_on_failure(unit)
            return
        except Exception as error:
            if tried == TRIES or not conflicted(error):
                raise


def _abort_on_failure(unit):
    """A full or read-only disk fails the whole transaction: SQLite may have
    rolled it back already, and the units after it would be committed one
    statement at a time. Every POST of the batch then fails (503), and its
    network sends it again. A transaction that lost to a concurrent one
    (conflicted) is rolled back to be tried again."""
    if unit.error is not None and (storage.cause_of(unit.error) or conflicted(unit.error)):
        raise unit.error


class _Unit:
    def __init__(self, work, holds):
        self.work, self.holds = work, holds
        self.wake = None  # a threading.Event, made for units that wait
        self.leads = self.finished = False
        self.result = self.error = None

    def execute(self):
        # No savepoint of its own: each item of the work has one (the
        # inbound service's), so a failure here leaves only whole items
        # behind, which a redelivery of the callback finds stored.
        try:
            self.result = self.work()
        except Exception as error:
            self.error = error
