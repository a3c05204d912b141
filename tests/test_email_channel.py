"""An e-mail channel's settings, its "test connection" against the real
servers, and the private-address guard on its hosts."""

import shutil

import pytest

from agent_platform import scheduler
from agent_platform.channels.email import polling
from agent_platform.models import ChannelEvent
from agent_platform.models.fastsql import scalar
from conftest import assert_error
from conversations_helpers import data, event_names, events, make_channel
from email_helpers import *  # noqa: F403  (the fixtures)
from email_helpers import email_channel, mail, mail_settings, poll
from mail_peers import free_port


def verify(caller, channel):
    return data(caller.post(f"/v1/channels/{channel['id']}/verify"))


def test_the_passwords_are_write_only(caller, dovecot, mailbox, smtp):
    channel = email_channel(caller, dovecot, mailbox, smtp, smtp_password="other-secret")
    shown = data(caller.get(f"/v1/channels/{channel['id']}/settings"))
    assert shown["imap_password_set"] is True and shown["smtp_password_set"] is True
    assert "imap_password" not in shown and "smtp_password" not in shown
    assert "app-password-1" not in str(data(caller.get(f"/v1/channels/{channel['id']}")))
    renamed = caller.patch(f"/v1/channels/{channel['id']}", json={"name": "Mail 2"})
    listed = caller.get("/v1/channels")
    verify(caller, channel)  # channel.connected carries the channel
    shown_anywhere = [renamed.get_data(as_text=True), listed.get_data(as_text=True)]
    shown_anywhere += [str(d) for _, d in events(caller.workspace_id)]
    secrets = ("app-password-1", "other-secret")
    assert not [text for text in shown_anywhere for secret in secrets if secret in text]
    # Encrypted at rest: the database file does not hold them either.
    stored = scalar('SELECT "settings" FROM "channel" WHERE "id" = ?', channel["id"])
    assert "app-password-1" not in stored and "other-secret" not in stored


@pytest.mark.parametrize(
    ("value", "field"),
    [
        (["not an address"], "settings.blocked_senders[0]"),
        ("spam@example.com", "settings.blocked_senders"),
        (["@"], "settings.blocked_senders[0]"),
        (["x@example.com"] * 501, "settings.blocked_senders"),
    ],
)
def test_a_bad_block_list_is_refused_naming_the_entry(caller, value, field):
    body = {"name": "Mail", "type": "email", "settings": {"blocked_senders": value}}
    assert_error(caller.post("/v1/channels", json=body), 400, "VALIDATION_ERROR", field)


def test_the_block_list_is_stored_lower_cased_without_repeats(caller):
    blocked = ["Spam@Example.com", "@Annoying.Example", "spam@example.com"]
    channel = make_channel(caller, name="Mail", type="email", settings={"blocked_senders": blocked})
    assert channel["settings"]["blocked_senders"] == ["spam@example.com", "@annoying.example"]


def test_test_connection_checks_imap_and_smtp(caller, dovecot, mailbox, smtp):
    channel = email_channel(caller, dovecot, mailbox, smtp)
    dovecot.deliver(mail(), user=mailbox)
    result = verify(caller, channel)
    assert result["ok"] is True
    assert result["details"]["imap"] == {
        "host": "127.0.0.1",
        "port": dovecot.port,
        "mailbox": "INBOX",
        "messages": 1,
    }
    assert result["details"]["smtp"] == {"host": "127.0.0.1", "port": smtp.port}
    assert smtp.logins == [mailbox]
    assert "channel.connected" in event_names(caller.workspace_id)


