"""Numbered SQL migrations, applied in order, each once.

They are written in the top-level `migrations/`; a built wheel carries a copy
in the package (agent_platform/migrations, see setup.py), which is read first,
so an installed service migrates without the source tree.

Applied names are recorded in `schema_migration`. The whole run holds the
write lock (BEGIN IMMEDIATE), so two processes starting together apply each
migration exactly once.
"""

import re
import sqlite3
from importlib import resources
from pathlib import Path

from .db import database
from .models.base import utcnow
from .services.secrets import secure_stored_secrets

SOURCE_MIGRATIONS_DIR = Path(__file__).resolve().parents[2] / "migrations"
_NAME = re.compile(r"^(\d{4})_[a-z0-9_]+\.sql$")


def migrations_dir():
    """The packaged copy in an installed wheel, else the checkout's `migrations/`."""
    packaged = resources.files(__package__) / "migrations"
    return packaged if packaged.is_dir() else SOURCE_MIGRATIONS_DIR


def migration_files(directory=None):
    """The migration files, ordered by their number."""
    directory = migrations_dir() if directory is None else Path(directory)
    files = [path for path in directory.iterdir() if _NAME.match(path.name)]
    return sorted(files, key=lambda path: int(_NAME.match(path.name).group(1)))


def statements(sql):
    """Split a script into complete statements (trigger bodies stay whole)."""
    buffer = ""
    for line in sql.splitlines(keepends=True):
        buffer += line
        if sqlite3.complete_statement(buffer):
            if buffer.strip():
                yield buffer.strip()
            buffer = ""
    if buffer.strip() and not _only_comments(buffer):
        raise ValueError(f"incomplete SQL statement at the end: {buffer.strip()[:80]}")


def _only_comments(text):
    return all(not line.strip() or line.strip().startswith("--") for line in text.splitlines())


def apply_migrations(directory=None):
    """Apply every pending migration, then the Python step that encrypts
    secrets still stored in plain text (and checks the key against those that
    are not: see services/secrets.py); return the names applied now."""
    database.execute_sql(
        "CREATE TABLE IF NOT EXISTS schema_migration "
        "(name TEXT PRIMARY KEY, applied_at DATETIME NOT NULL)"
    )
    applied_now = []
    with database.atomic():
        done = {row[0] for row in database.execute_sql("SELECT name FROM schema_migration")}
        for path in migration_files(directory):
            if path.name in done:
                continue
            for statement in statements(path.read_text()):
                database.execute_sql(statement)
            database.execute_sql(
                "INSERT INTO schema_migration (name, applied_at) VALUES (?, ?)",
                (path.name, utcnow()),
            )
            applied_now.append(path.name)
    secure_stored_secrets()
    return applied_now
