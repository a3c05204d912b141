"""Backup and restore of the SQLite file through SQLite's online backup API.

A backup reads one consistent snapshot (a read transaction: with WAL the
service keeps writing meanwhile) into a new single file, checked before it
takes its name, so a backup is never half-written. A restore writes the
backup back through SQLite too (not a file copy, which would leave the old
-wal file to be replayed over it), holding the database exclusively: it
refuses while any other process (a running service) has the database open.
"""

import os
import sqlite3
from contextlib import closing
from pathlib import Path

from .private import create_file


class BackupError(Exception):
    """The backup or restore cannot be done; the message says why."""


def backup(source, target, force=False, timeout=10):
    """Copy the database at `source` to the new file `target`; return its size."""
    return written_whole(target, force, lambda partial: _copy(source, partial, timeout))


def written_whole(target, force, write):
    """`write(partial)` a backup into a hidden file beside `target`, given
    the name only once whole, so a file with the name is a whole backup;
    return its size. Refuses to replace `target` unless `force`."""
    target = Path(target).resolve()
    if target.exists() and not force:
        raise BackupError(f"{target} already exists; pass --force to replace it")
    if not target.parent.is_dir():
        raise BackupError(f"no directory {target.parent} to write the backup in")
    partial = target.with_name(f".{target.name}.partial")
    partial.unlink(missing_ok=True)
    create_file(partial)  # the copy holds every conversation: its owner's alone
    try:
        write(partial)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    os.replace(partial, target)
    return target.stat().st_size


def _copy(source, partial, timeout):
    with closing(sqlite3.connect(source, timeout=timeout)) as live:
        with closing(sqlite3.connect(partial)) as copy:
            live.backup(copy)
            # One self-contained file: no -wal beside it to lose when copied.
            copy.execute("PRAGMA journal_mode=DELETE")
            check_integrity(copy, partial)


def restore(backup_path, database_path, timeout=10):
    """Replace the database's content with the backup's."""
    backup_path = Path(backup_path).resolve()
    if not backup_path.is_file():
        raise BackupError(f"no backup at {backup_path}")
    with closing(sqlite3.connect(f"{backup_path.as_uri()}?mode=ro", uri=True)) as source:
        check_integrity(source, backup_path)
        with closing(_exclusive(database_path)) as live:
            source.backup(live)
            live.execute("PRAGMA wal_checkpoint(TRUNCATE)")


def _exclusive(database_path):
    """A connection that holds the database alone until it closes."""
    live = sqlite3.connect(database_path, timeout=0, isolation_level=None)
    live.execute("PRAGMA locking_mode=EXCLUSIVE")
    try:
        live.execute("BEGIN EXCLUSIVE")
        live.execute("COMMIT")
    except sqlite3.OperationalError as error:
        live.close()
        raise BackupError(
            f"the database {database_path} is in use (is the service running?); "
            "stop it before restoring"
        ) from error
    return live


def check_integrity(connection, path):
    try:
        result = connection.execute("PRAGMA integrity_check").fetchall()
    except sqlite3.DatabaseError as error:
        raise BackupError(f"{path} is not a usable SQLite database: {error}") from error
    if result != [("ok",)]:
        raise BackupError(f"{path} fails its integrity check: {result[0][0]}")
