"""A throwaway PostgreSQL server for the tests: Debian's postgresql
binaries (the newest installed, or TEST_POSTGRESQL_BIN's), a cluster in a
temporary directory, listening on 127.0.0.1 only (a free port) and on a
unix socket in that directory, stopped and removed at the end. fsync is
off: nothing in it needs to survive a crash.

initdb and postgres refuse to run as root; as root the server runs as the
`postgres` user, in a directory made for it.
"""

import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path


def _newest_installed():
    """Debian's newest postgresql binaries (/usr/lib/postgresql/<version>/bin)."""
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin"), key=lambda bin: int(bin.parent.name))
    return found[-1] if found else Path("/usr/lib/postgresql/15/bin")


BIN = Path(os.environ.get("TEST_POSTGRESQL_BIN") or _newest_installed())
SUPERUSER = "agent_platform_test"


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class PostgresServer:
    """start() it, then url(name) of its databases; stop() removes it all."""

    def __init__(self):
        self.directory = Path(tempfile.mkdtemp(prefix="agent-platform-pg-"))
        self.port = free_port()
        self.owner = pwd.getpwnam("postgres") if os.geteuid() == 0 else None
        if self.owner:
            os.chown(self.directory, self.owner.pw_uid, self.owner.pw_gid)

    def _run(self, *command):
        if self.owner:
            command = ("runuser", "-u", "postgres", "--", *command)
        subprocess.run(command, check=True, capture_output=True, timeout=120)

    def start(self, durable=False):
        """Start it; `durable` keeps PostgreSQL's defaults (fsync and
        synchronous_commit on), for measuring rather than testing."""
        data = self.directory / "data"
        self._run(str(BIN / "initdb"), "-D", str(data), "-U", SUPERUSER, "-A", "trust",
                  "-E", "UTF8", "--locale=C.UTF-8", "--no-sync")  # fmt: skip
        options = (
            f"-c listen_addresses=127.0.0.1 -p {self.port} -k {self.directory} "
            + ("" if durable else "-c fsync=off -c synchronous_commit=off -c full_page_writes=off ")
            + "-c max_connections=300"
        )
        self._run(str(BIN / "pg_ctl"), "-D", str(data), "-o", options, "-w",
                  "-l", str(self.directory / "server.log"), "start")  # fmt: skip
        return self

    def url(self, name="postgres"):
        return f"postgresql://{SUPERUSER}@127.0.0.1:{self.port}/{name}"

    def version(self):
        """The server's version, e.g. "15.18" (`postgres --version`)."""
        command = [str(BIN / "postgres"), "--version"]
        return subprocess.run(command, capture_output=True, text=True, check=True).stdout.split()[2]

    def postmaster_pid(self):
        """The server's first process: its backends and helpers run under it."""
        return int((self.directory / "data" / "postmaster.pid").read_text().split()[0])

    def execute(self, sql):
        """Run `sql` outside a transaction (CREATE DATABASE cannot be in one)."""
        import psycopg

        with psycopg.connect(self.url(), autocommit=True) as connection:
            connection.execute(sql)

    def stop(self):
        try:
            self._run(str(BIN / "pg_ctl"), "-D", str(self.directory / "data"),
                      "-m", "immediate", "stop")  # fmt: skip
        finally:
            shutil.rmtree(self.directory, ignore_errors=True)
