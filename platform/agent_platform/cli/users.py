"""The people who sign in to the inbox: `users create` makes the first one
(with a one-time sign-in link, or a password typed on the terminal)."""

import json

import click

from ..errors import ValidationError
from ..services import users
from .admin import _checked_name
from .base import emit, main, stamp, with_app


@main.group("users")
def users_group():
    """Manage the people who sign in to the inbox (/app)."""


@users_group.command("create")
@click.option("--workspace", "workspace", required=True, help="Workspace id or exact name.")
@click.option("--email", required=True)
@click.option("--name", required=True, callback=_checked_name)
@click.option("--role", type=click.Choice(users.ROLES), default="agent", show_default=True)
@click.option(
    "--password-prompt",
    is_flag=True,
    help="Type the password here (twice) instead of printing a one-time sign-in link.",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@with_app()
def create_user(app, workspace, email, name, role, password_prompt, as_json):
    """Create a user and print their one-time sign-in link."""
    workspace_id = users.workspace_by_id_or_name(workspace).id
    values = {"email": email, "name": name, "role": role}
    if password_prompt:
        values["password"] = _typed_password()
    created = users.invite(workspace_id, values)
    emit(as_json, _row(created), _created_text(created))


def _typed_password():
    """Typed twice, not echoed (click's hidden prompt is getpass on a terminal)."""
    password = click.prompt("Password", hide_input=True)
    users.check_password(password)
    if click.prompt("Password again", hide_input=True) != password:
        raise ValidationError("password", "the two passwords differ")
    return password


def _created_text(created):
    head = f"Created user {created['id']} ({created['email']}, {created['role']})"
    if created["invite_url"] is None:
        return f"{head}. They can sign in now."
    return f"{head}. One-time sign-in link (open it to choose a password):\n{created['invite_url']}"


@users_group.command("list")
@click.option("--workspace", "workspace", required=True, help="Workspace id or exact name.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON array.")
@with_app()
def list_users(app, workspace, as_json):
    """List a workspace's users, oldest first."""
    workspace_id = users.workspace_by_id_or_name(workspace).id
    rows = [_row(user.as_dict()) for user in users.all_users(workspace_id)]
    lines = (
        f"{row['id']}  {row['email']}  {row['name']}  {row['role']}  "
        f"{'active' if row['active'] else 'deactivated'}  last_sign_in={row['last_sign_in_at']}"
        for row in rows
    )
    click.echo(json.dumps(rows) if as_json else "\n".join(lines))


def _row(user):
    times = ("last_sign_in_at", "created_at", "updated_at")
    return {key: stamp(value) if key in times else value for key, value in user.items()}
