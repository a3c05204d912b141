"""A database that cannot take writes: a full disk, a read-only file or file
system, a disk I/O error.

None of these is a bug, nor the client's doing, and each ends when the
operator frees space or makes the file writable again: a request meeting one
answers 503 STORAGE_UNAVAILABLE with Retry-After, a job leaves its work for
its next run, the log says so once (db.py), health says why, and the service
heals by itself. At start-up the same failures are one line naming the path
and what to do.

They are told apart from bugs by SQLite's result code (or the system's
errno) anywhere in an error's chain: peewee raises its own error from
sqlite3's, and what a failed COMMIT leaves may raise another on top. On
PostgreSQL by the SQLSTATE, and a server that cannot be reached (stopped,
restarting, or one that ended the connection) is one more such cause: the
request answers 503, not 500, and the pool replaces the connection.
"""

import errno
import os
import pwd
import shutil
import sqlite3
import sys
from pathlib import Path

from .database_name import described
from .db import database
from .errors import StorageUnavailable

FULL, READ_ONLY, IO_ERROR, UNOPENABLE = "full", "read-only", "io", "unopenable"
UNREACHABLE = "unreachable"
_SQLITE_CAUSES = {
    sqlite3.SQLITE_FULL: FULL,
    sqlite3.SQLITE_READONLY: READ_ONLY,
    sqlite3.SQLITE_IOERR: IO_ERROR,
    sqlite3.SQLITE_CANTOPEN: UNOPENABLE,
}
_ERRNO_CAUSES = {
    errno.ENOSPC: FULL,
    errno.EDQUOT: FULL,
    errno.EROFS: READ_ONLY,
    errno.EIO: IO_ERROR,
}
# PostgreSQL's SQLSTATEs of the same causes; a whole class by its first two.
_SQLSTATE_CAUSES = {
    "53100": FULL,  # disk_full
    "25006": READ_ONLY,  # read_only_sql_transaction (a standby, a read-only database)
    "58030": IO_ERROR,  # io_error
    "08": UNREACHABLE,  # connection_exception
    "57P01": UNREACHABLE,  # admin_shutdown: the server stops, or ended the connection
    "57P02": UNREACHABLE,  # crash_shutdown
    "57P03": UNREACHABLE,  # cannot_connect_now: the server is starting
}
# What a client is told (no path: health and errors are public).
CAUSES = {
    FULL: "the disk is full",
    READ_ONLY: "the database is read-only",
    IO_ERROR: "a disk I/O error",
    UNOPENABLE: "the database file cannot be opened",
    UNREACHABLE: "the database server cannot be reached",
}
# What the operator is told to do, in the log.
_ADVICE = {
    FULL: "free space on its disk",
    READ_ONLY: "make the file, its -wal and -shm files and its directory writable "
    "by the service's user, on a file system mounted read-write",
    IO_ERROR: "check the disk (the kernel's log says more)",
    UNOPENABLE: "check that its directory exists and that the service's user may write in it",
    UNREACHABLE: "check that the PostgreSQL server runs and that this machine reaches it",
}
# Below this much free space, a disk where a write has failed for want of
# space is still full, whatever the health check's tiny write manages.
FREE_SPACE_FLOOR = 1 << 20
_CHAIN_LIMIT = 16


def cause_of(error):
    """FULL, READ_ONLY, IO_ERROR or UNOPENABLE when `error`, or an error in
    its chain, says the storage failed; else None."""
    for _ in range(_CHAIN_LIMIT):
        if error is None:
            return None
        cause = _own_cause(error)
        if cause is not None:
            return cause
        error = error.__cause__ or error.__context__
    return None


def _own_cause(error):
    if isinstance(error, sqlite3.Error):
        return _SQLITE_CAUSES.get((error.sqlite_errorcode or 0) & 0xFF)
    if isinstance(error, OSError):
        return _ERRNO_CAUSES.get(error.errno)
    psycopg = sys.modules.get("psycopg")  # none of its errors exist until it is loaded
    if psycopg is not None and isinstance(error, psycopg.Error):
        return _postgresql_cause(error, psycopg)
    return None


