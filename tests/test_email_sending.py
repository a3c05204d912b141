"""Answers leave as mails over SMTP (aiosmtpd on loopback), in the thread of
the customer's mail (Dovecot on loopback); temporary SMTP failures are
retried, permanent ones fail the message with the server's reason."""

from datetime import timedelta

import pytest

from agent_platform import media_files as media
from agent_platform.models import Conversation, Message
from agent_platform.models.base import utcnow
from agent_platform.services import replies, sending
from conftest import assert_error
from conversations_helpers import data, events, make_contact, make_conversation, send
from email_helpers import *  # noqa: F403  (the fixtures)
from email_helpers import CUSTOMER, PUBLIC_URL, email_channel, mail, poll
from replies_helpers import add_qa, make_agent

QUESTION, ANSWER = "A que horas vocês abrem?", "Abrimos todos os dias das 9h às 18h."


@pytest.fixture
def shop(caller, dovecot, mailbox, smtp):
    agent_id = make_agent(caller)
    add_qa(caller, agent_id, QUESTION, ANSWER)
    return email_channel(caller, dovecot, mailbox, smtp, agent=agent_id)


def customer_writes(dovecot, mailbox, channel, raw):
    dovecot.deliver(raw, user=mailbox)
    assert poll(channel["id"]) == 1
    assert replies.run_due_replies() == 1


def parts(sent):
    """(text/plain, text/html) bodies of a sent mail."""
    plain = sent.get_body(preferencelist=("plain",)).get_content()
    html = sent.get_body(preferencelist=("html",)).get_content()
    return plain, html


def test_three_replies_stay_in_one_thread_with_one_re(caller, shop, dovecot, mailbox, smtp):
    customer_writes(dovecot, mailbox, shop, mail(QUESTION, message_id="<c1@customer.example>"))
    [first] = smtp.mails()
    assert first["From"] == f"Loja da Ana <{mailbox}>" and first["To"] == CUSTOMER
    assert first["Subject"] == "Re: Horário"
    assert (first["In-Reply-To"], first["References"]) == ("<c1@customer.example>",) * 2
    plain, html = parts(first)
    assert plain.strip() == ANSWER and f"<p>{ANSWER}</p>" in html
    assert first["Auto-Submitted"] == "auto-replied"  # the agent's: no auto-reply answers it
    stored = Message.get(Message.text == ANSWER)
    assert stored.external_id == first["Message-ID"] and stored.status == "sent"

    second_mail = mail(
        f"{QUESTION}\n\nOn Thu, 26 Nov 2026, Loja wrote:\n> {ANSWER}",
        subject="Re: Horário",
        message_id="<c2@customer.example>",
        headers={
            "In-Reply-To": first["Message-ID"],
            "References": f"<c1@customer.example> {first['Message-ID']}",
        },
    )
    customer_writes(dovecot, mailbox, shop, second_mail)
    second = smtp.mails()[1]
    assert second["Subject"] == "Re: Horário" and second["In-Reply-To"] == "<c2@customer.example>"
    assert second["References"].split() == [
        "<c1@customer.example>",
        first["Message-ID"],
        "<c2@customer.example>",
    ]
    third_mail = mail(
        f"Obrigada! {QUESTION}",
        subject="RE: Re: Horário",
        message_id="<c3@customer.example>",
        headers={
            "In-Reply-To": second["Message-ID"],
            "References": f"{second['References']} {second['Message-ID']}",
        },
    )
    customer_writes(dovecot, mailbox, shop, third_mail)
    third = smtp.mails()[2]
    assert third["Subject"] == "Re: Horário"
    assert third["References"].split() == [
        "<c1@customer.example>",
        first["Message-ID"],
        "<c2@customer.example>",
        second["Message-ID"],
        "<c3@customer.example>",
    ]
    assert smtp.logins == [mailbox] * 3  # the IMAP account, as smtp_username is not set
    assert Conversation.select().count() == 1
    assert Message.select().where(Message.direction == "inbound").count() == 3


