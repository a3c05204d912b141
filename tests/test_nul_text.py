"""NUL (U+0000) on every way outside text reaches the database, alike on both
engines (PostgreSQL's text cannot hold it, SQLite's can): refused with a
400 naming the field where a client calls us (the widget, pages, sign-in);
kept as U+FFFD where refusing would lose what someone else sent (a
customer's message on a network, a fetched page, a webhook receiver's
answer). Each of these was a 500, or work failing for good, on PostgreSQL."""

import io
import json

import pytest

from agent_platform.channels.telegram import polling
from agent_platform.events import delivery
from agent_platform.models import ChannelEvent, Contact, Event, Message, TelegramUpdate
from agent_platform.models.webhooks import DeliveryAttempt
from conftest import assert_error
from conversations_helpers import data, make_agent, make_channel
from email_helpers import *  # noqa: F403  (the fixtures)
from email_helpers import email_channel, mail, poll
from loopback import QuietHandler, serving
from telegram_helpers import delivered, telegram_channel
from telegram_stub import message_update
from webhooks_helpers import Receiver, Reply, raise_event, register
from whatsapp_helpers import (
    CUSTOMER,
    WA_SETTINGS,
    graph,  # noqa: F401  (the fixture)
    message,
    messages_payload,
    post,
    text,
)

R = "\ufffd"  # what a NUL of outside text is kept as


@pytest.fixture
def settings(tmp_path, graph, bot_api):  # noqa: F811
    return {
        "DATABASE_PATH": str(tmp_path / "test.db"),
        "WHATSAPP_GRAPH_API_BASE": graph.base,
        "WHATSAPP_TIMEOUT_SECONDS": 2,
        "TELEGRAM_API_BASE": bot_api.base,
        "TELEGRAM_TIMEOUT_SECONDS": 2,
        "MEDIA_DIR": str(tmp_path / "media"),
        "SERVER_PUBLIC_URL": "https://agents.example.com",
        "EMAIL_ALLOW_PRIVATE_HOSTS": True,
        "EMAIL_TIMEOUT_SECONDS": 5,
        "WEBHOOKS_ALLOW_PRIVATE_TARGETS": True,
        "WEBHOOKS_ALLOWED_PORTS": [],
        "TRAININGS_ALLOW_PRIVATE_URLS": True,
    }


def inbound():
    return list(Message.select().where(Message.direction == "inbound").order_by(Message.created_at))


# --- channel intake: kept, NUL as U+FFFD ----------------------------------------------


def test_a_whatsapp_message_with_nul_is_stored_with_u_fffd_and_answered_200(client, caller):
    channel = make_channel(caller, settings=dict(WA_SETTINGS), agent_id=make_agent(caller))
    document = {"id": "MEDIA1", "mime_type": "application/pdf", "filename": "a\x00.pdf"}
    payload = messages_payload(
        text("Oi\x00 tudo bem?", wamid="wamid.NUL1"),
        message("document", dict(document, caption="veja\x00"), wamid="wamid.NUL2"),
        contacts=[{"profile": {"name": "Bia\x00 Souza"}, "wa_id": CUSTOMER}],
    )
    mark = Event.newest_mark()
    counts = data(post(client, channel["id"], payload))
    assert (counts["messages"], counts["failed"]) == (2, 0)
    first, second = inbound()
    assert first.text == f"Oi{R} tudo bem?"
    assert second.caption == f"veja{R}"
    assert f"a{R}.pdf" in json.dumps(second.metadata, ensure_ascii=False)
    assert Contact.get().name == f"Bia{R} Souza"
    # The feed of what happened reads each message event's ids out of its
    # JSON (as jsonb on PostgreSQL, which refuses a \u0000 there too).
    changes = Event.changes_after(mark, 50)
    assert [change[6] for change in changes if change[2] == "message.received"] == [
        first.id,
        second.id,
    ]


def test_a_telegram_update_with_nul_is_stored_with_u_fffd(client, caller, bot_api):
    channel = telegram_channel(caller, mode="webhook")
    update = {"update_id": 7001, **message_update("Olá\x00!")}
    # A copy: message_update's sender is the helpers' shared CUSTOMER.
    update["message"]["from"] = {**update["message"]["from"], "first_name": "Ana\x00"}
    counts = delivered(client, channel["id"], update, bot_api.webhook["secret_token"])
    assert (counts["messages"], counts["failed"]) == (1, 0)
    [stored] = inbound()
    assert stored.text == f"Olá{R}!"
    assert Contact.get().name.startswith(f"Ana{R}")


def test_a_polled_telegram_update_with_nul_is_stored_and_not_fetched_again(caller, bot_api):
    telegram_channel(caller)
    bot_api.push(message_update("foto\x00"))
    polling.poll_updates()
    polling.poll_updates()
    assert [m.text for m in inbound()] == [f"foto{R}"]
    assert TelegramUpdate.select().count() == 1


def test_a_skipped_telegram_update_with_nul_is_logged(client, caller, bot_api):
    channel = telegram_channel(caller, mode="webhook")
    update = {"update_id": 7002, "poll": {"id": "p", "question": "sim\x00?"}}
    counts = delivered(client, channel["id"], update, bot_api.webhook["secret_token"])
    assert (counts["notices"], counts["failed"]) == (1, 0)
    [event] = ChannelEvent.select().where(ChannelEvent.kind == "skipped")
    assert f"sim{R}?" in json.dumps(event.payload, ensure_ascii=False)


