"""Sending a message as a mail over SMTP, in the thread of the conversation.

- To: the contact's address on the channel (the identity the mail came
  from), else the contact's e-mail; From: settings.from_name and
  from_address;
- the thread: the message it replies to (reply_to_id), else the latest mail
  of the conversation on the channel, in or out. In-Reply-To is that mail's
  Message-ID, References its References plus it; the subject is its
  subject with "Re: " once, or metadata.subject when the message gives
  one, or "Message from <from_name>" for a conversation with no mail yet;
- Message-ID: <message id@from domain>, the same at every try (a receiver
  may drop a repeat), stored as the message's external id: a reply to it
  lands in the same conversation;
- `Auto-Submitted: auto-replied` on the agent's answers (auto-generated
  on the platform's notices), so that no auto-responder answers them;
- a text/plain part and a text/html part; a media message's file is
  attached (the platform's own /media files from MEDIA_DIR, others fetched
  through netguard);
- every header through mailheaders: a subject or name as one line of plain
  text (an encoded word that decodes to a line break, a customer's or an API
  caller's, ends as spaces), addresses and Message-IDs only when a header
  can carry them as they are, and the bytes read back before they leave
  (mailheaders.serialized): no header of them decodes to a line break.

SMTP replies 4xx and lost connections are retryable (the send job tries
again); 5xx are permanent: the message fails with the server's reason.
Called by the send job, outside any transaction; nothing here writes.
"""

import logging
import mimetypes
import re
import smtplib
from email.utils import formatdate
from urllib.parse import urlsplit

import requests
from flask import current_app

from ... import mailheaders, netguard
from ... import media_files as media
from ...models import Contact, ContactIdentity, Message
from ..senders import SendError, SendResult
from . import servers
from .text import to_html

log = logging.getLogger("agent_platform.email")
MAX_REFERENCES = 20
# What no person wrote: the agent's answers, the platform's own notices.
AUTOMATIC = {"agent": "auto-replied", "system": "auto-generated"}
_MIME_TYPE = re.compile(r"[a-z]+/[A-Za-z0-9.+-]+")
_RE = re.compile(r"^\s*((re|aw|sv|fw|fwd|res|enc)\s*(\[\d+\])?\s*:\s*)+", re.IGNORECASE)


class EmailSender:
    def send(self, channel, message):
        try:
            mail = compose(channel, message)
            _delivered(channel.settings, mail)
        except mailheaders.UnsafeHeader as error:
            # Not met with the values mailheaders makes; kept from the wire.
            log.error("message %s not sent: %s", message.id, error)
            raise SendError("UNSAFE_HEADER", f"The mail was not sent: {error}") from None
        header = {name.lower().replace("-", "_"): str(mail[name]) for name in _KEPT if mail[name]}
        header["references"] = (mail["References"] or "").split()
        return SendResult(external_id=mail["Message-ID"], metadata={"email": header})


_KEPT = ("Message-ID", "Subject", "To", "In-Reply-To")


def compose(channel, message):
    """The EmailMessage that carries `message` on `channel`."""
    settings, anchor = channel.settings, _anchor(message)
    # Each value below is made safe by mailheaders, and the policy refuses
    # (UnsafeHeader) whatever would still carry a line break.
    mail = mailheaders.new_message()
    mail["From"] = mailheaders.mailbox("From", settings["from_address"], settings.get("from_name"))
    mail["To"] = mailheaders.mailbox("To", recipient(channel, message))
    mail["Subject"] = subject(settings, message, anchor)
    mail["Date"] = formatdate(usegmt=True)
    mail["Message-ID"] = f"<{message.id}@{settings['from_address'].rsplit('@', 1)[1]}>"
    if message.sender_type in AUTOMATIC:
        # RFC 3834: auto-responders (a vacation reply, another agent) do
        # not answer it, so two of them never write to each other forever.
        mail["Auto-Submitted"] = AUTOMATIC[message.sender_type]
    replied = mailheaders.message_id(anchor.external_id) if anchor is not None else None
    if replied:
        mail["In-Reply-To"] = replied
        mail["References"] = " ".join(_references(anchor, replied))
    text = message.text or message.caption or ""
    mail.set_content(text)
    mail.add_alternative(to_html(text), subtype="html")
    if message.media_url:
        _attach(mail, message)
    return mail


def recipient(channel, message):
    """The address the contact wrote from on this channel, else their e-mail."""
    address = ContactIdentity.address_on(message.contact_id, "email", channel.id)
    if not address:
        contact = Contact.get_or_none(Contact.id == message.contact_id)
        address = contact and contact.email
    if not address:
        raise SendError("NO_RECIPIENT", "The contact has no e-mail address")
    return address


def _anchor(message):
    """The mail `message` answers: its reply_to, else the conversation's latest."""
    query = Message.select().where(
        Message.conversation == message.conversation_id,
        Message.channel == message.channel_id,
        Message.external_id.startswith("<"),
        Message.id != message.id,
    )
    if message.reply_to_id:
        replied = query.where(Message.id == message.reply_to_id).first()
        if replied is not None:
            return replied
    return query.order_by(Message.created_at.desc(), Message.id.desc()).first()


