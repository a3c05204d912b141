"""The people of a workspace: accounts, roles, passwords and one-time
sign-in links (invitations and resets). Sessions and the sign-in itself are
in services/sign_in.py."""

import hashlib
import re
import secrets
from datetime import timedelta

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError
from flask import current_app

from ..db import transaction
from ..errors import Conflict, NotFound, ValidationError
from ..models import User, Workspace
from ..models.base import canonical_uuid, utcnow
from ..models.pagination import paginate
from ..models.users import SignInLink, UserSession

ROLES = ("admin", "agent")
PASSWORD_MIN_CHARS = 10
# argon2 hashes whatever it is given; a megabyte password would cost memory for nothing.
PASSWORD_MAX_CHARS = 1024
LINK_PURPOSES = ("invite", "reset")
# Deliberately loose: one @, something on each side, a dot in the domain;
# printable ASCII without spaces (the API documents the same pattern).
EMAIL_PATTERN = r"^[!-?A-~]+@[!-?A-~]+\.[!-?A-~]+$"
_EMAIL = re.compile(EMAIL_PATTERN)
_hasher = PasswordHasher()


def _in_place(function, *args):
    return function(*args)


# How a hash or a check runs (run_hashes_in); each takes about 90 ms.
_hashing = {"run": _in_place}


def run_hashes_in(run):
    """Run every password hash and check as `run(function, *args)` (None:
    in place). `serve`'s worker runs them on a native thread of their own
    (gevent_worker.py): argon2 lets go of the interpreter lock while it
    works, and on the server's one loop each sign-in held every other
    request for as long."""
    _hashing["run"] = run or _in_place


def _hash(password):
    return _hashing["run"](_hasher.hash, password)


def not_found(user_id):
    return NotFound(f"User {user_id} not found.", code="USER_NOT_FOUND")


def normalised_email(email):
    """The e-mail as stored and compared: trimmed and lower-cased."""
    email = (email or "").strip().lower()
    if len(email) > 254 or not _EMAIL.match(email):
        raise ValidationError("email", "must be an e-mail address such as ana@example.com")
    return email


def check_password(password, field="password"):
    if len(password or "") < PASSWORD_MIN_CHARS:
        raise ValidationError(field, f"must be at least {PASSWORD_MIN_CHARS} characters long")
    if len(password) > PASSWORD_MAX_CHARS:
        raise ValidationError(field, f"must be at most {PASSWORD_MAX_CHARS} characters long")


def password_matches(user, password):
    """Whether `password` is the user's (False for a user without one)."""
    if user is None or user.password_hash is None:
        # As long as a real check, so a wrong e-mail is not told by the time it takes.
        _hash(password)
        return False
    try:
        return _hashing["run"](_hasher.verify, user.password_hash, password)
    except (VerificationError, InvalidHashError):
        return False


def get_user(workspace_id, user_id):
    return User.get_in_workspace(workspace_id, user_id, not_found(user_id))


def list_users(workspace_id, paging):
    return paginate(User.in_workspace(workspace_id), User, paging)


def all_users(workspace_id):
    return list(User.in_workspace(workspace_id).order_by(User.created_at, User.id))


def count_all():
    """Users of the whole instance (serve tells how to make the first)."""
    return User.select().count()


def create_user(workspace_id, values):
    """A new user; with `password` they may sign in at once, else only
    through the sign-in link made for them (see invite)."""
    email = normalised_email(values["email"])
    password = values.get("password")
    if password is not None:
        check_password(password)
    password_hash = _hash(password) if password is not None else None  # outside the write
    with transaction():
        _check_email_free(email)
        return User.create(
            workspace=workspace_id,
            email=email,
            name=values["name"],
            role=values.get("role", "agent"),
            password_hash=password_hash,
        )


def update_user(workspace_id, user_id, changes):
    """Name, role and `active`. Deactivating ends the user's sessions; the
    workspace always keeps an active admin."""
    with transaction():
        user = get_user(workspace_id, user_id)
        was_admin = user.role == "admin" and user.is_active
        user.name = changes.get("name", user.name)
        user.role = changes.get("role", user.role)
        user.is_active = changes.get("active", user.is_active)
        if was_admin and (user.role != "admin" or not user.is_active):
            _check_another_admin(user)
        user.save()
        if not user.is_active:
            UserSession.end_all_of(user.id)
        return user


def set_password(user, password):
    """A new password ends every session of the user (signed in elsewhere)."""
    check_password(password)
    password_hash = _hash(password)  # before the transaction: no write waits on it
    with transaction():
        _store_password(user, password_hash)


def _store_password(user, password_hash):
    user.password_hash = password_hash
    user.save()
    UserSession.end_all_of(user.id)


def new_sign_in_link(workspace_id, user_id, purpose="reset"):
    """(user, raw token) of a new one-time link; the user's older links stop
    working. A reset also ends the user's sessions."""
    now = utcnow()
    hours = current_app.config["INBOX_SIGN_IN_LINK_HOURS"]
    token = secrets.token_urlsafe(32)
    with transaction():
        user = get_user(workspace_id, user_id)
        SignInLink.spend_all_of(user.id, now)
        SignInLink.create(
            user=user.id,
            token_hash=token_hash(token),
            purpose=purpose,
            created_at=now,
            expires_at=now + timedelta(hours=hours),
        )
        if purpose == "reset":
            UserSession.end_all_of(user.id)
    return user, token


