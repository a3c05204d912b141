"""SQLite's and PostgreSQL's migrations are kept in step: the same files by
name, building the same tables, columns and indexes (read back through
peewee's introspection on a real server of each engine)."""

import pytest
from peewee import PostgresqlDatabase, SqliteDatabase

from agent_platform.migrate import migrations_dir, postgresql_statements
from conftest import _apply_migrations_to, new_postgres_database

# The full-text search indexes differ by design: SQLite's are FTS5 virtual
# tables (with shadow tables of their own: training_fts_data, _idx, ...),
# PostgreSQL's a table of tsvectors with a GIN index (and the sequence that
# numbers messages for it). What they index, and how searches rank, is
# compared by the search tests, not here.
FULL_TEXT = ("training_fts", "message_fts")


# Columns and indexes only PostgreSQL has, by design: the event's
# transaction and its place in it (migration 0025), live changes' commit
# order there; SQLite's rowid is that order already (models/events.py). The
# metrics tallies' slots (migration 0026), which let concurrent writers each
# count in rows of their own; SQLite has one writer at a time.
POSTGRESQL_ONLY = {
    "event": ({"seq", "tx"}, {"event_tx_seq"}),
    **{
        tally: ({"slot"}, set())
        for tally in ("message_tally", "send_error_tally", "delivery_tally", "reply_latency_tally")
    },
}


# Indexes read in send order: SQLite's tie-break, the rowid, is the last
# column of every index; PostgreSQL's, the id, is named (migration 0028).
ID_LAST_ON_POSTGRESQL = {"delivery": {"delivery_webhook_id_status_next_attempt_at"}}


def _is_full_text(name):
    return name.startswith(FULL_TEXT)


def describe(db):
    """{table: (columns {name: nullable}, indexes {name: (columns, unique)})}"""
    schema = {}
    for table in db.get_tables():
        if _is_full_text(table):
            continue
        # A primary key is never null on PostgreSQL; SQLite lets one that is
        # not an INTEGER be (a bug it keeps), so its nullability is not compared.
        columns = {
            column.name: column.null and not column.primary_key for column in db.get_columns(table)
        }
        indexes = {
            # PostgreSQL keeps a name's first 63 bytes (NAMEDATALEN - 1).
            index.name[:63]: (tuple(index.columns), index.unique)
            for index in db.get_indexes(table)
            # Each engine names the index of a primary key its own way.
            if not index.name.startswith("sqlite_autoindex_") and not index.name.endswith("_pkey")
        }
        schema[table] = (columns, indexes)
    return schema


@pytest.fixture(scope="module")
def schemas(tmp_path_factory, postgres_server):
    path = tmp_path_factory.mktemp("engines") / "sqlite.db"
    url = new_postgres_database(postgres_server)
    _apply_migrations_to({"DATABASE_PATH": str(path)})
    _apply_migrations_to({"DATABASE_URL": url})
    sqlite, postgresql = SqliteDatabase(str(path)), PostgresqlDatabase(url)
    try:
        yield describe(sqlite), describe(postgresql)
    finally:
        sqlite.close()
        postgresql.close()


def test_each_migration_has_its_postgresql_form():
    sqlite = sorted(path.name for path in migrations_dir().glob("*.sql"))
    postgresql = sorted(path.name for path in migrations_dir(postgresql=True).glob("*.sql"))
    assert sqlite and postgresql == sqlite


def test_both_engines_build_the_same_tables(schemas):
    sqlite, postgresql = schemas
    assert sorted(postgresql) == sorted(sqlite)
    assert "message" in sqlite and "workspace" in sqlite


@pytest.mark.parametrize("part", ["columns", "indexes"])
def test_both_engines_build_the_same_columns_and_indexes(schemas, part):
    sqlite, postgresql = schemas
    which = 0 if part == "columns" else 1
    for table in sqlite:
        assert _in_common(table, which, postgresql[table][which]) == sqlite[table][which], table


@pytest.mark.parametrize("part", ["columns", "indexes"])
def test_the_postgresql_only_columns_and_indexes_are_there(schemas, part):
    which = 0 if part == "columns" else 1
    for table, names in POSTGRESQL_ONLY.items():
        assert names[which] <= set(schemas[1][table][which]), table
        assert not names[which] & set(schemas[0][table][which]), table


def _in_common(table, which, described):
    """`described` without what only PostgreSQL has (POSTGRESQL_ONLY, and
    the id closing the indexes of ID_LAST_ON_POSTGRESQL)."""
    only = POSTGRESQL_ONLY.get(table, (set(), set()))[which]
    common = {name: value for name, value in described.items() if name not in only}
    for name in ID_LAST_ON_POSTGRESQL.get(table, ()) if which else ():
        columns, unique = common[name]
        assert columns[-1] == "id", name
        common[name] = (columns[:-1], unique)
    return common


def test_full_text_search_has_its_postgresql_tables(postgres_server):
    url = new_postgres_database(postgres_server)
    _apply_migrations_to({"DATABASE_URL": url})
    db = PostgresqlDatabase(url)
    try:
        for table in FULL_TEXT:
            assert {column.name for column in db.get_columns(table)} == {
                "search_rowid",
                "document",
            }
            assert f"{table}_document" in {index.name for index in db.get_indexes(table)}
    finally:
        db.close()


def test_postgresql_statements_keep_function_bodies_whole():
    script = """
    -- a comment; with a semicolon
    CREATE TABLE a (x TEXT DEFAULT ';');
    CREATE FUNCTION f() RETURNS TRIGGER LANGUAGE plpgsql AS $$
    BEGIN
        INSERT INTO a VALUES ('1;');
        RETURN NULL;
    END;
    $$;
    CREATE TRIGGER "t;" AFTER INSERT ON a FOR EACH ROW EXECUTE FUNCTION f();
    """
    parts = list(postgresql_statements(script))
    assert len(parts) == 3
    assert parts[0] == "-- a comment; with a semicolon\n    CREATE TABLE a (x TEXT DEFAULT ';');"
    assert parts[1].startswith("CREATE FUNCTION") and parts[1].endswith("$$;")
    assert parts[2].startswith('CREATE TRIGGER "t;"')


def test_postgresql_statements_refuse_an_unfinished_script():
    with pytest.raises(ValueError, match="incomplete"):
        list(postgresql_statements("CREATE TABLE a (x TEXT);\nCREATE TABLE b (y"))
    with pytest.raises(ValueError, match=r"unterminated \$\$"):
        list(postgresql_statements("CREATE FUNCTION f() AS $$ BEGIN"))
