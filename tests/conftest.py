"""Fixtures: an app on a temporary database file, keys, and an API client.

TEST_DATABASE_ENGINE=postgresql runs the tests on PostgreSQL instead (not
an AGENT_PLATFORM_ variable: those are the service's settings):
a throwaway server for the session (tests/pg_server.py), each test's
database a copy of one migrated once (CREATE DATABASE ... TEMPLATE).
"""

import itertools
import os
import shutil
import tempfile
from pathlib import Path

import pytest

import agent_platform
from agent_platform import create_app
from agent_platform.db import database
from agent_platform.migrate import apply_migrations
from agent_platform.services import keys
from pg_server import PostgresServer
from telegram_stub import TelegramStub

ENGINE = os.environ.get("TEST_DATABASE_ENGINE", "sqlite")
if ENGINE not in ("sqlite", "postgresql"):
    raise ValueError(f"TEST_DATABASE_ENGINE={ENGINE!r}: sqlite or postgresql")
ON_POSTGRESQL = ENGINE == "postgresql"

# The services tests start as processes (serve, gunicorn, the CLI) import the
# package from where this process did: under `make mutate` that is the
# mutated copy, whose mutant must run in them too.
os.environ["PYTHONPATH"] = os.pathsep.join(
    filter(None, [str(Path(agent_platform.__file__).parents[1]), os.environ.get("PYTHONPATH")])
)


def pytest_runtest_setup(item):
    """A test marked sqlite_only(reason=...) checks SQLite itself: on
    PostgreSQL it is reported as skipped, with its reason."""
    marker = item.get_closest_marker("sqlite_only")
    if marker is not None and ON_POSTGRESQL:
        pytest.skip(f"SQLite only: {marker.kwargs.get('reason', 'no reason given')}")


@pytest.fixture(autouse=True, scope="session")
def _no_mutmut_stats_in_children():
    """mutmut's first pass ("stats") records which tests reach which function
    in this process; a child would try too, and fail where it finds no
    pyproject.toml. The trampoline here keeps its own copy of the setting."""
    if os.environ.get("MUTANT_UNDER_TEST") != "stats":
        yield
        return
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv("MUTANT_UNDER_TEST")
        yield


@pytest.fixture
def settings(tmp_path):
    """Override to change configuration for a test module."""
    return {"DATABASE_PATH": str(tmp_path / "test.db")}


# No test may reach the internet: outbound bases default to a closed loopback
# port; tests that talk to a stand-in set their own.
OFFLINE = {
    "WHATSAPP_GRAPH_API_BASE": "http://127.0.0.1:9/unreachable",
    "TELEGRAM_API_BASE": "http://127.0.0.1:9/unreachable",
    "REPLIES_OPENAI_BASE_URL": "http://127.0.0.1:9/unreachable",
}


@pytest.fixture(scope="session")
def postgres_server():
    """A PostgreSQL server of the session's own, stopped at its end."""
    server = PostgresServer().start()
    yield server
    server.stop()


_database_numbers = itertools.count(1)


def new_postgres_database(server, template=None):
    """The URL of a new, empty database on `server` (a copy of `template`'s)."""
    name = f"t_{next(_database_numbers)}"
    server.execute(f"CREATE DATABASE {name}" + (f" TEMPLATE {template}" if template else ""))
    return server.url(name)


def _apply_migrations_to(settings):
    # A key of stored secrets of its own: by default it would be made beside
    # database.path's default, in the checkout (data/secrets.key).
    with tempfile.TemporaryDirectory(prefix="agent-platform-key-") as key_directory:
        key_file = str(Path(key_directory) / "secrets.key")
        with create_app({**OFFLINE, "SECRETS_KEY_FILE": key_file, **settings}).app_context():
            apply_migrations()
    database.close()
    database.close_all()  # and WAL checkpointed: the one file is the whole database


@pytest.fixture(scope="session")
def migrated_database(tmp_path_factory, request):
    """A database with every migration applied, made once: each test's
    database starts as a copy (the migrations took a fifth of a test's setup).
    A file on SQLite; on PostgreSQL the name of a database on the server."""
    if ON_POSTGRESQL:
        server = request.getfixturevalue("postgres_server")
        server.execute("CREATE DATABASE migrated")
        _apply_migrations_to({"DATABASE_URL": server.url("migrated")})
        return "migrated"
    path = tmp_path_factory.mktemp("migrated") / "migrated.db"
    _apply_migrations_to({"DATABASE_PATH": str(path)})
    return path


