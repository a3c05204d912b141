"""Channels: where customers write from (WhatsApp, Telegram, e-mail, website)."""

from peewee import BooleanField, CharField, DateTimeField, ForeignKeyField, fn

from .agents import Agent
from .base import TimestampedModel, WorkspaceScoped
from .encrypted import SecretsJSONField
from .fastsql import execute, from_rows
from .names import same_name
from .tenancy import Workspace

# Settings that are written but never read back (the API shows `<name>_set`),
# {channel type: names}: each type declares its own as it registers
# (channels.adapters); kept here because the column encrypts them and
# as_dict hides them.
SECRET_SETTINGS = {}
# Every type's secret names in one set, which the settings column reads
# live: a type registered after the model was defined is encrypted too.
_SECRET_NAMES = set()


def declare_secret_settings(channel_type, names):
    SECRET_SETTINGS[channel_type] = tuple(names)
    _SECRET_NAMES.update(names)


class Channel(TimestampedModel, WorkspaceScoped):
    """A deleted channel is kept (is_active false, deleted_at set) so the
    conversations and messages that came through it keep their history; it
    is not found anywhere in the API."""

    workspace = ForeignKeyField(Workspace, backref="channels", on_delete="CASCADE")
    # Deleting an agent detaches its channels; the channels stay.
    agent = ForeignKeyField(Agent, null=True, backref="channels", on_delete="SET NULL")
    name = CharField(max_length=200)
    type = CharField(max_length=20)
    is_active = BooleanField(default=True)
    # Encrypted at rest: the secret settings of every channel type.
    settings = SecretsJSONField(secret_keys=_SECRET_NAMES, default=dict)
    connected_at = DateTimeField(null=True)
    deleted_at = DateTimeField(null=True)

    @classmethod
    def in_workspace(cls, workspace_id):
        """Active channels only: an inactive channel is CHANNEL_NOT_FOUND."""
        return cls.select().where(cls.workspace == workspace_id, cls.is_active == True)  # noqa: E712

    @classmethod
    def active_by_id(cls, channel_id):
        """The channel if it is active (any workspace): the inbound path's check."""
        rows = execute(_ACTIVE_BY_ID, channel_id).fetchall()
        return from_rows(cls, _COLUMNS, rows)[0] if rows else None

    @classmethod
    def active_of_type(cls, channel_type):
        """Every active channel of `channel_type` (any workspace): for jobs."""
        return list(cls.select().where(cls.type == channel_type, cls.is_active == True))  # noqa: E712

    @classmethod
    def named(cls, workspace_id, name, excluding_id=None):
        """The active channel called `name` (any case, Unicode folding), if any."""
        query = cls.in_workspace(workspace_id).where(same_name(cls.name, name))
        if excluding_id:
            query = query.where(cls.id != excluding_id)
        return query.first()

    @classmethod
    def active_count(cls, workspace_id):
        return cls.in_workspace(workspace_id).select(fn.COUNT(cls.id)).scalar()

    @property
    def status(self):
        return "connected" if self.agent_id else "disconnected"

    def public_settings(self):
        """Settings without secrets: each secret shows only as `<name>_set`."""
        secrets = SECRET_SETTINGS.get(self.type, ())
        shown = {name: value for name, value in self.settings.items() if name not in secrets}
        for name in secrets:
            shown[f"{name}_set"] = bool(self.settings.get(name))
        return shown

    def as_dict(self):
        return {
            "id": self.id,
            "name": self.name,
            "type": self.type,
            "status": self.status,
            "agent_id": self.agent_id,
            "is_active": self.is_active,
            "settings": self.public_settings(),
            "connected_at": self.connected_at if self.agent_id else None,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
        }


# active_by_id runs on every inbound callback: its columns named once, so
# reading the row needs neither the cursor's description nor a fresh key
# for the layout cache (fastsql.fetch_one builds both on every call).
_COLUMNS = tuple(field.column_name for field in Channel._meta.sorted_fields)
_SELECTED = ", ".join(f'"{column}"' for column in _COLUMNS)
_ACTIVE_BY_ID = f'SELECT {_SELECTED} FROM "channel" WHERE "id" = ? AND "is_active" = 1'
