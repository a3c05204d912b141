"""A configuration the service cannot use stops every command with the key
(as written in the file, and the variable's name when it came from the
environment), the bad value and what is allowed: exit status 2, no traceback."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def run(tmp_path, *arguments, environ=None, config=None):
    env = {**os.environ, "AGENT_PLATFORM_DATABASE_PATH": str(tmp_path / "c.db")}
    env.update(environ or {})
    if config is not None:
        path = tmp_path / "config.toml"
        path.write_text(config)
        arguments = (*arguments, "--config", str(path))
    return subprocess.run(
        [sys.executable, "-m", "agent_platform", *arguments],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip


@pytest.mark.parametrize(
    "config, says",
    [
        ('[webhooks]\nfailure_policy = "explode"\n',
         'webhooks.failure_policy (from config file '),
        ('[webhooks]\nretry_schedule = [-1, "x"]\n', "non-empty list of seconds, each 0 or more"),
        ("[replies]\nretry_schedule = []\n", "non-empty list of seconds"),
        ("[server]\nport = -5\n", "server.port (from config file"),
        ("[server]\nport = 70000\n", "must be a port, 1 to 65535"),
        ('[log]\nlevel = "LOUD"\n', '"LOUD": must be one of "DEBUG", "INFO"'),
        ("[webhooks]\nallowed_ports = [443, 0]\n", "must be a list of ports, 1 to 65535 (not 0)"),
        ("[replies]\nconcurrency = 0\n", "replies.concurrency"),
        ("[telegram]\npoll_seconds = 0\n", "key telegram.poll_seconds (from config file"),
        ('[whatsapp]\ngraph_api_base = "graph.facebook.com"\n', "http:// or https:// URL"),
        ("[server]\nprot = 8080\n", "unknown configuration key server.prot"),
        ("[server\nport = 1\n", "is not valid TOML"),
    ],
)  # fmt: skip
def test_a_bad_file_stops_with_the_key_and_status_2(tmp_path, config, says):
    result = run(tmp_path, "migrate", config=config)
    assert result.returncode == 2, result.stderr
    assert says in result.stderr
    assert "Traceback" not in result.stderr + result.stdout
    assert not (tmp_path / "c.db").exists()  # nothing was done


def test_the_documented_alternative_webhook_schedule_is_accepted(tmp_path):
    # docs/webhooks.md: variant 1 retries at once, then after 1, 5, 15, 60 minutes.
    schedule = "[webhooks]\nretry_schedule = [0, 60, 300, 900, 3600]\n"
    result = run(tmp_path, "migrate", config=schedule)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "c.db").exists()


@pytest.mark.parametrize(
    "variable, value, says",
    [
        ("AGENT_PLATFORM_WEBHOOKS_FAILURE_POLICY", "explode",
         'AGENT_PLATFORM_WEBHOOKS_FAILURE_POLICY (webhooks.failure_policy) = "explode"'),
        ("AGENT_PLATFORM_SERVER_PORT", "-5", "= -5: must be a port"),
        ("AGENT_PLATFORM_SERVER_MAX_CONNECTIONS", "many", '= "many": must be an integer'),
        ("AGENT_PLATFORM_SERVER_THREADS", "4", "(server.threads) is no longer used: serve runs"),
        ("AGENT_PLATFORM_SERVER_TIMEOUT_SECONDS", "5", "= 5: must be 10 to 86400"),
        ("AGENT_PLATFORM_SERVER_TIMEOUT_SECONDS", "1e400", "must be an integer"),
    ],
)  # fmt: skip
def test_a_bad_variable_is_named_as_the_variable(tmp_path, variable, value, says):
    for command in (("migrate",), ("serve", "--port", "1")):
        result = run(tmp_path, *command, environ={variable: value})
        assert result.returncode == 2, result.stderr
        assert says in result.stderr
        assert "Traceback" not in result.stderr + result.stdout


def test_the_server_module_refuses_a_bad_configuration_too(tmp_path):
    env = {**os.environ, "AGENT_PLATFORM_LOG_LEVEL": "LOUD"}
    result = subprocess.run(
        [sys.executable, "-m", "agent_platform.server"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 2
    assert "log.level" in result.stderr and "Traceback" not in result.stderr


def gunicorn(tmp_path, environ, *options, cwd=ROOT):
    """Real `gunicorn app:app`, as a deployer starts it beside app.py."""
    env = {**os.environ, "AGENT_PLATFORM_DATABASE_PATH": str(tmp_path / "g.db"), **environ}
    return subprocess.run(
        [sys.executable, "-m", "gunicorn", *options, "-b", "127.0.0.1:0", "app:app"],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip


@pytest.mark.parametrize(
    "variable, value, says",
    [
        ("AGENT_PLATFORM_LOG_LEVEL", "LOUD", '(log.level) = "LOUD": must be one of "DEBUG"'),
        ("AGENT_PLATFORM_SECRETS_KEY", "not-a-key", "secrets.key (AGENT_PLATFORM_SECRETS_KEY)"),
    ],
)  # fmt: skip
def test_gunicorn_app_refuses_a_bad_configuration_before_it_forks(tmp_path, variable, value, says):
    result = gunicorn(tmp_path, {variable: value})
    assert result.returncode == 2, result.stderr
    assert says in result.stderr
    assert "Traceback" not in result.stderr + result.stdout
    assert "Booting worker" not in result.stderr  # the master stopped first


def test_gunicorn_started_elsewhere_stops_on_its_worker_without_a_traceback(tmp_path):
    # From another directory gunicorn.conf.py is not read: the worker finds
    # the error, and only its status 3 stops the master (not a restart loop).
    result = gunicorn(tmp_path, {"AGENT_PLATFORM_LOG_LEVEL": "LOUD"}, "--chdir", str(ROOT),
                      cwd=tmp_path)  # fmt: skip
    assert result.returncode == 3, result.stderr
    assert '(log.level) = "LOUD"' in result.stderr
    assert "Traceback" not in result.stderr + result.stdout
