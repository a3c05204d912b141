"""`agent-platform backup` and `restore`: a consistent copy of the live
database while another process writes to it, and the way back."""

import sqlite3
import subprocess
import sys
import textwrap

import pytest
from click.testing import CliRunner

from agent_platform.cli import main
from agent_platform.db import database


@pytest.fixture
def cli(tmp_path):
    environ = {"AGENT_PLATFORM_DATABASE_PATH": str(tmp_path / "live.db")}

    def run(*args, code=0):
        result = CliRunner().invoke(main, list(args), env=environ)
        assert result.exit_code == code, result.output
        return result.output

    run("migrate")
    return run


def workspace_names(path):
    connection = sqlite3.connect(path)
    try:
        assert connection.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        return [row[0] for row in connection.execute("SELECT name FROM workspace ORDER BY name")]
    finally:
        connection.close()


WRITER = textwrap.dedent("""
    import sqlite3, sys, uuid
    connection = sqlite3.connect(sys.argv[1], timeout=10, isolation_level=None)
    connection.execute("PRAGMA journal_mode=wal")
    company = connection.execute("SELECT company_id FROM workspace").fetchone()[0]
    print("ready", flush=True)
    for number in range(100000):
        connection.execute(
            "INSERT INTO workspace (id, company_id, name, created_at, updated_at) "
            "VALUES (?, ?, ?, datetime('now'), datetime('now'))",
            (uuid.uuid4().hex, company, f"w{number:06d}"))
""")


def test_backup_while_another_process_writes(cli, tmp_path):
    cli("workspaces", "create", "--name", "before")
    writer = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(tmp_path / "live.db")],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert writer.stdout.readline() == "ready\n"
        output = cli("backup", str(tmp_path / "copy.db"))
        assert writer.poll() is None, "the writer kept writing through the backup"
    finally:
        writer.kill()
        writer.wait()
        writer.stdout.close()
    assert f"to {tmp_path / 'copy.db'}" in output
    copied = workspace_names(tmp_path / "copy.db")
    assert copied[0] == "before" and len(copied) > 1  # a snapshot taken mid-write
    assert copied[1:] == [f"w{number:06d}" for number in range(len(copied) - 1)]  # no gap
    assert not list(tmp_path.glob("copy.db-*")) and not list(tmp_path.glob(".copy.db*"))


def test_backup_refuses_to_overwrite_unless_forced(cli, tmp_path):
    target = tmp_path / "copy.db"
    target.write_text("precious")
    assert "already exists; pass --force" in cli("backup", str(target), code=1)
    assert target.read_text() == "precious"
    assert "no directory" in cli("backup", str(tmp_path / "missing" / "copy.db"), code=1)
    cli("workspaces", "create", "--name", "kept")
    cli("backup", str(target), "--force")
    assert workspace_names(target)[0] == "kept"


def test_restore_brings_back_the_backup(cli, tmp_path):
    cli("workspaces", "create", "--name", "old")
    cli("backup", str(tmp_path / "copy.db"))
    cli("workspaces", "create", "--name", "after the backup")
    assert "Restored" in cli("restore", str(tmp_path / "copy.db"))
    assert workspace_names(tmp_path / "live.db")[-1] == "old"
    assert "old" in cli("workspaces", "list")
    assert "after the backup" not in cli("workspaces", "list")


def test_restore_refuses_while_the_database_is_in_use(cli, tmp_path):
    cli("workspaces", "create", "--name", "live")
    cli("backup", str(tmp_path / "copy.db"))
    cli("workspaces", "create", "--name", "newer")
    reader = sqlite3.connect(tmp_path / "live.db")  # as a running service holds it
    try:
        reader.execute("SELECT count(*) FROM workspace").fetchall()
        assert "is in use (is the service running?)" in cli(
            "restore", str(tmp_path / "copy.db"), code=1
        )
    finally:
        reader.close()
    assert "newer" in cli("workspaces", "list")


def test_restore_refuses_a_broken_backup(cli, tmp_path):
    cli("workspaces", "create", "--name", "live")
    broken = tmp_path / "broken.db"
    broken.write_bytes(b"not a database" * 100)
    assert "not a usable SQLite database" in cli("restore", str(broken), code=1)
    assert "no backup at" in cli("restore", str(tmp_path / "missing.db"), code=1)
    assert "live" in cli("workspaces", "list")


def test_restore_by_hand_as_documented(cli, tmp_path):
    # Service stopped: copy the backup over the database, remove -wal and -shm.
    cli("workspaces", "create", "--name", "old")
    cli("backup", str(tmp_path / "copy.db"))
    cli("workspaces", "create", "--name", "newer")
    database.close_all()  # the service stopped: no connection left open
    live = tmp_path / "live.db"
    live.write_bytes((tmp_path / "copy.db").read_bytes())
    for suffix in ("-wal", "-shm"):
        (tmp_path / f"live.db{suffix}").unlink(missing_ok=True)
    assert workspace_names(live) == ["old"]
    assert "newer" not in cli("workspaces", "list")
