"""Webhooks, their deliveries (one per event and webhook) and delivery attempts.

A delivery holds the exact body bytes it sends on every attempt. It is
`pending` until an attempt succeeds (`succeeded`) or its retries run out
(`failed`). A process sending it holds a lease (`lease_until`, `claim_token`):
another process claims it only after the lease has expired, so a crashed
attempt is made again and a live one never twice.
"""

from peewee import (
    BooleanField,
    CharField,
    DateTimeField,
    ForeignKeyField,
    IntegerField,
    TextField,
)

from . import fastsql
from .agents import Agent
from .base import BaseModel, JSONField, TimestampedModel, WorkspaceScoped, utcnow
from .encrypted import EncryptedCharField
from .tenancy import Workspace

WEBHOOK_STATUSES = ("active", "failing", "deactivated")
DELIVERY_STATUSES = ("pending", "succeeded", "failed")
EVERYTHING = "*"


class Webhook(TimestampedModel, WorkspaceScoped):
    workspace = ForeignKeyField(Workspace, backref="webhooks", on_delete="CASCADE")
    url = CharField(max_length=2048)
    # Event names, category names or "*".
    events = JSONField(default=list)
    description = TextField(default="")
    is_active = BooleanField(default=True)
    status = CharField(max_length=20, default="active")
    secret = EncryptedCharField(max_length=100)
    # After a rotation the old secret still signs for a while.
    previous_secret = EncryptedCharField(max_length=100, null=True)
    previous_secret_expires_at = DateTimeField(null=True)
    # Deliveries that ended failed since the last successful attempt.
    consecutive_failures = IntegerField(default=0)
    last_success_at = DateTimeField(null=True)
    last_failure_at = DateTimeField(null=True)
    # Set: the webhook gets only the events of this agent (Event.agent_id).
    agent = ForeignKeyField(Agent, null=True, backref="webhooks", on_delete="CASCADE")

    class Meta:
        indexes = ((("workspace", "url"), True),)

    def concerns(self, agent_id):
        """Whether an event of `agent_id` (None: of no agent) is this webhook's."""
        return self.agent_id is None or self.agent_id == agent_id

    def wants(self, event_name):
        from ..events.catalog import EVENTS  # events import models: import at use

        subscribed = set(self.events)
        if EVERYTHING in subscribed or event_name in subscribed:
            return True
        return EVENTS.get(event_name) in subscribed

    def secrets(self, now=None):
        """The secrets that sign now: the current one, then the previous one
        while its grace period lasts."""
        expires = self.previous_secret_expires_at
        if self.previous_secret and expires and expires > (now or utcnow()):
            return [self.secret, self.previous_secret]
        return [self.secret]

    @classmethod
    def listed(cls, workspace_id, status=None, is_active=None, agent_id=None):
        return fastsql.Listing(
            cls, workspace=workspace_id, status=status, is_active=is_active, agent=agent_id
        )

    @classmethod
    def with_url(cls, workspace_id, url, excluding_id=None):
        query = cls.in_workspace(workspace_id).where(cls.url == url)
        if excluding_id:
            query = query.where(cls.id != excluding_id)
        return query.first()

    @classmethod
    def subscribed(cls, workspace_id, event_name, agent_id=None):
        """The workspace's active webhooks that want `event_name` (of `agent_id`)."""
        # Runs inside every emit(): plain SQL (see fastsql).
        active = fastsql.fetch_all(
            cls,
            "SELECT * FROM webhook WHERE workspace_id = ? AND is_active = 1 ORDER BY created_at",
            workspace_id,
        )
        return [w for w in active if w.wants(event_name) and w.concerns(agent_id)]


class Delivery(TimestampedModel):
    webhook = ForeignKeyField(Webhook, backref="deliveries", on_delete="CASCADE")
    event_id = CharField(max_length=36)
    event = CharField(max_length=64)
    # The JSON envelope, serialised once; every attempt sends these bytes.
    body = TextField()
    status = CharField(max_length=20, default="pending")
    attempt_count = IntegerField(default=0)
    # attempt_count when the current round began (0, or when redelivered):
    # the retry schedule is indexed by the failures of this round.
    round_start = IntegerField(default=0)
    next_attempt_at = DateTimeField(null=True)
    lease_until = DateTimeField(null=True)
    claim_token = CharField(max_length=36, null=True)
    completed_at = DateTimeField(null=True)

    class Meta:
        indexes = (
            (("status", "next_attempt_at"), False),
            (("webhook", "status", "next_attempt_at"), False),  # a lane's next batch
            (("webhook", "created_at", "id"), False),
            (("lease_until",), False),
            (("created_at",), False),
        )

    @classmethod
    def of_webhook(cls, webhook_id, status=None, event=None):
        query = cls.select().where(cls.webhook == webhook_id)
        if status is not None:
            query = query.where(cls.status == status)
        if event is not None:
            query = query.where(cls.event == event)
        return query


class DeliveryAttempt(BaseModel):
    delivery = ForeignKeyField(Delivery, backref="attempts", on_delete="CASCADE")
    number = IntegerField()
    attempted_at = DateTimeField(default=utcnow)
    success = BooleanField()
    http_status = IntegerField(null=True)
    response_time_ms = IntegerField(null=True)
    error = TextField(null=True)
    # The first 1 KB of the answer, decoded leniently.
    response_body = TextField(null=True)

    class Meta:
        indexes = ((("delivery", "number"), False),)

    @classmethod
    def of_deliveries(cls, delivery_ids):
        """Attempts of the given deliveries, by delivery id, in order."""
        found = {delivery_id: [] for delivery_id in delivery_ids}
        query = cls.select().where(cls.delivery.in_(list(delivery_ids)))
        for attempt in query.order_by(cls.number):
            found[attempt.delivery_id].append(attempt)
        return found
