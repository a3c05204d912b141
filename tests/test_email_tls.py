"""The mailbox and the SMTP server over TLS and STARTTLS, as Gmail, Fastmail
and most servers want them: certificates are verified against the host name
(the test certificate is trusted through SSL_CERT_FILE, as a real CA is)."""

import pytest

from agent_platform.services import replies
from conversations_helpers import data
from email_helpers import *  # noqa: F403  (the fixtures)
from email_helpers import email_channel, mail, poll
from mail_peers import SmtpSink
from replies_helpers import add_qa, make_agent

QUESTION, ANSWER = "A que horas vocês abrem?", "Abrimos todos os dias das 9h às 18h."


@pytest.fixture(params=["ssl", "starttls"])
def security(request):
    return request.param


@pytest.fixture
def tls_smtp(dovecot, mailbox, security):
    sink = SmtpSink({mailbox: "app-password-1"}, security, dovecot.certificate)
    yield sink
    sink.stop()


def tls_channel(caller, dovecot, mailbox, smtp, security, host="127.0.0.1", agent=True):
    imap_port = dovecot.tls_port if security == "ssl" else dovecot.port
    return email_channel(
        caller, dovecot, mailbox, smtp, agent=agent, imap_host=host, imap_port=imap_port,
        imap_security=security, smtp_host=host, smtp_security=security,
    )  # fmt: skip


def test_mail_is_read_and_answered_over_tls(
    caller, dovecot, mailbox, tls_smtp, security, monkeypatch
):
    monkeypatch.setenv("SSL_CERT_FILE", str(dovecot.certificate))
    agent_id = make_agent(caller)
    add_qa(caller, agent_id, QUESTION, ANSWER)
    channel = tls_channel(caller, dovecot, mailbox, tls_smtp, security, agent=agent_id)
    assert data(caller.post(f"/v1/channels/{channel['id']}/verify"))["ok"] is True
    dovecot.deliver(mail(QUESTION), user=mailbox)
    assert poll(channel["id"]) == 1
    assert replies.run_due_replies() == 1
    [answer] = tls_smtp.mails()
    assert answer.get_body(preferencelist=("plain",)).get_content().strip() == ANSWER


def test_an_untrusted_certificate_is_refused(caller, dovecot, mailbox, tls_smtp, security):
    channel = tls_channel(caller, dovecot, mailbox, tls_smtp, security)
    result = data(caller.post(f"/v1/channels/{channel['id']}/verify"))
    assert (result["error"]["code"], result["error"]["details"]["step"]) == (
        "IMAP_UNREACHABLE",
        "imap_connect",
    )
    assert "TLS error" in result["error"]["title"]
