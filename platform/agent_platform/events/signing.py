"""Webhook secrets and the signature headers of every delivery attempt.

Three signatures, so receivers can check whichever they know:

- `X-Webhook-Signature: sha256=<hex HMAC-SHA256(secret, "<timestamp>.<body>")>`
  with `X-Webhook-Timestamp` (Unix seconds) and `X-Webhook-ID` (the webhook id);
- `X-Service-Signature: sha256=<hex HMAC-SHA256(secret, body)>`;
- Standard Webhooks: `webhook-id` (the event id), `webhook-timestamp` and
  `webhook-signature: v1,<base64 HMAC-SHA256(key, "<event id>.<timestamp>.<body>")>`.

The key of the first two is the secret string exactly as shown to the user
(its UTF-8 bytes, `whsec_` prefix included); the Standard Webhooks key is the
base64-decoded part after `whsec_`, as that specification says. While a
rotated-out secret is still valid, each header carries both signatures,
separated by a space, the current one first.
"""

import base64
import hashlib
import hmac
import secrets

SECRET_PREFIX = "whsec_"
SECRET_BYTES = 32


def new_secret():
    """`whsec_` followed by 32 random bytes in base64."""
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(SECRET_BYTES)).decode("ascii")


def _hex_hmac(key, message):
    return hmac.new(key, message, hashlib.sha256).hexdigest()


def timestamp_signature(secret, timestamp, body):
    """The value of X-Webhook-Signature for one secret."""
    message = str(timestamp).encode("ascii") + b"." + body
    return "sha256=" + _hex_hmac(secret.encode("utf-8"), message)


def body_signature(secret, body):
    """The value of X-Service-Signature for one secret."""
    return "sha256=" + _hex_hmac(secret.encode("utf-8"), body)


def standard_signature(secret, message_id, timestamp, body):
    """The value of webhook-signature (Standard Webhooks) for one secret."""
    key = base64.b64decode(secret.removeprefix(SECRET_PREFIX))
    message = f"{message_id}.{timestamp}.".encode() + body
    digest = hmac.new(key, message, hashlib.sha256).digest()
    return "v1," + base64.b64encode(digest).decode("ascii")


def signature_headers(secrets_, webhook_id, event_id, timestamp, body):
    """Every signature header of one attempt; `secrets_` lists the signing
    secrets, current first; `timestamp` is Unix seconds; `body` bytes."""
    return {
        "X-Webhook-Signature": " ".join(timestamp_signature(s, timestamp, body) for s in secrets_),
        "X-Webhook-Timestamp": str(timestamp),
        "X-Webhook-ID": webhook_id,
        "X-Service-Signature": " ".join(body_signature(s, body) for s in secrets_),
        "webhook-id": event_id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": " ".join(
            standard_signature(s, event_id, timestamp, body) for s in secrets_
        ),
    }
