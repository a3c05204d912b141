"""database.url runs the service on PostgreSQL (a throwaway server of the
session's, tests/pg_server.py), whatever engine the rest of the suite uses;
SQLite stays the default."""

import subprocess
import sys

import psycopg
import pytest

from agent_platform import create_app
from agent_platform.database_name import described
from agent_platform.db import database, is_postgresql
from agent_platform.db_postgresql import postgresql_statement
from agent_platform.migrate import apply_migrations
from agent_platform.models.conversations import CURRENT_FOR_CONTACT
from agent_platform.services import keys
from conftest import OFFLINE, new_postgres_database
from pg_server import free_port


@pytest.fixture
def pg_app(postgres_server, tmp_path):
    url = new_postgres_database(postgres_server)
    settings = {**OFFLINE, "DATABASE_URL": url, "DATABASE_PATH": str(tmp_path / "unused.db")}
    app = create_app(settings)
    with app.app_context():
        apply_migrations()
        yield app
    database.close()
    database.close_all()


def test_an_app_with_a_database_url_keeps_its_rows_on_the_server(pg_app, tmp_path):
    assert is_postgresql()
    workspace_id = keys.create_workspace("Workspace").id
    _, raw_key = keys.create_key(workspace_id, "admin", keys.all_scopes())
    client = pg_app.test_client()
    made = client.post("/v1/agents", json={"name": "Ada"}, headers={"x-api-key": raw_key})
    assert made.status_code == 201, made.get_data(as_text=True)
    listed = client.get("/v1/agents", headers={"x-api-key": raw_key}).get_json()
    assert [agent["name"] for agent in listed["data"]] == ["Ada"]
    with psycopg.connect(pg_app.config["DATABASE_URL"]) as connection:
        row = connection.execute(
            'SELECT "name", "is_active" FROM "agent" WHERE "workspace_id" = %s', (workspace_id,)
        ).fetchone()
    assert row == ("Ada", True)
    assert not (tmp_path / "unused.db").exists()  # database.path is not used


def test_sqlite_stays_the_default(tmp_path):
    app = create_app({**OFFLINE, "DATABASE_PATH": str(tmp_path / "default.db")})
    with app.app_context():
        assert not is_postgresql()
        assert app.config["DATABASE_URL"] is None
    database.close_all()
    assert (tmp_path / "default.db").is_file()


def test_the_sqlite_default_runs_without_the_postgresql_extra(tmp_path):
    """psycopg comes with the `postgresql` extra: a service on SQLite never
    imports it (the wheel test, slow, installs without it; this says so in
    a second)."""
    script = (
        "import sys\n"
        "sys.modules['psycopg'] = None  # as if not installed: importing it fails\n"
        "from agent_platform import create_app\n"
        "app = create_app({'DATABASE_PATH': sys.argv[1], 'LOG_LEVEL': 'WARNING'})\n"
        "from agent_platform.migrate import apply_migrations\n"
        "with app.app_context():\n"
        "    apply_migrations()\n"
        "print(app.test_client().get('/v1/health').status_code)\n"
    )
    ran = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "plain.db")],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert (ran.returncode, ran.stdout.strip()) == (0, "200"), ran.stderr[-2000:]


@pytest.mark.parametrize(
    "sqlite, postgresql",
    [
        (
            'SELECT * FROM "t" WHERE "a" = ? AND b = ?',
            'SELECT * FROM "t" WHERE "a" = %s AND b = %s',
        ),
        # Booleans: 0/1 on SQLite, false/true on PostgreSQL.
        (
            'WHERE "is_active" = 1 AND w.is_archived = 0',
            'WHERE "is_active" = true AND w.is_archived = false',
        ),
        ('WHERE "success" = 1 AND "count" = 1', 'WHERE "success" = true AND "count" = 1'),
        # A % of the text is psycopg's escape; a ? in a string is no parameter.
        (
            "SELECT printf('%s', x) WHERE y LIKE '?%' AND z % 2 = ?",
            "SELECT printf('%%s', x) WHERE y LIKE '?%%' AND z %% 2 = %s",
        ),
        # peewee's own parameters, in a statement built for PostgreSQL, stay.
        (
            'SELECT * FROM (SELECT * FROM "t" WHERE "a" = %s) AS "listed" LIMIT ?',
            'SELECT * FROM (SELECT * FROM "t" WHERE "a" = %s) AS "listed" LIMIT %s',
        ),
        (
            'INSERT OR IGNORE INTO "t" ("a", "b") VALUES (?, ?)',
            'INSERT INTO "t" ("a", "b") VALUES (%s, %s) ON CONFLICT DO NOTHING',
        ),
        # SQLite's hint not to use an index, in a form no index serves
        # either; arithmetic keeps its +.
        (
            'WHERE "a" = ? AND +"b" = ? AND "rows" + 1 > 0',
            'WHERE "a" = %s AND COALESCE("b", "b") = %s AND "rows" + 1 > 0',
        ),
        # ... on a qualified name too; a sum of qualified names keeps its +.
        (
            'WHERE (+c."a" = ? AND +"b" = 1) AND c."n" + c."m" > 0',
            'WHERE (COALESCE(c."a", c."a") = %s AND COALESCE("b", "b") = 1) AND c."n" + c."m" > 0',
        ),
    ],
)
def test_statements_written_for_sqlite_run_in_postgresql_form(sqlite, postgresql):
    assert postgresql_statement(sqlite) == postgresql