def test_a_reply_lands_in_its_threads_conversation_not_the_newest(
    caller, shop, dovecot, mailbox, smtp
):
    customer_writes(dovecot, mailbox, shop, mail(QUESTION))
    [answer] = smtp.mails()
    first = Conversation.get()
    data(caller.post(f"/v1/conversations/{first.id}/close"))
    # A colleague opens a new conversation with the customer on the channel.
    newer = make_conversation(caller, first.contact_id, shop["id"])
    reply = mail("Mais uma dúvida", headers={"In-Reply-To": answer["Message-ID"]})
    dovecot.deliver(reply, user=mailbox)
    poll(shop["id"])
    stored = Message.get(Message.text == "Mais uma dúvida")
    # Its thread's conversation is closed while another is open: the open one.
    assert stored.conversation_id == newer["id"]
    data(caller.post(f"/v1/conversations/{newer['id']}/close"))
    again = mail("E outra", headers={"References": answer["Message-ID"]})
    dovecot.deliver(again, user=mailbox)
    poll(shop["id"])
    # Both closed: the thread's conversation is reopened, not the newest.
    assert Message.get(Message.text == "E outra").conversation_id == first.id
    assert Conversation.get_by_id(first.id).status == "open"


def test_a_human_message_with_an_attachment_is_sent_as_a_mail(caller, shop, dovecot, mailbox, smtp):
    customer_writes(dovecot, mailbox, shop, mail(QUESTION))
    conversation = Conversation.get()
    name = media.new_name("application/pdf")
    (media.media_dir() / name).write_bytes(b"%PDF-1.4 cardapio")
    body = {
        "type": "document",
        "media_url": f"{PUBLIC_URL}/media/{name}",
        "media_mime_type": "application/pdf",
        "caption": "Segue o cardápio.",
    }
    data(send(caller, conversation.id, text=None, **body), 201)
    assert sending.send_queued() == 1
    sent = smtp.mails()[-1]
    [attachment] = list(sent.iter_attachments())
    assert attachment.get_content_type() == "application/pdf"
    assert attachment.get_content() == b"%PDF-1.4 cardapio"
    assert parts(sent)[0].strip() == "Segue o cardápio."
    assert sent["Subject"] == "Re: Horário"
    assert sent["Auto-Submitted"] is None  # a person wrote it


def test_a_temporary_smtp_failure_is_retried(caller, shop, dovecot, mailbox, smtp):
    smtp.refuse_next("451 4.3.0 Mailbox busy, try again")
    customer_writes(dovecot, mailbox, shop, mail(QUESTION))
    answer = Message.get(Message.text == ANSWER)
    assert answer.status == "queued" and answer.error["code"] == "SMTP_451"
    assert "Mailbox busy" in answer.error["title"]
    assert smtp.mails() == []
    assert sending.send_queued(now=utcnow() + timedelta(seconds=30)) == 1
    assert Message.get_by_id(answer.id).status == "sent"
    assert [m["Subject"] for m in smtp.mails()] == ["Re: Horário"]


def test_a_permanent_smtp_failure_fails_the_message_with_the_reason(
    caller, shop, dovecot, mailbox, smtp
):
    smtp.refuse_next("550 5.1.1 <bia@customer.example>: Recipient address rejected")
    customer_writes(dovecot, mailbox, shop, mail(QUESTION))
    answer = data(caller.get(f"/v1/messages/{Message.get(Message.text == ANSWER).id}"))
    assert answer["status"] == "failed" and answer["error"]["code"] == "SMTP_550"
    assert "Recipient address rejected" in answer["error"]["title"]
    [(_, failed)] = events(caller.workspace_id, "message.failed")
    assert failed["id"] == answer["id"]


def test_a_channel_without_smtp_settings_refuses_a_message(caller, dovecot, mailbox, smtp):
    channel = email_channel(caller, dovecot, mailbox, smtp, smtp_host=None)
    contact = make_contact(caller, name="Bia", email=CUSTOMER)
    conversation = make_conversation(caller, contact["id"], channel["id"])
    assert_error(send(caller, conversation["id"]), 409, "CHANNEL_CANNOT_SEND", "settings.smtp_host")


def test_a_conversation_started_by_the_team_gets_a_subject(caller, shop, smtp):
    contact = make_contact(caller, name="Bia", email=CUSTOMER)
    conversation = make_conversation(caller, contact["id"], shop["id"])
    data(send(caller, conversation["id"], "Seu pedido chegou!"), 201)
    data(send(caller, conversation["id"], "Pode retirar.", metadata={"subject": "Retirada"}), 201)
    sending.send_queued()
    first, second = smtp.mails()
    assert first["Subject"] == "Message from Loja da Ana" and first["In-Reply-To"] is None
    assert second["Subject"] == "Retirada" and second["In-Reply-To"] == first["Message-ID"]
