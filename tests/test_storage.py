"""A full or read-only disk: the served service answers 503 with Retry-After
(intake and API writes alike), says it once in the log and in health, and
heals by itself once the disk is fixed; `serve` on a disk it cannot use
stops with one line naming the path and what to do.

Each case runs on a small file system of its own (a tmpfs), and some run
the server as the unprivileged user nobody, as a service runs: both need
root, and are skipped where the mount is refused."""

import contextlib
import errno
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests

from conversations_helpers import WA_SETTINGS
from test_cli import free_port, until_the_key
from test_serving import children
from whatsapp_helpers import messages_payload, sign, text

ROOT = Path(__file__).resolve().parents[1]
NOBODY = 65534
# nobody, allowed to read and search every directory (this machine's
# interpreter lives under /root, which only root may enter) and to write
# only where nobody may.
AS_NOBODY = [
    "setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups",
    "--inh-caps=+dac_read_search", "--ambient-caps=+dac_read_search",
]  # fmt: skip
FULL, READ_ONLY = "the disk is full", "the database is read-only"
INCIDENT = "cannot take writes"
RECOVERED = "takes writes again"


@contextlib.contextmanager
def tmpfs(directory, options="size=8m"):
    """A tmpfs mounted on `directory` (made here), unmounted at the end."""
    if os.geteuid() != 0:
        pytest.skip("mounting a small file system needs root")
    directory.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(directory)],
                             capture_output=True, text=True)  # fmt: skip
    if mounted.returncode != 0:
        pytest.skip(f"mount refused a tmpfs here: {mounted.stderr.strip()}")
    try:
        yield directory
    finally:
        if subprocess.run(["umount", str(directory)], capture_output=True).returncode != 0:
            subprocess.run(["umount", "-l", str(directory)], check=True)


def remount(directory, options):
    subprocess.run(["mount", "-o", f"remount,{options}", str(directory)], check=True)


def environ_on(disk, **settings):
    """The service's settings with everything it writes on `disk`."""
    return {
        **os.environ,
        "HOME": str(disk),
        "AGENT_PLATFORM_DATABASE_PATH": str(disk / "agent.db"),
        "AGENT_PLATFORM_MEDIA_DIR": str(disk / "media"),
        "AGENT_PLATFORM_WHATSAPP_GRAPH_API_BASE": "http://127.0.0.1:9/unreachable",
        **settings,
    }


class Server:
    def __init__(self, process, port, key, log):
        self.process, self.base, self.log = process, f"http://127.0.0.1:{port}", log
        self.headers = {"x-api-key": key}

    def get(self, path):
        return requests.get(self.base + path, headers=self.headers, timeout=10)

    def post(self, path, **kwargs):
        return requests.post(self.base + path, headers=self.headers, timeout=10, **kwargs)

    def lines(self, text):
        return [line for line in self.log.read_text().splitlines() if text in line]


@contextlib.contextmanager
def serving(environ, log, user=()):
    """`agent-platform serve` for real (as `user`), until it answers."""
    port = free_port()
    with log.open("w") as stderr:
        process = subprocess.Popen([*user, sys.executable, "app.py", "--port", str(port)],
                                   cwd=ROOT, env=environ, stdout=subprocess.PIPE,
                                   stderr=stderr, text=True)  # fmt: skip
        try:
            key = until_the_key(process.stdout)[1].strip()
            server = Server(process, port, key, log)
            assert wait(lambda: answers(server), 20), log.read_text()
            yield server
        finally:
            process.send_signal(signal.SIGTERM)
            process.wait(timeout=20)
            process.stdout.close()


def answers(server):
    try:
        return requests.get(server.base + "/v1/health", timeout=2).status_code > 0
    except requests.RequestException:
        return False


