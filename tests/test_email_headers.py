"""No header an attacker chose reaches the wire (issue 37). A subject, a
sender's name or a Message-ID that decodes to a line break, from a
customer's mail (Dovecot on loopback) or an API caller, leaves as one line
of plain text; a from_name with a line break is refused (400). What the SMTP
server (aiosmtpd on loopback) receives carries exactly the headers the
platform wrote. mailheaders' own guarantees are checked on this Python and
on every other Python 3.11+ found on the machine (mailheaders_check.py):
the standard library's writer changed in 3.11.10 and 3.12.5."""

import os
import shutil
import subprocess
import sys
from email import message_from_bytes, policy
from email.utils import make_msgid
from pathlib import Path

import pytest

import mailheaders_check
from agent_platform import mailheaders
from agent_platform import media_files as media
from agent_platform.models import Channel, ChannelEvent, Contact, Message
from agent_platform.services import replies, sending
from conftest import assert_error
from conversations_helpers import data, make_contact, make_conversation, send
from email_helpers import *  # noqa: F403  (the fixtures)
from email_helpers import CUSTOMER, PUBLIC_URL, email_channel, mail_settings, poll
from mail_peers import PASSWORD, SmtpSink
from replies_helpers import add_qa, make_agent

QUESTION, ANSWER = "A que horas vocês abrem?", "Abrimos todos os dias das 9h às 18h."
# A subject whose encoded word encodes another, which encodes CR LF and two headers.
NESTED = (
    "=?utf-8?q?=3D=3Futf-8=3Fq=3FHours=3D0D=3D0ABcc=3A=5Fevil6=40evil.example"
    "=3D0D=3D0AReply-To=3A=5Fattacker=40evil.example=3F=3D?="
)
INJECTED = ("Bcc", "Cc", "Reply-To")


@pytest.fixture
def shop(caller, dovecot, mailbox, smtp):
    agent_id = make_agent(caller)
    add_qa(caller, agent_id, QUESTION, ANSWER)
    return email_channel(caller, dovecot, mailbox, smtp, agent=agent_id)


def raw_mail(subject="Horário", sender=f"Bia Souza <{CUSTOMER}>", message_id=None, headers=()):
    """A customer's mail written by hand: each header exactly as given."""
    lines = [
        f"From: {sender}",
        "To: help@example.com",
        f"Subject: {subject}",
        f"Message-ID: {message_id or make_msgid(domain='customer.example')}",
        "Date: Thu, 26 Nov 2026 10:00:00 +0000",
        *(f"{name}: {value}" for name, value in headers),
        "MIME-Version: 1.0",
        "Content-Type: text/plain; charset=utf-8",
        "Content-Transfer-Encoding: 8bit",
        "",
        QUESTION,
        "",
    ]
    return "\r\n".join(lines).encode()


def customer_writes(dovecot, mailbox, channel, raw):
    dovecot.deliver(raw, user=mailbox)
    assert poll(channel["id"]) == 1
    assert replies.run_due_replies() == 1


def on_the_wire(smtp):
    """The last mail the SMTP server took: (envelope recipients, the header
    names of its header block, the mail parsed)."""
    _, recipients, raw = smtp.received[-1]
    block = raw.split(b"\r\n\r\n", 1)[0].decode("utf-8")
    names = [line.split(":", 1)[0] for line in block.split("\r\n") if line[:1] not in (" ", "\t")]
    return recipients, names, message_from_bytes(raw, policy=policy.default)


def assert_no_injected_header(names, sent):
    assert not [name for name in names if name in INJECTED], names
    assert len(names) == len(set(names)), names  # no header twice
    for name in sent.keys():
        assert not any(char in str(sent[name]) for char in "\r\n\x0b\x0c\x85\u2028"), name


def test_a_customers_nested_encoded_subject_is_answered_as_one_line_of_text(
    shop, dovecot, mailbox, smtp
):
    customer_writes(dovecot, mailbox, shop, raw_mail(subject=NESTED))
    recipients, names, sent = on_the_wire(smtp)
    assert recipients == [CUSTOMER]
    assert_no_injected_header(names, sent)
    subject = "Re: Hours Bcc: evil6@evil.example Reply-To: attacker@evil.example"
    assert sent["Subject"] == subject
    assert sent.get_body(preferencelist=("plain",)).get_content().strip() == ANSWER
    stored = Message.get(Message.direction == "inbound").metadata["email"]["subject"]
    assert stored == subject.removeprefix("Re: ")


