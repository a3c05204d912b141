"""What a deployer follows holds together: docs/operations.md's command
table lists every command of `agent-platform` with its options, and the
shipped systemd unit can run with the shipped configuration (everything the
service writes lies where the unit lets it write)."""

import configparser
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import click

from agent_platform.cli import main
from agent_platform.config import load_config

ROOT = Path(__file__).resolve().parents[1]
OPERATIONS = ROOT / "docs" / "operations.md"
# Options every command has, said once above the table.
COMMON = {"--config", "--help"}


def commands(group=main, prefix=""):
    """Every leaf command's name ("keys create") with its options."""
    for name, command in sorted(group.commands.items()):
        if isinstance(command, click.Group):
            yield from commands(command, f"{prefix}{name} ")
        else:
            options = {
                option for parameter in command.params if isinstance(parameter, click.Option)
                for option in parameter.opts if option.startswith("--")
            }  # fmt: skip
            yield prefix + name, options - COMMON


def command_rows():
    """The first cells of the "Command line" section's table."""
    section = OPERATIONS.read_text().split("## Command line", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^\| `(agent-platform [^`]*)` \|", section, re.M)


def test_every_command_is_in_the_operations_table_with_its_options():
    rows = command_rows()
    found = list(commands())
    assert len(found) >= 15  # the walk found the commands at all
    for name, options in found:
        [row] = [row for row in rows if re.match(rf"agent-platform {name}( |$)", row)]
        missing = sorted(options - set(re.findall(r"--[a-z0-9-]+", row)))
        assert missing == [], (name, missing)
    assert "agent-platform --version" in rows


def unit():
    parser = configparser.ConfigParser(strict=False, interpolation=None)
    parser.optionxform = str
    parser.read(ROOT / "deploy" / "agent-platform.service")
    return parser["Service"]


def test_the_shipped_configuration_writes_only_where_the_unit_lets_it():
    service = unit()
    writable = Path(service["ReadWritePaths"])
    command = shlex.split(service["ExecStart"])
    config_path = Path(command[command.index("--config") + 1])
    assert config_path.parent == Path(service["ReadOnlyPaths"])  # where operations.md puts it
    config = load_config(ROOT / "deploy" / "config.toml", environ={})
    for key in ("DATABASE_PATH", "MEDIA_DIR", "SECRETS_KEY_FILE"):
        assert Path(config[key]).is_relative_to(writable), key
    assert Path(service["WorkingDirectory"]) == writable
    steps = OPERATIONS.read_text()
    assert f"deploy/config.toml {config_path}" in steps  # the setup installs this file there


def test_the_unit_keeps_files_private_and_stops_on_a_configuration_error(tmp_path):
    """UMask=0077, and no restart loop on status 2: the status a
    configuration the service cannot use stops `serve` with (before it
    starts gunicorn, and in gunicorn's master: test_cli_admin)."""
    service = unit()
    assert service["UMask"] == "0077"
    assert service["RestartPreventExitStatus"] == "2"
    config = tmp_path / "config.toml"
    config.write_text("[server]\nprot = 8080\n")
    command = [*shlex.split(service["ExecStart"])[1:2], "--config", str(config)]
    environ = {**os.environ, "PYTHONPATH": str(ROOT / "platform")}
    done = subprocess.run(
        [str(Path(sys.executable).parent / "agent-platform"), *command],
        env=environ, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "server.prot" in done.stderr and "Traceback" not in done.stderr
    assert list(tmp_path.iterdir()) == [config]  # nothing made


def postgresql_unit(name):
    parser = configparser.ConfigParser(strict=False, interpolation=None)
    parser.optionxform = str
    parser.read(ROOT / "deploy" / "postgresql" / name)
    return parser["Service"]


def test_the_postgresql_deployment_files_hold_together():
    """deploy/postgresql/: the servers' and the worker's units run the
    shipped configuration, which names a PostgreSQL database and writes only
    where the units let it; the server unit's instance name is its port."""
    config = load_config(ROOT / "deploy" / "postgresql" / "config.toml", environ={})
    assert config["DATABASE_URL"].startswith("postgresql://")
    assert config["SERVER_PROXY_HOPS"] == 1
    units = {"agent-platform@.service": ["serve"], "agent-platform-worker.service": ["worker"]}
    for name, command in units.items():
        service = postgresql_unit(name)
        argv = shlex.split(service["ExecStart"])
        assert argv[1 : 1 + len(command)] == command, name
        assert Path(argv[argv.index("--config") + 1]).parent == Path(service["ReadOnlyPaths"])
        for key in ("MEDIA_DIR", "SECRETS_KEY_FILE"):
            assert Path(config[key]).is_relative_to(service["ReadWritePaths"]), (name, key)
    assert shlex.split(postgresql_unit("agent-platform@.service")["ExecStart"])[-2:] == [
        "--port",
        "%i",
    ]