def sign_in_url(token):
    """Where the one-time link leads: server.public_url (from host and port
    when unset) + /app/welcome/<token>."""
    return f"{current_app.config['SERVER_PUBLIC_URL'].rstrip('/')}/app/welcome/{token}"


def open_link(token):
    """The link's row with its user, while it is unused, unexpired and its
    user active; else 404 (the same answer for each, as a guess learns nothing)."""
    link = SignInLink.with_token_hash(token_hash(token or ""))
    if link is None or link.used_at or link.expires_at <= utcnow() or not link.user.is_active:
        raise NotFound(
            "This sign-in link is not valid: it was used, it expired or it was replaced. "
            "Ask an admin of your workspace for a new one.",
            code="SIGN_IN_LINK_INVALID",
        )
    return link


def use_link(token, password, password_again):
    """Spend the link and set the user's password (typed twice, the same);
    returns the user."""
    check_password(password)
    if password_again != password:
        raise ValidationError("password_again", "must be the same password as the first")
    password_hash = _hash(password)  # before the transaction: no write waits on it
    with transaction():
        link = open_link(token)
        link.used_at = utcnow()
        link.save()
        _store_password(link.user, password_hash)
        return link.user


def assignee(workspace_id, assigned_to):
    """The assigned_to to store. A user id must name an active user of the
    workspace and is kept in its canonical form, as every id is: the same
    user given in capitals (or without dashes, in braces, as a urn) is then
    the same holder and the same filter. Any other text (a name, an e-mail)
    stays free and as given, as the spec allows."""
    user_id = canonical_uuid(assigned_to)
    if user_id is None:
        return assigned_to
    user = User.get_or_none(User.id == user_id)
    if user is None or user.workspace_id != workspace_id or not user.is_active:
        raise ValidationError("assigned_to", f"{assigned_to} is no active user of this workspace")
    return user_id


def canonical_assignee(assigned_to):
    """assigned_to as assignee() stores it, unchecked: for filters, where an
    id that names nobody simply finds nothing."""
    return canonical_uuid(assigned_to) or assigned_to


def display_name(workspace_id, assigned_to):
    """Who an assigned_to names, for people to read: the user's name when it
    is a user id of the workspace, else the text itself."""
    user_id = canonical_uuid(assigned_to)
    user = user_id and User.get_or_none(User.id == user_id, User.workspace == workspace_id)
    return user.name if user else assigned_to


def active_user(workspace_id, user_id):
    """An active user of the workspace, else 400 naming assigned_to."""
    user_id = canonical_uuid(user_id)
    user = user_id and User.get_or_none(User.id == user_id, User.workspace == workspace_id)
    if not user or not user.is_active:
        raise ValidationError("assigned_to", "choose an active user of your workspace")
    return user


def active_users(workspace_id):
    return [user for user in all_users(workspace_id) if user.is_active]


def workspace_by_id_or_name(value):
    """The workspace with this id, else the one with exactly this name; a
    name that several workspaces share is refused, naming their ids."""
    workspace = Workspace.get_or_none(Workspace.id == value)
    named = [] if workspace else list(Workspace.select().where(Workspace.name == value))
    if workspace is None and len(named) == 1:
        workspace = named[0]
    if workspace is None:
        raise NotFound(f"{value}: {_unfound(named)}", code="WORKSPACE_NOT_FOUND")
    return workspace


def _unfound(named):
    if not named:
        return "no workspace has that id or name; `agent-platform workspaces list` shows them."
    ids = ", ".join(workspace.id for workspace in named)
    return f"{len(named)} workspaces have that name; give one of their ids: {ids}."


def token_hash(token):
    return hashlib.sha256(token.encode()).hexdigest()


def _check_email_free(email):
    if User.with_email(email) is not None:
        raise Conflict(f"A user with the e-mail {email} already exists.", code="USER_EXISTS")


def _check_another_admin(user):
    others = User.active_admins(user.workspace_id).where(User.id != user.id)
    if not others.exists():
        raise Conflict(
            "The workspace needs an active admin: make another user admin first.",
            code="LAST_ADMIN",
        )


def invite(workspace_id, values):
    """Create a user; without a password, with the one-time link that lets
    them choose one. Returns the user's API form plus `invite_url` (None
    when a password was given)."""
    with transaction():
        user = create_user(workspace_id, values)
        url = None
        if user.password_hash is None:
            url = sign_in_url(new_sign_in_link(workspace_id, user.id, "invite")[1])
    return {**user.as_dict(), "invite_url": url}


def link_for(workspace_id, user_id):
    """A new one-time link for the user: a reset (ending their sessions), or
    an invitation again while they have no password."""
    user = get_user(workspace_id, user_id)
    purpose = "invite" if user.password_hash is None else "reset"
    user, token = new_sign_in_link(workspace_id, user_id, purpose)
    link = SignInLink.with_token_hash(token_hash(token))
    return {"user_id": user.id, "purpose": purpose, "url": sign_in_url(token),
            "expires_at": link.expires_at}  # fmt: skip
