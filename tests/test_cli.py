import contextlib
import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests
from click.testing import CliRunner

from agent_platform.cli import main
from agent_platform.scopes import SCOPES

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def cli(tmp_path):
    environ = {"AGENT_PLATFORM_DATABASE_PATH": str(tmp_path / "cli.db")}

    def run(*args):
        result = CliRunner().invoke(main, list(args), env=environ)
        assert result.exit_code == 0, result.output
        return result.stdout

    return run


def test_migrate_twice_is_a_no_op(cli):
    assert "0001_foundation.sql" in cli("migrate")  # printed on stdout by `migrate` itself
    assert "Nothing to apply" in cli("migrate")


def test_workspace_and_key_lifecycle(cli):
    cli("migrate")
    workspace = json.loads(
        cli("workspaces", "create", "--name", "Shop", "--company", "ACME", "--json")
    )
    assert workspace["name"] == "Shop" and workspace["id"] and workspace["company_id"]
    created = json.loads(
        cli("keys", "create", "--workspace", workspace["id"], "--name", "ci",
            "--scopes", "contacts:read,agents:read", "--json")
    )  # fmt: skip
    assert created["key"].startswith("apk_")
    assert created["scopes"] == ["agents:read", "contacts:read"]
    listed = json.loads(cli("keys", "list", "--json"))
    assert [row["id"] for row in listed] == [created["id"]]
    assert "key" not in listed[0] and listed[0]["revoked_at"] is None
    assert created["key"] not in cli("keys", "list")
    cli("keys", "revoke", created["id"])
    assert json.loads(cli("keys", "list", "--json"))[0]["revoked_at"] is not None


def test_all_scopes_and_bad_input(cli, tmp_path):
    cli("migrate")
    workspace = json.loads(cli("workspaces", "create", "--name", "W", "--json"))
    created = json.loads(
        cli(
            "keys",
            "create",
            "--workspace",
            workspace["id"],
            "--name",
            "a",
            "--scopes",
            "all",
            "--json",
        )
    )
    assert created["scopes"] == sorted(SCOPES)
    environ = {"AGENT_PLATFORM_DATABASE_PATH": str(tmp_path / "cli.db")}
    bad_scope = CliRunner().invoke(
        main, ["keys", "create", "--workspace", workspace["id"], "--name", "b", "--scopes", "x:y"],
        env=environ,
    )  # fmt: skip
    assert bad_scope.exit_code != 0 and "x:y" in bad_scope.output
    no_workspace = CliRunner().invoke(
        main,
        ["keys", "create", "--workspace", "nope", "--name", "b", "--scopes", "all"],
        env=environ,
    )
    assert no_workspace.exit_code != 0 and "nope" in no_workspace.output
    unknown_key = CliRunner().invoke(main, ["keys", "revoke", "nope"], env=environ)
    assert unknown_key.exit_code != 0


@pytest.mark.parametrize(
    "name, says",
    [
        ("a\x00b", "control characters"),
        ("two\nlines", "control characters"),
        ("   ", "only spaces"),
        ("", "1 to 200 characters"),
        ("x" * 201, "1 to 200 characters"),
        ("caf\udce9", "valid Unicode"),  # a Latin-1 byte in a UTF-8 terminal's argv
    ],
)
def test_names_from_the_command_line_follow_the_api_rules(cli, tmp_path, name, says):
    cli("migrate")
    workspace = json.loads(cli("workspaces", "create", "--name", "W", "--json"))
    environ = {"AGENT_PLATFORM_DATABASE_PATH": str(tmp_path / "cli.db")}
    attempts = [
        ["workspaces", "create", "--name", name],
        ["workspaces", "create", "--name", "Shop", "--company", name],
        ["keys", "create", "--workspace", workspace["id"], "--name", name, "--scopes", "all"],
    ]
    for arguments in attempts:
        result = CliRunner().invoke(main, arguments, env=environ)
        assert result.exit_code == 2, result.output
        assert "Invalid value for '--" in result.output and says in result.output
        assert "Traceback" not in result.output
    assert [row["name"] for row in json.loads(cli("workspaces", "list", "--json"))] == ["W"]
    assert json.loads(cli("keys", "list", "--json")) == []


def test_config_option_on_every_command(tmp_path):
    config = tmp_path / "c.toml"
    config.write_text(f'[database]\npath = "{tmp_path / "from-file.db"}"\n')
    result = CliRunner().invoke(main, ["migrate", "--config", str(config)], env={})
    assert result.exit_code == 0, result.output
    assert (tmp_path / "from-file.db").exists()
    config.write_text("[database]\npaht = 'x'\n")
    result = CliRunner().invoke(main, ["migrate", "--config", str(config)])
    assert result.exit_code == 2 and "database.paht" in result.output


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def serving(arguments, environ, port, started=None, stderr=subprocess.DEVNULL):
    """`python app.py <arguments>` (= `agent-platform serve`) for real on a
    new database, until it answers on `port`; yields the base URL and the
    last two lines it prints first: the admin key's heading and the key (and
    appends the process, gunicorn's master, to `started` if given)."""
    process = subprocess.Popen(
        [sys.executable, "app.py", *arguments],
        cwd=ROOT,
        env=environ,
        stdout=subprocess.PIPE,
        stderr=stderr,
        text=True,
    )
    if started is not None:
        started.append(process)
    try:
        lines = until_the_key(process.stdout)
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                requests.get(base + "/v1/health", timeout=1)
                break
            except (requests.ConnectionError, requests.Timeout):
                # Refused before gunicorn listens; held while its worker builds the app.
                time.sleep(0.1)
        yield base, lines
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=20)
        process.stdout.close()