@pytest.mark.parametrize(
    "subject",
    [
        "=?utf-8?q?Hours=0D=0ABcc:_evil@evil.example?=",
        "=?utf-8?b?SG91cnMNCkJjYzogZXZpbEBldmlsLmV4YW1wbGU=?=",  # b: "Hours\r\nBcc: evil@..."
        "=?utf-8?q?Hours=E2=80=A8Bcc:_evil@evil.example=C2=85Cc:_x@evil.example?=",  # U+2028, NEL
        "=?utf-8?q?Hours=0BBcc:_evil@evil.example=0C=00?=",  # VT, FF, NUL
        "Hours =?utf-8?q?=3D=3F?=utf-8?q?=0D=0ABcc:_evil@evil.example?=",  # an opener made of two
    ],
)
def test_a_subject_that_decodes_to_a_line_break_is_answered_without_it(
    shop, dovecot, mailbox, smtp, subject
):
    customer_writes(dovecot, mailbox, shop, raw_mail(subject=subject))
    recipients, names, sent = on_the_wire(smtp)
    assert recipients == [CUSTOMER]
    assert_no_injected_header(names, sent)
    assert sent["Subject"].startswith("Re: Hours") and "=?" not in str(sent["Subject"])


def test_an_api_subject_cannot_write_headers_or_the_body(caller, shop, smtp):
    contact = make_contact(caller, name="Bia", email=CUSTOMER)
    conversation = make_conversation(caller, contact["id"], shop["id"])
    subject = "=?utf-8?q?Invoice=0D=0AReply-To:_attacker@evil.example=0D=0A=0D=0Abody?="
    data(send(caller, conversation["id"], "Segue a fatura.", metadata={"subject": subject}), 201)
    assert sending.send_queued() == 1
    recipients, names, sent = on_the_wire(smtp)
    assert recipients == [CUSTOMER]
    assert_no_injected_header(names, sent)
    assert sent["Subject"] == "Invoice Reply-To: attacker@evil.example body"
    assert sent.get_body(preferencelist=("plain",)).get_content().strip() == "Segue a fatura."
    assert Message.get(Message.text == "Segue a fatura.").status == "sent"


@pytest.mark.parametrize(
    "name",
    [
        "Loja\r\nBcc: x@evil.example",
        "Loja\nda Ana",
        "Loja\u2028da Ana",
        "Loja\x85da Ana",
        "Loja\x00",
        "=?utf-8?q?Loja=0D=0ABcc:_x@evil.example?=",
    ],
)
def test_a_from_name_that_would_break_the_header_is_refused_naming_it(
    caller, dovecot, mailbox, smtp, name
):
    body = {"name": "Mail", "type": "email", "settings": {"from_name": name}}
    assert_error(caller.post("/v1/channels", json=body), 400, "VALIDATION_ERROR", "from_name")
    channel = email_channel(caller, dovecot, mailbox, smtp)
    change = {"settings": {"from_name": name}}
    response = caller.patch(f"/v1/channels/{channel['id']}", json=change)
    assert_error(response, 400, "VALIDATION_ERROR", "settings.from_name")


@pytest.mark.parametrize(
    "address", ["a,b@example.com", "a<b>@example.com", '"a"@example.com', "=?utf-8?q?a?=@x.example"]
)
def test_an_address_no_header_can_carry_is_refused(caller, address):
    body = {"name": "Mail", "type": "email", "settings": {"from_address": address}}
    assert_error(caller.post("/v1/channels", json=body), 400, "VALIDATION_ERROR", "from_address")
    response = caller.post("/v1/contacts", json={"name": "Bia", "email": address})
    assert_error(response, 400, "VALIDATION_ERROR", "email")


