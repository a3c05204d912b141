"""Opportunities: deals with an exact value, on a pipeline column. Moving
one between columns keeps its history; won and lost follow the column's kind."""

from .. import formats
from ..db import transaction
from ..errors import Conflict, NotFound, ValidationError
from ..events import emit
from ..models import Lead, Opportunity, OpportunityMove, PipelineColumn
from ..models.base import utcnow
from ..models.opportunities import summary_rows
from ..models.pagination import paginate
from ..money import MoneyError, from_minor, to_minor, weighted
from . import contacts
from .pipeline_columns import first_open_column, get_column
from .pipeline_columns import render as render_column


def not_found(opportunity_id):
    return NotFound(f"Opportunity {opportunity_id} not found.", code="OPPORTUNITY_NOT_FOUND")


def get_opportunity(workspace_id, opportunity_id):
    return Opportunity.get_in_workspace(workspace_id, opportunity_id, not_found(opportunity_id))


def render(opportunity):
    return formats.jsonable(opportunity.as_dict())


def list_opportunities(workspace_id, paging, **filters):
    query = Opportunity.in_workspace(workspace_id)
    for name, value in filters.items():
        if value is not None:
            query = query.where(getattr(Opportunity, name) == str(value))
    return paginate(query, Opportunity, paging)


def create_opportunity(workspace_id, values, actor, now=None):
    with transaction():
        return create(workspace_id, values, actor, now or utcnow())


def create(workspace_id, values, actor, now):
    """Inside the caller's transaction (a lead's conversion uses it too)."""
    column = _column_for(workspace_id, values.get("column_id"))
    opportunity = Opportunity(
        workspace=workspace_id,
        title=values["title"],
        contact=_contact_id(workspace_id, values.get("contact_id")),
        lead=_lead_id(workspace_id, values.get("lead_id")),
        owner=values.get("owner"),
        expected_close_date=values.get("expected_close_date"),
        lost_reason=values.get("lost_reason"),
        currency=values["currency"],
        value_minor=_minor(values.get("value", "0"), values["currency"]),
        created_at=now,
        updated_at=now,
    )
    _place(opportunity, column, now)
    opportunity.save(force_insert=True)
    _record_move(opportunity, None, column, actor, now)
    emit(workspace_id, "opportunity.created", render(opportunity), now=now)
    _raise_outcome(opportunity, now)
    return opportunity


def _column_for(workspace_id, column_id):
    if column_id is not None:
        return _existing_column(workspace_id, column_id)
    column = first_open_column(workspace_id)
    if column is None:
        raise Conflict(
            "The workspace's pipeline has no open column: create one first "
            "(POST /v1/pipeline/columns) or name column_id.",
            code="PIPELINE_EMPTY",
        )
    return column


def _existing_column(workspace_id, column_id):
    return get_column(workspace_id, str(column_id))


def _contact_id(workspace_id, contact_id):
    if contact_id is None:
        return None
    return contacts.get_contact(workspace_id, str(contact_id)).id


def _lead_id(workspace_id, lead_id):
    if lead_id is None:
        return None
    missing = NotFound(f"Lead {lead_id} not found.", code="LEAD_NOT_FOUND")
    return Lead.get_in_workspace(workspace_id, str(lead_id), missing).id


def _minor(value, currency):
    try:
        return to_minor(value, currency)
    except MoneyError as error:
        raise ValidationError("value", str(error)) from None


def _place(opportunity, column, now):
    """On `column`: its status follows the column's kind."""
    opportunity.column = column.id
    opportunity.status = column.kind
    opportunity.closed_at = None if column.kind == "open" else now


def _record_move(opportunity, from_column_id, column, actor, now):
    OpportunityMove.create(
        opportunity=opportunity.id,
        from_column_id=from_column_id,
        to_column_id=column.id,
        to_column_name=column.name,
        actor=actor,
        moved_at=now,
    )


def _raise_outcome(opportunity, now):
    if opportunity.status in ("won", "lost"):
        event = f"opportunity.{opportunity.status}"
        emit(opportunity.workspace_id, event, render(opportunity), now=now)


def update_opportunity(workspace_id, opportunity_id, changes, now=None):
    now = now or utcnow()
    with transaction():
        opportunity = get_opportunity(workspace_id, opportunity_id)
        currency = changes.pop("currency", opportunity.currency)
        if "value" in changes or currency != opportunity.currency:
            value = changes.pop("value", None)
            if value is None:
                raise ValidationError("value", "required when the currency changes")
            opportunity.value_minor, opportunity.currency = _minor(value, currency), currency
        for name in ("contact_id", "lead_id"):
            if name in changes:
                check = _contact_id if name == "contact_id" else _lead_id
                setattr(opportunity, name, check(workspace_id, changes.pop(name)))
        for name, value in changes.items():
            setattr(opportunity, name, value)
        opportunity.updated_at = now
        opportunity.save(keep_updated_at=True)
        emit(workspace_id, "opportunity.updated", render(opportunity), now=now)
        return opportunity


