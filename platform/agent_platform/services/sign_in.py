"""Signing in to the inbox: the failed-attempt limit, sessions with idle and
absolute expiry, signing out. The cookie's token is never stored, only its
SHA-256; the web layer (web/session.py) carries it."""

import secrets
from datetime import timedelta

from flask import current_app

from ..db import transaction
from ..errors import RateLimited, Unauthorized, ValidationError
from ..models.base import utcnow
from ..models.users import SignInFailure, User, UserSession
from .users import normalised_email, password_matches, token_hash

# A session's last activity is written at most this often, not on every page.
TOUCH_EVERY = timedelta(seconds=60)
WRONG = "The e-mail or the password is wrong."


def sign_in(email, password, address, now=None):
    """(user, session, raw token) for a right e-mail and password of an
    active user. Every refusal reads the same whether or not the e-mail has
    an account; past the limit of failures, 429 says when to try again."""
    now = now or utcnow()
    subject = _subject(email)
    _check_limit(now, subject, address)
    user = User.with_email(subject)
    if not password_matches(user, password or "") or not user.is_active:
        _record_failure(now, subject, address)
        raise Unauthorized(WRONG, code="SIGN_IN_FAILED")
    SignInFailure.forget("account", subject)
    return user, *start_session(user, now)


def start_session(user, now=None):
    """(session, raw token) of a new session of `user`."""
    now = now or utcnow()
    token = secrets.token_urlsafe(32)
    hours = current_app.config["INBOX_SESSION_MAX_HOURS"]
    with transaction():
        session = UserSession.create(
            user=user.id,
            token_hash=token_hash(token),
            csrf_token=secrets.token_urlsafe(32),
            created_at=now,
            last_seen_at=now,
            expires_at=now + timedelta(hours=hours),
        )
        user.last_sign_in_at = now
        user.save()
    return session, token


def session_of(token, now=None):
    """The live session the cookie's token names (its user joined), or None.
    An idle or expired session is deleted on sight."""
    if not token:
        return None
    session = UserSession.with_token_hash(token_hash(token))
    if session is None:
        return None
    now = now or utcnow()
    idle = timedelta(seconds=current_app.config["INBOX_SESSION_IDLE_SECONDS"])
    ended = now >= session.expires_at or now - session.last_seen_at >= idle
    if ended or not session.user.is_active:
        session.delete_instance()
        return None
    if now - session.last_seen_at >= TOUCH_EVERY:
        session.last_seen_at = now
        session.save()
    return session


def sign_out(token):
    UserSession.delete().where(UserSession.token_hash == token_hash(token or "")).execute()


def _subject(email):
    """The e-mail the failures count against; text that is no e-mail still counts."""
    try:
        return normalised_email(email)
    except ValidationError:
        return (email or "").strip().lower()[:254]


def _check_limit(now, subject, address):
    config = current_app.config
    window = timedelta(seconds=config["INBOX_SIGN_IN_WINDOW_SECONDS"])
    limits = (
        ("account", subject, config["INBOX_SIGN_IN_ATTEMPTS"]),
        ("address", address, config["INBOX_SIGN_IN_ADDRESS_ATTEMPTS"]),
    )
    for kind, who, limit in limits:
        failures = SignInFailure.since(kind, who, now - window)
        if len(failures) >= limit:
            _refuse(now, failures[-limit] + window)


def _refuse(now, free_at):
    """429 naming when the oldest counted failure leaves the window."""
    seconds = max(1, int((free_at - now).total_seconds()) + 1)
    minutes = -(-seconds // 60)
    raise RateLimited(
        f"Too many failed sign-ins. Try again in {minutes} minute{'s' if minutes != 1 else ''}.",
        code="SIGN_IN_LIMITED",
        headers={"Retry-After": str(seconds)},
    )


def _record_failure(now, subject, address):
    with transaction():
        SignInFailure.create(kind="account", subject=subject, created_at=now)
        SignInFailure.create(kind="address", subject=address, created_at=now)
        window = timedelta(seconds=current_app.config["INBOX_SIGN_IN_WINDOW_SECONDS"])
        SignInFailure.prune(now - 2 * window)  # older ones count for nothing
