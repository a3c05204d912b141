"""The operator's commands on PostgreSQL (`database.url`), on the session's
throwaway server (tests/pg_server.py) whatever TEST_DATABASE_ENGINE says:
backup and restore with pg_dump and pg_restore, migrate and the other
commands, serve without SQLite's one-server lock, and /metrics."""

import json
import os
import shutil
import stat
import subprocess
import sys
import textwrap

import psycopg
import pytest
import requests
from click.testing import CliRunner
from prometheus_client.parser import text_string_to_metric_families

from agent_platform.cli import main
from conftest import new_postgres_database
from test_cli import free_port, serving


@pytest.fixture
def live(postgres_server):
    """The URL of a new, empty database on the server."""
    return new_postgres_database(postgres_server)


@pytest.fixture
def environ(live, tmp_path):
    # The key of stored secrets beside a configuration file, as docs/postgresql.md says.
    return {
        "AGENT_PLATFORM_DATABASE_URL": live,
        "AGENT_PLATFORM_SECRETS_KEY_FILE": str(tmp_path / "secrets.key"),
    }


@pytest.fixture
def cli(environ):
    def run(*args, code=0, env=None):
        result = CliRunner().invoke(main, list(args), env={**environ, **(env or {})})
        assert result.exit_code == code, result.output
        return result.output

    run("migrate")
    return run


def workspace_names(url):
    with psycopg.connect(url) as connection:
        rows = connection.execute("SELECT name FROM workspace ORDER BY name").fetchall()
    return [row[0] for row in rows]


def test_migrate_twice_then_the_commands_work(cli, tmp_path):
    assert "Nothing to apply" in cli("migrate")
    workspace = json.loads(cli("workspaces", "create", "--name", "Shop", "--json"))
    key = json.loads(
        cli("keys", "create", "--workspace", workspace["id"], "--name", "ci",
            "--scopes", "contacts:read", "--json")
    )  # fmt: skip
    assert key["key"].startswith("apk_") and key["scopes"] == ["contacts:read"]
    user = cli("users", "create", "--workspace", "Shop", "--email", "a@example.com",
               "--name", "Ann", "--role", "admin")  # fmt: skip
    assert "/app/welcome/" in user
    assert "a@example.com" in cli("users", "list", "--workspace", "Shop")
    assert not list(tmp_path.glob("*.db")) and not (tmp_path / "data").exists()


def test_the_admin_commands(cli):
    cli("workspaces", "create", "--name", "Shop")
    key = json.loads(cli("keys", "create", "--workspace", "Shop", "--name", "ci", "--scopes",
                         "all", "--json"))  # fmt: skip
    assert f"Revoked key {key['id']}" in cli("keys", "revoke", key["id"])
    assert json.loads(cli("keys", "list", "--json"))[0]["revoked_at"] is not None
    assert "Maintenance mode on" in cli("maintenance", "on")
    assert "Maintenance mode off" in cli("maintenance", "off")


def test_secrets_commands_and_a_wrong_key_keep_the_password_hidden(
    cli, live, postgres_server, tmp_path
):
    postgres_server.execute("CREATE ROLE sealer LOGIN PASSWORD 'hunter2' SUPERUSER")
    env = {"AGENT_PLATFORM_DATABASE_URL": live.replace("agent_platform_test@", "sealer:hunter2@")}
    workspace = json.loads(cli("workspaces", "create", "--name", "Shop", "--json", env=env))
    with psycopg.connect(live) as connection:  # a secret stored in plain text, as of old
        connection.execute(
            "INSERT INTO mcp_server (id, created_at, updated_at, workspace_id, name, url,"
            " transport, headers, is_active) VALUES ('s1', now(), now(), %s, 'tools',"
            " 'https://example.com/mcp', 'streamable_http', %s, true)",
            (workspace["id"], json.dumps({"Authorization": "plain"})),
        )
    cli("keys", "list", env=env)  # each command encrypts what is still plain
    with psycopg.connect(live) as connection:
        sealed = connection.execute("SELECT headers FROM mcp_server").fetchone()[0]
    assert json.loads(sealed)["Authorization"].startswith("enc:v1:")
    key_file = tmp_path / "secrets.key"
    before = key_file.read_text()
    cli("secrets", "rotate-key", env=env)
    assert key_file.read_text() != before
    cli("secrets", "reencrypt", env=env)
    with psycopg.connect(live) as connection:
        assert connection.execute("SELECT headers FROM mcp_server").fetchone()[0] != sealed
    output = cli("keys", "list", code=1, env={**env, "AGENT_PLATFORM_SECRETS_KEY": before})
    assert "cannot decrypt the secrets stored in postgresql://sealer@" in output
    assert "hunter2" not in output


