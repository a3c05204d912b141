"""The people of a workspace, who sign in to the inbox at /app: their
accounts, their sessions, their one-time sign-in links, and the failed
sign-ins that the attempt limit counts (in the database, so a restart does
not reset it)."""

from peewee import BooleanField, CharField, ForeignKeyField, TextField

from .base import BaseModel, TimestampedModel, UtcDateTimeField, WorkspaceScoped, utcnow
from .tenancy import Workspace


class User(TimestampedModel, WorkspaceScoped):
    workspace = ForeignKeyField(Workspace, backref="users", on_delete="CASCADE")
    # Lower-cased and unique across the instance: an e-mail names one account,
    # so signing in needs no workspace (docs/inbox.md).
    email = CharField(max_length=254, unique=True)
    name = CharField(max_length=200)
    role = CharField(max_length=20)  # "admin" | "agent"
    # None until the person chooses a password (an invited user).
    password_hash = TextField(null=True)
    is_active = BooleanField(default=True)
    last_sign_in_at = UtcDateTimeField(null=True)

    class Meta:
        table_name = "workspace_user"
        indexes = ((("workspace", "created_at", "id"), False),)

    def as_dict(self):
        """The API's form: never the password hash."""
        return {
            "id": self.id,
            "workspace_id": self.workspace_id,
            "email": self.email,
            "name": self.name,
            "role": self.role,
            "active": self.is_active,
            "has_password": self.password_hash is not None,
            "last_sign_in_at": self.last_sign_in_at,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
        }

    @classmethod
    def with_email(cls, email):
        return cls.get_or_none(cls.email == email)

    @classmethod
    def active_admins(cls, workspace_id):
        return cls.in_workspace(workspace_id).where(cls.role == "admin", cls.is_active == True)  # noqa: E712


class UserSession(BaseModel):
    """One sign-in. Only the SHA-256 of the cookie's token is kept."""

    user = ForeignKeyField(User, backref="sessions", on_delete="CASCADE")
    token_hash = CharField(max_length=64, unique=True)
    # Sent back in every form and X-CSRF-Token header of this session.
    csrf_token = CharField(max_length=64)
    created_at = UtcDateTimeField(default=utcnow)
    last_seen_at = UtcDateTimeField(default=utcnow)
    expires_at = UtcDateTimeField()  # the absolute end, whatever the activity

    @classmethod
    def with_token_hash(cls, token_hash):
        return cls.select(cls, User).join(User).where(cls.token_hash == token_hash).first()

    @classmethod
    def end_all_of(cls, user_id):
        return cls.delete().where(cls.user == user_id).execute()


class SignInLink(BaseModel):
    """A one-time link (invitation or password reset): the token is stored
    hashed, expires, and is spent by its first use."""

    user = ForeignKeyField(User, backref="sign_in_links", on_delete="CASCADE")
    token_hash = CharField(max_length=64, unique=True)
    purpose = CharField(max_length=20)  # "invite" | "reset"
    created_at = UtcDateTimeField(default=utcnow)
    expires_at = UtcDateTimeField()
    used_at = UtcDateTimeField(null=True)

    @classmethod
    def with_token_hash(cls, token_hash):
        return cls.select(cls, User).join(User).where(cls.token_hash == token_hash).first()

    @classmethod
    def spend_all_of(cls, user_id, now):
        """Every open link of the user is spent: only the newest one works."""
        query = cls.update(used_at=now).where(cls.user == user_id, cls.used_at.is_null())
        return query.execute()


class SignInFailure(BaseModel):
    """A failed sign-in, counted against the e-mail tried (whether or not an
    account has it) and against the client's address."""

    kind = CharField(max_length=10)  # "account" | "address"
    subject = CharField(max_length=254)
    created_at = UtcDateTimeField(default=utcnow)

    class Meta:
        indexes = ((("kind", "subject", "created_at"), False),)

    @classmethod
    def since(cls, kind, subject, start):
        """The failures of `subject` from `start` on, oldest first."""
        query = cls.select(cls.created_at).where(
            cls.kind == kind, cls.subject == subject, cls.created_at >= start
        )
        return [row.created_at for row in query.order_by(cls.created_at)]

    @classmethod
    def forget(cls, kind, subject):
        return cls.delete().where(cls.kind == kind, cls.subject == subject).execute()

    @classmethod
    def prune(cls, before):
        return cls.delete().where(cls.created_at < before).execute()
