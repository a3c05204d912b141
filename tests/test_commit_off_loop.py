"""serve's worker runs SQLite's COMMITs on a native thread (gevent_worker.OneThread,
db.run_commits_in): the event loop serves other greenlets while one commits."""

import time

import gevent
import pytest

from agent_platform import db
from agent_platform.gevent_worker import OneThread
from loop_helpers import ticks_beside

pytestmark = pytest.mark.sqlite_only(reason="a PostgreSQL commit waits on its socket, which yields")

ROWS, ROW_BYTES = 400, 64 * 1024  # a 25 MB transaction: its commit writes and checkpoints


@pytest.fixture
def commits_in_thread(app):
    db.run_commits_in(OneThread().run)
    yield
    db.run_commits_in(None)


def big_transaction():
    with db.transaction():
        db.database.execute_sql("CREATE TABLE IF NOT EXISTS ballast (data BLOB)")
        for _ in range(ROWS):
            db.database.execute_sql("INSERT INTO ballast VALUES (randomblob(?))", (ROW_BYTES,))
        began = time.monotonic()
    return began, time.monotonic()


def ticks_while(work):
    """(when `work`'s commit began and ended, the times another greenlet woke)."""
    (began, ended), ticks = ticks_beside(work)
    return began, ended, ticks


def test_other_greenlets_run_while_a_commit_writes(app, commits_in_thread):
    with app.app_context():
        began, ended, ticks = ticks_while(big_transaction)
    assert ended - began > 0.01  # a commit worth leaving the loop for
    assert sum(began < tick < ended for tick in ticks) >= 3


def test_without_it_the_commit_holds_every_greenlet(app):
    """The control: the same commit run in place wakes nothing meanwhile."""
    with app.app_context():
        began, ended, ticks = ticks_while(big_transaction)
    assert sum(began < tick < ended for tick in ticks) == 0


def test_an_interrupted_wait_ends_with_the_commit(app, commits_in_thread):
    """A greenlet killed while its commit runs is killed once the commit is
    over, never while its connection is still in use."""
    with app.app_context():
        worker = gevent.spawn(big_transaction)
        gevent.sleep(0)  # the inserts run without yielding: it wakes at the commit
        worker.kill(block=True)
        rows = db.database.execute_sql("SELECT count(*) FROM ballast").fetchone()[0]
    assert isinstance(worker.value, gevent.GreenletExit)
    assert rows == ROWS  # committed whole, and the connection usable after
