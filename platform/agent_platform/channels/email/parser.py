"""A mail as the IMAP server hands it (RFC 5322 bytes) turned into what the
channel stores. `parse(raw)` raises on a mail's content only past its bounds
(TooComplex: more than MAX_PARTS MIME parts), and keeps the first
MAX_TEXT_CHARS of its body's text (`clipped` says when there was more);
headers that cannot be decoded are read as they
are, an unknown charset as UTF-8 with replacements. The bounds keep a
mail's parsing and storing short: they run on the server's one loop, which
gunicorn restarts when it stops turning for `server.timeout_seconds`.

- the Message-ID is the message's external id (a mail fetched twice is
  stored once); a mail without one gets `<sha256 of its bytes@no-message-id>`;
- the thread: In-Reply-To first, then References newest first;
- the text: the text/plain body, else the text/html one converted; the
  quoted history and signature are stripped off `text` (what the agent
  reads), `full_text` keeps all of it;
- attachments: every non-text part, and any part marked as an attachment;
- `auto`: why the mail must never be answered (auto-replies, bounces and
  delivery reports, bulk and list mail), else None;
- the subject and the sender's name as one line of plain text
  (mailheaders.text: an encoded word that decodes to a line break or to
  another encoded word is read as text, its line breaks as spaces); an
  address only when a header could carry it back (mailheaders.address),
  else the mail has no sender.
"""

import hashlib
import itertools
import re
from dataclasses import dataclass, field
from datetime import UTC
from email import message_from_bytes
from email.headerregistry import AddressHeader
from email.message import EmailMessage
from email.policy import EmailPolicy
from email.utils import parsedate_to_datetime

from ... import charsets, mailheaders
from . import text as mail_text

# Read as written (an encoded word is no part of an id), controls left out.
_MESSAGE_ID = re.compile(r"<[^<>\s\x00-\x1f\x7f]{1,250}>")
_UNFOLD = re.compile(r"\r\n|\r|\n")
MAX_THREAD = 50  # ids of a thread looked up; a References header can be long
_BULK = ("bulk", "list", "junk", "auto_reply")
_DAEMONS = ("mailer-daemon", "postmaster")
# The email package spends about 0.2 ms on each part: a mail of 100,000
# empty parts (5 MB) took 23 s, and one of media.max_bytes (100 MB) would
# take longer than gunicorn lets the loop stop, in a loop of restarts.
MAX_PARTS = 1000
# Characters of a body's text kept on the message, as its text and its full
# text (the original mail keeps all of it): as the API's other long texts.
# A page of 100 messages lists each whole: with a million characters each
# (the bound until 2026-11-29), 60 mails made one page 120 MB of JSON and
# the server's memory grew by 520 MB while it was written, the loop held
# 0.6 s; non-ASCII text is six bytes a character in JSON.
MAX_TEXT_CHARS = 20_000
# Characters of an HTML body read for its text: markup is most of a mail's
# HTML, and it costs 0.4 s a million to convert on the loop (100 MB of it
# took 40 s; 48 MB of plain text took 2 s to store).
MAX_HTML_CHARS = 5 * MAX_TEXT_CHARS
# Characters of a header the email package reads (the mail's own and each
# part's): its parser takes time that grows with the square of a header's
# length (a Subject of 1 MB of words took 78 s, a To of 1 MB 170 s: past
# gunicorn's timeout, the worker was killed at every poll that read the
# mail again). A Subject is kept to 998 characters and To to 50 addresses.
MAX_HEADER_CHARS = 10_000


class _BoundedHeaders(EmailPolicy):
    """The email package's default policy, reading at most MAX_HEADER_CHARS
    of each header."""

    def header_fetch_parse(self, name, value):
        if isinstance(value, str):
            value = value[:MAX_HEADER_CHARS]
        return super().header_fetch_parse(name, value)


_POLICY = _BoundedHeaders()


class TooComplex(ValueError):
    """A mail past what is parsed of one (stored as failed, with this reason)."""


@dataclass
class Attachment:
    filename: str | None
    mime_type: str
    data: bytes


@dataclass
class Mail:
    message_id: str
    sender: str | None = None
    sender_name: str | None = None
    subject: str = ""
    thread: list = field(default_factory=list)
    references: list = field(default_factory=list)
    text: str = ""
    full_text: str = ""
    clipped: bool = False  # the body's text went on past MAX_TEXT_CHARS
    html: bool = False
    attachments: list = field(default_factory=list)
    auto: str | None = None
    date: object = None
    to: list = field(default_factory=list)
    cc: list = field(default_factory=list)


def parse(raw):
    message = _message(raw)
    name, sender = _sender(message)
    references = _ids(_raw(message, "References"))[-MAX_THREAD:]
    replied = _ids(_raw(message, "In-Reply-To"))[:1]
    body, is_html, clipped = _body(message)
    return Mail(
        message_id=_message_id(message, raw),
        sender=sender,
        sender_name=name,
        subject=mailheaders.text(_header(message, "Subject"), 998),
        thread=list(dict.fromkeys(replied + references[::-1]))[:MAX_THREAD],
        references=references,
        text=mail_text.stripped(body),
        full_text=body,
        clipped=clipped,
        html=is_html,
        attachments=_attachments(message),
        auto=auto_reason(message, sender),
        date=_date(message),
        to=_addresses(message, "To"),
        cc=_addresses(message, "Cc"),
    )


def _message(raw):
    """The mail's structure, read with the email package; TooComplex past
    MAX_PARTS parts, refused while they are read rather than after."""
    made = itertools.count(1)

    def counted(policy):
        if next(made) > MAX_PARTS:
            raise TooComplex(f"the mail has more than {MAX_PARTS} MIME parts")
        return EmailMessage(policy)

    try:
        return message_from_bytes(raw, policy=_POLICY.clone(message_factory=counted))
    except RecursionError:  # the email package reads nested parts recursively
        raise TooComplex("the mail's MIME parts are nested too deep") from None