def wait(condition, seconds):
    """The first true value of condition() within `seconds`, else None."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.1)
    return None


def until_answered(request, status, seconds=10):
    """(response, seconds taken) once request() answers `status`."""
    started = time.monotonic()
    response = wait(lambda: (answer := request()).status_code == status and answer, seconds)
    assert response, f"still not {status} after {seconds} s"
    return response, time.monotonic() - started


def fill(disk):
    """Write a file until the disk is full."""
    with (disk / "filler").open("wb", buffering=0) as filler:
        with pytest.raises(OSError) as full:
            while True:
                filler.write(b"\0" * 4096)
    assert full.value.errno == errno.ENOSPC


def assert_unavailable(response, cause):
    assert response.status_code == 503, response.text
    assert response.json()["error"] == {
        "code": "STORAGE_UNAVAILABLE",
        "message": f"The service cannot store anything just now ({cause}); try again later.",
        "status": 503,
    }
    assert response.headers["Retry-After"] == "30"


def assert_degraded(server, cause):
    health = requests.get(server.base + "/v1/health", timeout=10)
    assert health.status_code == 503
    assert health.json()["status"] == "degraded"
    assert health.json()["reason"] == f"the database cannot take writes: {cause}"


def whatsapp_post(server, channel_id, wamid):
    body = json.dumps(messages_payload(text("Oi", wamid=wamid))).encode()
    headers = {"X-Hub-Signature-256": sign(body), "Content-Type": "application/json"}
    return requests.post(f"{server.base}/inbound/whatsapp/{channel_id}", data=body,
                         headers=headers, timeout=10)  # fmt: skip


def test_a_full_disk_answers_503_and_the_service_heals_once_space_is_freed(tmp_path):
    with tmpfs(tmp_path / "disk") as disk, serving(environ_on(disk), tmp_path / "log") as server:
        body = {"name": "WhatsApp", "type": "whatsapp", "settings": WA_SETTINGS}
        channel = server.post("/v1/channels", json=body).json()["data"]["id"]
        fill(disk)
        for _ in range(10):  # the network's retries, and the API's writes
            assert_unavailable(whatsapp_post(server, channel, "wamid.FULL"), FULL)
            assert_unavailable(server.post("/v1/contacts", json={"name": "Bia"}), FULL)
        assert server.get("/v1/me").status_code == 200  # reads go on
        assert_degraded(server, FULL)

        (disk / "filler").unlink()
        stored, seconds = until_answered(lambda: whatsapp_post(server, channel, "wamid.FULL"), 200)
        print(f"writes work again {seconds:.2f} s after the space was freed")
        # Nothing of the refused callbacks was stored: the message is new.
        assert stored.json()["data"]["messages"] == 1
        assert server.post("/v1/contacts", json={"name": "Bia"}).status_code == 201
        assert requests.get(server.base + "/v1/health", timeout=10).json()["status"] == "ok"
    assert len(server.lines(INCIDENT)) == 1, server.log.read_text()
    assert len(server.lines(RECOVERED)) == 1, server.log.read_text()
    assert "Traceback" not in server.log.read_text()


def test_a_database_file_made_writable_again_is_written_within_seconds(tmp_path):
    """A worker started while the database file is read-only (gunicorn starts
    one in place of one that died; the pool reopens its connections every ten
    minutes) has SQLite open it read-only, for good: such connections are
    dropped once the file is writable again, not kept for minutes."""
    options = f"size=8m,uid={NOBODY},gid={NOBODY}"
    with tmpfs(tmp_path / "disk", options) as disk:
        with serving(environ_on(disk), tmp_path / "log", AS_NOBODY) as server:
            assert server.post("/v1/contacts", json={"name": "Ana"}).status_code == 201
            (disk / "agent.db").chmod(0o444)
            restart_worker(server)
            assert_degraded(server, READ_ONLY)
            for _ in range(5):
                assert_unavailable(server.post("/v1/contacts", json={"name": "Bia"}), READ_ONLY)
            assert server.get("/v1/me").status_code == 200

            (disk / "agent.db").chmod(0o644)
            post = lambda: server.post("/v1/contacts", json={"name": "Bia"})  # noqa: E731
            created, seconds = until_answered(post, 201)
            print(f"writes work again {seconds:.2f} s after the file was made writable")
            assert requests.get(server.base + "/v1/health", timeout=10).status_code == 200
    # Said once by each worker that met it: the one killed (its jobs may have
    # written since the chmod) and the one started in its place.
    assert 1 <= len(server.lines(INCIDENT)) <= 2, server.log.read_text()
    assert "Traceback" not in server.log.read_text()


def restart_worker(server):
    """Kill gunicorn's worker; wait for the one started in its place."""
    (worker,) = children(server.process.pid)
    os.kill(worker, signal.SIGKILL)
    assert wait(lambda: children(server.process.pid) not in ([], [worker]), 20)
    assert wait(lambda: answers(server), 20)


