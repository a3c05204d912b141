"""Mail read from a real IMAP server (Dovecot on loopback): each mail one
message, stored once, in its thread, with its text and attachments; mail the
agent must never answer is logged and left alone."""

import errno
import json
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta

import pytest

from agent_platform.channels.email import polling
from agent_platform.channels.email.parser import MAX_PARTS, MAX_TEXT_CHARS
from agent_platform.models import Channel, ChannelEvent, Contact, Message
from agent_platform.models.email import EmailMailbox
from agent_platform.services import replies
from conversations_helpers import data, events, make_contact
from email_helpers import *  # noqa: F403  (the fixtures)
from email_helpers import CUSTOMER, PUBLIC_URL, email_channel, mail, poll
from test_storage import fill, tmpfs


@pytest.fixture
def channel(caller, dovecot, mailbox, smtp):
    return email_channel(caller, dovecot, mailbox, smtp)


def deliver(dovecot, mailbox, raw, arrived=None):
    return dovecot.deliver(raw, user=mailbox, arrived=arrived)


def stored():
    return list(Message.select().where(Message.direction == "inbound").order_by(Message.created_at))


def fetched(client, url):
    """The bytes the platform serves at `url` (one of its /media URLs)."""
    with client.get(url.removeprefix(PUBLIC_URL)) as response:
        assert response.status_code == 200
        return response.data


def skipped(channel_id):
    return [e.payload for e in ChannelEvent.of_channel(channel_id) if e.kind == "skipped"]


def test_a_mail_becomes_a_message_of_the_sender_with_the_full_original_kept(
    client, caller, channel, dovecot, mailbox
):
    quoted = (
        "Vocês entregam no sábado?\n\nBia\n-- \nBia Souza | Compras\n\n"
        "On Wed, 25 Nov 2026 at 09:00, Loja <help@example.com> wrote:\n> Olá!\n"
    )
    raw = mail(quoted, subject="Entrega")
    deliver(dovecot, mailbox, raw)
    assert poll(channel["id"]) == 1
    [message] = stored()
    assert message.text == "Vocês entregam no sábado?\n\nBia"  # what the agent reads
    header = message.metadata["email"]
    assert header["full_text"].startswith(quoted.strip()[:40]) and "> Olá!" in header["full_text"]
    assert (header["subject"], header["from"]) == ("Entrega", CUSTOMER)
    assert "clipped" not in header
    assert header["original_url"].startswith(f"{PUBLIC_URL}/media/")
    assert fetched(client, header["original_url"]).replace(b"\r\n", b"\n") == raw.replace(
        b"\r\n", b"\n"
    )
    contact = Contact.get_by_id(message.contact_id)
    assert (contact.email, contact.name) == (CUSTOMER, "Bia Souza")
    assert [name for name, _ in events(caller.workspace_id) if name == "message.received"] == [
        "message.received"
    ]


def test_a_long_mail_keeps_its_first_characters_and_the_original_all_of_them(
    client, caller, channel, dovecot, mailbox
):
    # Each message of a page is listed whole: a million characters a mail
    # made 60 of them a page of 120 MB, and 520 MB more of server memory.
    long = "Olá, segue a lista do pedido. " * 2000  # 60,000 characters
    raw = mail(long)
    deliver(dovecot, mailbox, raw)
    assert poll(channel["id"]) == 1
    [message] = stored()
    assert message.text == long[:MAX_TEXT_CHARS].rstrip()
    header = message.metadata["email"]
    assert header["clipped"] is True
    assert "full_text" not in header  # nothing was quoted: it is the text
    listed = data(caller.get(f"/v1/conversations/{message.conversation_id}/messages"))
    assert [len(item["text"]) for item in listed] == [len(long[:MAX_TEXT_CHARS].rstrip())]
    assert listed[0]["metadata"]["email"]["clipped"] is True
    original = fetched(client, header["original_url"])
    assert original.replace(b"\r\n", b"\n") == raw.replace(b"\r\n", b"\n")


def test_an_html_only_mail_is_read_as_text(channel, dovecot, mailbox):
    html = (
        "<html><head><style>p {color: red}</style></head><body>"
        "<p>Quero <b>trocar</b> o pedido&nbsp;#123.</p><ul><li>tamanho M</li><li>azul</li></ul>"
        "<blockquote>texto antigo</blockquote><script>alert(1)</script></body></html>"
    )
    deliver(dovecot, mailbox, mail(html=html))
    assert poll(channel["id"]) == 1
    [message] = stored()
    assert message.text == "Quero trocar o pedido #123.\n\n- tamanho M\n- azul"
    assert message.metadata["email"]["html_only"] is True
    assert message.metadata["email"]["full_text"].endswith("> texto antigo")


