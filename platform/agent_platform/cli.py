"""The `agent-platform` command: serve, worker, migrate, workspaces, keys, maintenance."""

import functools
import json
import signal
import threading

import click

from . import create_app
from .cli_secrets import secrets_group
from .config import CONFIG_FILE_ENV, ConfigError
from .db import database
from .errors import ApiError
from .migrate import apply_migrations
from .scopes import SCOPES
from .services import keys, system


class BadConfiguration(click.ClickException):
    """A configuration that cannot be used: status 2, as for a usage error."""

    exit_code = 2


def with_app(overrides=None, migrate=True):
    """Give a command --config and an app built from it (migrated unless told not to).

    `overrides(**options)` turns command options into configuration values.
    """

    def decorator(command):
        @click.option(
            "--config",
            "config_path",
            type=click.Path(dir_okay=False),
            envvar=CONFIG_FILE_ENV,
            help="TOML configuration file (or AGENT_PLATFORM_CONFIG).",
        )
        @functools.wraps(command)
        def wrapper(config_path, **options):
            settings = overrides(**options) if overrides else None
            try:
                app = create_app(settings, config_path=config_path)
            except ConfigError as error:
                raise BadConfiguration(str(error)) from error
            with app.app_context():
                try:
                    if migrate:
                        report_migrations(apply_migrations())
                    return command(app, **options)
                except ApiError as error:
                    raise click.ClickException(error.message) from error
                except ConfigError as error:  # e.g. the key of stored secrets
                    raise click.ClickException(str(error)) from error
                finally:
                    database.close()

        return wrapper

    return decorator


def report_migrations(applied):
    if applied:
        click.echo(f"Applied migrations: {', '.join(applied)}", err=True)


def emit(as_json, payload, text):
    click.echo(json.dumps(payload) if as_json else text)


@click.group()
def main():
    """Agent Platform: conversational AI agents behind one REST API."""


def _server_overrides(host, port, dev):
    settings = {"SERVER_HOST": host} if host else {}
    if port:
        settings["SERVER_PORT"] = port
    return settings


@main.command()
@click.option("--host", help="Address to listen on (default: server.host).")
@click.option("--port", type=int, help="Port to listen on (default: server.port).")
@click.option("--dev", is_flag=True, help="Use Flask's development server.")
@with_app(overrides=_server_overrides)
def serve(app, host, port, dev):
    """Migrate, then serve the API and run background jobs in one process."""
    from .instance import AlreadyServing, claim
    from .server import exec_server, run_dev_server

    try:
        claim(database.database)  # refused here, before anything is printed or started
    except AlreadyServing as error:
        raise click.ClickException(str(error)) from error
    raw_key = keys.ensure_first_admin_key()
    if raw_key:
        click.echo("Created the default workspace. Admin API key (shown only once):")
        click.echo(raw_key)
    database.close_all()  # never carry a connection into the server
    if dev:
        run_dev_server(app)
    else:
        config_path = click.get_current_context().params["config_path"]
        exec_server(config_path, _server_overrides(host, port, dev))


@main.command()
@with_app()
def worker(app):
    """Run only the background jobs (for a split web/worker setup)."""
    from .scheduler import build_scheduler

    database.close_all()
    scheduler = build_scheduler(app)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    scheduler.start()
    click.echo("Worker running; Ctrl-C to stop.", err=True)
    try:
        stop.wait()
    except KeyboardInterrupt:
        pass
    scheduler.shutdown()


@main.command()
@with_app(migrate=False)
def migrate(app):
    """Apply pending database migrations."""
    applied = apply_migrations()
    click.echo(f"Applied: {', '.join(applied)}" if applied else "Nothing to apply.")


@main.group()
def workspaces():
    """Manage workspaces."""


@workspaces.command("create")
@click.option("--name", required=True)
@click.option("--company", "company_name", help="Company name (default: the workspace name).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@with_app()
def create_workspace(app, name, company_name, as_json):
    """Create a workspace (in a new company)."""
    workspace = keys.create_workspace(name, company_name)
    payload = {
        "id": workspace.id,
        "name": workspace.name,
        "company_id": workspace.company_id,
    }
    emit(as_json, payload, f"Created workspace {workspace.id} ({workspace.name})")


@main.group("keys")
def keys_group():
    """Manage API keys."""


@keys_group.command("create")
@click.option("--workspace", "workspace_id", required=True)
@click.option("--name", required=True)
@click.option("--scopes", required=True, help="'all' or a comma-separated list.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@with_app()
def create_key(app, workspace_id, name, scopes, as_json):
    """Create an API key; the key is printed once and never again."""
    wanted = sorted(SCOPES) if scopes == "all" else [s.strip() for s in scopes.split(",")]
    keys.get_workspace(workspace_id)
    key, raw_key = keys.create_key(workspace_id, name, [s for s in wanted if s])
    payload = {**_key_row(key), "key": raw_key}
    emit(as_json, payload, f"Created key {key.id}. Key (shown only once):\n{raw_key}")


@keys_group.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON array.")
@with_app()
def list_keys(app, as_json):
    """List API keys (never the keys themselves)."""
    rows = [_key_row(key) for key in keys.list_keys()]
    if as_json:
        click.echo(json.dumps(rows))
    for row in [] if as_json else rows:
        state = "revoked" if row["revoked_at"] else "active"
        click.echo(
            f"{row['id']}  {row['name']}  workspace={row['workspace_id']}  "
            f"{state}  last_used={row['last_used_at']}  scopes={','.join(row['scopes'])}"
        )


def _key_row(key):
    def stamp(value):
        return value.isoformat() + "Z" if value else None

    return {
        "id": key.id,
        "name": key.name,
        "workspace_id": key.workspace_id,
        "scopes": key.scopes,
        "created_at": stamp(key.created_at),
        "last_used_at": stamp(key.last_used_at),
        "revoked_at": stamp(key.revoked_at),
    }


@keys_group.command("revoke")
@click.argument("key_id")
@with_app()
def revoke_key(app, key_id):
    """Revoke an API key, effective immediately."""
    keys.revoke_key(key_id)
    click.echo(f"Revoked key {key_id}")


@main.command()
@click.argument("state", type=click.Choice(["on", "off"]))
@with_app()
def maintenance(app, state):
    """Turn maintenance mode on or off; running servers see it at once."""
    system.set_maintenance(state == "on")
    click.echo(f"Maintenance mode {state}")


main.add_command(secrets_group(with_app))
