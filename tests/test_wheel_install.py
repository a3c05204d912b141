"""The built wheel, installed (not editable) into a fresh virtualenv, migrates
and serves from an empty directory: nothing it needs is read from the source
tree. Slow (a minute or two: a virtualenv and the dependencies from pip's
cache or PyPI), so `make test` leaves it out; `.ci/run` runs it with
`pytest -m wheel`."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests

from tests.test_cli import free_port, until_the_key

pytestmark = pytest.mark.wheel

ROOT = Path(__file__).resolve().parents[1]


def run(*command, **options):
    return subprocess.run(command, check=True, capture_output=True, text=True, **options)


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """The `agent-platform` script of a fresh virtualenv holding only the wheel."""
    base = tmp_path_factory.mktemp("wheel")
    # What an earlier build of a checkout leaves behind (a migration since
    # removed) must not ship: pip builds in the tree, through build/lib.
    stale = ROOT / "build" / "lib" / "agent_platform" / "migrations" / "0000_removed.sql"
    stale.parent.mkdir(parents=True, exist_ok=True)
    stale.write_text("CREATE TABLE removed (id INTEGER);\n")
    try:
        run(sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", base / "dist", ROOT,
            env=clean_environ())  # fmt: skip
    finally:
        stale.unlink(missing_ok=True)
    (wheel,) = (base / "dist").glob("agent_platform-*.whl")
    run(sys.executable, "-m", "venv", base / "venv")
    # With the source tree on PYTHONPATH, pip would find the package there
    # (its egg-info) and install nothing.
    run(base / "venv" / "bin" / "python", "-m", "pip", "install", "-q", wheel, env=clean_environ())
    return base / "venv" / "bin" / "agent-platform"


def clean_environ():
    """No source tree on the path and no configuration from this test run."""
    return {
        name: value
        for name, value in os.environ.items()
        if name != "PYTHONPATH" and not name.startswith("AGENT_PLATFORM_")
    }


def test_the_wheel_carries_the_source_and_migrations_and_nothing_else(installed):
    site = next(installed.parent.parent.glob("lib/python*/site-packages"))
    for engine in ("", "postgresql"):  # SQLite's set, then PostgreSQL's
        packaged = site / "agent_platform" / "migrations" / engine
        shipped = sorted(path.name for path in packaged.iterdir() if path.is_file())
        assert shipped == sorted(path.name for path in (ROOT / "migrations" / engine).glob("*.sql"))
    modules = {
        path.relative_to(site).as_posix() for path in (site / "agent_platform").rglob("*.py")
    }
    source = {
        path.relative_to(ROOT / "platform").as_posix()
        for path in (ROOT / "platform" / "agent_platform").rglob("*.py")
    }
    assert modules == source


def test_installed_wheel_migrates_and_serves_from_an_empty_directory(installed, tmp_path):
    workdir = tmp_path / "empty"
    workdir.mkdir()
    migrated = run(installed, "migrate", cwd=workdir, env=clean_environ())
    assert "0001_foundation.sql" in migrated.stdout
    assert (workdir / "data" / "agent_platform.db").exists()
    port = free_port()
    server = subprocess.Popen(
        [installed, "serve", "--port", str(port)],
        cwd=workdir,
        env=clean_environ(),
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        base = f"http://127.0.0.1:{port}"
        heading, key = until_the_key(server.stdout)  # printed last, once the server listens
        assert heading.startswith("Created the default workspace") and key.startswith("apk_")
        assert wait_for(base + "/v1/health").json()["status"] == "ok"
        docs = requests.get(base + "/docs", timeout=5)
        assert docs.status_code == 200 and "swagger-ui" in docs.text
        assert requests.get(base + "/docs/assets/swagger-ui.css", timeout=5).status_code == 200
        spec = requests.get(base + "/openapi.json", timeout=5).json()
        assert "/v1/health" in spec["paths"]
        # The inbox's templates, stylesheet and script are in the wheel.
        sign_in = requests.get(base + "/app/sign-in", timeout=5)
        assert sign_in.status_code == 200 and "Sign in" in sign_in.text
        assert requests.get(base + "/app/static/app.css", timeout=5).status_code == 200
        assert requests.get(base + "/app/static/inbox.js", timeout=5).status_code == 200
    finally:
        server.send_signal(signal.SIGTERM)
        assert server.wait(timeout=20) == 0
        server.stdout.close()


def wait_for(url, seconds=30):
    deadline = time.monotonic() + seconds
    while True:
        try:
            return requests.get(url, timeout=1)
        except (requests.ConnectionError, requests.Timeout):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)