def _email(message):
    found = (message.metadata or {}).get("email")
    return found if isinstance(found, dict) else {}


def _references(anchor, replied):
    """The anchor's References and its Message-ID: those a header can carry."""
    kept = [mailheaders.message_id(ref) for ref in _email(anchor).get("references") or []]
    return [*(ref for ref in kept if ref), replied][-MAX_REFERENCES:]


def subject(settings, message, anchor):
    """One line of plain text (mailheaders.text): whatever the subject was
    made of, no line break, and no encoded word that decodes to one."""
    given = (message.metadata or {}).get("subject")
    given = mailheaders.text(given) if isinstance(given, str) else ""
    if given:
        return given
    before = _email(anchor).get("subject") if anchor is not None else None
    before = mailheaders.text(before) if isinstance(before, str) else ""
    if before:
        return mailheaders.text(f"Re: {_RE.sub('', before)}")
    name = mailheaders.text(settings.get("from_name") or "", 200)
    return mailheaders.text(f"Message from {name or settings['from_address']}")


def _attach(mail, message):
    data = _media_bytes(message.media_url)
    mime = message.media_mime_type or mimetypes.guess_type(message.media_url)[0] or ""
    if not _MIME_TYPE.fullmatch(mime):  # it is written in the part's Content-Type
        mime = "application/octet-stream"
    maintype, _, subtype = mime.partition("/")
    name = mailheaders.text(urlsplit(message.media_url).path.rsplit("/", 1)[-1], 255)
    mail.add_attachment(data, maintype=maintype, subtype=subtype, filename=name or "attachment")


def _media_bytes(url):
    own = media.public_url("")
    if url.startswith(own):
        try:
            path, _, _ = media.stored_file(url[len(own) :])
        except Exception:
            raise SendError("MEDIA_NOT_FOUND", f"No media file at {url}", None) from None
        return path.read_bytes()
    return _fetched(url)


def _fetched(url):
    config = current_app.config
    allow, limit = config["EMAIL_ALLOW_PRIVATE_HOSTS"], config["MEDIA_MAX_BYTES"]
    try:
        response = netguard.safe_request(
            "GET",
            url,
            allow_private=allow,
            allowed_ports=() if allow else None,
            timeout=config["EMAIL_TIMEOUT_SECONDS"],
            max_bytes=limit,
        )
    except netguard.UnsafeURL as error:
        title = netguard.refusal(error, servers.PRIVATE_SETTING)
        raise SendError("MEDIA_URL_NOT_ALLOWED", title, None) from None
    except requests.RequestException as error:
        title = f"The attachment could not be fetched ({type(error).__name__})"
        raise SendError("MEDIA_UNREACHABLE", title, None, True) from None
    if response.status_code != 200 or response.truncated:
        problem = "is over media.max_bytes" if response.truncated else "answered"
        title = f"The attachment {problem} (HTTP {response.status_code})"
        raise SendError("MEDIA_UNAVAILABLE", title, None, response.status_code >= 500)
    return response.content


def _delivered(settings, mail):
    try:
        connection = servers.smtp(settings)
    except servers.MailError as error:
        raise SendError(
            error.code, error.title, error.as_dict()["details"], error.retryable
        ) from None
    try:
        _handed(connection, mail)
    except smtplib.SMTPRecipientsRefused as error:
        code, said = next(iter(error.recipients.values()))
        raise _refusal(code, said, "recipient") from None
    except smtplib.SMTPResponseException as error:
        raise _refusal(error.smtp_code, error.smtp_error, "message") from None
    except smtplib.SMTPNotSupportedError as error:  # an address SMTPUTF8 would need
        raise SendError("SMTP_NOT_SUPPORTED", f"The SMTP server cannot take it: {error}") from None
    except (smtplib.SMTPException, OSError) as error:
        title = f"The SMTP server was lost while sending ({type(error).__name__})"
        raise SendError("SMTP_UNREACHABLE", title, None, True) from None
    finally:
        _quit(connection)


def _handed(connection, mail):
    """SMTP gets the bytes mailheaders.serialized read back, with the envelope
    of From and To (never addresses read out of other headers); SMTPUTF8 when
    an address is not ASCII."""
    sender, recipient = mail["From"].email, mail["To"].email
    options = ()
    connection.ehlo_or_helo_if_needed()
    if not (sender + recipient).isascii():
        if not connection.has_extn("smtputf8"):
            raise smtplib.SMTPNotSupportedError(
                "an address is not ASCII, and the server does not offer SMTPUTF8"
            )
        options = ("SMTPUTF8", "BODY=8BITMIME")
    data = mailheaders.serialized(mail, utf8=bool(options))
    connection.sendmail(sender, [recipient], data, options)


def _refusal(code, said, what):
    said = said.decode("utf-8", "replace") if isinstance(said, bytes) else str(said)
    title = f"The SMTP server refused the {what}: {code} {said}"
    return SendError(f"SMTP_{code}", title, {"smtp_code": code}, 400 <= code < 500)


def _quit(connection):
    try:
        connection.quit()
    except (smtplib.SMTPException, OSError):
        connection.close()