def test_health_tells_a_database_that_takes_no_writes(cli, live, postgres_server):
    from agent_platform import create_app

    client = create_app({"DATABASE_URL": live}).test_client()
    assert client.get("/v1/health").get_json()["status"] == "ok"
    name = live.rsplit("/", 1)[1]
    postgres_server.execute(f"ALTER DATABASE {name} SET default_transaction_read_only = on")
    client = create_app({"DATABASE_URL": live}).test_client()  # new connections
    response = client.get("/v1/health")
    assert (response.status_code, response.get_json()["status"]) == (503, "degraded")
    assert response.get_json()["reason"].endswith("the database is read-only")


def test_an_unreachable_server_is_one_line(tmp_path):
    url = f"postgresql://nobody:hunter2@127.0.0.1:{free_port()}/nothing"
    result = CliRunner().invoke(main, ["keys", "list"], env={"AGENT_PLATFORM_DATABASE_URL": url})
    assert result.exit_code == 2, result.output
    (line,) = result.output.strip().splitlines()
    assert line.startswith("Error: cannot connect to the database postgresql://nobody@127.0.0.1:")
    assert "hunter2" not in result.output


def test_backup_restores_into_a_fresh_database(cli, live, postgres_server, tmp_path):
    cli("workspaces", "create", "--name", "kept")
    writer = psycopg.connect(live)  # a service in the middle of a write
    writer.execute(
        "INSERT INTO workspace (id, company_id, name, created_at, updated_at)"
        " SELECT 'uncommitted', company_id, 'in flight', now(), now() FROM workspace"
    )
    try:
        output = cli("backup", str(tmp_path / "copy.dump"))
    finally:
        writer.close()
    assert f"to {tmp_path / 'copy.dump'}" in output and "bytes)" in output
    assert stat.S_IMODE((tmp_path / "copy.dump").stat().st_mode) == 0o600
    assert not list(tmp_path.glob(".copy.dump*"))
    fresh = new_postgres_database(postgres_server)
    output = cli("restore", str(tmp_path / "copy.dump"), env={"AGENT_PLATFORM_DATABASE_URL": fresh})
    assert "Restored postgresql://" in output
    assert workspace_names(fresh) == ["kept"]
    with psycopg.connect(fresh) as connection:  # analyzed, for the planner
        analyzed = "SELECT count(*) FROM pg_stats WHERE schemaname = 'public' AND tablename = %s"
        assert connection.execute(analyzed, ("workspace",)).fetchone()[0] > 0
    assert "kept" in cli("workspaces", "list", env={"AGENT_PLATFORM_DATABASE_URL": fresh})


def test_restore_replaces_everything_newer(cli, live, tmp_path):
    cli("workspaces", "create", "--name", "old")
    cli("backup", str(tmp_path / "copy.dump"))
    cli("workspaces", "create", "--name", "newer")
    with psycopg.connect(live, autocommit=True) as connection:
        connection.execute("CREATE TABLE made_later (id INTEGER)")  # a newer migration's
    cli("restore", str(tmp_path / "copy.dump"))
    assert workspace_names(live) == ["old"]
    with psycopg.connect(live) as connection:
        assert connection.execute("SELECT to_regclass('made_later')").fetchone() == (None,)
    assert "Nothing to apply" in cli("migrate")


def test_backup_refuses_to_overwrite_unless_forced(cli, tmp_path):
    target = tmp_path / "copy.dump"
    target.write_text("precious")
    assert "already exists; pass --force" in cli("backup", str(target), code=1)
    assert target.read_text() == "precious"
    assert "no directory" in cli("backup", str(tmp_path / "missing" / "c.dump"), code=1)
    cli("backup", str(target), "--force")
    assert target.read_bytes().startswith(b"PGDMP")


def test_restore_refuses_while_another_connection_is_open(cli, live, tmp_path):
    cli("workspaces", "create", "--name", "live")
    cli("backup", str(tmp_path / "copy.dump"))
    cli("workspaces", "create", "--name", "newer")
    with psycopg.connect(live):  # as a running service holds one
        output = cli("restore", str(tmp_path / "copy.dump"), code=1)
    assert "is in use by 1 other connection(s) (is the service running?)" in output
    assert "stop it before restoring" in output
    assert workspace_names(live) == ["live", "newer"]


