"""The mailbox poll: every EMAIL_POLL_SECONDS a scheduler job reads the
INBOX of each e-mail channel with IMAP settings, from where the database
says the last poll stopped (models.email: UIDVALIDITY and the last UID).

- the mailbox is opened read-only: the poll never marks, moves or deletes
  a mail, so the team's own mail client sees the mailbox as it was;
- known UIDVALIDITY: the mails with a higher UID, in UID order, at most
  BATCH per poll (the next poll goes on);
- first poll, or a UIDVALIDITY the server changed (the mailbox was
  rebuilt and its UIDs mean nothing any more): the mails that arrived
  (INTERNALDATE) since the channel was created, or since another mailbox
  was set on it (CLOCK_MARGIN before). A mailbox full of old mail is not
  answered; a mail read again is a duplicate by its Message-ID;
- each mail is stored, and its UID recorded, in one transaction (intake).

A server that cannot be reached is logged and tried at the next poll; one
that refuses the login (or is not allowed) is a channel error, raised
once rather than at every poll.
"""

import imaplib
import logging
import re
from datetime import UTC, datetime, timedelta

from flask import current_app

from ... import scheduler, storage
from ...db import conflicted, transaction
from ...models import Channel, ChannelEvent
from ...models.base import utcnow
from ...models.email import EmailMailbox
from ..channel_errors import channel_error, said_already
from . import intake, servers

log = logging.getLogger("agent_platform.email")

FOLDER = "INBOX"
BATCH = 50
POLL_FAILED = "imap_poll_failed"
_SIZE = re.compile(rb"RFC822\.SIZE (\d+)")
_UID = re.compile(rb"UID (\d+)")
_INTERNALDATE = re.compile(
    rb'INTERNALDATE "([ 0-9]{1,2}-[A-Za-z]{3}-[0-9]{4} [0-9:]{8} [+-][0-9]{4})"'
)
# A first poll reads the mails that arrived since the channel was created,
# with this margin for the mail server's clock.
CLOCK_MARGIN = timedelta(minutes=5)


@scheduler.job("EMAIL_POLL_SECONDS")
def poll_mailboxes(now=None):
    """One poll of each e-mail channel's mailbox; the number of mails stored."""
    now = now or utcnow()
    stored = 0
    for channel in Channel.active_of_type("email"):
        if not servers.missing(channel.settings, "imap"):
            stored += poll_channel(channel, now)
    return stored


def poll_channel(channel, now=None):
    """Read the channel's new mails; the number stored as messages."""
    now = now or utcnow()
    try:
        connection = servers.imap(channel.settings)
    except servers.MailError as error:
        return _refused(channel, error, now)
    try:
        return _read(channel, connection, now)
    except servers.MailError as error:
        return _refused(channel, error, now)
    except (imaplib.IMAP4.error, OSError) as error:
        if storage.cause_of(error) or conflicted(error):
            raise  # the disk's failure, not the server's: the job logs it once
        title = f"The IMAP server failed while reading the mailbox ({servers.said(error)})"
        return _refused(channel, servers.MailError("IMAP_ERROR", title, True, "imap_fetch"), now)
    finally:
        _logout(connection)


def _read(channel, connection, now):
    uidvalidity, uidnext = _select(connection)
    uids = _new_uids(channel, connection, uidvalidity)
    counts = dict.fromkeys(intake.OUTCOMES, 0)
    for uid in uids[:BATCH]:
        counts[_one(channel, connection, uidvalidity, uid, now)] += 1
    if len(uids) <= BATCH and uidnext:
        # Nothing below UIDNEXT is left to read: later polls start there.
        with transaction():
            EmailMailbox.advance(channel.id, uidvalidity, uidnext - 1, now)
    return counts["messages"]


def _select(connection):
    """(UIDVALIDITY, UIDNEXT or None) of the INBOX, opened read-only."""
    status, data = connection.select(FOLDER, readonly=True)
    if status != "OK":
        title = f"The IMAP server cannot open {FOLDER}: {_text(data)}"
        raise servers.MailError("IMAP_SELECT_FAILED", title, False, "imap_select")
    return _number(connection, "UIDVALIDITY"), _number(connection, "UIDNEXT")


