"""One server process per SQLite database.

The rate limiter counts in memory and the serving process runs the
scheduler: a second serving process on the same database (`gunicorn -w 2`,
or a second `serve`) would split every key's limit between processes and
start silently. Each serving process therefore holds an exclusive lock on
`<database>.serve.lock` for as long as it lives; another one is refused,
naming the process that serves. (`agent-platform worker`, which only runs
jobs, needs no lock: jobs claim their work with leases.)

The lock is a POSIX record lock (lockf), which belongs to the process that
took it and goes with it, a crash included: the worker gunicorn starts in
place of one that was killed claims it at once, and a process forked from
a serving one does not hold it, whatever that fork goes on doing. (flock's
lock would belong to the open file, which a fork shares.)

On PostgreSQL (`database.url`) there is no such lock: several serve
processes on one database, on one machine or many, are the point of running
there (docs/postgresql.md, issue 42), and the server is no file of ours.
"""

import errno
import fcntl
import os
import time

from . import private
from .db import database, is_postgresql

_HOLDER_LOOKS = 25  # half a second
_held = {}  # lock path -> the open file holding its lock, kept for the process's life


class AlreadyServing(Exception):
    """Another process serves the database; the message says which and what to do."""


def lock_path(database_path):
    return f"{database_path}.serve.lock"


def claim_serving():
    """Hold the serving lock of the configured database: its SQLite file's;
    none on PostgreSQL (see the module's docstring)."""
    if not is_postgresql():
        claim(database.database)


def claim(database_path):
    """Hold the serving lock of `database_path`, or raise AlreadyServing."""
    path = lock_path(database_path)
    if path in _held:
        return
    private.create_file(path)  # 0600 like the database beside it
    handle = open(path, "a+")  # held open: the lock lasts as long as the file
    if not _lock(handle):
        holder = _holder(handle)
        handle.close()
        raise AlreadyServing(
            f"another process{holder} is already serving {database_path}; run one server "
            "process per database (its rate limits and scheduler live in memory): "
            "stop it, or give this one another database.path"
        ) from None
    handle.truncate(0)
    handle.write(f"{os.getpid()}\n")
    handle.flush()
    _held[path] = handle


def _lock(handle):
    """True once this process holds `handle`'s lock; False if another one does."""
    try:
        fcntl.lockf(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as error:
        if error.errno in (errno.EAGAIN, errno.EACCES):  # POSIX allows either for "held"
            return False
        raise
    return True


def release(database_path):
    """Let go of the serving lock (a start that failed after claiming it)."""
    handle = _held.pop(lock_path(database_path), None)
    if handle is not None:
        handle.close()


def _holder(handle):
    """ " (pid N)" of the process holding the lock. It writes its pid just
    after taking the lock: a process that found the lock taken in between
    read an empty file, so it looks again for a moment ("" if still none)."""
    for _ in range(_HOLDER_LOOKS):
        handle.seek(0)
        pid = handle.read().strip()
        if pid.isdigit():
            return f" (pid {pid})"
        time.sleep(0.02)
    return ""