def test_restore_refuses_a_broken_or_missing_backup(cli, live, tmp_path):
    cli("workspaces", "create", "--name", "live")
    broken = tmp_path / "broken.dump"
    broken.write_bytes(b"not a backup" * 100)
    assert "is not a usable PostgreSQL backup" in cli("restore", str(broken), code=1)
    assert "no backup at" in cli("restore", str(tmp_path / "missing.dump"), code=1)
    assert workspace_names(live) == ["live"]


def test_a_restore_that_fails_half_way_changes_nothing(cli, live, tmp_path):
    """pg_restore stopping half-way (a disk error, say) while psql has run
    the first half of its script: psql is stopped before it commits."""
    cli("workspaces", "create", "--name", "old")
    cli("backup", str(tmp_path / "copy.dump"))
    cli("workspaces", "create", "--name", "newer")
    directory = tmp_path / "bin"
    directory.mkdir()
    real = shutil.which("pg_restore")
    fake_program(
        directory,
        "pg_restore",
        f"""
        import subprocess, sys
        if "--list" in sys.argv:
            sys.exit(subprocess.run([{real!r}, *sys.argv[1:]]).returncode)
        script = subprocess.run([{real!r}, *sys.argv[1:]], capture_output=True).stdout
        sys.stdout.buffer.write(script[: len(script) // 2])
        sys.stderr.write("pg_restore: error: could not read from input file: Input/output error\\n")
        sys.exit(1)
    """,
    )
    path = f"{directory}{os.pathsep}{os.environ['PATH']}"
    output = cli("restore", str(tmp_path / "copy.dump"), code=1, env={"PATH": path})
    assert "pg_restore failed on postgresql://" in output
    assert "could not read from input file: Input/output error" in output
    assert workspace_names(live) == ["newer", "old"]
    assert "Nothing to apply" in cli("migrate")


def test_a_missing_client_program_says_what_to_install(cli, tmp_path):
    empty = tmp_path / "bin"
    empty.mkdir()
    output = cli("backup", str(tmp_path / "copy.dump"), code=1, env={"PATH": str(empty)})
    assert output.strip() == (
        "Error: pg_dump is not installed: install PostgreSQL's client programs "
        "(Debian: apt install postgresql-client)"
    )
    assert not list(tmp_path.glob("*copy.dump*"))


def fake_program(directory, name, script):
    path = directory / name
    path.write_text(f"#!{sys.executable}\n" + textwrap.dedent(script))
    path.chmod(0o755)


def test_a_client_older_than_the_server_says_which_to_install(cli, tmp_path):
    # pg_dump's own words when the server is newer than it (PostgreSQL 15's).
    directory = tmp_path / "bin"
    directory.mkdir()
    fake_program(
        directory,
        "pg_dump",
        """
        import sys
        sys.stderr.write("pg_dump: error: server version: 17.2 (Debian 17.2-1); "
                         "pg_dump version: 15.18 (Debian 15.18-0+deb12u1)\\n"
                         "pg_dump: error: aborting because of server version mismatch\\n")
        sys.exit(1)
    """,
    )
    path = f"{directory}{os.pathsep}{os.environ['PATH']}"
    output = cli("backup", str(tmp_path / "copy.dump"), code=1, env={"PATH": path})
    assert "pg_dump 15 cannot work with the PostgreSQL 17 server" in output
    assert "(Debian: apt install postgresql-client-17)" in output
    assert not list(tmp_path.glob("*copy.dump*"))


def test_the_password_goes_in_the_environment_not_the_command_line(
    cli, live, postgres_server, tmp_path
):
    postgres_server.execute("CREATE ROLE keeper LOGIN PASSWORD 'hunter2' SUPERUSER")
    with_password = live.replace("agent_platform_test@", "keeper:hunter2@")
    directory, seen = tmp_path / "bin", tmp_path / "seen.json"
    directory.mkdir()
    real = subprocess.run(["which", "pg_dump"], capture_output=True, text=True).stdout.strip()
    fake_program(
        directory,
        "pg_dump",
        f"""
        import json, os, sys
        with open({str(seen)!r}, "w") as seen:
            json.dump({{"argv": sys.argv, "password": os.environ.get("PGPASSWORD")}}, seen)
        os.execv({real!r}, [{real!r}, *sys.argv[1:]])
    """,
    )
    path = f"{directory}{os.pathsep}{os.environ['PATH']}"
    env = {"PATH": path, "AGENT_PLATFORM_DATABASE_URL": with_password}
    output = cli("backup", str(tmp_path / "copy.dump"), env=env)
    assert "keeper@" in output and "hunter2" not in output
    called = json.loads(seen.read_text())
    assert called["password"] == "hunter2"
    assert "hunter2" not in " ".join(called["argv"]) and "user=keeper" in " ".join(called["argv"])


