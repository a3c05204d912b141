"""The `agent-platform` group and what every command shares: --config, an app
built from it, the database check, output."""

import contextlib
import functools
import json

import click
from peewee import OperationalError

from .. import __version__, create_app, database_name, storage
from ..config import CONFIG_FILE_ENV, ConfigError, load_config, resolve_path
from ..db import database, is_postgresql
from ..errors import ApiError
from ..migrate import apply_migrations


def with_app(overrides=None, migrate=True, creates_database=False, check=None, restores=False):
    """Give a command --config and an app built from it (migrated unless told not to).

    `overrides(**options)` turns command options into configuration values.
    Unless the command `creates_database` (migrate, serve, restore), it
    refuses to run on a database that does not exist: from the wrong
    directory or without --config it would otherwise work on a new, empty
    one. Creating one (unless it `restores` a backup into it) is said in one
    line naming where: a typo in database.path would otherwise look like
    data lost.
    `check(config)`, if given, runs before anything is created on disk.
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
            with _usable_storage():
                config = _checked_config(config_path, settings, creates_database, check)
                is_new = _is_new_file(config)
                app = _build_app(config_path, settings)
                with app.app_context():
                    try:
                        if migrate:
                            report_migrations(apply_migrations())
                        if is_new and not restores:
                            _say_created(database_path(app))
                        return command(app, **options)
                    except ApiError as error:
                        raise click.ClickException(error.message) from error
                    except ConfigError as error:  # e.g. the key of stored secrets
                        raise click.ClickException(str(error)) from error
                    finally:
                        database.close()

        return wrapper

    return decorator


class BadConfiguration(click.ClickException):
    """A configuration that cannot be used: status 2, as for a usage error."""

    exit_code = 2


@contextlib.contextmanager
def _usable_storage():
    """A database, directory or serving lock that the disk refuses (read-only,
    full, not writable by this user, a file where a directory should be):
    status 2 and one line naming the path and what to do, no traceback."""
    try:
        yield
    except click.ClickException:
        raise
    except Exception as error:
        problem = _startup_problem(error)
        if problem is None:
            raise
        raise BadConfiguration(problem) from error


def _startup_problem(error):
    """The file's problem on SQLite; on PostgreSQL, a server that cannot be
    reached or refuses the URL's user (said by the server, in one line)."""
    if not is_postgresql():
        return storage.startup_problem(error, database.database)
    if not isinstance(error, OperationalError):
        return None
    reason = str(error).strip().splitlines()[-1]
    return f"cannot connect to the database {database_name.described()}: {reason}"


def _checked_config(config_path, settings, creates_database, check):
    """The configuration, checked before anything is created on disk."""
    try:
        config = load_config(config_path, overrides=settings)
    except ConfigError as error:
        raise BadConfiguration(str(error)) from error
    if not creates_database:
        require_database(config)
    if check:
        check(config)
    return config


def _build_app(config_path, settings):
    try:
        return create_app(settings, config_path=config_path)
    except ConfigError as error:
        raise BadConfiguration(str(error)) from error


def _say_created(path):
    click.echo(f"Created a new, empty database at {path} (no database was there)", err=True)


def _is_new_file(config):
    """Whether the SQLite file is still to be made (a server's database is not)."""
    return not config["DATABASE_URL"] and not resolve_path(config["DATABASE_PATH"]).is_file()


def require_database(config):
    """A SQLite file must be there; a server's database is the server's to tell."""
    path = resolve_path(config["DATABASE_PATH"])
    if not config["DATABASE_URL"] and not path.is_file():
        raise click.ClickException(
            f"no database at {path}: run `agent-platform migrate` first (or pass --config)"
        )


def _database_file(config):
    return resolve_path(config["DATABASE_PATH"])


def database_path(app):
    return _database_file(app.config)


def report_migrations(applied):
    if applied:
        click.echo(f"Applied migrations: {', '.join(applied)}", err=True)


def emit(as_json, payload, text):
    click.echo(json.dumps(payload) if as_json else text)


def stamp(value):
    return value.isoformat() + "Z" if value else None


@click.group()
@click.version_option(__version__, prog_name="agent-platform")
def main():
    """Agent Platform: conversational AI agents behind one REST API."""
