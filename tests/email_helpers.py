"""An e-mail channel against real mail servers on loopback: Dovecot holds
the team's mailbox, aiosmtpd takes what the channel sends
(tests/mail_peers.py). `from email_helpers import *` brings the fixtures."""

import shutil
import tempfile
from email.message import EmailMessage
from email.utils import make_msgid

import pytest

from agent_platform.channels.email import polling
from agent_platform.models import Channel
from conversations_helpers import make_agent, make_channel
from mail_peers import PASSWORD, Dovecot, SmtpSink

__all__ = ["dovecot", "mailbox", "settings", "smtp"]

CUSTOMER = "bia@customer.example"
PUBLIC_URL = "https://agents.example.com"


@pytest.fixture(scope="session")
def dovecot():
    # Not under pytest's temporary directory: that is private to root (0700),
    # and Dovecot's own users (dovecot, dovenull) must read the files.
    base = tempfile.mkdtemp(prefix="agent-platform-dovecot-")
    server = Dovecot(base)
    yield server
    server.stop()
    shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def mailbox(dovecot):
    """This test's own mailbox on the Dovecot server: its address."""
    return dovecot.new_mailbox()


@pytest.fixture
def smtp(mailbox):
    """The SMTP server, where the mailbox's account (PASSWORD) logs in."""
    sink = SmtpSink({mailbox: PASSWORD})
    yield sink
    sink.stop()


@pytest.fixture
def settings(tmp_path):
    return mail_config(tmp_path)


def mail_config(tmp_path):
    """The app's configuration for the e-mail tests (servers on loopback allowed)."""
    return {
        "DATABASE_PATH": str(tmp_path / "test.db"),
        "MEDIA_DIR": str(tmp_path / "media"),
        "SERVER_PUBLIC_URL": PUBLIC_URL,
        "REPLIES_DEBOUNCE_SECONDS": 0,
        "EMAIL_ALLOW_PRIVATE_HOSTS": True,
        "EMAIL_TIMEOUT_SECONDS": 5,
    }


def mail_settings(dovecot, mailbox, smtp, **extra):
    return {
        "imap_host": "127.0.0.1",
        "imap_port": dovecot.port,
        "imap_security": "none",
        "imap_username": mailbox,
        "imap_password": PASSWORD,
        "smtp_host": "127.0.0.1",
        "smtp_port": smtp.port,
        "smtp_security": "none",
        "from_address": mailbox,
        "from_name": "Loja da Ana",
        **extra,
    }


def email_channel(caller, dovecot, mailbox, smtp, agent=True, **extra):
    """An e-mail channel on the test's mailbox; `agent`: True for a new
    agent, an agent id, or False for none."""
    agent_id = make_agent(caller) if agent is True else (agent or None)
    values = mail_settings(dovecot, mailbox, smtp, **extra)
    return make_channel(caller, name="Mail", type="email", settings=values, agent_id=agent_id)


def mail(
    text="Olá, a que horas vocês abrem?",
    sender=CUSTOMER,
    to="help@example.com",
    subject="Horário",
    html=None,
    headers=None,
    attachments=(),
    message_id=None,
):
    """A customer's mail as bytes (text/plain, or HTML only when `html`)."""
    message = EmailMessage()
    message["From"] = f"Bia Souza <{sender}>"
    message["To"] = to
    message["Subject"] = subject
    message["Message-ID"] = message_id or make_msgid(domain="customer.example")
    message["Date"] = "Thu, 26 Nov 2026 10:00:00 +0000"
    for name, value in (headers or {}).items():
        message[name] = value
    if html is not None:
        message.set_content(html, subtype="html")
    else:
        message.set_content(text)
    for name, mime, data in attachments:
        maintype, subtype = mime.split("/")
        message.add_attachment(data, maintype=maintype, subtype=subtype, filename=name)
    return bytes(message)


def poll(channel_id):
    """One poll of the channel's mailbox, as the job does; mails stored."""
    return polling.poll_channel(Channel.get_by_id(channel_id))