def test_two_serve_processes_on_one_database(live, tmp_path):
    """SQLite's one-server lock is no PostgreSQL matter: both serve."""
    ports = free_port(), free_port()
    environ = {
        **os.environ,
        "AGENT_PLATFORM_DATABASE_URL": live,
        "AGENT_PLATFORM_SECRETS_KEY_FILE": str(tmp_path / "secrets.key"),
    }
    with serving(["--port", str(ports[0])], environ, ports[0]) as (first, lines):
        assert lines[1].startswith("apk_")
        second = subprocess.Popen(
            [sys.executable, "app.py", "--port", str(ports[1])],
            cwd=os.path.dirname(os.path.dirname(__file__)), env=environ,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )  # fmt: skip
        try:
            answered = _answers(f"http://127.0.0.1:{ports[1]}")
            for base in (first, f"http://127.0.0.1:{ports[1]}"):
                health = requests.get(base + "/v1/health", timeout=5)
                assert (health.status_code, health.json()["status"]) == (200, "ok")
        finally:
            second.terminate()
            output = second.communicate(timeout=20)[0]
    assert answered, output
    assert "already serving" not in output
    assert f"Database: {live}" in output  # no password in this URL to hide
    assert not list(tmp_path.glob("*.lock"))


def _answers(base):
    import time

    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            return requests.get(base + "/openapi.json", timeout=1).status_code == 200
        except (requests.ConnectionError, requests.Timeout):
            time.sleep(0.1)
    return False


METRIC_NAMES = {
    "agent_platform_messages",
    "agent_platform_message_send_errors",
    "agent_platform_webhook_attempts",
    "agent_platform_webhook_deliveries",
    "agent_platform_reply_latency_seconds",
    "agent_platform_messages_to_send",
    "agent_platform_webhook_deliveries_due",
    "agent_platform_replies_pending",
    "agent_platform_handoffs_waiting",
    "agent_platform_database_size_bytes",
}


def test_the_operators_metrics_on_postgresql(live, tmp_path):
    """metrics.listen's GET /metrics: every name, the tallies the triggers
    keep, and pg_database_size as the database's size."""
    port = free_port()
    config = tmp_path / "agent.toml"
    config.write_text(f'[metrics]\nlisten = "127.0.0.1:{port}"\n')
    environ = {
        **os.environ,
        "AGENT_PLATFORM_DATABASE_URL": live,
        "AGENT_PLATFORM_CONFIG": str(config),
    }
    server_port = free_port()
    with serving(["--port", str(server_port)], environ, server_port):
        workspace = _a_message_stored(live)
        body = requests.get(f"http://127.0.0.1:{port}/metrics", timeout=5).text
    families = {family.name: family for family in text_string_to_metric_families(body)}
    assert set(families) == METRIC_NAMES
    (size,) = families["agent_platform_database_size_bytes"].samples
    with psycopg.connect(live) as connection:
        now = connection.execute("SELECT pg_database_size(current_database())").fetchone()[0]
    assert 1_000_000 < size.value <= now * 1.1
    counted = {
        (sample.labels["direction"], sample.labels["status"]): sample.value
        for sample in families["agent_platform_messages"].samples
        if sample.labels["workspace"] == workspace and sample.labels["channel"] == "none"
    }
    assert counted == {("inbound", "received"): 1, ("outbound", "queued"): 1}
    for name in ("messages_to_send", "handoffs_waiting"):
        (sample,) = families[f"agent_platform_{name}"].samples
        assert (sample.labels["workspace"], sample.value) == (workspace, 1)


def _a_message_stored(url):
    """A workspace's conversation, handed off to a person, with a message
    received and one queued, stored as another process would."""
    with psycopg.connect(url) as connection:
        workspace = connection.execute("SELECT id FROM workspace").fetchone()[0]
        connection.execute(
            "INSERT INTO conversation (id, created_at, updated_at, workspace_id, status)"
            " VALUES ('c1', now(), now(), %s, 'handoff')",
            (workspace,),
        )
        for number, direction, status in ((1, "inbound", "received"), (2, "outbound", "queued")):
            connection.execute(
                "INSERT INTO message (id, created_at, updated_at, conversation_id, direction,"
                " sender_type, type, text, status, metadata, edit_history, send_attempts)"
                " VALUES (%s, now(), now(), 'c1', %s, 'contact', 'text', 'hi', %s, '{}', '[]', 0)",
                (f"m{number}", direction, status),
            )
    return workspace
