"""Secrets at rest: the start-up check, encrypting what is still plain text,
and re-encrypting everything with a new key.

The check runs after the SQL migrations (every CLI command and `serve`
migrate first): a key file is made only while the database holds no
encrypted secret, and a key that cannot open every stored secret stops the
start with the file named, instead of failing later on one request.
"""

import logging

from .. import secretbox
from ..db import database, transaction
from ..models import ALL_MODELS
from ..models.encrypted import rewrite_secrets, stored_secrets
from ..secretbox import KeyFile, SecretsError

log = logging.getLogger(__name__)


def secure_stored_secrets():
    """Check the key against the stored secrets, then encrypt the plain ones;
    the number of rows encrypted now (idempotent: 0 the second time)."""
    ring = secretbox.ring()
    stored = stored_secrets(ALL_MODELS)
    encrypted = [value for value in stored if secretbox.is_encrypted(value)]
    if not ring.keys:
        _create_key(ring, encrypted)
    if any(not ring.opens(value) for value in encrypted):
        raise SecretsError(
            f"{ring.source.describe()} cannot decrypt the secrets stored in {database.shown_name}: "
            "it is not the key they were encrypted with. Put back the key file from your "
            "backup of this database (or point secrets.key_file or secrets.key at it)."
        )
    if len(encrypted) == len(stored):
        return 0
    with transaction():
        count = rewrite_secrets(ALL_MODELS, _seal_plain)
    log.info("Encrypted the plain-text secrets of %d rows", count)
    return count


def _create_key(ring, encrypted):
    """A first start: make the key file, unless secrets were encrypted before."""
    if encrypted or not isinstance(ring.source, KeyFile):
        raise SecretsError(
            f"{ring.source.describe()} does not exist, but the database {database.shown_name} "
            f"holds {len(encrypted)} encrypted secrets. Restore the key file from your backup "
            "(or point secrets.key_file or secrets.key at it); a new key cannot read them."
        )
    ring.source.create()
    ring.refresh()
    log.info("Created the key of stored secrets: %s (back it up)", ring.source.path)


def _seal_plain(stored):
    return stored if secretbox.is_encrypted(stored) else secretbox.seal(stored)


def reencrypt():
    """Encrypt every stored secret with the first key, in one transaction; the
    number of rows rewritten."""
    ring = secretbox.ring()
    with transaction():
        return rewrite_secrets(ALL_MODELS, ring.rotate)


def rotate_key():
    """Replace the key file's key with a new one and re-encrypt everything.

    Safe against a crash at any step: the keys in use are first copied to
    `<file>.old` (kept with those of an unfinished earlier rotation), which is
    read as well, so every stored token stays readable until the one
    transaction that re-encrypts them all has committed; only then does the
    `.old` file go. Running the command again finishes an interrupted one.
    """
    ring = secretbox.ring()
    source = ring.source
    if not isinstance(source, KeyFile):
        raise SecretsError(
            "The key comes from secrets.key (AGENT_PLATFORM_SECRETS_KEY), which this command "
            "cannot rewrite. Rotate it by hand: `agent-platform secrets generate-key`, "
            "set secrets.key to 'NEW,OLD', run `agent-platform secrets reencrypt`, "
            "then set it to 'NEW'."
        )
    secretbox.replace(source.old, "\n".join(ring.keys))
    secretbox.replace(source.path, secretbox.new_key())
    ring.refresh()
    # Durable before the old keys go: with synchronous=NORMAL a power cut may
    # roll back the last commit, which would leave rows under a deleted key.
    database.execute_sql("PRAGMA synchronous = FULL")
    try:
        count = reencrypt()
    finally:
        database.execute_sql("PRAGMA synchronous = NORMAL")
    source.old.unlink()
    return count