def _postgresql_cause(error, psycopg):
    state = error.sqlstate
    if state is None:  # psycopg's own: a connection that failed or was lost
        return UNREACHABLE if isinstance(error, psycopg.OperationalError) else None
    return _SQLSTATE_CAUSES.get(state) or _SQLSTATE_CAUSES.get(state[:2])


def failed(error):
    """The cause, when `error` is a storage failure, which is then noted (db.py:
    logged if it starts an incident); else None."""
    cause = cause_of(error)
    if cause is not None:
        database.storage_failed(
            f"The database {described()} cannot take writes: {CAUSES[cause]}. "
            f"Requests that write answer 503 {StorageUnavailable.code} until it can: "
            f"{_ADVICE[cause]} (no restart needed).",
            # A full disk leaves connections sound. Closed, the last one would
            # check the log into the database and delete it, freeing space
            # for a moment: writes would flap between failing and working.
            spends=cause != FULL,
        )
    return cause


def unavailable(error):
    """The 503 to answer for `error` when it is a storage failure, else None."""
    cause = failed(error)
    return None if cause is None else StorageUnavailable(CAUSES[cause])


def writes_problem():
    """Why the database cannot take writes now (a client's cause), or None.

    A write is committed, so it really reaches the disk (a write rolled back
    never leaves memory, and proved nothing); it changes nothing (see
    write_nothing in db.py and db_postgresql.py)."""
    try:
        with database.atomic():
            database.write_nothing()
    except Exception as error:
        cause = failed(error)
        if cause is None:
            raise
        return CAUSES[cause]
    if database.storage_failing_since is not None and _free_bytes() < FREE_SPACE_FLOOR:
        return CAUSES[FULL]
    database.writes_work()
    return None


def _free_bytes():
    return shutil.disk_usage(Path(database.database).parent).free


def startup_problem(error, database_path):
    """One line naming the path at fault and what to do, when `error`, met
    opening the database at `database_path` (or its directory, or its serving
    lock), is the storage's; else None."""
    named = getattr(error, "filename", None)
    if not (named or database_path):
        return None
    path, database_path = Path(named or database_path), Path(database_path or named)
    if isinstance(error, NotADirectoryError | FileExistsError):
        return (
            f"cannot create the directory {path}: part of that path is a file, not a "
            "directory; set database.path to a place inside a directory (or move that file)"
        )
    cause = cause_of(error)
    if cause in (READ_ONLY, UNOPENABLE) or isinstance(error, PermissionError):
        return _unwritable(path, database_path)
    if cause == FULL:
        return f"the disk holding {path} is full: free space on it, then start again"
    if cause == IO_ERROR:
        return f"a disk I/O error on {path}: check the disk (the kernel's log says more)"
    return None


def _unwritable(path, database_path):
    """Why `path` (the database, its directory or its serving lock) cannot be written."""
    directory, user = _existing(path.parent), _user_name(os.geteuid())
    if os.statvfs(directory).f_flag & os.ST_RDONLY:
        return (
            f"the file system holding {directory} is read-only: mount it read-write, "
            "or set database.path to a writable place"
        )
    if not os.access(directory, os.W_OK, effective_ids=True):
        return (
            f"user {user} cannot write in the directory {directory}: give it to that "
            f"user (chown {user} {directory}), or set database.path to a place it can write"
        )
    owner = _user_name(path.stat().st_uid) if path.exists() else user
    return (
        f"{path} is read-only to user {user} (its owner is {owner}): give the database's "
        f"files to that user (chown {user} {database_path}*), or run the service as {owner}"
    )


def _existing(directory):
    while not directory.exists():
        directory = directory.parent
    return directory


def _user_name(uid):
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)