def _number(connection, code):
    _, data = connection.response(code)
    try:
        return int(data[0])
    except (TypeError, ValueError, IndexError):
        if code == "UIDVALIDITY":
            raise servers.MailError(
                "IMAP_ERROR", "The IMAP server gave no UIDVALIDITY", True, "imap_select"
            ) from None
        return None


def _new_uids(channel, connection, uidvalidity):
    position = EmailMailbox.position(channel.id)
    if position is not None and position[0] == uidvalidity:
        return _uids_after(connection, position[1])
    return _uids_since(connection, (position and position[2]) or channel.created_at)


def _uids_after(connection, last_uid):
    # "n:*" always matches the highest UID, even one below n: filtered.
    status, data = connection.uid("SEARCH", None, f"UID {last_uid + 1}:*")
    return sorted(uid for uid in _listed(status, data) if uid > last_uid)


def _uids_since(connection, moment):
    day = (moment - timedelta(days=1)).strftime("%d-%b-%Y")
    status, data = connection.uid("SEARCH", None, f"SINCE {day}")
    uids = _listed(status, data)
    if not uids:
        return []
    status, data = connection.uid("FETCH", ",".join(map(str, uids)), "(INTERNALDATE)")
    since = (moment - CLOCK_MARGIN).replace(tzinfo=UTC)
    return sorted(uid for uid, arrived in _arrivals(status, data) if arrived >= since)


def _arrivals(status, data):
    if status != "OK":
        return []
    found = []
    for item in data:
        line = item[0] if isinstance(item, tuple) else item
        uid, arrived = _UID.search(line or b""), _INTERNALDATE.search(line or b"")
        if uid and arrived:
            moment = datetime.strptime(arrived.group(1).decode().strip(), "%d-%b-%Y %H:%M:%S %z")
            found.append((int(uid.group(1)), moment))
    return found


def _listed(status, data):
    if status != "OK" or not data or not data[0]:
        return []
    return [int(part) for part in data[0].split() if part.isdigit()]


def _one(channel, connection, uidvalidity, uid, now):
    """Fetch and store the mail of `uid` (one over MEDIA_MAX_BYTES is skipped)."""
    limit = current_app.config["MEDIA_MAX_BYTES"]
    status, data = connection.uid("FETCH", str(uid), "(RFC822.SIZE)")
    size = _SIZE.search(_text(data).encode()) if status == "OK" else None
    if size and int(size.group(1)) > limit:
        return _too_large(channel, uidvalidity, uid, int(size.group(1)), now)
    status, data = connection.uid("FETCH", str(uid), "(BODY.PEEK[])")
    raw = next((item[1] for item in data or [] if isinstance(item, tuple)), None)
    if status != "OK" or raw is None:
        return "failed"  # gone since the search (expunged): nothing to read
    return intake.store(channel, uidvalidity, uid, raw, now)


def _too_large(channel, uidvalidity, uid, size, now):
    with transaction():
        limit = current_app.config["MEDIA_MAX_BYTES"]
        details = {"reason": f"the mail of {size} bytes is over media.max_bytes ({limit})"}
        ChannelEvent.record(channel.id, "skipped", {**details, "uid": uid}, False, now)
        EmailMailbox.advance(channel.id, uidvalidity, uid, now)
    return "skipped"


def _text(data):
    parts = []
    for item in data or []:
        item = item[0] if isinstance(item, tuple) else item
        parts.append(item.decode("utf-8", "replace") if isinstance(item, bytes) else str(item))
    return " ".join(parts)


def _logout(connection):
    try:
        connection.logout()
    except (imaplib.IMAP4.error, OSError):
        pass


def _refused(channel, error, now):
    """Passing trouble is logged; anything else is a channel error, once."""
    if error.retryable:
        log.warning("IMAP poll of channel %s: %s", channel.id, error)
    elif not said_already(channel, POLL_FAILED, error.code):
        channel_error(channel, POLL_FAILED, error.as_dict(), now)
    return 0