def test_attachments_are_stored_as_media(client, channel, dovecot, mailbox):
    pdf, png = b"%PDF-1.4 pedido", b"\x89PNG\r\n\x1a\nimagem"
    parts = [("pedido.pdf", "application/pdf", pdf), ("foto.png", "image/png", png)]
    deliver(dovecot, mailbox, mail("Segue o pedido e a foto.", attachments=parts))
    assert poll(channel["id"]) == 1
    [message] = stored()
    assert (message.type, message.text) == ("text", "Segue o pedido e a foto.")
    files = message.metadata["attachments"]
    assert [(f["filename"], f["mime_type"], f["size"]) for f in files] == [
        ("pedido.pdf", "application/pdf", len(pdf)),
        ("foto.png", "image/png", len(png)),
    ]
    assert [fetched(client, f["url"]) for f in files] == [pdf, png]


def test_a_mail_with_only_an_attachment_is_a_media_message(client, channel, dovecot, mailbox):
    png = b"\x89PNG\r\n\x1a\nso a foto"
    deliver(dovecot, mailbox, mail("", attachments=[("a.png", "image/png", png)]))
    poll(channel["id"])
    [message] = stored()
    assert (message.type, message.media_mime_type) == ("image", "image/png")
    assert fetched(client, message.media_url) == png


AUTOMATIC = [
    {"Auto-Submitted": "auto-replied"},
    {"X-Auto-Response-Suppress": "All"},
    {"Precedence": "bulk"},
    {"Precedence": "list"},
    {"List-Id": "<news.customer.example>"},
]


def test_a_mail_of_too_many_parts_is_recorded_as_failed_and_the_next_one_stored(
    channel, dovecot, mailbox
):
    many = [(f"{n}.bin", "application/octet-stream", b"x") for n in range(MAX_PARTS)]
    deliver(dovecot, mailbox, mail("Muitas partes.", attachments=many))
    deliver(dovecot, mailbox, mail("E a seguinte?"))
    assert poll(channel["id"]) == 1
    assert [message.text for message in stored()] == ["E a seguinte?"]
    [failed] = [
        e.payload for e in ChannelEvent.of_channel(channel["id"]) if e.kind == "item_failed"
    ]
    assert failed["reason"] == f"TooComplex: the mail has more than {MAX_PARTS} MIME parts"
    assert poll(channel["id"]) == 0  # not read again


def test_a_mail_of_huge_headers_and_a_codec_of_domain_names_is_stored_in_a_moment(
    channel, dovecot, mailbox
):
    # The email package read such a mail for minutes on the server's one
    # loop (a To of 1 MB: 170 s; punycode grows with the square of its
    # length): gunicorn killed the worker, and every poll read it again.
    to = b", ".join(b"c%d@customer.example" % number for number in range(20_000))
    raw = (
        b"From: Bia <" + CUSTOMER.encode() + b">\r\nTo: " + to + b"\r\n"
        b"Subject: " + b"oi " * 100_000 + b"\r\nMessage-ID: <huge@customer.example>\r\n"
        b"Content-Type: text/plain; charset=punycode\r\n\r\n" + b"xn--a-" + b"a" * 400_000
    )
    deliver(dovecot, mailbox, raw)
    started = time.thread_time()  # this thread's CPU: a loaded machine's waits do not count
    assert poll(channel["id"]) == 1
    assert time.thread_time() - started < 5
    [message] = stored()
    assert message.text == ("xn--a-" + "a" * 400_000)[:MAX_TEXT_CHARS]
    assert message.metadata["email"]["subject"] == ("oi " * 333)[:998].rstrip()


@pytest.mark.parametrize("headers", AUTOMATIC)
def test_auto_replies_and_bulk_mail_are_logged_and_never_answered(
    caller, channel, dovecot, mailbox, smtp, headers
):
    deliver(dovecot, mailbox, mail("Estou de férias até segunda.", headers=headers))
    assert poll(channel["id"]) == 0
    assert stored() == []
    [logged] = skipped(channel["id"])
    assert logged["from"] == CUSTOMER and logged["subject"] == "Horário"
    assert replies.run_due_replies() == 0 and smtp.received == []
    assert [name for name, _ in events(caller.workspace_id) if name.startswith("message.")] == []


def test_a_delivery_status_notification_is_not_answered(channel, dovecot, mailbox):
    report = (
        b"From: Mail Delivery System <MAILER-DAEMON@mx.customer.example>\r\n"
        b"To: help@example.com\r\nSubject: Undelivered Mail Returned to Sender\r\n"
        b"Message-ID: <dsn-1@mx.customer.example>\r\nMIME-Version: 1.0\r\n"
        b'Content-Type: multipart/report; report-type=delivery-status; boundary="b"\r\n\r\n'
        b"--b\r\nContent-Type: text/plain\r\n\r\nThe mail could not be delivered.\r\n"
        b"--b\r\nContent-Type: message/delivery-status\r\n\r\nStatus: 5.1.1\r\n--b--\r\n"
    )
    deliver(dovecot, mailbox, report)
    assert poll(channel["id"]) == 0
    assert stored() == []
    assert skipped(channel["id"])[0]["reason"] == "delivery status notification"