def until_the_key(output):
    """The lines of `output` up to the admin key's: [heading, key]."""
    lines = ["", ""]
    while not lines[-1].startswith("apk_") and (line := output.readline()):
        lines.append(line)
    return lines[-2:]


@pytest.fixture
def server(tmp_path):
    """`agent-platform serve` (gunicorn) on a free loopback port."""
    port = free_port()
    environ = {
        **os.environ,
        "AGENT_PLATFORM_DATABASE_PATH": str(tmp_path / "serve.db"),
        "AGENT_PLATFORM_LIMITS_MAX_BODY_BYTES": "2000",
    }
    with serving(["--port", str(port)], environ, port) as (base, lines):
        yield base, lines, port


def test_serve_takes_its_configuration_file_into_the_server(tmp_path):
    # The gunicorn master (port) and the worker's app (body limit, database)
    # both read the file `serve` was given.
    port, database = free_port(), tmp_path / "from-file.db"
    config = tmp_path / "agent.toml"
    config.write_text(
        f'[server]\nport = {port}\n\n[database]\npath = "{database}"\n\n'
        "[limits]\nmax_body_bytes = 1000\n"
    )
    with serving(["--config", str(config)], dict(os.environ), port) as (base, lines):
        headers = {"x-api-key": lines[1].strip(), "Content-Type": "application/json"}
        assert requests.get(base + "/v1/me", headers=headers, timeout=5).status_code == 200
        too_large = requests.post(
            base + "/v1/custom-fields", data=b"x" * 1500, headers=headers, timeout=5
        )
        assert too_large.status_code == 413
        assert "1000 bytes" in too_large.json()["error"]["message"]
    assert database.exists()


def test_serve_prints_the_first_admin_key_once_and_serves(server, tmp_path):
    base, lines, _ = server
    assert "shown only once" in lines[0]
    key = lines[1].strip()
    assert key.startswith("apk_")
    me = requests.get(base + "/v1/me", headers={"x-api-key": key}, timeout=5)
    assert me.status_code == 200
    assert me.json()["data"]["key_name"] == "admin"
    assert me.json()["data"]["scopes"] == sorted(SCOPES)
    assert requests.get(base + "/v1/health", timeout=5).json()["status"] == "ok"


def test_chunked_body_over_the_limit_through_the_real_server(server):
    base, lines, port = server
    key = lines[1].strip()
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    chunks = (b'{"name": "' + b"x" * 500 + b'"' for _ in range(8))
    connection.request(
        "POST", "/v1/custom-fields", body=chunks, encode_chunked=True,
        headers={"x-api-key": key, "Content-Type": "application/json"},
    )  # fmt: skip
    response = connection.getresponse()
    body = json.loads(response.read())
    connection.close()
    assert response.status == 413
    assert body["error"]["code"] == "PAYLOAD_TOO_LARGE"


def test_a_second_start_prints_no_key(tmp_path):
    environ = {"AGENT_PLATFORM_DATABASE_PATH": str(tmp_path / "again.db")}
    from agent_platform import create_app
    from agent_platform.migrate import apply_migrations
    from agent_platform.services.keys import ensure_first_admin_key

    app = create_app({"DATABASE_PATH": environ["AGENT_PLATFORM_DATABASE_PATH"]})
    with app.app_context():
        apply_migrations()
        assert ensure_first_admin_key().startswith("apk_")
        assert ensure_first_admin_key() is None


def test_two_services_of_one_user_open_no_gunicorn_control_socket(tmp_path):
    """gunicorn's control socket sits at one path per user: two services
    would take it from each other, so serve opens none."""
    home = tmp_path / "home"
    home.mkdir()
    ports = free_port(), free_port()
    environs = [
        {
            **os.environ, "HOME": str(home), "XDG_RUNTIME_DIR": "",
            "AGENT_PLATFORM_DATABASE_PATH": str(tmp_path / f"{port}.db"),
        }
        for port in ports
    ]  # fmt: skip
    with serving(["--port", str(ports[0])], environs[0], ports[0]) as (first, _):
        with serving(["--port", str(ports[1])], environs[1], ports[1]) as (second, _):
            for base in (first, second):
                assert requests.get(base + "/v1/health", timeout=5).status_code == 200
            assert list(home.rglob("*")) == []
