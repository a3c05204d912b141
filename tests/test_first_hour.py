"""What a newcomer meets in their first hour, through the installed
`agent-platform` command (a subprocess, as a person runs it) and the real
served process: a new database is announced where it is made, the first
admin key comes last and alone, workspaces go by name, scopes are listed
when one is wrong, `simulate` says at once when a person holds the
conversation, `make run` takes a port and ./config.toml, and what the
service writes is its user's alone."""

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import requests

from agent_platform.scopes import SCOPES
from test_cli import free_port

ROOT = Path(__file__).resolve().parents[1]
COMMAND = str(Path(sys.executable).parent / "agent-platform")
ALL = ", ".join(sorted(SCOPES))
NEW = "Created a new, empty database at {} (no database was there)"


def run(environ, *arguments, cwd=None):
    """The installed `agent-platform` (this checkout's code first on the path)."""
    return subprocess.run(
        [COMMAND, *arguments],
        cwd=cwd or ROOT, env={**os.environ, **environ, "PYTHONPATH": str(ROOT / "platform")},
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip


def test_a_new_database_is_announced_where_it_is_made(tmp_path):
    """A typo in database.path makes a new database: said in one line with
    its absolute path; the next run says nothing; commands other than serve
    and migrate make none."""
    environ = {"AGENT_PLATFORM_DATABASE_PATH": "data/shpo.db"}  # relative: from cwd
    first = run(environ, "migrate", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    assert NEW.format(tmp_path / "data" / "shpo.db") in first.stderr.splitlines()
    again = run(environ, "migrate", cwd=tmp_path)
    assert again.returncode == 0 and "Created a new" not in again.stderr
    for command in (["keys", "list"], ["workspaces", "list"], ["backup", "b.db"]):
        refused = run({"AGENT_PLATFORM_DATABASE_PATH": "data/shop.db"}, *command, cwd=tmp_path)
        assert refused.returncode == 1, refused
        assert f"no database at {tmp_path / 'data' / 'shop.db'}" in refused.stderr
        assert not (tmp_path / "data" / "shop.db").exists()


def test_the_first_admin_key_comes_last_and_alone(tmp_path):
    """After the server listens and the jobs have logged their start, the
    key stands alone on its line, followed by how to make another."""
    port = free_port()
    environ = {
        **os.environ,
        "PYTHONPATH": str(ROOT / "platform"),
        "AGENT_PLATFORM_DATABASE_PATH": str(tmp_path / "first.db"),
    }
    old_umask = os.umask(0o022)  # the usual one, inherited by the service
    try:
        process = subprocess.Popen(
            [COMMAND, "serve", "--port", str(port)], cwd=tmp_path, env=environ,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )  # fmt: skip
    finally:
        os.umask(old_umask)
    try:
        lines = []
        while not (lines and lines[-1].startswith("  agent-platform keys create")):
            line = process.stdout.readline()
            assert line, "".join(lines)
            lines.append(line.rstrip("\n"))
        key = lines[-3]
        me = requests.get(f"http://127.0.0.1:{port}/v1/me", headers={"x-api-key": key}, timeout=5)
        assert me.status_code == 200 and me.json()["data"]["key_name"] == "admin"
        for name in (
            "first.db",
            "first.db-wal",
            "first.db-shm",
            "first.db.serve.lock",
            "secrets.key",
        ):
            assert mode(tmp_path / name) == 0o600, name  # under the usual umask, 022
    finally:
        process.terminate()
        process.wait(timeout=20)
        process.stdout.close()
    assert key.startswith("apk_") and key == key.strip()
    assert lines[-4] == "Created the default workspace. Admin API key (shown only once):"
    assert lines[-2:] == [
        "Make another key any time with:",
        '  agent-platform keys create --workspace "Default workspace" --name NAME --scopes all',
    ]
    assert lines[-5] == ""
    told = "\n".join(lines[:-5])
    assert "Listening at" in told and "Scheduler started" in told
    assert NEW.format(tmp_path / "first.db") in lines


def test_keys_are_made_for_a_workspace_named_and_scopes_are_listed(tmp_path):
    environ = {"AGENT_PLATFORM_DATABASE_PATH": str(tmp_path / "k.db")}
    assert run(environ, "migrate").returncode == 0
    for name in ("Shop", "Twin", "Twin"):
        assert run(environ, "workspaces", "create", "--name", name).returncode == 0
    shop = next(w for w in json.loads(run(environ, "workspaces", "list", "--json").stdout))
    made = run(environ, "keys", "create", "--workspace", "Shop", "--name", "ci",
               "--scopes", "contacts:read", "--json")  # fmt: skip
    assert made.returncode == 0, made.stderr
    assert json.loads(made.stdout)["workspace_id"] == shop["id"]
    twins = [w["id"] for w in json.loads(run(environ, "workspaces", "list", "--json").stdout)]
    twice = run(environ, "keys", "create", "--workspace", "Twin", "--name", "ci", "--scopes", "all")
    assert twice.returncode == 1
    assert f"2 workspaces have that name; give one of their ids: {twins[1]}, {twins[2]}." in (
        twice.stderr
    )
    unknown = run(environ, "keys", "create", "--workspace", "Nowhere", "--name", "ci",
                  "--scopes", "all")  # fmt: skip
    assert unknown.returncode == 1
    assert "Nowhere: no workspace has that id or name" in unknown.stderr
    wrong = run(environ, "keys", "create", "--workspace", "Shop", "--name", "ci",
                "--scopes", "contacts:reed")  # fmt: skip
    assert wrong.returncode == 1
    assert f"unknown scopes: contacts:reed; the scopes are: {ALL}" in wrong.stderr
    keys = json.loads(run(environ, "keys", "list", "--json").stdout)
    assert len(keys) == 1  # the refusals made none


def test_the_api_lists_the_scopes_when_one_is_unknown(caller):
    refused = caller.post(
        "/workspaces/permissions", json={"name": "ci", "scopes": ["contacts:reed"]}
    )
    assert refused.status_code == 400
    message = refused.get_json()["error"]["message"]
    assert "contacts:reed" in message and ", ".join(sorted(SCOPES)) in message


def test_make_run_takes_a_port_and_the_config_file_beside_it(tmp_path):
    shutil.copy(ROOT / "Makefile", tmp_path)
    (tmp_path / "pyproject.toml").touch()  # a checkout of the Makefile alone

    def dry_run(*variables):
        done = subprocess.run(
            ["make", "-n", "run", *variables],
            cwd=tmp_path, capture_output=True, text=True, timeout=30, check=True,
        )  # fmt: skip
        return next(line for line in done.stdout.splitlines() if " serve" in line).split()[1:]

    assert dry_run() == ["serve"]
    assert dry_run("PORT=8081") == ["serve", "--port", "8081"]
    (tmp_path / "config.toml").write_text("[server]\nport = 8090\n")
    assert dry_run() == ["serve", "--config", "config.toml"]
    assert dry_run("CONFIG=/etc/x.toml") == ["serve", "--config", "/etc/x.toml"]


def mode(path):
    return stat.S_IMODE(path.stat().st_mode)


def test_what_the_service_writes_is_its_users_alone(tmp_path):
    """Under the usual umask (022) the database, the key of stored secrets,
    a backup and the directories made for them are 0600 / 0700; a
    directory that was there keeps its mode. (The -wal and -shm files:
    test_the_first_admin_key_comes_last_and_alone; media:
    test_whatsapp_media.)"""
    there = tmp_path / "there"
    there.mkdir()
    there.chmod(0o755)
    environ = {"AGENT_PLATFORM_DATABASE_PATH": str(there / "data" / "private" / "p.db")}
    old_umask = os.umask(0o022)
    try:
        assert run(environ, "migrate").returncode == 0
        backup = run(environ, "backup", str(there / "p-backup.db"))
        assert backup.returncode == 0, backup.stderr
    finally:
        os.umask(old_umask)
    data = there / "data"
    assert (mode(there), mode(data), mode(data / "private")) == (0o755, 0o700, 0o700)
    for name in ("p.db", "secrets.key"):
        assert mode(data / "private" / name) == 0o600, name
    assert mode(there / "p-backup.db") == 0o600
