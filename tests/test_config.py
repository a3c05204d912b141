import re
import tomllib
from pathlib import Path

import pytest

from agent_platform import create_app
from agent_platform.config import DEFAULTS, ConfigError, flatten, load_config

EXAMPLE = Path(__file__).resolve().parents[1] / "config.example.toml"


def test_defaults_run_without_any_file():
    config = load_config(environ={})
    assert config["DATABASE_PATH"] == "data/agent_platform.db"
    assert (config["SERVER_HOST"], config["SERVER_PORT"]) == ("127.0.0.1", 8080)
    assert config["RATE_LIMIT_REQUESTS"] == 100
    assert config["RATE_LIMIT_WINDOW_SECONDS"] == 60
    assert config["LIMITS_MAX_BODY_BYTES"] == 5 * 1024 * 1024
    assert config["MAINTENANCE"] is False


def test_sources_override_in_order(tmp_path):
    path = tmp_path / "c.toml"
    path.write_text('[server]\nport = 9000\nhost = "0.0.0.0"\n[rate_limit]\nrequests = 5\n')
    environ = {"AGENT_PLATFORM_SERVER_PORT": "9100", "AGENT_PLATFORM_SERVER_PUBLIC_URL": "http://x"}
    config = load_config(str(path), overrides={"RATE_LIMIT_REQUESTS": 7}, environ=environ)
    assert config["SERVER_HOST"] == "0.0.0.0"  # file
    assert config["SERVER_PORT"] == 9100  # environment, parsed as JSON
    assert config["SERVER_PUBLIC_URL"] == "http://x"  # not JSON: taken as a string
    assert config["RATE_LIMIT_REQUESTS"] == 7  # dict


def test_config_file_from_environment(tmp_path):
    path = tmp_path / "c.toml"
    path.write_text("maintenance = true\n")
    assert load_config(environ={"AGENT_PLATFORM_CONFIG": str(path)})["MAINTENANCE"] is True


@pytest.mark.parametrize(
    "source",
    [
        {"environ": {"AGENT_PLATFORM_SERVER_PROT": "1"}},
        {"overrides": {"NOPE": 1}},
    ],
)
def test_unknown_keys_are_refused_by_name(source):
    with pytest.raises(ConfigError, match="SERVER_PROT|NOPE|server.prot"):
        load_config(environ=source.get("environ", {}), overrides=source.get("overrides"))


def test_unknown_key_in_file_is_named(tmp_path):
    path = tmp_path / "c.toml"
    path.write_text("[server]\nprot = 1\n")
    with pytest.raises(ConfigError, match="server.prot"):
        load_config(str(path), environ={})


def test_wrong_types_are_refused(tmp_path):
    with pytest.raises(
        ConfigError, match=r"SERVER_PORT \(server.port\) = \"eighty\": must be an integer"
    ):
        load_config(environ={"AGENT_PLATFORM_SERVER_PORT": '"eighty"'})
    with pytest.raises(ConfigError, match="MAINTENANCE"):
        load_config(overrides={"MAINTENANCE": 1}, environ={})
    with pytest.raises(ConfigError, match="PLAN_MAX_AGENTS"):
        load_config(overrides={"PLAN_MAX_AGENTS": "ten"}, environ={})
    assert load_config(overrides={"PLAN_MAX_AGENTS": 3}, environ={})["PLAN_MAX_AGENTS"] == 3


def test_missing_or_broken_file_is_a_clear_error(tmp_path):
    with pytest.raises(ConfigError, match="not found"):
        load_config(str(tmp_path / "absent.toml"), environ={})
    broken = tmp_path / "broken.toml"
    broken.write_text("[server\n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_config(str(broken), environ={})


def test_create_app_refuses_unknown_keys(tmp_path):
    with pytest.raises(ConfigError, match="BOGUS"):
        create_app({"DATABASE_PATH": str(tmp_path / "x.db"), "BOGUS": True})


def test_example_file_lists_every_key_with_its_default():
    text = EXAMPLE.read_text()
    example = flatten(tomllib.loads(text))
    assert set(example) <= set(DEFAULTS), "example has keys the code does not know"
    for key, default in DEFAULTS.items():
        if default is None:
            # Unset by default: shown commented out in its section.
            assert _commented_out(text, key), f"{key} is not shown commented out"
        else:
            assert example.get(key) == default, (
                f"{key}: example {example.get(key)!r} != {default!r}"
            )


def _commented_out(text, key):
    """Is `key` shown as `# name = ...` under its [section], for some split of it?"""
    parts = key.lower().split("_")
    for cut in range(1, len(parts)):
        section, name = "_".join(parts[:cut]), "_".join(parts[cut:])
        if re.search(rf"^\[{section}\][^\[]*^# {name} = ", text, re.M | re.S):
            return True
    return False


@pytest.mark.parametrize(
    "url, reason",
    [
        ("mysql://user@host/name", "must be a postgresql:// URL"),
        ("postgresql://", "must be a postgresql:// URL"),
        ("postgresql://host:port/name", "must be a postgresql:// URL"),
        ("data/agent_platform.db", "must be a postgresql:// URL"),
    ],
)
def test_a_database_url_that_is_not_postgresql_is_refused_by_name(url, reason):
    with pytest.raises(
        ConfigError, match=rf"AGENT_PLATFORM_DATABASE_URL \(database.url\) = .*: {reason}"
    ):
        load_config(environ={"AGENT_PLATFORM_DATABASE_URL": url})


@pytest.mark.parametrize(
    "url", ["postgresql://user:p%40ss@db.internal:5432/agents", "postgres:///agents"]
)
def test_a_postgresql_url_is_taken(url):
    assert load_config(environ={"AGENT_PLATFORM_DATABASE_URL": url})["DATABASE_URL"] == url


@pytest.mark.parametrize("address", ["127.0.0.1:²", "127.0.0.1:٣", "127.0.0.1:99999"])
def test_a_metrics_address_of_no_port_number_is_refused_by_name(address):
    # "²" and "٣" are digits to str.isdigit, and int() fails on the first.
    with pytest.raises(ConfigError, match=r"METRICS_LISTEN.*must be \"host:port\""):
        load_config(environ={"AGENT_PLATFORM_METRICS_LISTEN": address})
