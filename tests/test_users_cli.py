"""`agent-platform users create` and `users list`: the workspace by id or
exact name, a one-time sign-in link or a password typed twice, refusals;
and what `serve` says about the inbox."""

import json
import os
import shlex
import signal
import subprocess
import sys
import time

import pytest
import requests
from click.testing import CliRunner

from agent_platform.cli import main
from tests.test_cli import ROOT, free_port, serving


@pytest.fixture
def cli(tmp_path):
    environ = {"AGENT_PLATFORM_DATABASE_PATH": str(tmp_path / "cli.db")}

    def run(*args, code=0, input=None):
        result = CliRunner().invoke(main, list(args), env=environ, input=input)
        assert result.exit_code == code, result.output
        return result.output

    run("migrate")
    return run


@pytest.fixture
def workspace(cli):
    return json.loads(cli("workspaces", "create", "--name", "Shop", "--json").splitlines()[-1])


def create(cli, *extra, **kwargs):
    return cli("users", "create", "--email", "Ana@Example.com", "--name", "Ana", *extra, **kwargs)


def test_create_by_workspace_name_prints_a_one_time_link(cli, workspace):
    output = create(cli, "--workspace", "Shop", "--role", "admin")
    assert "Created user" in output and "ana@example.com, admin" in output
    link = output.strip().splitlines()[-1]
    assert link.startswith("http://127.0.0.1:8080/app/welcome/")


def test_create_by_workspace_id_with_json(cli, workspace):
    created = json.loads(create(cli, "--workspace", workspace["id"], "--json"))
    assert (created["workspace_id"], created["role"]) == (workspace["id"], "agent")
    assert created["invite_url"].startswith("http://127.0.0.1:8080/app/welcome/")
    assert "password_hash" not in created


def test_create_with_a_password_typed_twice(cli, workspace):
    output = create(
        cli, "--workspace", "Shop", "--password-prompt", input="a long password\na long password\n"
    )
    assert "They can sign in now" in output and "/app/welcome/" not in output
    assert "a long password" not in output  # never echoed
    listed = json.loads(cli("users", "list", "--workspace", "Shop", "--json"))
    assert listed[0]["has_password"] is True


def test_a_short_or_mistyped_password_is_refused(cli, workspace):
    short = create(cli, "--workspace", "Shop", "--password-prompt", input="short\n", code=1)
    assert "at least 10 characters" in short
    differ = create(cli, "--workspace", "Shop", "--password-prompt", code=1,
                    input="a long password\nanother password\n")  # fmt: skip
    assert "differ" in differ
    assert json.loads(cli("users", "list", "--workspace", "Shop", "--json")) == []


def test_an_unknown_workspace_says_how_to_find_them(cli, workspace):
    output = create(cli, "--workspace", "Nope", code=1)
    assert "Nope" in output and "agent-platform workspaces list" in output


def test_a_taken_email_or_bad_role_is_refused(cli, workspace):
    create(cli, "--workspace", "Shop")
    assert "already exists" in create(cli, "--workspace", "Shop", code=1)
    assert "owner" in create(cli, "--workspace", "Shop", "--role", "owner", code=2)


def test_list(cli, workspace):
    create(cli, "--workspace", "Shop", "--role", "admin")
    line = cli("users", "list", "--workspace", workspace["id"]).strip()
    assert "ana@example.com  Ana  admin  active  last_sign_in=None" in line


def test_serve_says_where_the_inbox_is_and_how_to_make_the_first_user(tmp_path):
    port = free_port()
    environ = {**os.environ, "AGENT_PLATFORM_DATABASE_PATH": str(tmp_path / "serve.db")}
    first_start = _serve_output(environ, port).splitlines()
    inbox = first_start.index(f"Inbox: http://127.0.0.1:{port}/app")
    assert first_start[inbox + 1] == "No one can sign in yet. Make the first user with:"
    assert "shown only once" in first_start[-4]  # the admin key comes last
    command = shlex.split(first_start[inbox + 2])
    assert command[:3] == ["agent-platform", "users", "create"]
    # The command printed works as it is.
    result = CliRunner().invoke(
        main, command[1:], env={"AGENT_PLATFORM_DATABASE_PATH": str(tmp_path / "serve.db")}
    )
    assert result.exit_code == 0, result.output
    assert "/app/welcome/" in result.output
    # Once someone can sign in, only the inbox's address is said.
    assert _serve_output(environ, port).splitlines() == [f"Inbox: http://127.0.0.1:{port}/app"]


def _serve_output(environ, port):
    """Everything `serve` prints on stdout, from its start to its stop."""
    process = subprocess.Popen(
        [sys.executable, "app.py", "--port", str(port)],
        cwd=ROOT, env=environ, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    try:
        _wait_until_served(f"http://127.0.0.1:{port}", process)
    finally:
        process.send_signal(signal.SIGTERM)
        # All read at once: a readline() first would fill the text wrapper's
        # buffer, which communicate(timeout=...) bypasses by reading the pipe
        # itself, losing the lines read along (as it once did in CI).
        output = process.communicate(timeout=20)[0]
    return output


def _wait_until_served(base, process):
    """Until `process` answers at `base`; when it stops, or does not answer
    within 60 s, the test fails saying so instead of going on."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert process.poll() is None, f"serve stopped with status {process.returncode}"
        try:
            requests.get(base + "/v1/health", timeout=1)
        except (requests.ConnectionError, requests.Timeout):
            time.sleep(0.1)
            continue
        return
    raise AssertionError(f"serve did not answer at {base} within 60 s")


def test_no_log_line_holds_a_sign_in_links_token(tmp_path):
    """A one-time link's token is in its path: the access log hides it."""
    port, started = free_port(), []
    database = str(tmp_path / "logged.db")
    environ = {**os.environ, "AGENT_PLATFORM_DATABASE_PATH": database,
               "AGENT_PLATFORM_SERVER_ACCESS_LOG": "true"}  # fmt: skip
    with (tmp_path / "errors.log").open("w") as stderr:
        with serving(["--port", str(port)], environ, port, started, stderr) as (base, _):
            result = CliRunner().invoke(
                main, ["users", "create", "--workspace", "Default workspace", "--email",
                       "ana@example.com", "--name", "Ana"],
                env={"AGENT_PLATFORM_DATABASE_PATH": database},
            )  # fmt: skip
            link = result.output.strip().splitlines()[-1]
            token = link.rsplit("/", 1)[1]
            assert requests.get(base + f"/app/welcome/{token}", timeout=5).status_code == 200
            started[0].terminate()
            logged = started[0].communicate(timeout=30)[0] + (tmp_path / "errors.log").read_text()
    assert token not in logged
    assert "/app/welcome/[redacted]" in logged
