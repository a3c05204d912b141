"""The `agent-platform` command (entry point `agent_platform.cli:main`): the
group and its shared plumbing in base.py, the commands by responsibility."""

from ..cli_secrets import secrets_group
from . import admin, backup, billing, service, simulate, users  # noqa: F401  (they add commands)
from .base import main, with_app

main.add_command(secrets_group(with_app))

__all__ = ["main", "with_app"]
