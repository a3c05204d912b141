"""CLI: --version, listing workspaces and keys, the database a command works
on (anchored at the configuration file, never created by accident), a busy
port, the derived public URL."""

import json
import os
import re
import socket
import subprocess
import sys

import pytest
from click.testing import CliRunner

from agent_platform import __version__
from agent_platform.cli import main
from agent_platform.config import load_config
from tests.test_cli import ROOT


@pytest.fixture
def cli(tmp_path):
    environ = {"AGENT_PLATFORM_DATABASE_PATH": str(tmp_path / "cli.db")}

    def run(*args, code=0):
        result = CliRunner().invoke(main, list(args), env=environ)
        assert result.exit_code == code, result.output
        return result.output if code else result.stdout

    run("migrate")
    return run


def test_version_is_the_package_version():
    result = CliRunner().invoke(main, ["--version"])
    assert result.exit_code == 0
    assert result.output.strip() == f"agent-platform, version {__version__}"
    # The newest version the CHANGELOG gives (past "Unreleased") is the package's.
    released = re.findall(r"^## \[(\d+\.\d+\.\d+)\]", (ROOT / "CHANGELOG.md").read_text(), re.M)
    assert released[0] == __version__


def test_workspaces_list(cli):
    assert json.loads(cli("workspaces", "list", "--json")) == []
    first = json.loads(cli("workspaces", "create", "--name", "One", "--json"))
    second = json.loads(cli("workspaces", "create", "--name", "Two", "--json"))
    listed = json.loads(cli("workspaces", "list", "--json"))
    assert [row["id"] for row in listed] == [first["id"], second["id"]]
    assert listed[0]["name"] == "One" and listed[0]["created_at"].endswith("Z")
    text = cli("workspaces", "list")
    assert f"{first['id']}  One  company={first['company_id']}" in text


def test_keys_list_by_workspace_and_revoke(cli):
    one, two = (json.loads(cli("workspaces", "create", "--name", n, "--json")) for n in "AB")
    key_a = json.loads(cli("keys", "create", "--workspace", one["id"], "--name", "a",
                           "--scopes", "all", "--json"))  # fmt: skip
    key_b = json.loads(cli("keys", "create", "--workspace", two["id"], "--name", "b",
                           "--scopes", "agents:read", "--json"))  # fmt: skip
    only_b = json.loads(cli("keys", "list", "--workspace", two["id"], "--json"))
    assert [row["id"] for row in only_b] == [key_b["id"]]
    assert len(json.loads(cli("keys", "list", "--json"))) == 2
    assert "does not exist" in cli("keys", "list", "--workspace", "nope", code=1)
    assert f"Revoked key {key_a['id']}" in cli("keys", "revoke", key_a["id"])
    listed = json.loads(cli("keys", "list", "--workspace", one["id"], "--json"))
    assert listed[0]["revoked_at"] is not None
    assert "revoked" in cli("keys", "list", "--workspace", one["id"])
    assert cli("keys", "revoke", "nope", code=1)


def test_commands_refuse_a_database_that_does_not_exist(tmp_path):
    missing = tmp_path / "nothing-here.db"
    environ = {"AGENT_PLATFORM_DATABASE_PATH": str(missing)}
    commands = [
        ["workspaces", "list"],
        ["workspaces", "create", "--name", "x"],
        ["keys", "list"],
        ["maintenance", "on"],
        ["backup", str(tmp_path / "b.db")],
        ["secrets", "rotate-key"],
    ]
    for command in commands:
        result = CliRunner().invoke(main, command, env=environ)
        assert result.exit_code == 1, command
        assert f"no database at {missing}: run `agent-platform migrate` first" in result.output
    assert not missing.exists() and list(tmp_path.iterdir()) == []


