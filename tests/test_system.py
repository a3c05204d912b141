import os

import pytest
from click.testing import CliRunner

from agent_platform.cli import main
from conftest import ON_POSTGRESQL, database_environ


def test_health_ok(client):
    response = client.get("/v1/health")
    assert response.status_code == 200
    body = response.get_json()
    assert body["status"] == "ok"
    assert body["timestamp"].endswith("Z")


def test_health_changes_nothing(client, app):
    from agent_platform.models import RuntimeFlag

    client.get("/v1/health")
    assert RuntimeFlag.select().count() == 0


def test_maintenance_from_the_cli_takes_effect_without_restart(client, app):
    environ = database_environ(app)
    result = CliRunner().invoke(main, ["maintenance", "on"], env=environ)
    assert result.exit_code == 0, result.output
    response = client.get("/v1/health")
    assert response.status_code == 503
    assert response.get_json()["status"] == "maintenance"
    CliRunner().invoke(main, ["maintenance", "off"], env=environ)
    assert client.get("/v1/health").status_code == 200


@pytest.fixture
def settings(tmp_path, request):
    values = {"DATABASE_PATH": str(tmp_path / "test.db")}
    values.update(getattr(request, "param", {}))
    return values


@pytest.mark.parametrize("settings", [{"MAINTENANCE": True}], indirect=True)
def test_maintenance_from_config(client):
    response = client.get("/v1/health")
    assert response.status_code == 503
    assert response.get_json()["status"] == "maintenance"


def test_degraded_when_the_database_fails(client, app, request):
    from agent_platform.db import database

    database.close()
    database.close_all()
    if ON_POSTGRESQL:  # the server refuses every new connection to it
        name = app.config["DATABASE_URL"].rsplit("/", 1)[1]
        server = request.getfixturevalue("postgres_server")
        server.execute(f"ALTER DATABASE {name} ALLOW_CONNECTIONS false")
    else:
        _spoil(app.config["DATABASE_PATH"])
    response = client.get("/v1/health")
    assert response.status_code == 503
    assert response.get_json()["status"] == "degraded"
    assert response.get_json()["reason"] == (
        "the database cannot take writes: the database server cannot be reached"
        if ON_POSTGRESQL
        else "the database does not answer"
    )


def _spoil(path):
    """The database file replaced by bytes SQLite cannot read."""
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(path + suffix):
            os.remove(path + suffix)
    with open(path, "wb") as handle:
        handle.write(b"this is not a database file at all" * 100)
