"""Numbered SQL migrations, applied in order, each once.

They are written in the top-level `migrations/`; a built wheel carries a copy
in the package (agent_platform/migrations, see setup.py), which is read first,
so an installed service migrates without the source tree.

Each engine has its own set, kept in step by tests/test_migrations_engines.py
(the same numbers and names, the same tables, columns and indexes): SQLite's
in `migrations/`, PostgreSQL's in `migrations/postgresql/`. The configured
engine's set is applied.

Applied names are recorded in `schema_migration`. The whole run holds the
write lock (on SQLite BEGIN IMMEDIATE, on PostgreSQL a lock on that table),
so two processes starting together apply each migration exactly once.
"""

import re
import sqlite3
from importlib import resources
from pathlib import Path

from .db import database, is_postgresql
from .models.base import utcnow
from .services.secrets import secure_stored_secrets

SOURCE_MIGRATIONS_DIR = Path(__file__).resolve().parents[2] / "migrations"
_NAME = re.compile(r"^(\d{4})_[a-z0-9_]+\.sql$")


def migrations_dir(postgresql=False):
    """The packaged copy in an installed wheel, else the checkout's
    `migrations/`; PostgreSQL's set is its `postgresql/` folder."""
    packaged = resources.files(__package__) / "migrations"
    directory = packaged if packaged.is_dir() else SOURCE_MIGRATIONS_DIR
    return directory / "postgresql" if postgresql else directory


def migration_files(directory=None):
    """The migration files of the configured engine, ordered by their number."""
    directory = migrations_dir(is_postgresql()) if directory is None else Path(directory)
    files = [path for path in directory.iterdir() if _NAME.match(path.name)]
    return sorted(files, key=lambda path: int(_NAME.match(path.name).group(1)))


def statements(sql):
    """Split a script into complete statements (trigger bodies stay whole)."""
    return postgresql_statements(sql) if is_postgresql() else sqlite_statements(sql)


def sqlite_statements(sql):
    """SQLite's statements of a script, as sqlite3 tells where each ends."""
    buffer = ""
    for line in sql.splitlines(keepends=True):
        buffer += line
        if sqlite3.complete_statement(buffer):
            if buffer.strip():
                yield buffer.strip()
            buffer = ""
    if buffer.strip() and not _only_comments(buffer):
        raise ValueError(f"incomplete SQL statement at the end: {buffer.strip()[:80]}")


# What a PostgreSQL script is read as: a dollar-quoted body ($$ or $name$),
# a string, a quoted name, a comment, a statement's end, or anything else.
_PG_TOKEN = re.compile(
    r"(?P<dollar>\$[A-Za-z_]*\$)|'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|--[^\n]*|(?P<end>;)|[^$'\";-]+|.",
    re.DOTALL,
)


def postgresql_statements(sql):
    """PostgreSQL's statements of a script: split at each semicolon outside
    strings, quoted names, comments and dollar-quoted (function) bodies."""
    start, position = 0, 0
    while position < len(sql):
        token = _PG_TOKEN.match(sql, position)
        position = token.end()
        if token["dollar"]:  # to the same tag's end, semicolons and all
            close = sql.find(token["dollar"], position)
            if close < 0:
                raise ValueError(f"unterminated {token['dollar']} body: {sql[start:][:80]}")
            position = close + len(token["dollar"])
        elif token["end"]:
            if not _only_comments(sql[start : position - 1]):
                yield sql[start:position].strip()
            start = position
    if not _only_comments(sql[start:]):
        raise ValueError(f"incomplete SQL statement at the end: {sql[start:].strip()[:80]}")


def _only_comments(text):
    return all(not line.strip() or line.strip().startswith("--") for line in text.splitlines())


def apply_migrations(directory=None):
    """Apply every pending migration, then the Python step that encrypts
    secrets still stored in plain text (and checks the key against those that
    are not: see services/secrets.py); return the names applied now."""
    postgresql = is_postgresql()
    database.execute_sql(
        "CREATE TABLE IF NOT EXISTS schema_migration "
        f"(name TEXT PRIMARY KEY, applied_at {'TIMESTAMP' if postgresql else 'DATETIME'} NOT NULL)"
    )
    applied_now = []
    with database.atomic():
        if postgresql:  # SQLite's BEGIN IMMEDIATE took the lock already
            database.execute_sql("LOCK TABLE schema_migration IN SHARE ROW EXCLUSIVE MODE")
        done = {row[0] for row in database.execute_sql("SELECT name FROM schema_migration")}
        for path in migration_files(directory):
            if path.name in done:
                continue
            for statement in statements(path.read_text()):
                database.execute_sql(statement)
            database.execute_sql(
                "INSERT INTO schema_migration (name, applied_at) "
                f"VALUES ({database.param}, {database.param})",
                (path.name, utcnow()),
            )
            applied_now.append(path.name)
    secure_stored_secrets()
    return applied_now
