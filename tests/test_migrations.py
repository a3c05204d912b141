"""The database built by the migrations is the one the models describe."""

import sqlite3

import pytest
from peewee import SqliteDatabase

from agent_platform.db import database
from agent_platform.migrate import apply_migrations, migration_files, sqlite_statements
from agent_platform.models import ALL_MODELS


def describe(path):
    """Tables, columns, indexes and foreign keys of a SQLite file."""
    connection = sqlite3.connect(path)
    schema = {}
    tables = [
        row[0]
        for row in connection.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND sql NOT LIKE 'CREATE VIRTUAL%'"
        )
    ]
    for table in tables:
        if table.startswith("sqlite_") or table == "schema_migration" or "_fts" in table:
            continue
        columns = {
            row[1]: (row[2].upper(), bool(row[3]), row[5])
            for row in connection.execute(f'PRAGMA table_info("{table}")')
        }
        indexes = set()
        for index in connection.execute(f'PRAGMA index_list("{table}")'):
            if index[3] == "pk":
                continue
            names = tuple(row[2] for row in connection.execute(f'PRAGMA index_info("{index[1]}")'))
            indexes.add((names, bool(index[2])))
        foreign_keys = {
            (row[3], row[2], row[4], row[6])
            for row in connection.execute(f'PRAGMA foreign_key_list("{table}")')
        }
        schema[table] = {
            "columns": columns,
            "indexes": indexes,
            "foreign_keys": foreign_keys,
        }
    connection.close()
    return schema


@pytest.mark.sqlite_only(
    reason="reads the SQLite file's schema with sqlite3; tests/test_migrations_engines.py "
    "holds the PostgreSQL migrations to these in every pass"
)
def test_migrations_build_what_the_models_describe(app, tmp_path):
    migrated = describe(app.config["DATABASE_PATH"])
    reference_path = str(tmp_path / "models.db")
    reference = SqliteDatabase(reference_path)
    with reference.bind_ctx(ALL_MODELS):
        reference.create_tables(ALL_MODELS)
    reference.close()
    expected = describe(reference_path)
    assert sorted(migrated) == sorted(expected)
    for table in expected:
        assert migrated[table] == expected[table], table


def test_running_migrations_again_changes_nothing(app):
    assert apply_migrations() == []
    applied = [
        row[0] for row in database.execute_sql("SELECT name FROM schema_migration ORDER BY name")
    ]
    assert applied == [path.name for path in migration_files()]


def test_sqlite_statements_keep_trigger_bodies_whole():
    # PostgreSQL's splitter (dollar-quoted bodies): tests/test_migrations_engines.py
    script = """
    -- a comment
    CREATE TABLE a (x);
    CREATE TRIGGER t AFTER INSERT ON a BEGIN
        INSERT INTO a VALUES (1);
        INSERT INTO a VALUES (2);
    END;
    """
    parts = list(sqlite_statements(script))
    assert len(parts) == 2
    assert parts[1].startswith("CREATE TRIGGER") and parts[1].endswith("END;")
