"""One server process per database: a second `serve` on the same database,
or gunicorn started with two workers, is refused with the reason instead of
splitting the rate limits and starting a second scheduler silently."""

import os
import subprocess
import sys
from pathlib import Path

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


def test_gunicorn_with_two_workers_stops_with_the_reason(tmp_path):
    environ = {
        **os.environ,
        "AGENT_PLATFORM_DATABASE_PATH": str(tmp_path / "two.db"),
        "PYTHONPATH": str(ROOT),
    }
    subprocess.run([sys.executable, "-m", "agent_platform", "migrate"], env=environ, check=True,
                   capture_output=True, cwd=ROOT, timeout=60)  # fmt: skip
    result = subprocess.run(
        [sys.executable, "-m", "gunicorn", "-w", "2", "-b", f"127.0.0.1:{free_port()}", "app:app"],
        cwd=ROOT, env=environ, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode != 0
    assert "is already serving" in result.stderr and "(pid " in result.stderr


def test_the_lock_goes_with_the_process(tmp_path):
    port = free_port()
    environ = {**os.environ, "AGENT_PLATFORM_DATABASE_PATH": str(tmp_path / "again.db")}
    with serving(["--port", str(port)], environ, port):
        pass
    with serving(["--port", str(port)], environ, port) as (base, lines):
        assert lines == ["", ""], lines  # served again, no new key: the workspace exists