@pytest.mark.parametrize(
    ("change", "step", "code"),
    [
        ({"imap_password": "wrong"}, "imap_login", "IMAP_LOGIN_FAILED"),
        ({"imap_port": "closed"}, "imap_connect", "IMAP_UNREACHABLE"),
        ({"smtp_port": "closed"}, "smtp_connect", "SMTP_UNREACHABLE"),
        ({"smtp_username": "nobody@example.com", "smtp_password": "x"}, "smtp_login",
         "SMTP_LOGIN_FAILED"),
    ],
)  # fmt: skip
def test_test_connection_names_the_step_that_failed(
    caller, dovecot, mailbox, smtp, change, step, code
):
    change = {k: free_port() if v == "closed" else v for k, v in change.items()}
    channel = email_channel(caller, dovecot, mailbox, smtp, **change)
    result = verify(caller, channel)
    assert result["ok"] is False
    assert (result["error"]["code"], result["error"]["details"]["step"]) == (code, step)
    assert "wrong" not in result["error"]["title"]  # a password is never repeated
    assert "channel.error" in event_names(caller.workspace_id)


def test_test_connection_names_imap_select_when_the_inbox_cannot_be_opened(
    caller, dovecot, mailbox, smtp
):
    # The account logs in, but its INBOX is a directory the server cannot read.
    maildir = dovecot.base / "mail" / mailbox / "Maildir"
    maildir.mkdir(parents=True)
    shutil.chown(maildir.parent, "dovecot", "dovecot")
    maildir.chmod(0o700)  # root's
    channel = email_channel(caller, dovecot, mailbox, smtp)
    result = verify(caller, channel)
    assert (result["error"]["code"], result["error"]["details"]["step"]) == (
        "IMAP_SELECT_FAILED",
        "imap_select",
    )
    assert "Internal error" in result["error"]["title"]  # what the server said
    assert smtp.logins == []  # SMTP is not tried after a failed step
    assert poll(channel["id"]) == 0
    failures = [e for e in ChannelEvent.of_channel(channel["id"]) if e.kind == "imap_poll_failed"]
    assert [f.payload["error"]["code"] for f in failures] == ["IMAP_SELECT_FAILED"]


def test_test_connection_of_a_channel_without_servers_is_409(caller):
    channel = make_channel(caller, name="Mail", type="email", settings={"from_address": "a@b.co"})
    assert_error(
        caller.post(f"/v1/channels/{channel['id']}/verify"),
        409,
        "CHANNEL_NOT_CONFIGURED",
        "settings.imap_host",
    )


def test_hosts_on_private_addresses_are_refused_unless_allowed(app, caller, dovecot, mailbox, smtp):
    app.config["EMAIL_ALLOW_PRIVATE_HOSTS"] = False
    channel = email_channel(caller, dovecot, mailbox, smtp)
    result = verify(caller, channel)
    assert (result["error"]["code"], result["error"]["details"]["step"]) == (
        "HOST_NOT_ALLOWED",
        "imap_connect",
    )
    assert "email.allow_private_hosts" in result["error"]["title"]
    dovecot.deliver(mail(), user=mailbox)
    assert poll(channel["id"]) == 0
    assert poll(channel["id"]) == 0
    failures = [e for e in ChannelEvent.of_channel(channel["id"]) if e.kind == "imap_poll_failed"]
    assert len(failures) == 1  # said once, not at every poll
    assert failures[0].payload["error"]["code"] == "HOST_NOT_ALLOWED"


def test_the_poll_is_a_scheduled_job_with_its_interval(app):
    assert (polling.poll_mailboxes, "EMAIL_POLL_SECONDS") in scheduler.JOBS
    jobs = {job.id: job for job in scheduler.build_scheduler(app).get_jobs()}
    job = jobs["agent_platform.channels.email.polling.poll_mailboxes"]
    assert job.trigger.interval.total_seconds() == app.config["EMAIL_POLL_SECONDS"] == 30.0


def test_a_channel_with_no_password_is_not_polled(caller, dovecot, mailbox, smtp):
    settings = mail_settings(dovecot, mailbox, smtp)
    del settings["imap_password"]
    make_channel(caller, name="Mail", type="email", settings=settings)
    dovecot.deliver(mail(), user=mailbox)
    assert polling.poll_mailboxes() == 0
