"""One server process per database: a second `serve` on the same database,
or gunicorn started with two workers, is refused with the reason instead of
splitting the rate limits and starting a second scheduler silently."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests

from test_cli import free_port, serving

ROOT = Path(__file__).resolve().parents[1]


def test_a_second_serve_on_the_same_database_is_refused(tmp_path):
    port = free_port()
    environ = {**os.environ, "AGENT_PLATFORM_DATABASE_PATH": str(tmp_path / "one.db")}
    with serving(["--port", str(port)], environ, port) as (base, lines):
        assert lines[1].startswith("apk_")
        second = subprocess.run(
            [sys.executable, "app.py", "--port", str(free_port())],
            cwd=ROOT, env=environ, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert second.returncode == 1
        assert "is already serving" in second.stderr
        assert f"{tmp_path / 'one.db'}" in second.stderr
        assert "Traceback" not in second.stderr
        assert second.stdout == ""  # no admin key printed, nothing started


@pytest.mark.parametrize("worker_class", ["sync", "agent_platform.gevent_worker.ServiceWorker"])
def test_gunicorn_with_two_workers_stops_with_the_reason(tmp_path, worker_class):
    """The second worker cannot claim the lock and exits with status 3,
    which halts gunicorn, with gunicorn's own worker as with the service's."""
    environ = {
        **os.environ,
        "AGENT_PLATFORM_DATABASE_PATH": str(tmp_path / "two.db"),
        "PYTHONPATH": str(ROOT),
    }
    subprocess.run([sys.executable, "-m", "agent_platform", "migrate"], env=environ, check=True,
                   capture_output=True, cwd=ROOT, timeout=60)  # fmt: skip
    result = subprocess.run(
        [sys.executable, "-m", "gunicorn", "-w", "2", "-k", worker_class,
         "-b", f"127.0.0.1:{free_port()}", "app:app"],
        cwd=ROOT, env=environ, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 3, result.stderr
    assert "is already serving" in result.stderr and "(pid " in result.stderr, result.stderr[-3000:]


def test_the_lock_goes_with_the_process(tmp_path):
    port = free_port()
    environ = {**os.environ, "AGENT_PLATFORM_DATABASE_PATH": str(tmp_path / "again.db")}
    with serving(["--port", str(port)], environ, port):
        pass
    # Started again on the same database once the first has stopped: it serves.
    again = subprocess.Popen(
        [sys.executable, "app.py", "--port", str(port)], cwd=ROOT, env=environ,
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        # Generous: a loaded machine has taken over 20 s to start it.
        up = answers(f"http://127.0.0.1:{port}/v1/health", seconds=60)
    finally:
        again.terminate()
        _, errors = again.communicate(timeout=20)
    assert up, errors[-3000:]


def answers(url, seconds=20):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            return requests.get(url, timeout=1).status_code == 200
        except requests.RequestException:
            time.sleep(0.1)
    return False


FORKS_AND_LINGERS = """
import os, signal, sys
from agent_platform.instance import claim
claim(sys.argv[1])
child = os.fork()
if child == 0:
    os.kill(os.getpid(), signal.SIGSTOP)  # stopped before it runs another line
    os._exit(0)
print(child, flush=True)
signal.pause()
"""

CLAIMS = """
import sys
from agent_platform.instance import AlreadyServing, claim
try:
    claim(sys.argv[1])
except AlreadyServing as error:
    sys.exit(str(error))
"""


def test_a_process_forked_from_the_server_does_not_hold_its_lock(tmp_path):
    """Once a serving process is killed, the worker gunicorn starts in its
    place claims the lock, even while a process forked from the old one
    lingers, whatever it was doing (the lock is lockf's, not flock's)."""
    database = str(tmp_path / "forked.db")
    environ = {**os.environ, "PYTHONPATH": str(ROOT / "platform")}
    server = subprocess.Popen([sys.executable, "-c", FORKS_AND_LINGERS, database],
                              env=environ, stdout=subprocess.PIPE, text=True)  # fmt: skip
    fork = int(server.stdout.readline())
    try:
        server.kill()
        server.wait(timeout=10)
        successor = subprocess.run([sys.executable, "-c", CLAIMS, database], env=environ,
                                   capture_output=True, text=True, timeout=30)  # fmt: skip
        assert successor.returncode == 0, successor.stderr
    finally:
        os.kill(fork, signal.SIGKILL)
        server.stdout.close()


LOCKS_THEN_WRITES_ITS_PID = """
import fcntl, os, sys, time
from agent_platform.instance import lock_path
handle = open(lock_path(sys.argv[1]), "a+")
fcntl.lockf(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
handle.truncate(0)
print("locked", flush=True)
time.sleep(0.2)  # as a server between taking the lock and writing its pid
handle.write(f"{os.getpid()}\\n")
handle.flush()
time.sleep(30)
"""


def test_a_process_refused_names_the_holder_that_had_not_yet_written_its_pid(tmp_path):
    """Refused between the holder's lock and its pid, a second process told
    no pid (seen once in `make test`): it looks again for a moment."""
    database = str(tmp_path / "race.db")
    environ = {**os.environ, "PYTHONPATH": str(ROOT / "platform")}
    holder = subprocess.Popen([sys.executable, "-c", LOCKS_THEN_WRITES_ITS_PID, database],
                              env=environ, stdout=subprocess.PIPE, text=True)  # fmt: skip
    try:
        assert holder.stdout.readline() == "locked\n"
        refused = subprocess.run([sys.executable, "-c", CLAIMS, database], env=environ,
                                 capture_output=True, text=True, timeout=30)  # fmt: skip
        assert f"another process (pid {holder.pid}) is already serving" in refused.stderr
    finally:
        holder.kill()
        holder.wait()
        holder.stdout.close()
