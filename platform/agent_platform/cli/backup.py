"""Backup and restore of the database (see ../backup.py, and
../backup_postgresql.py for a database on a PostgreSQL server)."""

import click

from .. import backup as backups
from ..database_name import described
from ..db import database, is_postgresql
from .base import database_path, main, with_app


@main.command("backup")
@click.argument("path", type=click.Path(dir_okay=False))
@click.option("--force", is_flag=True, help="Replace PATH if it exists.")
@with_app(migrate=False)
def backup_command(app, path, force):
    """Write a consistent copy of the database to PATH (safe while the service runs)."""
    try:
        size = _backup(app, path, force)
    except backups.BackupError as error:
        raise click.ClickException(str(error)) from error
    click.echo(f"Backed up {described()} to {click.format_filename(path)} ({size} bytes)")


def _backup(app, path, force):
    if is_postgresql():
        from .. import backup_postgresql

        return backup_postgresql.backup(app.config["DATABASE_URL"], path, force=force)
    timeout = app.config["DATABASE_BUSY_TIMEOUT_SECONDS"]
    return backups.backup(database_path(app), path, force=force, timeout=timeout)


@main.command("restore")
@click.argument("path", type=click.Path(dir_okay=False))
@with_app(migrate=False, creates_database=True, restores=True)
def restore_command(app, path):
    """Replace the database with the backup at PATH (stop the service first)."""
    database.close_all()
    try:
        _restore(app, path)
    except backups.BackupError as error:
        raise click.ClickException(str(error)) from error
    click.echo(f"Restored {described()} from {click.format_filename(path)}")
    click.echo("Start the service: it applies any migrations newer than the backup.")


def _restore(app, path):
    if is_postgresql():
        from .. import backup_postgresql

        return backup_postgresql.restore(path, app.config["DATABASE_URL"])
    return backups.restore(path, database_path(app))
