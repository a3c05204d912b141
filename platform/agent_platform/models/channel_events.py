"""A channel's log of what its network said that is not a message: template
status and quality updates, errors the network reported, payloads that were
skipped or could not be stored, credential checks, media that could not be
downloaded. Read through GET /v1/channels/{id}/events."""

from peewee import BooleanField, CharField, DateTimeField, ForeignKeyField

from ..nul_text import nul_replaced
from .base import BaseModel, JSONField, utcnow
from .channels import Channel
from .fastsql import insert


class ChannelEvent(BaseModel):
    """`kind` names what happened (the network's field name for network
    notices, e.g. `phone_number_quality_update`); `payload` is what the
    network sent, or what the platform found."""

    channel = ForeignKeyField(Channel, backref="network_events", on_delete="CASCADE", index=False)
    kind = CharField(max_length=64)
    is_error = BooleanField(default=False)
    payload = JSONField(default=dict)
    created_at = DateTimeField(default=utcnow)

    class Meta:
        table_name = "channel_event"
        indexes = ((("channel", "created_at", "id"), False),)

    @classmethod
    def record(cls, channel_id, kind, payload, is_error=False, now=None):
        """Log `payload` as `kind`. Both may be a network's text as it came
        (a notice's field name, an update that could not be stored): a NUL
        in them is kept as U+FFFD (nul_text), on both engines, so that
        logging what failed cannot fail for it."""
        event = cls(
            channel=channel_id,
            kind=nul_replaced(kind[:64]),
            is_error=bool(is_error),
            payload=nul_replaced(payload),
            created_at=now or utcnow(),
        )
        return insert(event)

    @classmethod
    def of_channel(cls, channel_id):
        return cls.select().where(cls.channel == channel_id)

    @classmethod
    def newest(cls, channel_id, limit, kind=None, errors_only=False):
        """The channel's `limit` newest entries (of `kind`, or errors only)."""
        query = cls.of_channel(channel_id)
        if kind:
            query = query.where(cls.kind == kind)
        if errors_only:
            query = query.where(cls.is_error == True)  # noqa: E712 (SQL, not Python)
        return list(query.order_by(cls.created_at.desc(), cls.id.desc()).limit(limit))

    @classmethod
    def latest(cls, channel_id):
        """The channel's newest log entry, or None."""
        return cls.of_channel(channel_id).order_by(cls.created_at.desc(), cls.id.desc()).first()

    def as_dict(self):
        return {
            "id": self.id,
            "channel_id": self.channel_id,
            "kind": self.kind,
            "is_error": self.is_error,
            "payload": self.payload,
            "created_at": self.created_at,
        }