def test_a_statement_without_parameters_keeps_its_percent_signs():
    sqlite = "SELECT id FROM webhook WHERE is_active = 1 AND name LIKE 'a%' AND n % 2 = 0"
    assert postgresql_statement(sqlite, parameters=False) == (
        "SELECT id FROM webhook WHERE is_active = true AND name LIKE 'a%' AND n % 2 = 0"
    )


def test_messages_name_the_database_without_its_password(postgres_server, tmp_path):
    url = new_postgres_database(postgres_server).replace("@", ":s3cret@", 1)
    app = create_app({**OFFLINE, "DATABASE_URL": url, "DATABASE_PATH": str(tmp_path / "u.db")})
    with app.app_context():
        shown = described()
    database.close_all()
    assert "s3cret" not in shown and shown == url.replace(":s3cret@", "@")


def test_a_contacts_conversation_is_read_by_the_contact_before_any_statistics(pg_app):
    """SQLite's + hint holds on PostgreSQL too: on tables not analyzed yet
    (a new service's first minute, a restore), the planner had the contact's
    current conversation looked up through the channel's index, reading
    every conversation of the channel for each message stored."""
    workspace_id = keys.create_workspace("Workspace").id
    with psycopg.connect(pg_app.config["DATABASE_URL"]) as connection:
        for sql in _ONE_CHANNEL_500_CONTACTS:
            connection.execute(sql, (workspace_id,))
        connection.commit()
        explained = connection.execute(
            "EXPLAIN (ANALYZE, FORMAT JSON) " + postgresql_statement(CURRENT_FOR_CONTACT),
            ("c250", "ch", workspace_id),
        ).fetchone()[0]
    assert _conversation_rows_read(explained[0]["Plan"]) <= 3  # the contact's one, not 500


_ONE_CHANNEL_500_CONTACTS = (
    "INSERT INTO channel (id, created_at, updated_at, workspace_id, name, type, is_active,"
    " settings) VALUES ('ch', now(), now(), %s, 'Site', 'website', true, '{}')",
    "INSERT INTO contact (id, created_at, updated_at, workspace_id, name, custom_fields)"
    " SELECT 'c' || n, now(), now(), %s, 'C', '{}' FROM generate_series(1, 500) AS n",
    "INSERT INTO conversation (id, created_at, updated_at, workspace_id, status, contact_id,"
    " channel_id) SELECT 'v' || n, now(), now(), %s, 'open', 'c' || n, 'ch'"
    " FROM generate_series(1, 500) AS n",
)


def _conversation_rows_read(plan):
    """Rows of the conversation table a plan's nodes read: those they kept
    and those their filters removed."""
    own = 0
    if plan.get("Relation Name") == "conversation":
        own = plan["Actual Rows"] + plan.get("Rows Removed by Filter", 0)
    return own + sum(_conversation_rows_read(child) for child in plan.get("Plans", ()))


def test_a_pooled_connection_the_server_ended_is_replaced(pg_app):
    """A connection is handed out of the pool without a round trip to check
    it, and one the server ended while it sat there (a restart, an idle
    timeout) is replaced, not handed out."""
    workspace_id = keys.create_workspace("Workspace").id
    _, raw_key = keys.create_key(workspace_id, "admin", keys.all_scopes())
    database.close()  # the test's own connection, back to the pool
    client, headers = pg_app.test_client(), {"x-api-key": raw_key}
    assert client.get("/v1/me", headers=headers).status_code == 200
    with psycopg.connect(pg_app.config["DATABASE_URL"], autocommit=True) as connection:
        ended = connection.execute(  # waiting up to 5 s for each to end
            "SELECT count(pg_terminate_backend(pid, 5000)) FROM pg_stat_activity"
            " WHERE datname = current_database() AND pid <> pg_backend_pid()"
            " AND backend_type = 'client backend'"
        ).fetchone()[0]
    assert ended >= 1
    response = client.get("/v1/me", headers=headers)
    assert response.status_code == 200, response.get_data(as_text=True)


def test_a_database_server_out_of_reach_is_503_not_500(tmp_path):
    """Stopped, restarting or unreachable: the operator's to fix, after
    which the same request succeeds (storage.py), as a full disk on SQLite."""
    url = f"postgresql://nobody:hunter2@127.0.0.1:{free_port()}/nothing"
    app = create_app({**OFFLINE, "DATABASE_URL": url, "DATABASE_PATH": str(tmp_path / "no.db")})
    try:
        response = app.test_client().get("/v1/me", headers={"x-api-key": "apk_0123456789ab_x"})
    finally:
        database.close_all()
    assert response.status_code == 503, response.get_data(as_text=True)
    error = response.get_json()["error"]
    assert error["code"] == "STORAGE_UNAVAILABLE"
    assert "the database server cannot be reached" in error["message"]
    assert "hunter2" not in response.get_data(as_text=True)
    assert response.headers["Retry-After"] == "30"


def test_a_batch_holds_its_senders_identities_until_its_commit(pg_app):
    """A group commit's batch locks every identity it stores messages of,
    once each (now in one statement), a message's own hold after it takes
    nothing more, and the locks last to the commit."""
    from agent_platform.db import transaction
    from agent_platform.models import ContactIdentity

    senders = [("w", "whatsapp", "5511900000002"), ("w", "whatsapp", "5511900000001")]
    watcher = psycopg.connect(pg_app.config["DATABASE_URL"], autocommit=True)
    held = "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted"
    with transaction():
        ContactIdentity.hold_in_order(senders * 2)
        ContactIdentity.hold(*senders[0])
        assert watcher.execute(held).fetchone()[0] == 2
    assert watcher.execute(held).fetchone()[0] == 0
    watcher.close()