def test_a_from_name_stored_before_the_check_is_sent_made_safe(
    caller, shop, dovecot, mailbox, smtp
):
    channel = Channel.get_by_id(shop["id"])
    channel.settings = {**channel.settings, "from_name": "Loja\r\nBcc: x@evil.example"}
    channel.save()
    customer_writes(dovecot, mailbox, shop, raw_mail())
    recipients, names, sent = on_the_wire(smtp)
    assert recipients == [CUSTOMER] and Message.get(Message.text == ANSWER).status == "sent"
    assert_no_injected_header(names, sent)
    [sender] = sent["From"].addresses
    assert (sender.display_name, sender.addr_spec) == ("Loja Bcc: x@evil.example", mailbox)


def test_a_senders_name_that_decodes_to_a_line_break_is_stored_and_answered(
    shop, dovecot, mailbox, smtp
):
    sender = "=?utf-8?q?Carl=0D=0ABcc:_x@evil.example?= <carl@example.com>"
    customer_writes(dovecot, mailbox, shop, raw_mail(sender=sender))
    assert not [e for e in ChannelEvent.of_channel(shop["id"]) if e.kind == "item_failed"]
    contact = Contact.get()
    assert (contact.name, contact.email) == ("Carl Bcc: x@evil.example", "carl@example.com")
    recipients, names, sent = on_the_wire(smtp)
    assert recipients == ["carl@example.com"] and sent["To"] == "carl@example.com"
    assert_no_injected_header(names, sent)
    assert sent.get_body(preferencelist=("plain",)).get_content().strip() == ANSWER


def test_an_address_that_decodes_to_a_line_break_is_no_sender(shop, dovecot, mailbox, smtp):
    sender = "Carl <=?utf-8?q?x=0D=0ABcc=3A=5Fy=40evil.example?=@example.com>"
    dovecot.deliver(raw_mail(sender=sender), user=mailbox)
    poll(shop["id"])
    [skipped] = [e.payload for e in ChannelEvent.of_channel(shop["id"]) if e.kind == "skipped"]
    assert skipped["reason"] == "no sender address"
    assert smtp.received == []


def test_message_ids_that_decode_to_a_line_break_are_not_sent_back(shop, dovecot, mailbox, smtp):
    hostile = "<=?utf-8?q?x=0D=0ABcc:_evil7@evil.example?=>"
    references = f"<c0@customer.example> {hostile} <=?utf-8?q?y=00z?=@customer.example>"
    raw = raw_mail(message_id="<c1@customer.example>", headers=[("References", references)])
    customer_writes(dovecot, mailbox, shop, raw)
    first = on_the_wire(smtp)[2]
    assert first["References"].split() == ["<c0@customer.example>", "<c1@customer.example>"]
    raw = raw_mail(message_id=hostile, headers=[("In-Reply-To", first["Message-ID"])])
    customer_writes(dovecot, mailbox, shop, raw)
    recipients, names, sent = on_the_wire(smtp)
    assert recipients == [CUSTOMER]
    assert_no_injected_header(names, sent)
    # The hostile id is stored as written (not decoded), and not answered to.
    assert Message.get(Message.external_id == hostile).direction == "inbound"
    assert "In-Reply-To" not in names and "References" not in names


def test_an_unsafe_header_fails_the_message_and_nothing_is_sent(caller, shop, smtp, monkeypatch):
    # What the policy refuses whatever a value was made of: no line break.
    monkeypatch.setattr(mailheaders, "text", lambda value, limit=900: value)
    contact = make_contact(caller, name="Bia", email=CUSTOMER)
    conversation = make_conversation(caller, contact["id"], shop["id"])
    subject = "=?utf-8?q?Invoice=0D=0ABcc:_x@evil.example?="
    sent = data(send(caller, conversation["id"], "Oi", metadata={"subject": subject}), 201)
    sending.send_queued()
    failed = Message.get_by_id(sent["id"])
    assert failed.status == "failed" and failed.error["code"] == "UNSAFE_HEADER"
    assert "Subject" in failed.error["title"] and smtp.received == []


