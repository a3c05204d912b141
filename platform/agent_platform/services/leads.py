"""Leads: contacts in the sales funnel. Statuses, qualification (by a call,
or by the score reaching the workspace's threshold), manual score
adjustments, conversion into an opportunity, and the settings."""

from ..db import transaction
from ..errors import Conflict, NotFound
from ..events import emit
from ..models import Contact, Lead, LeadAdjustment, SalesSettings, ScoringRule, fastsql
from ..models.base import utcnow
from ..models.pagination import paginate
from . import contacts, opportunities, scoring
from .scoring import render

# Statuses a PATCH may set; converted is reached by converting only.
SETTABLE_STATUSES = ("new", "contacted", "qualified", "unqualified")


def not_found(lead_id):
    return NotFound(f"Lead {lead_id} not found.", code="LEAD_NOT_FOUND")


def get_lead(workspace_id, lead_id):
    return Lead.get_in_workspace(workspace_id, lead_id, not_found(lead_id))


def list_leads(workspace_id, paging, status=None, owner=None, source=None, min_score=None):
    query = Lead.in_workspace(workspace_id)
    if status:
        query = query.where(Lead.status == status)
    if owner:
        query = query.where(Lead.owner == owner)
    if source:
        query = query.where(Lead.source == source)
    if min_score is not None:
        query = query.where(Lead.score >= min_score)
    return paginate(query, Lead, paging)


def create_lead(workspace_id, values, now=None):
    now = now or utcnow()
    with transaction():
        contact = contacts.get_contact(workspace_id, str(values.pop("contact_id")))
        return _create(workspace_id, contact.id, now, **values)


def _create(workspace_id, contact_id, now, **values):
    existing = Lead.of_contact(workspace_id, contact_id)
    if existing is not None:
        raise Conflict(f"Contact {contact_id} is already lead {existing.id}.", code="LEAD_EXISTS")
    lead = Lead(workspace=workspace_id, contact=contact_id, created_at=now, updated_at=now)
    for name, value in values.items():
        setattr(lead, name, value)
    lead.facts = scoring.history_facts(contact_id)
    lead.score, lead.score_reasons = scoring.scored(lead, ScoringRule.active(workspace_id))
    if lead.status == "qualified":
        lead.qualified_at = now
    fastsql.insert(lead)
    emit(workspace_id, "lead.created", render(lead), now=now)
    if lead.status == "qualified":  # made qualified: a subscriber to lead.qualified hears of it
        emit(workspace_id, "lead.qualified", {**render(lead), "automatic": False}, now=now)
    return scoring.recompute(lead, now)


def update_lead(workspace_id, lead_id, changes, now=None):
    now = now or utcnow()
    with transaction():
        lead = get_lead(workspace_id, lead_id)
        status = changes.pop("status", None)
        for name, value in changes.items():
            setattr(lead, name, value)
        if status and status != lead.status:
            return _set_status(lead, status, now)
        lead.updated_at = now
        lead.save(keep_updated_at=True)
        emit(workspace_id, "lead.updated", render(lead), now=now)
        return lead


def _set_status(lead, status, now):
    if lead.status == "converted":
        raise Conflict(
            f"Lead {lead.id} is converted; its status no longer changes.",
            code="LEAD_CONVERTED",
        )
    if status == "qualified":
        return scoring.qualify(lead, now)
    lead.status, lead.updated_at = status, now
    lead.save(keep_updated_at=True)
    emit(lead.workspace_id, "lead.updated", render(lead), now=now)
    return lead


def qualify_lead(workspace_id, lead_id, now=None):
    """Qualify by hand (idempotent for a qualified lead)."""
    with transaction():
        lead = get_lead(workspace_id, lead_id)
        if lead.status == "qualified":
            return lead
        return _set_status(lead, "qualified", now or utcnow())


def delete_lead(workspace_id, lead_id, now=None):
    with transaction():
        lead = get_lead(workspace_id, lead_id)
        data = render(lead)
        lead.delete_instance()
        emit(workspace_id, "lead.deleted", data, now=now)


def adjust_score(workspace_id, lead_id, points, reason, actor, now=None):
    """A manual adjustment, recorded with who made it and why."""
    now = now or utcnow()
    with transaction():
        lead = get_lead(workspace_id, lead_id)
        LeadAdjustment.create(
            lead=lead.id, points=points, reason=reason, actor=actor, created_at=now
        )
        lead.adjustment += points
        return scoring.recompute(lead, now, save=True)


def list_adjustments(workspace_id, lead_id, paging):
    lead = get_lead(workspace_id, lead_id)
    query = LeadAdjustment.select().where(LeadAdjustment.lead == lead.id)
    return paginate(query, LeadAdjustment, paging)


def convert_lead(workspace_id, lead_id, values, actor, now=None):
    """The lead becomes an opportunity (in the given column, else the first
    open one); its status is converted. Converting twice is 409."""
    now = now or utcnow()
    with transaction():
        lead = get_lead(workspace_id, lead_id)
        if lead.status == "converted":
            raise Conflict(
                f"Lead {lead.id} is converted already (opportunity {lead.opportunity_id}).",
                code="LEAD_CONVERTED",
            )
        values = {"contact_id": lead.contact_id, **values, "lead_id": lead.id}
        values.setdefault("title", _default_title(lead))
        opportunity = opportunities.create(workspace_id, values, actor, now)
        lead.status, lead.converted_at, lead.updated_at = "converted", now, now
        lead.opportunity_id = opportunity.id
        lead.save(keep_updated_at=True)
        emit(workspace_id, "lead.converted", render(lead), now=now)
        return {"lead": lead.as_dict(), "opportunity": opportunity.as_dict()}


def _default_title(lead):
    contact = Contact.by_id(lead.contact_id)
    return f"Deal with {contact.name or contact.phone or contact.email or contact.id}"[:200]


def on_inbound(channel, contact, conversation, message, now):
    """A message the contact wrote: its lead's facts move; with
    auto_create_leads on, a conversation the contact opens makes its lead."""
    lead = Lead.of_contact(channel.workspace_id, contact.id)
    if lead is not None:
        scoring.on_inbound(channel.workspace_id, lead, message, now)
    elif conversation.message_count == 1:
        if SalesSettings.of(channel.workspace_id).auto_create_leads:
            _create(channel.workspace_id, contact.id, now, source=channel.type)


_UPSERT_SETTINGS = (
    'INSERT INTO "sales_settings" ("id", "workspace_id", "qualify_threshold", '
    '"auto_create_leads", "updated_at") VALUES (?, ?, ?, ?, ?) ON CONFLICT ("workspace_id") '
    'DO UPDATE SET "qualify_threshold" = excluded."qualify_threshold", '
    '"auto_create_leads" = excluded."auto_create_leads", "updated_at" = excluded."updated_at"'
)


def get_settings(workspace_id):
    return SalesSettings.of(workspace_id)


def update_settings(workspace_id, changes, now=None):
    now = now or utcnow()
    with transaction():
        settings = SalesSettings.of(workspace_id)
        for name, value in changes.items():
            setattr(settings, name, value)
        settings.updated_at = now
        fastsql.execute(
            _UPSERT_SETTINGS, settings.id, workspace_id, settings.qualify_threshold,
            settings.auto_create_leads, now,
        )  # fmt: skip
        emit(workspace_id, "lead.settings_updated", settings.as_dict(), now=now)
        if "qualify_threshold" in changes:
            scoring.rescore_workspace(workspace_id, now)
        return settings
