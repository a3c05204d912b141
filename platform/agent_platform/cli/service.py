"""Running the service: serve, worker, migrate."""

import signal
import threading

import click

from ..database_name import described
from ..db import database
from ..migrate import apply_migrations
from ..services import keys, users
from .base import BadConfiguration, main, with_app


def _server_overrides(host, port, dev):
    settings = {"SERVER_HOST": host} if host else {}
    if port:
        settings["SERVER_PORT"] = port
    return settings


def _port_free(config):
    """A busy port (the service's, or metrics.listen's) stops `serve` before
    it creates or migrates anything."""
    from ..server import ListenError, check_listening

    try:
        check_listening(config)
    except ListenError as error:
        raise BadConfiguration(str(error)) from error


@main.command()
@click.option("--host", help="Address to listen on (default: server.host).")
@click.option("--port", type=int, help="Port to listen on (default: server.port).")
@click.option("--dev", is_flag=True, help="Use Flask's development server.")
@with_app(overrides=_server_overrides, creates_database=True, check=_port_free)
def serve(app, host, port, dev):
    """Migrate, then serve the API and run background jobs in one process."""
    from ..instance import AlreadyServing, claim_serving
    from ..server import exec_server, run_dev_server

    click.echo(f"Database: {described()}", err=True)
    try:  # before the first key is made: it is shown only once
        claim_serving()
    except AlreadyServing as error:
        raise click.ClickException(str(error)) from error
    first_key = _first_key_note(keys.ensure_first_admin_key())
    _say_where_people_go(app)
    database.close_all()  # never carry a connection into the server
    if dev:
        run_dev_server(app, first_key)
    else:
        config_path = click.get_current_context().params["config_path"]
        exec_server(config_path, _server_overrides(host, port, dev), first_key)


def _first_key_note(raw_key):
    """What the first start prints last, once the server listens and its
    jobs have said they started: the admin key alone on its line, and how to
    make another (it is shown only once)."""
    if raw_key is None:
        return None
    return (
        "\nCreated the default workspace. Admin API key (shown only once):\n"
        f"{raw_key}\n"
        "Make another key any time with:\n"
        '  agent-platform keys create --workspace "Default workspace" --name NAME --scopes all\n'
    )


def _say_where_people_go(app):
    """The inbox's address and, while nobody can sign in to it, how to make
    its first user."""
    click.echo(f"Inbox: {app.config['SERVER_PUBLIC_URL'].rstrip('/')}/app")
    if users.count_all() == 0:
        workspaces = keys.list_workspaces()
        workspace = workspaces[0].id if workspaces else "WORKSPACE_ID"
        click.echo(
            "No one can sign in yet. Make the first user with:\n"
            f"  agent-platform users create --workspace {workspace} "
            "--email you@example.com --name 'Your Name' --role admin"
        )


@main.command()
@with_app()
def worker(app):
    """Run only the background jobs (for a split web/worker setup)."""
    from ..scheduler import build_scheduler, stop_taking_work

    click.echo(f"Database: {described()}", err=True)
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
    stop_taking_work()  # a backlog is left to the leases, not drained first
    scheduler.shutdown()


@main.command()
@with_app(migrate=False, creates_database=True)
def migrate(app):
    """Apply pending database migrations (creating the database)."""
    applied = apply_migrations()
    click.echo(f"Applied: {', '.join(applied)}" if applied else "Nothing to apply.")