def test_a_mail_with_nul_in_body_and_file_name_is_stored(caller, dovecot, mailbox, smtp):
    # IMAP carries no NUL byte (Dovecot's become 0x80): a mail's NULs come
    # encoded, in a quoted-printable body and an RFC 2231 file name.
    channel = email_channel(caller, dovecot, mailbox, smtp)
    raw = mail(
        text="Bom dia NUL, quero saber o pre\u00e7o " + "x" * 80,
        subject="=?utf-8?q?Pre=00=C3=A7o?=",
        attachments=[("notaNUL.txt", "text/plain", b"x")],
    )
    raw = raw.replace(b"Bom dia NUL", b"Bom dia=00").replace(
        b'filename="notaNUL.txt"', b"filename*=utf-8''nota%00.txt"
    )
    assert b"quoted-printable" in raw
    dovecot.deliver(raw.replace(b"From: Bia Souza", b"From: =?utf-8?q?Bia=00Souza?="), user=mailbox)
    assert poll(channel["id"]) == 1
    [stored] = inbound()
    assert stored.text.startswith(f"Bom dia{R}, quero saber o pre\u00e7o")
    assert stored.metadata["attachments"][0]["filename"] == f"nota{R}.txt"
    # A header's controls are read as spaces (mailheaders), NUL included.
    assert (stored.metadata["email"]["subject"], Contact.get().name) == ("Pre ço", "Bia Souza")
    assert not ChannelEvent.select().where(ChannelEvent.is_error).exists()  # nothing failed


# --- public routes: refused, naming the field -----------------------------------------


def website(caller):
    settings = {"allowed_origins": ["https://shop.example.com"]}
    return make_channel(caller, "Site", "website", settings, make_agent(caller))


def test_the_widgets_message_with_nul_is_refused_naming_the_field(client, caller):
    site, origin = website(caller), {"Origin": "https://shop.example.com"}
    api = f"/widget/{site['id']}/api"
    token = data(client.post(f"{api}/session", json={}, headers=origin))["visitor_token"]
    headers = {**origin, "X-Visitor-Token": token}
    body = {"text": "oi\x00", "client_message_id": "c-1"}
    response = client.post(f"{api}/messages", json=body, headers=headers)
    error = assert_error(response, 400, "VALIDATION_ERROR")
    assert error["message"] == "text: must not contain the NUL character (U+0000)"
    # The widget reads why (CORS on the refusal too).
    assert response.headers["Access-Control-Allow-Origin"] == origin["Origin"]
    assert Message.select().count() == 0
    polled = client.get(f"{api}/messages?since=a%00", headers=headers)
    assert_error(polled, 400, "VALIDATION_ERROR", "since: must not contain the NUL")


DEEP_WITH_NUL = b'{"name": "\\u0000", "x": ' + b"[" * 5000 + b"]" * 5000 + b"}"


def test_a_body_with_nul_nested_thousands_deep_is_400_not_500(client, caller):
    # The NUL check read such a body with Flask's reader: a RecursionError,
    # before any key or view, on public routes too.
    json_type = {"Content-Type": "application/json"}
    response = caller.post("/v1/contacts", data=DEEP_WITH_NUL, headers=json_type)
    assert_error(response, 400, "VALIDATION_ERROR", "body: is nested deeper than 32 levels")
    site = website(caller)
    public = f"/widget/{site['id']}/api/session"
    origin = {"Origin": "https://shop.example.com", **json_type}
    response = client.post(public, data=DEEP_WITH_NUL, headers=origin)
    assert_error(response, 400, "VALIDATION_ERROR", "body: is nested deeper than 32 levels")
    assert Contact.select().count() == 0


def test_a_sign_in_form_with_nul_is_refused_naming_the_field(client, caller):
    form = {"csrf_token": "x", "email": "ana\x00@example.com", "password": "p"}
    response = client.post("/app/sign-in", data=form, headers={"Accept": "application/json"})
    assert_error(response, 400, "VALIDATION_ERROR", "email: must not contain the NUL")


def test_an_uploaded_file_name_with_nul_is_refused(caller):
    agent = make_agent(caller)
    upload = {"type": "document", "file": (io.BytesIO(b"hours: 9-17"), "a\x00.txt")}
    response = caller.post(f"/v1/agents/{agent}/trainings", data=upload)
    assert_error(response, 400, "VALIDATION_ERROR", "file: must not contain the NUL")


# --- other outside text: kept, NUL as U+FFFD -----------------------------------------


class Page(QuietHandler):
    def do_GET(self):
        self.reply(200, "text/html; charset=utf-8", b"<title>T\x00</title><p>Open\x00 9-17</p>")


def test_a_fetched_page_and_an_uploaded_document_with_nul_are_kept(caller):
    agent = make_agent(caller)
    with serving(Page) as site:
        added = caller.post(f"/v1/agents/{agent}/trainings", json={"type": "url", "url": site})
    page = data(added, 201)
    assert (page["status"], page["title"], page["content"]) == ("ready", f"T{R}", f"Open{R} 9-17")
    text_file = b"Opening hours: 9 to 17" + b" " * 9000 + b"\x00 closed on Sunday"
    upload = {"type": "document", "file": (io.BytesIO(text_file), "hours.txt")}
    document = data(caller.post(f"/v1/agents/{agent}/trainings", data=upload), 201)
    assert document["content"].endswith(f"{R} closed on Sunday")


def test_a_webhook_receivers_answer_with_nul_is_logged(caller):
    receiver = Receiver(default=Reply(500, body=b"broken\x00 here"))
    try:
        hook = register(caller, receiver.url)
        raise_event(caller.workspace_id)
        delivery.deliver_due()
        [attempt] = DeliveryAttempt.select()
        assert attempt.response_body == f"broken{R} here"
        tested = data(caller.post(f"/v1/webhooks/{hook['id']}/test"))
        assert tested["response_body"] == f"broken{R} here"
    finally:
        receiver.close()