def test_a_from_name_with_specials_and_accents_is_one_sender(caller, dovecot, mailbox, smtp):
    name = "Loja da Ana: atendimento, vendas & suporte (segunda a sexta) — São Paulo"
    settings = mail_settings(dovecot, mailbox, smtp, from_name=name)
    body = {"name": "Mail", "type": "email", "settings": settings}
    channel = data(caller.post("/v1/channels", json=body), 201)
    contact = make_contact(caller, name="Bia", email=CUSTOMER)
    conversation = make_conversation(caller, contact["id"], channel["id"])
    data(send(caller, conversation["id"], "Oi"), 201)
    assert sending.send_queued() == 1
    [sender] = on_the_wire(smtp)[2]["From"].addresses
    assert sender.addr_spec == mailbox
    assert sender.display_name.replace(" ", "") == name.replace(" ", "")


def test_an_attachments_type_and_name_cannot_break_its_part(caller, shop, smtp):
    contact = make_contact(caller, name="Bia", email=CUSTOMER)
    conversation = make_conversation(caller, contact["id"], shop["id"])
    name = media.new_name("application/pdf")
    (media.media_dir() / name).write_bytes(b"%PDF-1.4 fatura")
    body = {
        "type": "document",
        "media_url": f"{PUBLIC_URL}/media/{name}",
        "media_mime_type": "application/pdf\n",  # the API's pattern lets a last \n through
        "caption": "Segue a fatura.",
    }
    data(send(caller, conversation["id"], text=None, **body), 201)
    assert sending.send_queued() == 1
    _, _, sent = on_the_wire(smtp)
    [attachment] = list(sent.iter_attachments())
    assert attachment.get_content_type() == "application/octet-stream"
    assert attachment.get_content() == b"%PDF-1.4 fatura"
    for part in sent.walk():
        assert_no_injected_header(part.keys(), part)


@pytest.mark.parametrize("smtputf8", [True, False])
def test_an_address_that_is_not_ascii_goes_by_smtputf8_or_fails_plainly(
    caller, dovecot, mailbox, smtputf8
):
    sink = SmtpSink({mailbox: PASSWORD}, smtputf8=smtputf8)
    try:
        channel = email_channel(caller, dovecot, mailbox, sink)
        contact = make_contact(caller, name="José", email="José@Exemplo.com.br")
        conversation = make_conversation(caller, contact["id"], channel["id"])
        sent = data(send(caller, conversation["id"], "Olá, José!"), 201)
        sending.send_queued()
        message = Message.get_by_id(sent["id"])
        if not smtputf8:
            assert message.status == "failed" and message.error["code"] == "SMTP_NOT_SUPPORTED"
            return
        assert message.status == "sent"
        recipients, names, mail = on_the_wire(sink)
        assert recipients == ["josé@exemplo.com.br"] and mail["To"] == "josé@exemplo.com.br"
        assert_no_injected_header(names, mail)
    finally:
        sink.stop()


# --- mailheaders on this Python and on the others found here ---------------


def test_mailheaders_guarantees_hold_on_this_python():
    assert mailheaders_check.check() > 300


def other_pythons():
    """{version: path} of the Pythons 3.11+ on this machine but this one."""
    found = {}
    names = ("python3.11", "python3.12", "python3.13", "python3.14", "python3")
    for path in {shutil.which(name) for name in names} | {"/usr/bin/python3"}:
        if not path or not os.access(path, os.X_OK):
            continue
        ask = "import sys; print(sys.version.split()[0] if sys.version_info >= (3, 11) else '')"
        answer = subprocess.run([path, "-c", ask], capture_output=True, text=True, timeout=30)
        version = answer.stdout.strip()
        if answer.returncode == 0 and version and version != sys.version.split()[0]:
            found.setdefault(version, path)
    return found


def test_mailheaders_guarantees_hold_on_every_other_python_found():
    pythons = other_pythons()
    if not pythons:
        pytest.skip("no other Python 3.11+ on this machine")
    root = Path(__file__).resolve().parent.parent
    environ = {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(root / "platform")}
    for version, path in sorted(pythons.items()):
        script = str(root / "tests" / "mailheaders_check.py")
        ran = subprocess.run(
            [path, script], capture_output=True, text=True, env=environ, timeout=300
        )
        assert ran.returncode == 0, (version, ran.stderr[-3000:])
        assert ran.stdout.startswith("ok:"), (version, ran.stdout)
