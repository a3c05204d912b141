"""`workspaces plan`: a workspace's plan and trial end (no payment provider)."""

from datetime import UTC, datetime

import click

from ..services import billing
from .admin import workspaces
from .base import emit, stamp, with_app


def _trial_end(context, parameter, value):
    """An ISO 8601 time (a date is its midnight, UTC), or `none`."""
    if value is None or value == "none":
        return value
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise click.BadParameter("an ISO 8601 date or time, e.g. 2027-01-31T12:00:00Z") from None
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC).replace(tzinfo=None)
    return moment


@workspaces.command("plan")
@click.argument("workspace_id")
@click.option("--plan", "plan", help="Put the workspace on this plan (raises plan.changed).")
@click.option(
    "--trial-ends",
    callback=_trial_end,
    help="When its trial ends (ISO 8601, UTC unless an offset is given), or 'none'.",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@with_app()
def plan(app, workspace_id, plan, trial_ends, as_json):
    """Show, or change, a workspace's plan and trial end."""
    if plan is not None:
        billing.check_plan_name(plan)
    if trial_ends is not None:
        billing.set_trial_end(workspace_id, None if trial_ends == "none" else trial_ends)
    workspace = billing.set_plan(workspace_id, plan) if plan else billing.get_terms(workspace_id)
    row = {
        "id": workspace.id,
        "plan": workspace.plan,
        "trial_ends_at": stamp(workspace.trial_ends_at),
    }
    trial = row["trial_ends_at"] or "no trial"
    emit(as_json, row, f"Workspace {workspace.id}: plan {workspace.plan}, trial: {trial}")