def test_mail_from_the_channels_own_address_and_blocked_senders_is_skipped(
    caller, dovecot, mailbox, smtp
):
    blocked = ["spam@shop.example", "@annoying.example"]
    channel = email_channel(caller, dovecot, mailbox, smtp, blocked_senders=blocked)
    deliver(dovecot, mailbox, mail(sender=mailbox, message_id="<own@example.com>"))
    deliver(dovecot, mailbox, mail(sender="spam@shop.example"))
    deliver(dovecot, mailbox, mail(sender="anyone@annoying.example"))
    deliver(dovecot, mailbox, mail(sender="friend@shop.example"))
    assert poll(channel["id"]) == 1
    assert [m.metadata["email"]["from"] for m in stored()] == ["friend@shop.example"]
    assert [s["reason"] for s in skipped(channel["id"])] == [
        "sent from the channel's own address",
        "sender on settings.blocked_senders",
        "sender on settings.blocked_senders",
    ]


def test_the_same_mail_seen_twice_is_stored_once(caller, channel, dovecot, mailbox):
    raw = mail("Oi, tudo bem?", message_id="<same-1@customer.example>")
    deliver(dovecot, mailbox, raw)
    assert poll(channel["id"]) == 1
    # The same mail arrives again (a copy, a re-delivery): a new UID, the same Message-ID.
    deliver(dovecot, mailbox, raw)
    assert poll(channel["id"]) == 0
    [message] = stored()
    assert message.external_id == "<same-1@customer.example>"
    assert len(events(caller.workspace_id, "message.received")) == 1


def test_a_new_uidvalidity_reads_the_mailbox_again_without_repeating_a_mail(
    caller, channel, dovecot, mailbox
):
    deliver(dovecot, mailbox, mail("primeiro"))
    deliver(dovecot, mailbox, mail("segundo"))
    assert poll(channel["id"]) == 2
    # The server rebuilt the mailbox: its UIDs mean nothing any more.
    EmailMailbox.update(uidvalidity=1).where(EmailMailbox.channel == channel["id"]).execute()
    deliver(dovecot, mailbox, mail("terceiro"))
    assert poll(channel["id"]) == 1
    assert [m.text for m in stored()] == ["primeiro", "segundo", "terceiro"]


# A process that polls the channel's mailbox and is killed (SIGKILL: no
# exception handler, no clean-up runs) while it stores the second mail, its
# message written and not yet committed.
DYING = """
import json, os, signal, sys
from agent_platform import create_app
from agent_platform.channels.email import polling
from agent_platform.channels.email.parser import MAX_PARTS, MAX_TEXT_CHARS
from agent_platform.models import Channel
from agent_platform.models.email import EmailMailbox

settings, channel_id = json.loads(sys.argv[1]), sys.argv[2]
real, seen = EmailMailbox.advance.__func__, []

def advance(cls, channel_id, uidvalidity, uid, now):
    seen.append(uid)
    if len(seen) == 2:
        os.kill(os.getpid(), signal.SIGKILL)
    return real(cls, channel_id, uidvalidity, uid, now)

EmailMailbox.advance = classmethod(advance)
with create_app(settings).app_context():
    polling.poll_channel(Channel.get_by_id(channel_id))
"""


def test_a_process_killed_in_the_middle_of_a_poll_loses_and_repeats_nothing(
    app, caller, channel, dovecot, mailbox, settings
):
    for words in ("um", "dois", "três"):
        deliver(dovecot, mailbox, mail(words))
    same_database = {**settings, "DATABASE_URL": app.config["DATABASE_URL"]}
    arguments = [sys.executable, "-c", DYING, json.dumps(same_database), channel["id"]]
    killed = subprocess.run(arguments, capture_output=True, timeout=60)
    assert killed.returncode == -signal.SIGKILL, killed.stderr.decode()
    assert [m.text for m in stored()] == ["um"]
    assert EmailMailbox.position(channel["id"])[1] == 1
    # The restarted process goes on from the first mail not stored.
    assert poll(channel["id"]) == 2
    assert poll(channel["id"]) == 0
    assert [m.text for m in stored()] == ["um", "dois", "três"]
    assert len(events(caller.workspace_id, "message.received")) == 3


def test_the_first_poll_leaves_the_mail_that_was_there_before(caller, dovecot, mailbox, smtp):
    deliver(dovecot, mailbox, mail("antigo"), arrived=datetime.now(UTC) - timedelta(days=3))
    channel = email_channel(caller, dovecot, mailbox, smtp)
    deliver(dovecot, mailbox, mail("novo"))
    assert poll(channel["id"]) == 1
    assert [m.text for m in stored()] == ["novo"]