def test_a_relative_database_path_is_taken_from_the_config_files_directory(tmp_path):
    config_dir, elsewhere = tmp_path / "etc", tmp_path / "elsewhere"
    config_dir.mkdir()
    elsewhere.mkdir()
    config = config_dir / "config.toml"
    config.write_text('[database]\npath = "db/agent.db"\n\n[media]\ndir = "files"\n')
    loaded = load_config(str(config), environ={})
    assert loaded["DATABASE_PATH"] == str(config_dir / "db" / "agent.db")
    assert loaded["MEDIA_DIR"] == str(config_dir / "files")
    assert load_config(environ={})["DATABASE_PATH"] == "data/agent_platform.db"  # cwd's
    for directory in (elsewhere, tmp_path):  # the same database from anywhere
        result = run_cli(["migrate", "--config", str(config)], cwd=directory)
        assert result.returncode == 0, result.stderr
    assert "Nothing to apply" in result.stdout
    assert (config_dir / "db" / "agent.db").is_file()
    assert not (elsewhere / "db").exists() and not (tmp_path / "db").exists()
    listed = run_cli(["workspaces", "list", "--json", "--config", "etc/config.toml"], tmp_path)
    assert listed.returncode == 0 and json.loads(listed.stdout) == []


def run_cli(arguments, cwd):
    code = "import sys; from agent_platform.cli import main; main(sys.argv[1:])"
    environ = {k: v for k, v in os.environ.items() if not k.startswith("AGENT_PLATFORM_")}
    environ["PYTHONPATH"] = str(ROOT / "platform")
    return subprocess.run(
        [sys.executable, "-c", code, *arguments],
        cwd=cwd, env=environ, capture_output=True, text=True, timeout=60,
    )  # fmt: skip


@pytest.fixture
def busy_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield sock.getsockname()[1]


def busy_message(port):
    other = port + 1
    return (
        f"port {port} is in use; choose another: --port {other}, server.port in the "
        f"configuration file, AGENT_PLATFORM_SERVER_PORT={other}, or `make run PORT={other}`"
    )


def test_serve_on_a_busy_port_says_so_before_it_creates_anything(tmp_path, busy_port):
    """Status 2 (a configuration to change), one line naming the port and
    the ways to choose another, and nothing made on disk: no data directory,
    no database, no key of stored secrets."""
    environ = {"AGENT_PLATFORM_DATABASE_PATH": str(tmp_path / "data" / "s.db")}
    for extra in ([], ["--dev"]):
        result = CliRunner().invoke(main, ["serve", "--port", str(busy_port), *extra], env=environ)
        assert result.exit_code == 2
        assert f"Error: {busy_message(busy_port)}" in result.output
        assert "Traceback" not in result.output and "Admin API key" not in result.output
        assert list(tmp_path.iterdir()) == []


def test_the_gunicorn_master_on_a_busy_port_says_so(tmp_path, busy_port):
    environ = {
        **os.environ,
        "PYTHONPATH": str(ROOT / "platform"),
        "AGENT_PLATFORM_DATABASE_PATH": str(tmp_path / "s.db"),
        "AGENT_PLATFORM_SERVER_PORT": str(busy_port),
    }
    result = subprocess.run(
        [sys.executable, "-m", "agent_platform.server"],
        env=environ, capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    assert result.returncode == 2
    assert result.stderr.strip() == f"Error: {busy_message(busy_port)}"


def test_public_url_follows_host_and_port_unless_set():
    assert load_config(environ={})["SERVER_PUBLIC_URL"] == "http://127.0.0.1:8080"
    moved = load_config(overrides={"SERVER_PORT": 9123}, environ={})
    assert moved["SERVER_PUBLIC_URL"] == "http://127.0.0.1:9123"
    everywhere = load_config(overrides={"SERVER_HOST": "0.0.0.0", "SERVER_PORT": 81}, environ={})
    assert everywhere["SERVER_PUBLIC_URL"] == "http://127.0.0.1:81"
    assert load_config(overrides={"SERVER_HOST": "::1"}, environ={})["SERVER_PUBLIC_URL"] == (
        "http://[::1]:8080"
    )
    explicit = {"AGENT_PLATFORM_SERVER_PUBLIC_URL": "https://agents.example.com"}
    pinned = load_config(overrides={"SERVER_PORT": 9123}, environ=explicit)
    assert pinned["SERVER_PUBLIC_URL"] == "https://agents.example.com"