@pytest.fixture
def database_url(request, migrated_database):
    """On PostgreSQL, the URL of this test's own migrated database; else None."""
    if not ON_POSTGRESQL:
        return None
    return new_postgres_database(request.getfixturevalue("postgres_server"), migrated_database)


@pytest.fixture
def app(settings, migrated_database, database_url):
    path = Path(settings.get("DATABASE_PATH", ""))
    if database_url and "DATABASE_URL" not in settings:
        settings = {**settings, "DATABASE_URL": database_url}
    elif path.name and not path.exists() and path.parent.is_dir():
        shutil.copyfile(migrated_database, path)  # still migrated below: any left apply
    # WhatsApp's 24-hour window is checked by the tests about it
    # (test_whatsapp_templates.py); the others send into new conversations.
    app = create_app({**OFFLINE, "WHATSAPP_CHECK_SERVICE_WINDOW": False, **settings})
    with app.app_context():
        apply_migrations()
        yield app
    database.close()
    database.close_all()


@pytest.fixture
def bot_api():
    """The Telegram Bot API stand-in on loopback (tests/telegram_stub.py)."""
    stub = TelegramStub()
    yield stub
    stub.close()


@pytest.fixture
def client(app):
    return app.test_client()


@pytest.fixture
def runner(app):
    return app.test_cli_runner()


class Caller:
    """A test client bound to one API key: `caller.get("/v1/me")`."""

    def __init__(self, client, raw_key, workspace_id):
        self.client = client
        self.key = raw_key
        self.workspace_id = workspace_id

    def headers(self, extra=None):
        return {"x-api-key": self.key, **(extra or {})}

    def request(self, method, path, headers=None, **kwargs):
        return self.client.open(path, method=method, headers=self.headers(headers), **kwargs)

    def get(self, path, **kwargs):
        return self.request("GET", path, **kwargs)

    def post(self, path, **kwargs):
        return self.request("POST", path, **kwargs)

    def put(self, path, **kwargs):
        return self.request("PUT", path, **kwargs)

    def patch(self, path, **kwargs):
        return self.request("PATCH", path, **kwargs)

    def delete(self, path, **kwargs):
        return self.request("DELETE", path, **kwargs)


@pytest.fixture
def make_caller(app, client):
    """make_caller(scopes="all", workspace_id=None) -> Caller in a (new) workspace."""

    def make(scopes="all", workspace_id=None, name="test key"):
        if workspace_id is None:
            workspace_id = keys.create_workspace("Workspace").id
        wanted = keys.all_scopes() if scopes == "all" else list(scopes)
        _, raw_key = keys.create_key(workspace_id, name, wanted)
        return Caller(client, raw_key, workspace_id)

    return make


@pytest.fixture
def caller(make_caller):
    """A key with every scope, in its own workspace."""
    return make_caller()


@pytest.fixture
def other(make_caller):
    """A key with every scope in a second workspace, for isolation tests."""
    return make_caller()


def database_environ(app):
    """The AGENT_PLATFORM_ variables that name `app`'s database, for a CLI
    command run on it (its server's, when the suite runs on PostgreSQL)."""
    environ = {"AGENT_PLATFORM_DATABASE_PATH": app.config["DATABASE_PATH"]}
    if app.config["DATABASE_URL"]:
        environ["AGENT_PLATFORM_DATABASE_URL"] = app.config["DATABASE_URL"]
    return environ


def assert_error(response, status, code, mentions=None):
    """The response is the shared error body with this status and code."""
    assert response.status_code == status, response.get_data(as_text=True)
    body = response.get_json()
    assert set(body) == {"error"}
    assert set(body["error"]) == {"code", "message", "status"}
    assert body["error"]["status"] == status
    assert body["error"]["code"] == code
    assert body["error"]["message"]
    if mentions:
        assert mentions in body["error"]["message"]
    return body["error"]
