"""`agent-platform secrets`: the key that encrypts stored secrets."""

import click

from . import secretbox
from .cli import with_app
from .services import secrets as stored


@click.group()
def secrets():
    """Manage the key that encrypts stored secrets (back it up!)."""


@secrets.command("rotate-key")
@with_app()
def rotate_key(app):
    """Write a new key file and re-encrypt every stored secret with it."""
    count = stored.rotate_key()
    path = secretbox.ring().source.path
    click.echo(f"Re-encrypted {count} rows with a new key in {path}; back up this file again.")


@secrets.command("reencrypt")
@with_app()
def reencrypt(app):
    """Re-encrypt every stored secret with the first key (after changing secrets.key)."""
    count = stored.reencrypt()
    click.echo(f"Re-encrypted {count} rows with the first key.")


@secrets.command("generate-key")
def generate_key():
    """Print a new key (for secrets.key / AGENT_PLATFORM_SECRETS_KEY)."""
    click.echo(secretbox.new_key())
