"""A team's mailbox served as a user runs it: `agent-platform serve`
(gunicorn, the scheduler in its worker) polls the Dovecot mailbox on its
own, the agent answers from its knowledge, and the answer leaves through
the SMTP server in the customer's thread; the customer's reply to it is
answered in the same conversation. An SMTP server that says "try later" is
tried again by the scheduler; one that refuses ends the message failed, and
the webhook hears of it. Over TLS and STARTTLS too: the served worker runs
monkey-patched by gevent, ssl included. No test code calls a job function."""

import contextlib
import json
import os

import pytest

from email_helpers import *  # noqa: F403  (the fixtures)
from email_helpers import CUSTOMER, PUBLIC_URL, mail, mail_settings
from mail_peers import PASSWORD, SmtpSink
from test_cli import free_port, serving
from test_service_jobs import Api, delivered, wait_for
from webhooks_helpers import Receiver

QUESTION, ANSWER = "A que horas vocês abrem?", "Abrimos todos os dias das 9h às 18h."


@pytest.fixture
def receiver():
    server = Receiver()
    yield server
    server.close()


@pytest.fixture
def served(tmp_path, receiver):
    with serve(tmp_path, receiver) as api:
        yield api


@contextlib.contextmanager
def serve(tmp_path, receiver, environ=()):
    """`serve` with the mail jobs on short intervals, `environ` added: an Api."""
    port = free_port()
    settings = {
        "DATABASE_PATH": str(tmp_path / "served.db"),
        "MEDIA_DIR": str(tmp_path / "media"),
        "SERVER_PUBLIC_URL": PUBLIC_URL,
        "EMAIL_POLL_SECONDS": 0.5,
        "EMAIL_ALLOW_PRIVATE_HOSTS": True,
        "REPLIES_DEBOUNCE_SECONDS": 0,
        "MESSAGES_SEND_POLL_SECONDS": 0.5,
        "WEBHOOKS_ALLOW_PRIVATE_TARGETS": True,
        "WEBHOOKS_ALLOWED_PORTS": [receiver.port],
        "WEBHOOKS_POLL_SECONDS": 0.5,
    }
    environ = {**os.environ, **dict(environ)}
    environ.update({f"AGENT_PLATFORM_{k}": json.dumps(v) for k, v in settings.items()})
    with serving(["--port", str(port)], environ, port) as (base, lines):
        yield Api(base, lines[1].strip())


def help_desk(served, dovecot, mailbox, smtp, **security):
    """An agent that knows one answer, on an e-mail channel (checked)."""
    agent = served.call("POST", "/v1/agents", {"name": "Ana"}, 201)["id"]
    qa = {"type": "qa", "question": QUESTION, "answer": ANSWER}
    served.call("POST", f"/v1/agents/{agent}/trainings", qa, 201)
    settings = mail_settings(dovecot, mailbox, smtp, **security)
    channel = {"name": "Help desk", "type": "email", "settings": settings}
    channel_id = served.call("POST", "/v1/channels", channel, 201)["id"]
    served.call("POST", f"/v1/channels/{channel_id}/connect", {"agent_id": agent})
    assert served.call("POST", f"/v1/channels/{channel_id}/verify")["ok"] is True


def test_mail_sent_to_the_mailbox_is_answered_in_its_thread(served, dovecot, mailbox, smtp):
    help_desk(served, dovecot, mailbox, smtp)

    dovecot.deliver(mail(QUESTION, message_id="<q1@customer.example>"), user=mailbox)
    [answer] = wait_for(smtp.mails, "answered the mail")
    assert (answer["To"], answer["In-Reply-To"], answer["Subject"]) == (
        CUSTOMER,
        "<q1@customer.example>",
        "Re: Horário",
    )
    assert answer.get_body(preferencelist=("plain",)).get_content().strip() == ANSWER

    reply = mail(
        QUESTION,
        subject="Re: Horário",
        message_id="<q2@customer.example>",
        headers={
            "In-Reply-To": answer["Message-ID"],
            "References": f"{answer['References']} {answer['Message-ID']}",
        },
    )
    dovecot.deliver(reply, user=mailbox)
    second = wait_for(lambda: smtp.mails()[1:], "answered the reply")[0]
    assert second["In-Reply-To"] == "<q2@customer.example>"
    assert answer["Message-ID"] in second["References"]
    [conversation] = served.call("GET", "/v1/conversations")
    messages = served.call("GET", f"/v1/conversations/{conversation['id']}/messages")
    assert sorted((m["direction"], m["status"]) for m in messages) == [
        ("inbound", "received"),
        ("inbound", "received"),
        ("outbound", "sent"),
        ("outbound", "sent"),
    ]


def test_smtp_try_later_is_retried_and_a_refusal_fails_with_the_servers_words(
    served, receiver, dovecot, mailbox, smtp
):
    help_desk(served, dovecot, mailbox, smtp)
    events = ["message.sent", "message.failed"]
    served.call("POST", "/v1/webhooks", {"url": receiver.url, "events": events}, 201)
    smtp.refuse_next("451 4.3.0 Mailbox busy, try again later")
    dovecot.deliver(mail(QUESTION, message_id="<busy@customer.example>"), user=mailbox)
    # The send job's next try, 5 s later, goes through.
    [answer] = wait_for(smtp.mails, "sent the answer after the SMTP server's 451")
    assert answer["In-Reply-To"] == "<busy@customer.example>"
    [sent] = wait_for(lambda: delivered(receiver, "message.sent"), "delivered message.sent")
    assert (sent["text"], sent["status"], sent["error"]) == (ANSWER, "sent", None)

    smtp.refuse_next("550 5.1.1 <ana@gone.example>: Recipient address rejected")
    dovecot.deliver(mail(QUESTION, sender="ana@gone.example"), user=mailbox)
    [failed] = wait_for(lambda: delivered(receiver, "message.failed"), "delivered message.failed")
    assert (failed["status"], failed["error"]["code"]) == ("failed", "SMTP_550")
    assert "Recipient address rejected" in failed["error"]["title"]
    shown = served.call("GET", f"/v1/messages/{failed['id']}")
    assert (shown["status"], shown["error"]) == ("failed", failed["error"])
    assert len(smtp.mails()) == 1  # nothing more was sent


@pytest.mark.parametrize("security", ["ssl", "starttls"])
def test_mail_over_tls_is_answered_by_the_server(tmp_path, receiver, dovecot, mailbox, security):
    """The certificate verified against the host (trusted through
    SSL_CERT_FILE, as a real CA is), with gevent's ssl in the worker."""
    sink = SmtpSink({mailbox: PASSWORD}, security, dovecot.certificate)
    trusted = {"SSL_CERT_FILE": str(dovecot.certificate)}
    try:
        with serve(tmp_path, receiver, trusted) as served:
            imap_port = dovecot.tls_port if security == "ssl" else dovecot.port
            help_desk(
                served, dovecot, mailbox, sink, imap_port=imap_port,
                imap_security=security, smtp_security=security,
            )  # fmt: skip
            dovecot.deliver(mail(QUESTION), user=mailbox)
            [answer] = wait_for(sink.mails, "answered the mail over TLS")
            assert answer.get_body(preferencelist=("plain",)).get_content().strip() == ANSWER
    finally:
        sink.stop()
