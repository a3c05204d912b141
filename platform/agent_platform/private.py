"""Files and directories the service creates are its user's alone.

The database, its backups, stored media and the key of stored secrets hold
customers' conversations and credentials: created 0644 under the usual
umask, every local user could read them. So what the service creates is
0600 (files) or 0700 (directories) whatever the umask; what already exists
keeps the mode its owner gave it. (SQLite gives a database's -wal and -shm
files the database file's own mode.)
"""

import contextlib
import os
from pathlib import Path

FILE_MODE, DIRECTORY_MODE = 0o600, 0o700


def make_dirs(path):
    """`path` as a directory, each one of it and its parents created here 0700."""
    path = Path(path)
    for directory in reversed(_missing(path)):
        with contextlib.suppress(FileExistsError):  # made meanwhile by another process
            directory.mkdir(DIRECTORY_MODE)
            os.chmod(directory, DIRECTORY_MODE)  # a umask such as 0277 takes bits off
    path.mkdir(parents=True, exist_ok=True)  # a file in the way raises as it always did
    return path


def _missing(path):
    missing = []
    while not path.exists() and path != path.parent:
        missing.append(path)
        path = path.parent
    return missing


def create_file(path):
    """Create `path` empty and 0600 unless something is there; True if created."""
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
    except FileExistsError:
        return False
    try:
        os.fchmod(descriptor, FILE_MODE)
    finally:
        os.close(descriptor)
    return True


def open_new(path):
    """`path` opened for writing in binary, created or emptied, 0600."""
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, FILE_MODE)
    os.fchmod(descriptor, FILE_MODE)
    return os.fdopen(descriptor, "wb")
