"""Agents: the AI that answers a workspace's customers.

Deleting an agent is a soft delete (`deleted_at`): its conversations and
credit history keep pointing at it, while every query of the API - through
`in_workspace` - no longer sees it.
"""

from peewee import BooleanField, CharField, DateTimeField, ForeignKeyField, TextField

from .base import TimestampedModel, WorkspaceScoped, canonical_uuid, utcnow
from .encrypted import SecretsJSONField
from .tenancy import Workspace

# Write-only settings (the model provider's key): stored encrypted, shown
# only as `<name>_set`.
SECRET_SETTINGS = ("api_key",)


class Agent(TimestampedModel, WorkspaceScoped):
    workspace = ForeignKeyField(Workspace, backref="agents", on_delete="CASCADE")
    name = CharField(max_length=200)
    description = TextField(default="")
    is_active = BooleanField(default=True)
    is_default = BooleanField(default=False)
    workflow_type = CharField(max_length=50)
    language = CharField(max_length=35)
    tone = CharField(max_length=50)
    personality = TextField(default="")
    greeting_message = TextField(default="")
    custom_instructions = TextField(default="")
    business_context = TextField(default="")
    settings = SecretsJSONField(secret_keys=SECRET_SETTINGS, default=dict)
    deleted_at = DateTimeField(null=True)

    @classmethod
    def in_workspace(cls, workspace_id):
        """The workspace's live agents (deleted ones are gone for the API)."""
        return cls.select().where(cls.workspace == workspace_id, cls.deleted_at.is_null())

    @classmethod
    def live_id(cls, workspace_id, agent_id):
        """The agent's id when it is a live agent of the workspace, else None.

        One indexed lookup in plain SQL, for hot paths that need no columns
        (building a full select costs far more than running it here).
        """
        agent_id = canonical_uuid(agent_id)
        if agent_id is None:
            return None
        row = cls._meta.database.execute_sql(
            "SELECT id FROM agent WHERE id = ? AND workspace_id = ? AND deleted_at IS NULL",
            (agent_id, workspace_id),
        ).fetchone()
        return row[0] if row else None

    @classmethod
    def listed(cls, workspace_id, is_active=None, name_contains=None):
        query = cls.in_workspace(workspace_id)
        if is_active is not None:
            query = query.where(cls.is_active == is_active)
        if name_contains:
            query = query.where(cls.name.contains(name_contains))
        return query

    @classmethod
    def count_live(cls, workspace_id):
        return cls.in_workspace(workspace_id).count()

    @classmethod
    def default_of(cls, workspace_id):
        """The workspace's default agent, or None."""
        return cls.in_workspace(workspace_id).where(cls.is_default == True).first()  # noqa: E712

    @classmethod
    def clear_default(cls, workspace_id, except_id=None):
        query = cls.update(is_default=False, updated_at=utcnow()).where(
            cls.workspace == workspace_id,
            cls.is_default == True,  # noqa: E712
        )
        if except_id is not None:
            query = query.where(cls.id != except_id)
        return query.execute()


# At most one live default agent per workspace, enforced by the database too.
Agent.add_index(
    Agent.index(
        Agent.workspace,
        unique=True,
        where=(Agent.is_default == True) & Agent.deleted_at.is_null(),  # noqa: E712
        name="agent_one_default_per_workspace",
    )
)
