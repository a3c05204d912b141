"""Mails of an e-mail channel's mailbox, stored once each.

`store` takes one mail (its UID and the raw bytes IMAP gave) and, in ONE
transaction, stores what it carries and records its UID as read
(models.email): a poll cut off anywhere resumes at the first mail not
stored, and none is stored twice. A mail whose Message-ID the channel
knows already (fetched twice: a UIDVALIDITY change, two processes
polling) is a duplicate and changes nothing.

Mails the agent must never answer are written to the channel's event log
("skipped", with the reason) and get no reply: auto-replies, bounces and
delivery reports, bulk and list mail (parser.auto_reason), mail from the
channel's own address, and senders on settings.blocked_senders.

A mail becomes a message handed up to the intake service (adapters.hand_up): the
contact by the sender's address (the contact who has that e-mail address
already, whatever the channel), the conversation by its thread. Its
attachments and the original mail (.eml) are stored as media files; the
message's text is what the customer wrote this time, and metadata.email
keeps the headers, the whole text (quoted history and signature
included), `clipped` when the body's text went on past what is kept
(parser.MAX_TEXT_CHARS) and the original's URL.
"""

import logging

from ... import formats, storage
from ... import media_files as media
from ...db import conflicted, transaction
from ...models import ChannelEvent, Message
from ...models.base import utcnow
from ...models.email import EmailMailbox
from ...private import open_new
from ..adapters import hand_up
from ..neutral import InboundMessage
from .parser import parse

log = logging.getLogger("agent_platform.email")
OUTCOMES = ("messages", "duplicates", "skipped", "failed")
MEDIA_KINDS = ("image", "audio", "video")


def store(channel, uidvalidity, uid, raw, now=None):
    """Store the mail `raw` of UID `uid`; its outcome, one of OUTCOMES."""
    now = now or utcnow()
    written = []
    try:
        mail = parse(raw)  # before the transaction: a big mail holds no lock
        with transaction():
            outcome = _stored(channel, mail, raw, uid, written, now)
            EmailMailbox.advance(channel.id, uidvalidity, uid, now)
            return outcome
    except Exception as error:
        _forget(written)
        if storage.cause_of(error) or conflicted(error):
            # A full or read-only disk ends: the mailbox stays where it was,
            # and the next poll reads this mail again (skipping it would lose it).
            raise
        return _failed(channel, uidvalidity, uid, error, now)


def _stored(channel, mail, raw, uid, written, now):
    if Message.id_by_external_id(channel.id, mail.message_id) is not None:
        return "duplicates"
    reason = skip_reason(channel.settings, mail)
    if reason:
        details = {"reason": reason, "uid": uid, **_summary(mail)}
        ChannelEvent.record(channel.id, "skipped", formats.jsonable(details), False, now)
        return "skipped"
    inbound = _inbound(mail, _saved(raw, "message/rfc822", written), _files(mail, written), uid)
    hand_up(channel, inbound, now)
    return "messages"


def skip_reason(settings, mail):
    """Why `mail` gets no answer on a channel with `settings`, else None."""
    if mail.sender is None:
        return "no sender address"
    if mail.auto:
        return mail.auto
    own = {(settings.get(name) or "").lower() for name in ("from_address", "imap_username")}
    if mail.sender in own:
        return "sent from the channel's own address"
    domain = mail.sender.rsplit("@", 1)[1]
    blocked = settings.get("blocked_senders") or []
    if mail.sender in blocked or f"@{domain}" in blocked:
        return "sender on settings.blocked_senders"
    return None


def _summary(mail):
    return {"message_id": mail.message_id, "from": mail.sender, "subject": mail.subject}


def _saved(data, mime_type, written):
    name = media.new_name(mime_type)
    with open_new(media.media_dir() / name) as sink:
        sink.write(data)
    written.append(name)
    return media.public_url(name)


def _files(mail, written):
    return [
        {
            "url": _saved(part.data, part.mime_type, written),
            "filename": part.filename,
            "mime_type": part.mime_type,
            "size": len(part.data),
        }
        for part in mail.attachments
    ]


def _inbound(mail, original_url, files, uid):
    header = {
        **_summary(mail),
        "to": mail.to,
        "cc": mail.cc,
        "in_reply_to": mail.thread[0] if mail.thread else None,
        "references": mail.references,
        "html_only": mail.html,
        "original_url": original_url,
        "uid": uid,
    }
    if mail.full_text != mail.text:
        header["full_text"] = mail.full_text
    if mail.clipped:
        header["clipped"] = True  # the rest is in the original
    text = mail.text or (None if files else mail.subject)
    first = files[0] if files and not text else None
    return InboundMessage(
        external_id=mail.message_id,
        sender_id=mail.sender,
        sender_email=mail.sender,
        sender_name=mail.sender_name,
        type=_kind(first["mime_type"]) if first else "text",
        text=text if not first else None,
        media_url=first and first["url"],
        media_mime_type=first and first["mime_type"],
        timestamp=mail.date,
        thread=mail.thread,
        metadata={"email": header, **({"attachments": files} if files else {})},
    )


def _kind(mime_type):
    major = mime_type.split("/", 1)[0]
    return major if major in MEDIA_KINDS else "document"


def _forget(names):
    for name in names:
        (media.media_dir() / name).unlink(missing_ok=True)


def _failed(channel, uidvalidity, uid, error, now):
    """A mail that cannot be stored is logged and skipped: reading it again
    would only fail again, and hold back every mail after it."""
    log.exception("mail UID %s not stored on channel %s", uid, channel.id)
    with transaction():
        payload = {"uid": uid, "reason": f"{type(error).__name__}: {error}"}
        ChannelEvent.record(channel.id, "item_failed", payload, True, now)
        EmailMailbox.advance(channel.id, uidvalidity, uid, now)
    return "failed"
