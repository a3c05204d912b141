"""Scoring rules: what each kind of fact is worth, per workspace.

Kinds and their params:
  messages_received   {"at_least": n}          the contact sent n messages or more
  replied_within      {"seconds": s}           the contact answered one of ours within s
  intention_matched   {"intention_id": id}     the agent matched that intention
  custom_field_value  {"custom_field_id": id,  the contact's field holds the value
                       "value": v}             (a multiselect: contains it)
  appointment_booked  {}                       the contact has an appointment that is
                                               not canceled (scheduled, rescheduled or done)
"""

from .. import formats
from ..db import transaction
from ..errors import NotFound, ValidationError
from ..events import emit
from ..models import Intention, ScoringRule
from ..models.base import utcnow
from ..models.pagination import paginate
from . import contacts, custom_fields, scoring

PARAMS = {
    "messages_received": ("at_least",),
    "replied_within": ("seconds",),
    "intention_matched": ("intention_id",),
    "custom_field_value": ("custom_field_id", "value"),
    "appointment_booked": (),
}


def not_found(rule_id):
    return NotFound(f"Scoring rule {rule_id} not found.", code="SCORING_RULE_NOT_FOUND")


def get_rule(workspace_id, rule_id):
    return ScoringRule.get_in_workspace(workspace_id, rule_id, not_found(rule_id))


def list_rules(workspace_id, paging, is_active=None):
    query = ScoringRule.in_workspace(workspace_id)
    if is_active is not None:
        query = query.where(ScoringRule.is_active == is_active)
    return paginate(query, ScoringRule, paging)


def create_rule(workspace_id, values, now=None):
    now = now or utcnow()
    with transaction():
        params = checked_params(workspace_id, values["kind"], values["params"])
        rule = ScoringRule(workspace=workspace_id, **{**values, "params": params})
        rule.created_at = rule.updated_at = now
        rule.save(force_insert=True)
        return _changed(rule, "scoring_rule.created", now)


def update_rule(workspace_id, rule_id, changes, now=None):
    now = now or utcnow()
    with transaction():
        rule = get_rule(workspace_id, rule_id)
        if "kind" in changes and "params" not in changes:
            raise ValidationError("params", "required when the kind changes")
        for name, value in changes.items():
            setattr(rule, name, value)
        rule.params = checked_params(workspace_id, rule.kind, rule.params)
        rule.updated_at = now
        rule.save(keep_updated_at=True)
        return _changed(rule, "scoring_rule.updated", now)


def delete_rule(workspace_id, rule_id, now=None):
    now = now or utcnow()
    with transaction():
        rule = get_rule(workspace_id, rule_id)
        rule.delete_instance()
        _changed(rule, "scoring_rule.deleted", now)


def _changed(rule, event, now):
    """The event, then every lead of the workspace scored again."""
    emit(rule.workspace_id, event, formats.jsonable(rule.as_dict()), now=now)
    scoring.rescore_workspace(rule.workspace_id, now)
    return rule


def checked_params(workspace_id, kind, params):
    """The params of `kind`, each present and checked; others refused."""
    wanted = PARAMS[kind]
    for name in params:
        if name not in wanted:
            raise ValidationError(f"params.{name}", f"does not apply to the kind {kind}")
    for name in wanted:
        if name not in params or params[name] is None:
            raise ValidationError(
                f"params.{name}", f"required for the kind {kind}", code="MISSING_REQUIRED_FIELD"
            )
    if kind == "intention_matched":
        return {"intention_id": _intention_id(workspace_id, params["intention_id"])}
    if kind == "custom_field_value":
        return _field_value(workspace_id, params["custom_field_id"], params["value"])
    return dict(params)


def _intention_id(workspace_id, intention_id):
    missing = NotFound(f"Intention {intention_id} not found.", code="INTENTION_NOT_FOUND")
    return Intention.get_in_workspace(workspace_id, str(intention_id), missing).id


def _field_value(workspace_id, field_id, value):
    field = custom_fields.get_field(workspace_id, str(field_id))
    if field.field_type == "multiselect":
        checked = contacts.check_value(field, [value], "params.value")[0]
    else:
        checked = contacts.check_value(field, value, "params.value")
    return {"custom_field_id": field.id, "value": checked}
