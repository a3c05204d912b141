"""Administration: workspaces, API keys, maintenance mode."""

import json

import click

from .. import formats
from ..scopes import SCOPES
from ..services import keys, system, users
from .base import emit, main, stamp, with_app

NAME_MAX = 200  # as the API's names


def _checked_name(context, parameter, value):
    """The name rules of the API, for names given on the command line:
    refused as a bad option value (status 2) before anything is done."""
    if value is None:
        return value
    problem = formats.name_problem(value)
    if problem is None and not 1 <= len(value) <= NAME_MAX:
        problem = f"Must be 1 to {NAME_MAX} characters."
    if problem:
        raise click.BadParameter(problem)
    return value


@main.group()
def workspaces():
    """Manage workspaces."""


@workspaces.command("create")
@click.option("--name", required=True, callback=_checked_name)
@click.option(
    "--company",
    "company_name",
    callback=_checked_name,
    help="Company name (default: the workspace name).",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@with_app()
def create_workspace(app, name, company_name, as_json):
    """Create a workspace (in a new company)."""
    workspace = keys.create_workspace(name, company_name)
    emit(as_json, _workspace_row(workspace), f"Created workspace {workspace.id} ({workspace.name})")


@workspaces.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON array.")
@with_app()
def list_workspaces(app, as_json):
    """List workspaces, oldest first."""
    rows = [_workspace_row(workspace) for workspace in keys.list_workspaces()]
    lines = (f"{row['id']}  {row['name']}  company={row['company_id']}" for row in rows)
    click.echo(json.dumps(rows) if as_json else "\n".join(lines))


def _workspace_row(workspace):
    return {
        "id": workspace.id,
        "name": workspace.name,
        "company_id": workspace.company_id,
        "plan": workspace.plan,
        "trial_ends_at": stamp(workspace.trial_ends_at),
        "created_at": stamp(workspace.created_at),
    }


@main.group("keys")
def keys_group():
    """Manage API keys."""


@keys_group.command("create")
@click.option("--workspace", required=True, help="Workspace id or exact name.")
@click.option("--name", required=True, callback=_checked_name)
@click.option("--scopes", required=True, help="'all' or a comma-separated list.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@with_app()
def create_key(app, workspace, name, scopes, as_json):
    """Create an API key; the key is printed once and never again."""
    wanted = sorted(SCOPES) if scopes == "all" else [s.strip() for s in scopes.split(",")]
    workspace_id = users.workspace_by_id_or_name(workspace).id
    key, raw_key = keys.create_key(workspace_id, name, [s for s in wanted if s])
    payload = {**_key_row(key), "key": raw_key}
    emit(as_json, payload, f"Created key {key.id}. Key (shown only once):\n{raw_key}")


@keys_group.command("list")
@click.option("--workspace", "workspace_id", help="Only this workspace's keys.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON array.")
@with_app()
def list_keys(app, workspace_id, as_json):
    """List API keys (never the keys themselves)."""
    rows = [_key_row(key) for key in keys.list_keys(workspace_id)]
    click.echo(json.dumps(rows) if as_json else "\n".join(map(_key_line, rows)))


def _key_line(row):
    state = "revoked" if row["revoked_at"] else "active"
    minted_by = f"  minted_by={row['parent_id']}" if row["parent_id"] else ""
    return (
        f"{row['id']}  {row['name']}  workspace={row['workspace_id']}  "
        f"{state}  last_used={row['last_used_at']}  scopes={','.join(row['scopes'])}{minted_by}"
    )


def _key_row(key):
    return {
        "id": key.id,
        "name": key.name,
        "workspace_id": key.workspace_id,
        "scopes": key.scopes,
        "parent_id": key.parent_id,
        "created_at": stamp(key.created_at),
        "last_used_at": stamp(key.last_used_at),
        "revoked_at": stamp(key.revoked_at),
    }


@keys_group.command("revoke")
@click.argument("key_id")
@with_app()
def revoke_key(app, key_id):
    """Revoke an API key and every key minted from it, effective immediately."""
    _, minted = keys.revoke_key(key_id)
    also = f" and {minted} key{'' if minted == 1 else 's'} minted from it" if minted else ""
    click.echo(f"Revoked key {key_id}{also}")


@main.command()
@click.argument("state", type=click.Choice(["on", "off"]))
@with_app()
def maintenance(app, state):
    """Turn maintenance mode on or off; running servers see it at once."""
    system.set_maintenance(state == "on")
    click.echo(f"Maintenance mode {state}")
