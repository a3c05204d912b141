"""Who a visitor is, from the token their widget keeps.

Two kinds of token, both unguessable:
- anonymous: 43 random URL-safe characters (256 bits) the service hands
  out; the contact's identity is `visitor:` + a hash of it, so the token
  itself is stored nowhere (reading a contact's identities through the API
  does not let anyone read their chat);
- verified (identity verification, as Intercom and Chatwoot do it): the
  site signs its own user id with the channel's `identity_secret`,
  HMAC-SHA256 in hex, on its server; the token is `u.<id in base64url>.<that
  hex>` and is checked on every request, so one person is one contact
  (`user:<id>`) on every device, and rotating the secret ends every such
  token at once.
"""

import base64
import binascii
import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass

from ...errors import Unauthorized, ValidationError

_ANONYMOUS = re.compile(r"^[A-Za-z0-9_-]{43}$")
USER_ID_MAX = 150


@dataclass(frozen=True)
class Visitor:
    identity: str  # the contact's identity on the website channel
    key: str  # short, stable, not secret: scopes the visitor's message ids
    verified_user: str | None = None


def new_token():
    return secrets.token_urlsafe(32)


def user_hash(secret, user_id):
    """What the site's server computes: HMAC-SHA256(secret, user id), hex."""
    return hmac.new(secret.encode(), user_id.encode(), hashlib.sha256).hexdigest()


def verified_token(settings, user_id, signature):
    """The token of a site's user whose id `signature` signs, else 401."""
    if not isinstance(user_id, str) or not 1 <= len(user_id) <= USER_ID_MAX:
        raise ValidationError("user_id", f"must be a string of 1 to {USER_ID_MAX} characters")
    _check_signature(settings, user_id, signature)
    encoded = base64.urlsafe_b64encode(user_id.encode()).decode().rstrip("=")
    return f"u.{encoded}.{signature}"


def visitor_of(settings, token):
    """The Visitor a token names; 401 for a malformed or forged one."""
    if not token:
        raise Unauthorized(
            "No visitor token: send the one POST .../api/session gave in X-Visitor-Token.",
            code="MISSING_VISITOR_TOKEN",
        )
    if _ANONYMOUS.match(token):
        digest = hashlib.sha256(token.encode()).hexdigest()[:32]
        return Visitor(identity=f"visitor:{digest}", key=digest[:16])
    user_id, signature = _user_part(token)
    _check_signature(settings, user_id, signature)
    key = hashlib.sha256(f"user:{user_id}".encode()).hexdigest()[:16]
    return Visitor(identity=f"user:{user_id}", key=key, verified_user=user_id)


def _user_part(token):
    kind, _, rest = token.partition(".")
    encoded, _, signature = rest.partition(".")
    try:
        user_id = base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4)).decode()
    except (binascii.Error, UnicodeDecodeError, ValueError):
        user_id = ""
    if kind != "u" or not user_id or len(user_id) > USER_ID_MAX:
        raise Unauthorized("The visitor token is not valid.", code="INVALID_VISITOR_TOKEN")
    return user_id, signature


def _check_signature(settings, user_id, signature):
    secret = settings.get("identity_secret")
    if not secret:
        raise Unauthorized(
            "This channel does not verify identities: set settings.identity_secret first.",
            code="IDENTITY_VERIFICATION_OFF",
        )
    expected = user_hash(secret, user_id)
    if not isinstance(signature, str) or not hmac.compare_digest(
        expected.encode(), signature.encode()
    ):
        raise Unauthorized(
            "user_hash is not the HMAC-SHA256 of user_id with the channel's identity secret.",
            code="INVALID_USER_HASH",
        )