def refused(environ, user=()):
    """The one line `serve` stops with (status 2, nothing started)."""
    result = subprocess.run([*user, sys.executable, "app.py", "--port", str(free_port())],
                            cwd=ROOT, env=environ, capture_output=True, text=True,
                            timeout=60)  # fmt: skip
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    assert result.stdout == ""  # no admin key printed
    (line,) = [line for line in result.stderr.splitlines() if line.startswith("Error: ")]
    return line.removeprefix("Error: ")


def migrate(environ, user=()):
    subprocess.run([*user, sys.executable, "-m", "agent_platform", "migrate"], cwd=ROOT,
                   env=environ, check=True, capture_output=True, timeout=60)  # fmt: skip


@pytest.mark.parametrize("existing", [False, True], ids=["new", "existing"])
def test_serve_on_a_read_only_file_system_is_one_line(tmp_path, existing):
    with tmpfs(tmp_path / "disk") as disk:
        if existing:
            migrate(environ_on(disk))
        remount(disk, "ro")
        assert refused(environ_on(disk)) == (
            f"the file system holding {disk} is read-only: mount it read-write, "
            "or set database.path to a writable place"
        )


@pytest.mark.parametrize("below", ["agent.db", "data/agent.db"])
def test_serve_where_a_directory_would_be_a_file_is_one_line(tmp_path, below):
    (tmp_path / "file").write_text("")
    environ = environ_on(tmp_path, AGENT_PLATFORM_DATABASE_PATH=str(tmp_path / "file" / below))
    directory = (tmp_path / "file" / below).parent
    assert refused(environ) == (
        f"cannot create the directory {directory}: part of that path is a file, not a "
        "directory; set database.path to a place inside a directory (or move that file)"
    )


def test_serve_in_a_directory_its_user_cannot_write_is_one_line(tmp_path):
    """The database's files are the user's, not their directory: the serving
    lock cannot be made beside them."""
    with tmpfs(tmp_path / "disk", f"size=8m,uid={NOBODY},gid={NOBODY}") as disk:
        migrate(environ_on(disk), AS_NOBODY)
        os.chown(disk, 0, 0)
        disk.chmod(0o755)
        assert refused(environ_on(disk), AS_NOBODY) == (
            f"user nobody cannot write in the directory {disk}: give it to that user "
            f"(chown nobody {disk}), or set database.path to a place it can write"
        )


def test_serve_on_a_database_of_root_run_by_its_user_is_one_line(tmp_path):
    with tmpfs(tmp_path / "disk", f"size=8m,uid={NOBODY},gid={NOBODY}") as disk:
        migrate(environ_on(disk))  # as root: `sudo agent-platform migrate`, say
        os.chown(disk / "secrets.key", NOBODY, NOBODY)
        database = disk / "agent.db"
        assert refused(environ_on(disk), AS_NOBODY) == (
            f"{database} is read-only to user nobody (its owner is root): give the "
            f"database's files to that user (chown nobody {database}*), or run the "
            "service as root"
        )
