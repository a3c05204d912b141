"""Backup and restore of the database (see ../backup.py)."""

import click

from .. import backup as backups
from ..db import database
from .base import database_path, main, with_app


@main.command("backup")
@click.argument("path", type=click.Path(dir_okay=False))
@click.option("--force", is_flag=True, help="Replace PATH if it exists.")
@with_app(migrate=False)
def backup_command(app, path, force):
    """Write a consistent copy of the database to PATH (safe while the service runs)."""
    timeout = app.config["DATABASE_BUSY_TIMEOUT_SECONDS"]
    try:
        size = backups.backup(database_path(app), path, force=force, timeout=timeout)
    except backups.BackupError as error:
        raise click.ClickException(str(error)) from error
    click.echo(f"Backed up {database_path(app)} to {click.format_filename(path)} ({size} bytes)")


@main.command("restore")
@click.argument("path", type=click.Path(dir_okay=False))
@with_app(migrate=False, creates_database=True, restores=True)
def restore_command(app, path):
    """Replace the database with the backup at PATH (stop the service first)."""
    database.close_all()
    try:
        backups.restore(path, database_path(app))
    except backups.BackupError as error:
        raise click.ClickException(str(error)) from error
    click.echo(f"Restored {database_path(app)} from {click.format_filename(path)}")
    click.echo("Start the service: it applies any migrations newer than the backup.")
