"""`agent-platform secrets`: the key that encrypts stored secrets.

Built by `secrets_group(with_app)`, so that this module needs nothing from
cli.py (which adds the group) and can be imported on its own.
"""

import click

from . import secretbox
from .services import secrets as stored


def rotate_key(app):
    """Write a new key file and re-encrypt every stored secret with it."""
    count = stored.rotate_key()
    path = secretbox.ring().source.path
    click.echo(f"Re-encrypted {count} rows with a new key in {path}; back up this file again.")


def reencrypt(app):
    """Re-encrypt every stored secret with the first key (after changing secrets.key)."""
    count = stored.reencrypt()
    click.echo(f"Re-encrypted {count} rows with the first key.")


def generate_key():
    """Print a new key (for secrets.key / AGENT_PLATFORM_SECRETS_KEY)."""
    click.echo(secretbox.new_key())


def secrets_group(with_app):
    """The group, its commands given --config and a migrated, checked app by `with_app`."""
    group = click.Group(
        "secrets", help="Manage the key that encrypts stored secrets (back it up!)."
    )
    group.command("rotate-key")(with_app()(rotate_key))
    group.command("reencrypt")(with_app()(reencrypt))
    group.command("generate-key")(generate_key)
    return group
