"""Backup and restore of a PostgreSQL database (`database.url`) with
PostgreSQL's own client programs, as backup.py does for the SQLite file.

A backup is `pg_dump --format=custom`: one snapshot (a repeatable-read
transaction: the service keeps writing meanwhile), written to a partial file
made private first, listed back by `pg_restore --list` as a check, then given
its name, so a backup is never half-written.

A restore refuses while any other client is connected to the database (a
running service) and replaces the whole content in one transaction: psql
empties the schema `public` and runs what `pg_restore` makes of the backup,
so a restore that fails changes nothing, and tables of migrations newer
than the backup do not survive it (the next start applies them again).

The password never goes on a command line, which other users of the machine
can read (ps): the programs get the URL without it, and it in PGPASSWORD.
"""

import contextlib
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from psycopg.conninfo import conninfo_to_dict, make_conninfo

from .backup import BackupError, written_whole
from .database_name import described_url as described

INSTALL = "install PostgreSQL's client programs (Debian: apt install postgresql-client)"
_MISMATCH = re.compile(r"server version: (\d+)[^;]*; (\w+) version: (\d+)")
_IN_USE = (
    "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
    " AND pid <> pg_backend_pid() AND backend_type = 'client backend'"
)


def backup(url, target, force=False):
    """Dump the database at `url` to the new file `target`; return its size."""
    return written_whole(target, force, lambda partial: _dump(url, partial))


def _dump(url, partial):
    _run(url, "pg_dump", "--format=custom", f"--file={partial}")
    check_archive(partial)


def restore(backup_path, url):
    """Replace the content of the database at `url` with the backup's."""
    backup_path = Path(backup_path).resolve()
    if not backup_path.is_file():
        raise BackupError(f"no backup at {backup_path}")
    check_archive(backup_path)
    refuse_if_in_use(url)
    with _started(url, "pg_restore", "--no-owner", "--no-privileges", "--file=-",
                  str(backup_path), stdout=subprocess.PIPE, dbname=False) as script:  # fmt: skip
        with _started(url, "psql", *_LOAD, stdin=subprocess.PIPE) as load:
            _feed(script, load)


# Into psql, in one transaction: the schema emptied, the backup's script,
# then the statistics the planner needs (pg_restore's documentation advises
# it): without them, the first queries on the restored tables are planned
# as if on empty ones until autovacuum gets to each.
_LOAD = ("--no-psqlrc", "--quiet", "--set=ON_ERROR_STOP=1", "--single-transaction",
         "--command=DROP SCHEMA public CASCADE", "--command=CREATE SCHEMA public",
         "--file=-", "--command=ANALYZE")  # fmt: skip


def _feed(script, load):
    """pg_restore's script into psql; psql is stopped before its COMMIT when
    pg_restore fails (a backup cut short), so a failure changes nothing."""
    try:
        shutil.copyfileobj(script.process.stdout, load.process.stdin)
    except BrokenPipeError:  # psql stopped at an error, which is the one to tell
        script.process.kill()  # else it waits for a reader for good
        load.check()
    if script.process.wait() != 0:
        load.process.kill()
        script.check()
    with contextlib.suppress(BrokenPipeError):
        load.process.stdin.close()
    load.check()


def check_archive(path):
    """Refuse a file that pg_restore cannot read (not a dump, cut short, or
    made by a newer pg_dump than this machine's)."""
    listed = subprocess.run(
        [_program("pg_restore"), "--list", str(path)], capture_output=True, text=True
    )
    if listed.returncode != 0:
        raise BackupError(f"{path} is not a usable PostgreSQL backup: {_last_line(listed.stderr)}")


def refuse_if_in_use(url):
    import psycopg

    try:
        with psycopg.connect(url, autocommit=True) as connection:
            others = connection.execute(_IN_USE).fetchone()[0]
    except psycopg.OperationalError as error:
        raise BackupError(f"cannot connect to {described(url)}: {_last_line(str(error))}") from None
    if others:
        raise BackupError(
            f"the database {described(url)} is in use by {others} other connection(s) "
            "(is the service running?); stop it before restoring"
        )


def _run(url, name, *arguments):
    """Run the client program `name` on the database at `url`."""
    with _started(url, name, *arguments) as program:
        program.check()


class _started:
    """A client program running on the database at `url` (unless not given
    a `dbname`), its errors kept in a file (a pipe could fill and stall it);
    check() waits for it and raises its failure as one line."""

    def __init__(self, url, name, *arguments, stdin=None, stdout=None, dbname=True):
        self.url, self.name = url, name
        address, environ = _without_password(url)
        command = [_program(name), *arguments] + ([f"--dbname={address}"] if dbname else [])
        self.errors = tempfile.TemporaryFile("w+")
        self.process = subprocess.Popen(
            command, stdin=stdin, stdout=stdout or subprocess.DEVNULL, stderr=self.errors,
            env=environ,
        )  # fmt: skip

    def check(self):
        if self.process.wait() != 0:
            self.errors.seek(0)
            raise BackupError(_failure(self.name, self.url, self.errors.read()))

    def __enter__(self):
        return self

    def __exit__(self, *failure):
        if self.process.poll() is None:  # left running by a failure: stopped
            self.process.kill()
        self.process.wait()
        for stream in (self.process.stdin, self.process.stdout, self.errors):
            if stream is not None:
                with contextlib.suppress(BrokenPipeError):  # psql stopped early
                    stream.close()


def _without_password(url):
    """The connection string without the password, and the environment that
    carries it (PGPASSWORD) instead."""
    parts = conninfo_to_dict(url)
    password = parts.pop("password", None)
    environ = dict(os.environ)
    if password is not None:
        environ["PGPASSWORD"] = password
    return make_conninfo(**parts), environ


def _program(name):
    path = shutil.which(name)
    if path is None:
        raise BackupError(f"{name} is not installed: {INSTALL}")
    return path


def _failure(name, url, stderr):
    """One line for a client program that failed: what to install when its
    version does not fit the server's, else its own last word."""
    mismatch = _MISMATCH.search(stderr)
    if mismatch:
        server, _, own = mismatch.groups()
        return (
            f"{name} {own} cannot work with the PostgreSQL {server} server of {described(url)}: "
            f"install PostgreSQL {server}'s client programs "
            f"(Debian: apt install postgresql-client-{server})"
        )
    return f"{name} failed on {described(url)}: {_last_line(stderr)}"


def _last_line(text):
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else "no reason given"