def move_opportunity(workspace_id, opportunity_id, column_id, actor, lost_reason=None, now=None):
    with transaction():
        opportunity = get_opportunity(workspace_id, opportunity_id)
        column = _existing_column(workspace_id, column_id)
        return move(opportunity, column, actor, now or utcnow(), lost_reason)


def move(opportunity, column, actor, now, lost_reason=None):
    """To `column` (inside a transaction): history, opportunity.moved, and
    opportunity.won or .lost when the column's kind says so."""
    if opportunity.column_id == column.id:
        raise Conflict(
            f"Opportunity {opportunity.id} is in column {column.id} already.",
            code="OPPORTUNITY_ALREADY_IN_COLUMN",
        )
    previous = opportunity.column_id
    _place(opportunity, column, now)
    if lost_reason is not None:
        opportunity.lost_reason = lost_reason
    opportunity.updated_at = now
    opportunity.save(keep_updated_at=True)
    _record_move(opportunity, previous, column, actor, now)
    data = {**render(opportunity), "from_column_id": previous}
    emit(opportunity.workspace_id, "opportunity.moved", data, now=now)
    _raise_outcome(opportunity, now)
    return opportunity


def list_moves(workspace_id, opportunity_id, paging):
    opportunity = get_opportunity(workspace_id, opportunity_id)
    query = OpportunityMove.select().where(OpportunityMove.opportunity == opportunity.id)
    return paginate(query, OpportunityMove, paging)


def delete_opportunity(workspace_id, opportunity_id, now=None):
    with transaction():
        opportunity = get_opportunity(workspace_id, opportunity_id)
        data = render(opportunity)
        opportunity.delete_instance()
        Lead.update(opportunity_id=None).where(Lead.opportunity_id == opportunity.id).execute()
        emit(workspace_id, "opportunity.deleted", data, now=now)


def summary(workspace_id):
    """Count and value per column and currency, and the weighted forecast
    (value x the column's win probability), per currency. Sums in SQL."""
    columns = PipelineColumn.ordered(workspace_id)
    by_column = {column.id: [] for column in columns}
    totals = {}
    for column_id, currency, count, minor in summary_rows(workspace_id):
        by_column.setdefault(column_id, []).append((currency, count, minor))
    rendered = [_column_figures(column, by_column[column.id], totals) for column in columns]
    return {"columns": rendered, "totals": [_figures(*totals[c]) for c in sorted(totals)]}


def _column_figures(column, rows, totals):
    values = []
    for currency, count, minor in sorted(rows):
        forecast = weighted(minor, column.probability)
        values.append(_figures(currency, count, minor, forecast))
        kept = totals.setdefault(currency, [currency, 0, 0, 0])
        kept[1], kept[2], kept[3] = kept[1] + count, kept[2] + minor, kept[3] + forecast
    return {
        "column_id": column.id,
        "name": column.name,
        "kind": column.kind,
        "probability": column.probability,
        "count": sum(count for _, count, _ in rows),
        "values": values,
    }


def _figures(currency, count, minor, forecast):
    return {
        "currency": currency,
        "count": count,
        "value": from_minor(minor, currency),
        "weighted": from_minor(forecast, currency),
    }


def delete_column(workspace_id, column_id, move_to=None, actor=None, now=None):
    """Refused while the column holds opportunities, unless `move_to` names
    the column they go to first (each move recorded and raised as usual)."""
    now = now or utcnow()
    with transaction():
        column = get_column(workspace_id, column_id)
        target = None if move_to is None else get_column(workspace_id, str(move_to))
        if target is not None and target.id == column.id:
            raise ValidationError("move_to", "must be another column than the one deleted")
        held = list(Opportunity.select().where(Opportunity.column == column.id))
        if held and target is None:
            raise Conflict(
                f"Pipeline column {column.id} holds {len(held)} opportunities: name "
                "move_to, the column to move them to, or move them first.",
                code="PIPELINE_COLUMN_NOT_EMPTY",
            )
        for opportunity in held:
            move(opportunity, target, actor, now)
        data = render_column(column)
        column.delete_instance()
        emit(workspace_id, "pipeline_column.deleted", data, now=now)
