"""Leads (contacts in the sales funnel), their scoring rules and settings."""

from peewee import BooleanField, CharField, ForeignKeyField, IntegerField, TextField

from .base import BaseModel, JSONField, TimestampedModel, UtcDateTimeField, WorkspaceScoped, utcnow
from .contacts import Contact
from .fastsql import fetch_all, fetch_one
from .tenancy import Workspace

# converted is reached only by converting (which creates an opportunity).
STATUSES = ("new", "contacted", "qualified", "unqualified", "converted")
# Statuses a score past the threshold qualifies automatically.
QUALIFIABLE = ("new", "contacted")
RULE_KINDS = (
    "messages_received",
    "replied_within",
    "intention_matched",
    "custom_field_value",
    "appointment_booked",
)


class Lead(TimestampedModel, WorkspaceScoped):
    """One per contact. `facts` holds what scoring reads that is not on the
    contact (messages received, the fastest reply, intentions matched,
    appointments booked), kept up to date as they happen, so a score is
    recomputed from one row."""

    workspace = ForeignKeyField(Workspace, backref="leads", on_delete="CASCADE", index=False)
    contact = ForeignKeyField(Contact, backref="leads", on_delete="CASCADE")
    status = CharField(max_length=20, default="new")
    source = CharField(max_length=20, default="api")
    owner = CharField(max_length=200, null=True)
    notes = TextField(default="")
    score = IntegerField(default=0)
    score_reasons = JSONField(default=list)
    adjustment = IntegerField(default=0)  # the sum of manual adjustments
    facts = JSONField(default=dict)
    qualified_at = UtcDateTimeField(null=True)
    converted_at = UtcDateTimeField(null=True)
    opportunity_id = CharField(max_length=36, null=True)

    class Meta:
        indexes = (
            (("workspace", "contact"), True),
            (("workspace", "created_at", "id"), False),
            (("workspace", "status", "created_at", "id"), False),
            (("workspace", "score", "id"), False),
        )

    @classmethod
    def of_contact(cls, workspace_id, contact_id):
        sql = 'SELECT * FROM "lead" WHERE "workspace_id" = ? AND "contact_id" = ?'
        return fetch_one(cls, sql, workspace_id, contact_id)

    @classmethod
    def of_contacts(cls, workspace_id, contact_ids):
        """{contact id: lead} for the contacts that have one."""
        if not contact_ids:
            return {}
        marks = ", ".join("?" * len(contact_ids))
        sql = f'SELECT * FROM "lead" WHERE "workspace_id" = ? AND "contact_id" IN ({marks})'
        return {lead.contact_id: lead for lead in fetch_all(cls, sql, workspace_id, *contact_ids)}

    def as_dict(self):
        return {
            "id": self.id,
            "contact_id": self.contact_id,
            "status": self.status,
            "source": self.source,
            "owner": self.owner,
            "notes": self.notes,
            "score": self.score,
            "score_reasons": self.score_reasons,
            "qualified_at": self.qualified_at,
            "converted_at": self.converted_at,
            "opportunity_id": self.opportunity_id,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
        }


class LeadAdjustment(BaseModel):
    """A manual change of a lead's score: by whom (the API key) and why."""

    lead = ForeignKeyField(Lead, backref="adjustments", on_delete="CASCADE")
    points = IntegerField()
    reason = TextField()
    actor = CharField(max_length=200)
    created_at = UtcDateTimeField(default=utcnow)

    def as_dict(self):
        return {
            "id": self.id,
            "points": self.points,
            "reason": self.reason,
            "actor": self.actor,
            "created_at": self.created_at,
        }


class ScoringRule(TimestampedModel, WorkspaceScoped):
    workspace = ForeignKeyField(
        Workspace, backref="scoring_rules", on_delete="CASCADE", index=False
    )
    name = CharField(max_length=100)
    kind = CharField(max_length=30)
    points = IntegerField()
    params = JSONField(default=dict)
    is_active = BooleanField(default=True)

    class Meta:
        indexes = ((("workspace", "created_at", "id"), False),)

    @classmethod
    def active(cls, workspace_id):
        sql = (
            'SELECT * FROM "scoring_rule" WHERE "workspace_id" = ? AND "is_active" = 1 '
            'ORDER BY "created_at", "id"'
        )
        return fetch_all(cls, sql, workspace_id)

    def as_dict(self):
        return {
            "id": self.id,
            "name": self.name,
            "kind": self.kind,
            "points": self.points,
            "params": self.params,
            "is_active": self.is_active,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
        }


class SalesSettings(BaseModel):
    """A workspace's lead settings; a workspace without a row has the defaults."""

    workspace = ForeignKeyField(Workspace, on_delete="CASCADE", unique=True)
    qualify_threshold = IntegerField(null=True)  # None: never automatically
    auto_create_leads = BooleanField(default=False)
    updated_at = UtcDateTimeField(default=utcnow)

    @classmethod
    def of(cls, workspace_id):
        sql = 'SELECT * FROM "sales_settings" WHERE "workspace_id" = ?'
        found = fetch_one(cls, sql, workspace_id)
        return found or cls(workspace=workspace_id, qualify_threshold=None, auto_create_leads=False)

    def as_dict(self):
        return {
            "qualify_threshold": self.qualify_threshold,
            "auto_create_leads": self.auto_create_leads,
        }
