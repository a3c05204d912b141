"""Billing without a payment provider: a workspace's plan and trial.

The operator sets both (CLI `workspaces plan`, and `[plan] default` /
`trial_days` for new workspaces). Changing the plan raises `plan.changed` in
the same transaction. A job raises `trial.expiring` when the trial is
`[plan] trial_warning_days` from its end and `trial.expired` at the end,
each once per trial end: the time it was raised is stored with the
workspace, so a restart neither repeats nor loses one. Nothing else follows
from a plan or a trial's end (no limits are switched, nothing is blocked).
"""

import re
from datetime import timedelta

from flask import current_app

from .. import events, scheduler
from ..db import transaction
from ..errors import NotFound, ValidationError
from ..models import Workspace
from ..models.base import utcnow

PLAN_NAME = re.compile(r"^[a-z0-9][a-z0-9_.-]{0,49}$")


def check_plan_name(name):
    if not isinstance(name, str) or not PLAN_NAME.match(name):
        raise ValidationError(
            "plan", "must be 1 to 50 of a-z, 0-9, '_', '.', '-', starting with a letter or digit"
        )
    return name


def new_workspace_terms(now=None):
    """The plan and trial end a new workspace starts with, from the configuration."""
    config = current_app.config
    days = config["PLAN_TRIAL_DAYS"]
    trial_ends_at = None if days is None else (now or utcnow()) + timedelta(days=days)
    return {"plan": config["PLAN_DEFAULT"], "trial_ends_at": trial_ends_at}


def get_terms(workspace_id):
    """The workspace, with its plan and trial end."""
    return _workspace(workspace_id)


def set_plan(workspace_id, plan, now=None):
    """Put the workspace on `plan`; raises plan.changed unless it already is."""
    check_plan_name(plan)
    now = now or utcnow()
    with transaction():
        workspace = _workspace(workspace_id)
        previous = workspace.plan
        if previous != plan:
            workspace.plan = plan
            workspace.save()
            events.emit(workspace.id, "plan.changed", _plan_changed(workspace, previous), now)
        return workspace


def set_trial_end(workspace_id, trial_ends_at):
    """A new trial end (None: no trial); its events will be raised afresh."""
    with transaction():
        workspace = _workspace(workspace_id)
        workspace.trial_ends_at = trial_ends_at
        workspace.trial_expiring_raised_at = None
        workspace.trial_expired_raised_at = None
        workspace.save()
        return workspace


@scheduler.job("PLAN_TRIAL_CHECK_SECONDS")
def raise_trial_events(now=None):
    """Raise the trial events that are due; returns how many were raised."""
    now = now or utcnow()
    warning = timedelta(days=current_app.config["PLAN_TRIAL_WARNING_DAYS"])
    raised = 0
    for workspace in list(Workspace.trials_to_raise(now, warning)):
        raised += _raise_due(workspace, now)
    return raised


def _raise_due(workspace, now):
    """trial.expired once the end has passed, else trial.expiring. A trial
    whose warning was missed entirely (the service was down) gets only
    trial.expired: a warning after the end would be wrong."""
    expired = workspace.trial_ends_at <= now
    field = Workspace.trial_expired_raised_at if expired else Workspace.trial_expiring_raised_at
    with transaction():
        if not Workspace.mark_raised(workspace.id, field, workspace.trial_ends_at, now):
            return 0  # another process raised it, or the trial end changed
        if expired:
            Workspace.mark_raised(
                workspace.id, Workspace.trial_expiring_raised_at, workspace.trial_ends_at, now
            )
        name = "trial.expired" if expired else "trial.expiring"
        events.emit(workspace.id, name, _trial_data(workspace, now), now)
    return 1


def _workspace(workspace_id):
    workspace = Workspace.get_or_none(Workspace.id == workspace_id)
    if workspace is None:
        raise NotFound(f"workspace {workspace_id} does not exist", code="WORKSPACE_NOT_FOUND")
    return workspace


def _plan_changed(workspace, previous):
    return {"workspace_id": workspace.id, "previous_plan": previous, "plan": workspace.plan}


def _trial_data(workspace, now):
    left = workspace.trial_ends_at - now
    return {
        "workspace_id": workspace.id,
        "plan": workspace.plan,
        "trial_ends_at": workspace.trial_ends_at.isoformat() + "Z",
        "days_left": max(0, left.days + (1 if left.seconds or left.microseconds else 0)),
    }