def test_a_known_address_is_the_same_contact_across_channels(caller, channel, dovecot, mailbox):
    known = make_contact(caller, name="Bia", email=CUSTOMER, phone="+5511933334444")
    deliver(dovecot, mailbox, mail())
    poll(channel["id"])
    [message] = stored()
    assert message.contact_id == known["id"]
    identities = data(caller.get(f"/v1/contacts/{known['id']}"))["identities"]
    assert {"type": "email", "external_id": CUSTOMER} in [
        {k: i[k] for k in ("type", "external_id")} for i in identities
    ]


def test_the_scheduled_job_polls_every_channel_with_a_mailbox(caller, channel, dovecot, mailbox):
    deliver(dovecot, mailbox, mail())
    assert polling.poll_mailboxes() == 1
    assert len(stored()) == 1


def test_another_mailbox_set_on_the_channel_is_read_from_then(caller, dovecot, mailbox, smtp):
    other = dovecot.new_mailbox()
    channel = email_channel(caller, dovecot, mailbox, smtp)
    week_ago = datetime.now(UTC) - timedelta(days=7)
    Channel.update(created_at=week_ago.replace(tzinfo=None)).execute()
    for words in ("um", "dois", "três"):
        deliver(dovecot, mailbox, mail(words))
    assert poll(channel["id"]) == 3
    # The other mailbox's mail of the last days was never the channel's.
    deliver(dovecot, other, mail("antigo, na outra"), arrived=datetime.now(UTC) - timedelta(days=2))
    change = {"settings": {"imap_username": other, "from_address": other}}
    data(caller.patch(f"/v1/channels/{channel['id']}", json=change))
    assert poll(channel["id"]) == 0
    # Its new mail is read, whatever UIDs the first mailbox had reached.
    deliver(dovecot, other, mail("novo, na outra"))
    deliver(dovecot, other, mail("outro novo"))
    assert poll(channel["id"]) == 2
    # A change that keeps the mailbox (its name) does not read it afresh.
    data(caller.patch(f"/v1/channels/{channel['id']}", json={"settings": {"from_name": "Loja"}}))
    assert EmailMailbox.position(channel["id"])[:2] == (dovecot_uidvalidity(dovecot, other), 3)
    texts = [m.text for m in stored()]
    assert texts == ["um", "dois", "três", "novo, na outra", "outro novo"]


def dovecot_uidvalidity(dovecot, user):
    connection = dovecot.imap(user)
    try:
        connection.select("INBOX", readonly=True)
        return int(connection.response("UIDVALIDITY")[1][0])
    finally:
        connection.logout()


def test_a_mail_that_answers_nothing_stored_follows_the_fallback(caller, channel, dovecot, mailbox):
    deliver(dovecot, mailbox, mail("primeiro", subject="Um assunto"))
    deliver(dovecot, mailbox, mail("segundo", subject="Outro assunto"))
    poll(channel["id"])
    first, second = stored()
    # No thread: the sender's open conversation on the channel.
    assert first.conversation_id == second.conversation_id
    data(caller.post(f"/v1/conversations/{first.conversation_id}/close"))
    # Replying to a mail never stored: their latest closed one, reopened.
    headers = {"In-Reply-To": "<unknown@customer.example>"}
    deliver(dovecot, mailbox, mail("terceiro", headers=headers))
    poll(channel["id"])
    assert stored()[-1].conversation_id == first.conversation_id
    shown = data(caller.get(f"/v1/conversations/{first.conversation_id}"))
    assert shown["status"] == "open"
    # Another sender: their own conversation.
    deliver(dovecot, mailbox, mail("quarto", sender="caio@customer.example"))
    poll(channel["id"])
    assert stored()[-1].conversation_id != first.conversation_id


def test_a_mail_met_by_a_full_disk_is_read_again_once_there_is_room(
    app, tmp_path, channel, dovecot, mailbox
):
    """The database has room but the media files' disk has none: the mail
    is neither stored nor skipped for good, and the next poll stores it."""
    deliver(dovecot, mailbox, mail("Do you open on Sunday?", subject="Hours"))
    with tmpfs(tmp_path / "small") as disk:
        app.config["MEDIA_DIR"] = str(disk)
        fill(disk)
        with pytest.raises(OSError) as full:
            poll(channel["id"])
        assert full.value.errno == errno.ENOSPC
        assert stored() == [] and skipped(channel["id"]) == []
        assert not [e for e in ChannelEvent.of_channel(channel["id"]) if e.kind == "item_failed"]
        (disk / "filler").unlink()
        assert poll(channel["id"]) == 1
    assert [message.text for message in stored()] == ["Do you open on Sunday?"]