def _header(message, name):
    """The decoded header, "" when absent; its raw text when it cannot be decoded."""
    try:
        value = message.get(name)
    except Exception:  # the email package's header parsers on hostile input
        value = message.get_all(name, [""])[0] if hasattr(message, "get_all") else ""
    return str(value or "")


def _ids(value):
    return _MESSAGE_ID.findall(value or "")


def _message_id(message, raw):
    found = _ids(_raw(message, "Message-ID"))
    if found and len(found[0]) <= 200:
        return found[0]
    return f"<{hashlib.sha256(raw).hexdigest()[:48]}@no-message-id>"


def _sender(message):
    """(display name, lower-cased address) of From, else (None, None)."""
    found = _mailboxes(message, "From")[:1]
    name, address = found[0] if found else (None, None)
    if address is None:
        return None, None
    return (mailheaders.text(name or "", 200) or None), address


def _addresses(message, header):
    return [address for _, address in _mailboxes(message, header) if address][:50]


def _mailboxes(message, header):
    """(display name, address) of each mailbox of `header` as it came (read
    from its raw value: a name that decodes to a line break is no reason to
    lose the mail); the address lower-cased, None when a header could not
    carry it as it is."""
    try:
        value = _raw(message, header)[:MAX_HEADER_CHARS]
        mailboxes = AddressHeader.value_parser(value).all_mailboxes
        found = [(box.display_name, box.addr_spec) for box in mailboxes]
    except Exception:  # the email package's header parser on hostile input
        return []
    return [(name, _address(address)) for name, address in found]


def _address(found):
    """`found` (an addr-spec as parsed) lower-cased when a header can carry it, else None."""
    return mailheaders.address(mailheaders.unescaped(found or "").strip().lower())


def _raw(message, header):
    """The first `header` of the mail unfolded, undecoded; "" when absent."""
    for name, value in message.raw_items():
        if name.lower() == header.lower():
            return "".join(_UNFOLD.split(str(value)))
    return ""


def _date(message):
    try:
        moment = parsedate_to_datetime(_header(message, "Date"))
        return moment.astimezone(UTC).replace(tzinfo=None) if moment.tzinfo else moment
    except (TypeError, ValueError, IndexError, OverflowError):
        return None


def _body(message):
    """(text, whether it came from HTML, whether it was clipped) of the
    mail's body: its first MAX_TEXT_CHARS."""
    part = _body_part(message, "plain")
    if part is not None:
        text, more = _content(part, MAX_TEXT_CHARS)
        return text.strip(), False, more
    part = _body_part(message, "html")
    if part is not None:
        markup, more = _content(part, MAX_HTML_CHARS)
        text = mail_text.html_to_text(markup)
        return text[:MAX_TEXT_CHARS].rstrip(), True, more or len(text) > MAX_TEXT_CHARS
    return "", False, False


def _body_part(message, subtype):
    try:
        return message.get_body(preferencelist=(subtype,))
    except Exception:
        return None


def _content(part, most):
    """(the part's text, its first `most` characters; whether it had more)."""
    content = _declared_text(part)
    if not isinstance(content, str):
        content = (part.get_payload(decode=True) or b"").decode("utf-8", "replace")
    # Cut before replacing: a line break is at most two characters.
    content = content[: 2 * most + 1].replace("\r\n", "\n")
    return content[:most], len(content) > most


def _declared_text(part):
    """The part's text read in its declared charset; None when that is not
    one read (unknown, or not a character set: charsets.py)."""
    try:
        declared = part.get_content_charset()
        if declared is not None and charsets.readable(declared) is None:
            return None
        return part.get_content()
    except (LookupError, ValueError, AssertionError):
        return None


def _attachments(message):
    found = []
    for part in message.walk():
        if part.is_multipart() or not _is_attachment(part):
            continue
        data = part.get_payload(decode=True)
        if isinstance(data, bytes) and data:
            name = _filename(part)
            found.append(Attachment(name, part.get_content_type(), data))
    return found


def _is_attachment(part):
    disposition = part.get_content_disposition()
    return disposition == "attachment" or part.get_content_maintype() not in ("text", "multipart")


def _filename(part):
    try:
        name = part.get_filename()
    except Exception:
        return None
    return str(name)[:255] if name else None


def auto_reason(message, sender):
    """Why the mail must not be answered (a loop or noise), else None."""
    auto_submitted = _header(message, "Auto-Submitted").strip().lower()
    if auto_submitted and auto_submitted != "no":
        return f"auto-submitted ({auto_submitted[:40]})"
    if message.get("X-Auto-Response-Suppress") is not None:
        return "auto-reply (X-Auto-Response-Suppress)"
    if message.get("X-Autoreply") is not None or message.get("X-Autorespond") is not None:
        return "auto-reply (X-Autoreply)"
    precedence = _header(message, "Precedence").strip().lower()
    if precedence in _BULK:
        return f"bulk mail (Precedence: {precedence})"
    if message.get("List-Id") is not None:
        return "mailing list mail (List-Id)"
    return _delivery_report(message, sender)


def _delivery_report(message, sender):
    report = message.get_content_type() == "multipart/report" or message.get_param(
        "report-type"
    ) in ("delivery-status", "disposition-notification")
    if report:
        return "delivery status notification"
    if sender and sender.split("@")[0] in _DAEMONS:
        return f"delivery status notification (from {sender.split('@')[0]})"
    if _header(message, "Return-Path").strip() == "<>":
        return "delivery status notification (empty Return-Path)"
    return None
