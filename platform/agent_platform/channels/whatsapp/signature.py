"""X-Hub-Signature-256: HMAC-SHA256 of the raw body with the app secret.

Checked over the bytes exactly as received, before anything parses them: a
JSON document re-serialised (other spacing, key order or escapes) has another
signature, so it is refused like a forged one.
"""

import hmac

PREFIX = "sha256="


def expected_signature(body, app_secret):
    """The header value Meta sends for `body` (bytes) signed with `app_secret`."""
    return PREFIX + _hex_digest(body, app_secret)


def _hex_digest(body, app_secret):
    # hmac.digest: OpenSSL's one-shot HMAC, without building an hmac.HMAC.
    return hmac.digest(app_secret.encode(), body, "sha256").hex()


def signature_matches(body, header, app_secret):
    """Does `header` sign `body` with `app_secret`? Constant-time; False when
    either the header or the secret is missing or malformed."""
    if not header or not app_secret or not header.startswith(PREFIX):
        return False
    # A WSGI header is latin-1 text: every character of it encodes.
    given = header[len(PREFIX) :].strip().lower().encode()
    expected = _hex_digest(body, app_secret).encode()
    return hmac.compare_digest(expected, given)
