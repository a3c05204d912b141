"""Sending through the Graph API stand-in: request bodies, Meta's errors
(final or retried), the credential check, read receipts."""

import logging
from datetime import timedelta

import pytest

from agent_platform.channels.whatsapp import tasks
from agent_platform.models import ChannelEvent, ChannelTask, Message
from agent_platform.models.base import utcnow
from agent_platform.services import sending
from conftest import assert_error
from conversations_helpers import (
    WA_SETTINGS,
    data,
    events,
    make_channel,
    make_contact,
    make_conversation,
)
from graph_stub import Scripted
from whatsapp_helpers import *  # noqa: F403  (the fixtures)
from whatsapp_helpers import messages_payload, received, text

CUSTOMER = "5511933334444"


@pytest.fixture
def conversation(caller, channel):
    contact = make_contact(caller, name="Bia", phone="+" + CUSTOMER)
    return make_conversation(caller, contact["id"], channel["id"])


def queue(caller, conversation, **body):
    body = body or {"text": "Hello from the shop"}
    return data(caller.post(f"/v1/conversations/{conversation['id']}/messages", json=body), 201)


def shown(caller, message):
    return data(caller.get(f"/v1/messages/{message['id']}"))


def message_events(caller):
    return [name for name, _ in events(caller.workspace_id) if name.startswith("message.")]


def test_a_text_is_posted_with_the_bearer_token_and_becomes_sent(
    caller, channel, conversation, graph
):
    message = queue(caller, conversation)
    assert sending.send_queued() == 1
    [request] = graph.requests
    assert (request.method, request.path) == (
        "POST",
        f"/v21.0/{WA_SETTINGS['phone_number_id']}/messages",
    )
    assert request.headers["authorization"] == f"Bearer {WA_SETTINGS['access_token']}"
    assert request.json == {
        "messaging_product": "whatsapp",
        "recipient_type": "individual",
        "to": CUSTOMER,
        "type": "text",
        "text": {"body": "Hello from the shop", "preview_url": False},
    }
    sent = shown(caller, message)
    assert (sent["status"], sent["external_id"], sent["error"]) == ("sent", "wamid.OUT1", None)
    assert message_events(caller) == ["message.sent"]


def test_media_by_link_with_captions_where_whatsapp_has_them(caller, conversation, graph):
    link = "https://cdn.example.com/files/menu.pdf"
    queue(
        caller,
        conversation,
        type="image",
        media_url="https://cdn.example.com/a.jpg",
        caption="New!",
        metadata={"filename": "a.jpg"},  # only a document's goes to WhatsApp
    )
    queue(
        caller, conversation, type="audio", media_url="https://cdn.example.com/a.ogg", caption="x"
    )
    queue(caller, conversation, type="video", media_url="https://cdn.example.com/a.mp4")
    queue(
        caller,
        conversation,
        type="document",
        media_url=link,
        caption="Our menu",
        metadata={"filename": "menu.pdf"},
    )
    assert sending.send_queued() == 4
    bodies = [(body["type"], body[body["type"]]) for body in graph.sent()]
    assert bodies == [
        ("image", {"link": "https://cdn.example.com/a.jpg", "caption": "New!"}),
        ("audio", {"link": "https://cdn.example.com/a.ogg"}),
        ("video", {"link": "https://cdn.example.com/a.mp4"}),
        ("document", {"link": link, "caption": "Our menu", "filename": "menu.pdf"}),
    ]


def test_a_reply_carries_the_context_of_the_message_it_answers(client, caller, channel, graph):
    received(
        client, channel["id"], messages_payload(text("Do you open on Sunday?", wamid="wamid.Q"))
    )
    question = Message.get(Message.external_id == "wamid.Q")
    answer = data(
        caller.post(
            f"/v1/conversations/{question.conversation_id}/messages",
            json={"text": "Yes, 9 to 13.", "reply_to_id": question.id},
        ),
        201,
    )
    sending.send_queued()
    [body] = graph.sent()
    assert body["context"] == {"message_id": "wamid.Q"}
    assert body["to"] == "5511933334444"  # the wa_id the contact wrote from
    assert shown(caller, answer)["status"] == "sent"


def test_an_api_error_fails_the_message_with_it(caller, conversation, graph):
    message = queue(caller, conversation)
    graph.fail_next(
        400,
        {
            "message": "(#131026) Message undeliverable",
            "type": "OAuthException",
            "code": 131026,
            "error_data": {
                "messaging_product": "whatsapp",
                "details": "Unable to deliver message to this phone number",
            },
            "fbtrace_id": "A1b2",
        },
    )
    sending.send_queued()
    failed = shown(caller, message)
    assert failed["status"] == "failed"
    assert failed["error"] == {
        "code": "131026",
        "title": "(#131026) Message undeliverable",
        "details": "Unable to deliver message to this phone number",
    }
    assert message_events(caller) == ["message.failed"]
    assert len(graph.sent()) == 1  # not retried


def test_an_api_error_with_nul_fails_the_message_with_u_fffd(caller, conversation, graph):
    """Meta's error text is kept (PostgreSQL's text and jsonb cannot hold NUL):
    the message fails readable, and its event reaches the feed."""
    message = queue(caller, conversation)
    graph.fail_next(
        400,
        {
            "message": "(#131026) Message\x00undeliverable",
            "code": 131026,
            "error_data": {"details": "Unable\x00to deliver"},
        },
    )
    sending.send_queued()
    failed = shown(caller, message)
    assert failed["status"] == "failed"
    assert failed["error"]["title"] == "(#131026) Message\ufffdundeliverable"
    assert failed["error"]["details"] == "Unable\ufffdto deliver"
    assert message_events(caller) == ["message.failed"]


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        ({"message": "m", "code": [131026], "error_data": "x"}, ("HTTP_400", "m", None)),
        ({"message": {"a": 1}, "code": True, "error_data": ["x"]}, ("HTTP_400", None, None)),
        (
            {"message": 7, "code": 10**30, "error_data": {"details": {"a": 1}}},
            (str(10**30), None, None),
        ),
    ],
    ids=["list-code-text-data", "object-message-true-code", "number-message-object-details"],
)
def test_an_api_error_of_another_shape_fails_the_message_in_words(
    caller, conversation, graph, error, expected
):
    # Error data as text was an internal error, the message queued again; a
    # title of another type was stored as it came.
    message = queue(caller, conversation)
    graph.fail_next(400, error)
    sending.send_queued()
    failed = shown(caller, message)
    code, title, details = expected
    assert failed["status"] == "failed"
    assert failed["error"] == {
        "code": code,
        "title": title or "The Graph API answered HTTP 400",
        "details": details,
    }


def test_a_bad_token_is_final(caller, channel, conversation, graph):
    caller.patch(f"/v1/channels/{channel['id']}", json={"settings": {"access_token": "expired"}})
    message = queue(caller, conversation)
    sending.send_queued()
    failed = shown(caller, message)
    assert (failed["status"], failed["error"]["code"]) == ("failed", "190")


@pytest.mark.parametrize(
    "status, error, code",
    [
        (500, {"message": "An unknown error occurred", "code": 1}, "1"),
        (503, None, "HTTP_503"),
        (429, {"message": "(#130429) Rate limit hit", "code": 130429}, "130429"),
        (400, {"message": "(#131056) pair rate limit", "code": 131056}, "131056"),
        (400, {"message": "(#80007) Rate limit issues", "code": 80007}, "80007"),
    ],
)
def test_transient_errors_are_retried_with_backoff(
    caller, conversation, graph, status, error, code
):
    message = queue(caller, conversation)
    if error is None:
        graph.script.append(Scripted(503, b"<html>down</html>"))
    else:
        graph.fail_next(status, error)
    now = utcnow()
    assert sending.send_queued(now=now) == 1
    waiting = Message.get_by_id(message["id"])
    assert (waiting.status, waiting.error["code"]) == ("queued", code)
    assert sending.send_queued(now=now + timedelta(seconds=1)) == 0  # backing off
    assert sending.send_queued(now=now + timedelta(seconds=5)) == 1
    sent = shown(caller, message)
    assert (sent["status"], sent["error"]) == ("sent", None)
    assert message_events(caller) == ["message.sent"]


def test_retries_run_out_then_the_message_fails(caller, conversation, graph):
    message = queue(caller, conversation)
    now = utcnow()
    for attempt in range(3):
        graph.fail_next(500, {"message": "Service temporarily unavailable", "code": 2})
        sending.send_queued(now=now + timedelta(seconds=60 * attempt), max_attempts=3)
    failed = shown(caller, message)
    assert (failed["status"], failed["error"]["code"]) == ("failed", "2")
    assert message_events(caller) == ["message.failed"]


def test_a_timeout_is_retried(app, caller, conversation, graph):
    app.config["WHATSAPP_TIMEOUT_SECONDS"] = 0.3
    message = queue(caller, conversation)
    graph.fail_next(200, {}, delay=1.0)
    sending.send_queued()
    waiting = Message.get_by_id(message["id"])
    assert (waiting.status, waiting.error["code"]) == ("queued", "TIMEOUT")


@pytest.mark.parametrize(
    "answer",
    [
        {"messaging_product": "whatsapp"},
        {"messaging_product": "whatsapp", "messages": []},
        {"messaging_product": "whatsapp", "messages": ["wamid.OUT1"]},
        {"messaging_product": "whatsapp", "messages": [{}]},
        {"messaging_product": "whatsapp", "messages": [{"id": ""}]},
    ],
)
def test_an_answer_without_message_id_is_retried(caller, conversation, graph, answer):
    message = queue(caller, conversation)
    graph.script.append(Scripted(200, answer))
    sending.send_queued()
    waiting = shown(caller, message)
    assert waiting["status"] == "queued"
    assert waiting["error"] == {
        "code": "INVALID_RESPONSE",
        "title": "The Graph API gave no message id",
        "details": answer,  # what Meta answered, to see why
    }


def assert_failed_at_once(caller, message, graph, code, title):
    """Failed at the first attempt (retrying cannot help), with this error, nothing sent."""
    failed = shown(caller, message)
    assert failed["status"] == "failed"
    assert failed["error"] == {"code": code, "title": title, "details": None}
    assert graph.requests == []


def test_a_stored_message_of_a_type_whatsapp_cannot_send_fails(caller, conversation, graph):
    """A row the API would not queue (an older version's, say)."""
    message = queue(caller, conversation)
    Message.update(type="location").where(Message.id == message["id"]).execute()
    sending.send_queued()
    assert_failed_at_once(
        caller, message, graph, "UNSUPPORTED_TYPE", "A location message cannot be sent"
    )


def test_a_channel_without_credentials_refuses_messages(caller, graph):
    channel = make_channel(caller, name="Unset", settings={"phone_number_id": "1"})
    contact = make_contact(caller, name="Bia", phone="+" + CUSTOMER)
    conversation = make_conversation(caller, contact["id"], channel["id"])
    assert_error(
        caller.post(f"/v1/conversations/{conversation['id']}/messages", json={"text": "Hi"}),
        409,
        "CHANNEL_CANNOT_SEND",
        "settings.access_token",
    )
    assert graph.requests == []


@pytest.mark.parametrize(
    "unset, title",
    [
        ({"access_token": None}, "The channel has no access_token"),
        (
            {"access_token": None, "phone_number_id": None},
            "The channel has no phone_number_id or access_token",
        ),
    ],
)
def test_credentials_removed_after_queueing_fail_the_message(caller, channel, graph, unset, title):
    contact = make_contact(caller, name="Bia", phone="+" + CUSTOMER)
    message = queue(caller, make_conversation(caller, contact["id"], channel["id"]))
    patched = caller.patch(f"/v1/channels/{channel['id']}", json={"settings": unset})
    assert patched.status_code == 200
    sending.send_queued()
    assert_failed_at_once(caller, message, graph, "CHANNEL_NOT_CONFIGURED", title)


def test_the_recipient_is_the_wa_id_seen_on_this_channel_else_any_else_the_phone(
    client, caller, channel, graph
):
    contact = make_contact(
        caller,
        name="Bia",
        phone="+" + CUSTOMER,
        identities=[{"type": "whatsapp", "external_id": "5511977776666"}],
    )
    conversation = make_conversation(caller, contact["id"], channel["id"])
    queue(caller, conversation, text="To the WhatsApp id given through the API")
    sending.send_queued()
    # She writes to this number from her phone's WhatsApp: a second id, seen here.
    received(client, channel["id"], messages_payload(text(sender=CUSTOMER)))
    queue(caller, conversation, text="To the one she wrote from")
    sending.send_queued()
    assert [body["to"] for body in graph.sent()] == ["5511977776666", CUSTOMER]


def test_a_contact_with_no_whatsapp_id_or_phone_fails_with_no_recipient(caller, channel, graph):
    contact = make_contact(caller, name="Bia", email="bia@example.com")
    message = queue(caller, make_conversation(caller, contact["id"], channel["id"]))
    sending.send_queued()
    assert_failed_at_once(
        caller, message, graph, "NO_RECIPIENT", "The contact has no WhatsApp id or phone"
    )


def test_buttons_go_as_an_interactive_message(caller, conversation, graph):
    buttons = [{"text": "Delivery", "data": "way:1"}, {"text": "Pick up", "data": "way:2"}]
    queue(caller, conversation, text="How do you want it?", metadata={"buttons": buttons})
    assert sending.send_queued() == 1
    assert graph.sent() == [
        {
            "messaging_product": "whatsapp",
            "recipient_type": "individual",
            "to": CUSTOMER,
            "type": "interactive",
            "interactive": {
                "type": "button",
                "body": {"text": "How do you want it?"},
                "action": {
                    "buttons": [
                        {"type": "reply", "reply": {"id": "way:1", "title": "Delivery"}},
                        {"type": "reply", "reply": {"id": "way:2", "title": "Pick up"}},
                    ]
                },
            },
        }
    ]


def test_verify_checks_the_credentials_and_raises_channel_connected(caller, channel, graph):
    result = data(caller.post(f"/v1/channels/{channel['id']}/verify"))
    assert result["ok"] is True
    assert result["details"] == {
        "phone_number_id": WA_SETTINGS["phone_number_id"],
        **graph.number_fields,
    }
    [request] = graph.requests
    assert request.path == f"/v21.0/{WA_SETTINGS['phone_number_id']}"
    assert "verified_name" in request.query["fields"][0]
    [(name, event)] = [e for e in events(caller.workspace_id) if e[1].get("verification")]
    assert name == "channel.connected"
    assert event["id"] == channel["id"] and event["verification"]["ok"] is True
    logged = data(caller.get(f"/v1/channels/{channel['id']}/events"))
    assert [(e["kind"], e["is_error"]) for e in logged] == [("credentials_verified", False)]


def test_verify_with_a_bad_token_raises_channel_error(caller, channel, graph):
    caller.patch(f"/v1/channels/{channel['id']}", json={"settings": {"access_token": "expired"}})
    result = data(caller.post(f"/v1/channels/{channel['id']}/verify"))
    assert result["ok"] is False
    assert result["error"]["code"] == "190"
    assert "Invalid OAuth access token" in result["error"]["title"]
    [(_, event)] = events(caller.workspace_id, "channel.error")
    assert event["error"]["code"] == "190"
    assert ChannelEvent.get().kind == "credentials_failed"


def test_verify_when_the_graph_api_is_unreachable(app, caller, channel):
    app.config["WHATSAPP_GRAPH_API_BASE"] = "http://127.0.0.1:9/v21.0"
    result = data(caller.post(f"/v1/channels/{channel['id']}/verify"))
    assert (result["ok"], result["error"]["code"]) == (False, "UNREACHABLE")
    assert len(events(caller.workspace_id, "channel.error")) == 1


def test_verify_needs_settings_and_a_verifiable_type(caller, other, channel):
    bare = make_channel(caller, name="Bare")
    assert_error(
        caller.post(f"/v1/channels/{bare['id']}/verify"),
        409,
        "CHANNEL_NOT_CONFIGURED",
        "phone_number_id",
    )
    website = make_channel(caller, name="Site", type="website")
    assert_error(
        caller.post(f"/v1/channels/{website['id']}/verify"), 404, "VERIFICATION_NOT_AVAILABLE"
    )
    assert_error(other.post(f"/v1/channels/{channel['id']}/verify"), 404, "CHANNEL_NOT_FOUND")
    assert events(caller.workspace_id, "channel.error") == []


def test_read_receipts_are_sent_by_the_job(client, caller, channel, graph):
    caller.patch(f"/v1/channels/{channel['id']}", json={"settings": {"mark_read": True}})
    received(client, channel["id"], messages_payload(text(wamid="wamid.R")))
    assert graph.requests == []  # not while answering the POST
    assert tasks.run_tasks() == 1
    [request] = graph.requests
    assert request.json == {
        "messaging_product": "whatsapp",
        "status": "read",
        "message_id": "wamid.R",
    }
    assert ChannelTask.select().count() == 0


def test_a_failing_read_receipt_is_retried_then_logged(app, client, caller, channel, graph):
    caller.patch(f"/v1/channels/{channel['id']}", json={"settings": {"mark_read": True}})
    received(client, channel["id"], messages_payload(text(wamid="wamid.R")))
    app.config["WHATSAPP_GRAPH_API_BASE"] = "http://127.0.0.1:9/v21.0"
    now = utcnow()
    for attempt in range(tasks.MAX_ATTEMPTS):
        assert tasks.run_tasks(now=now + timedelta(hours=attempt)) == 1
    assert tasks.run_tasks(now=now + timedelta(days=1)) == 0
    event = ChannelEvent.get()
    assert (event.kind, event.is_error) == ("mark_read_failed", True)
    assert event.payload["error"]["code"] == "UNREACHABLE"
    assert Message.get().error is None  # the message itself is untouched


def failures(caplog, logger):
    return [r for r in caplog.records if r.name == logger and r.levelno >= logging.WARNING]


def test_a_failed_send_is_logged_with_ids_and_reason(caller, channel, conversation, graph, caplog):
    message = queue(caller, conversation)
    now = utcnow()
    graph.fail_next(500, {"message": "Service temporarily unavailable", "code": 2})
    sending.send_queued(now=now, max_attempts=2)
    graph.fail_next(400, {"message": "(#131026) Message undeliverable", "code": 131026})
    sending.send_queued(now=now + timedelta(minutes=1), max_attempts=2)
    retried, failed = failures(caplog, "agent_platform.sending")
    assert (retried.levelname, failed.levelname) == ("WARNING", "ERROR")
    for record, attempt in ((retried, 1), (failed, 2)):
        assert record.workspace_id == caller.workspace_id
        assert record.channel_id == channel["id"]
        assert record.conversation_id == conversation["id"]
        assert (record.message_id, record.attempt) == (message["id"], attempt)
    assert (retried.code, retried.reason) == ("2", "Service temporarily unavailable")
    ids = f"message {message['id']} (conversation {conversation['id']}, channel {channel['id']})"
    assert (
        retried.getMessage() == f"{ids} not sent, attempt 1 of 2: 2 Service temporarily unavailable"
    )
    assert failed.getMessage() == f"{ids} failed: 131026 (#131026) Message undeliverable"
    assert (failed.code, failed.reason) == ("131026", "(#131026) Message undeliverable")


def test_a_send_given_up_is_logged_as_an_error_whichever_way(
    caller, channel, conversation, graph, caplog
):
    # A permanent error before the last attempt, and a temporary one at the last.
    now = utcnow()
    refused = queue(caller, conversation)
    graph.fail_next(400, {"message": "(#131026) Message undeliverable", "code": 131026})
    sending.send_queued(now=now, max_attempts=2)
    unavailable = queue(caller, conversation)
    graph.fail_next(500, {"message": "Service temporarily unavailable", "code": 2})
    sending.send_queued(now=now, max_attempts=1)
    logged = [(r.message_id, r.levelname) for r in failures(caplog, "agent_platform.sending")]
    assert logged == [(refused["id"], "ERROR"), (unavailable["id"], "ERROR")]


def test_a_sandbox_channel_records_the_request_instead_of_sending(
    caller, channel, conversation, graph
):
    caller.patch(f"/v1/channels/{channel['id']}", json={"settings": {"sandbox": True}})
    message = queue(caller, conversation, text="Opening hours: 9 to 18")
    assert sending.send_queued() == 1
    assert graph.requests == []  # nothing left the platform
    sent = shown(caller, message)
    assert sent["status"] == "sent" and sent["external_id"].startswith("wamid.sandbox.")
    assert sent["metadata"]["sandbox_request"] == {
        "method": "POST",
        "url": f"{graph.base}/{WA_SETTINGS['phone_number_id']}/messages",
        "json": {
            "messaging_product": "whatsapp",
            "recipient_type": "individual",
            "to": CUSTOMER,
            "type": "text",
            "text": {"body": "Opening hours: 9 to 18", "preview_url": False},
        },
    }
    assert message_events(caller) == ["message.sent"]
    assert data(caller.get(f"/v1/channels/{channel['id']}"))["settings"]["sandbox"] is True


def test_a_sandbox_channel_without_a_number_records_where_it_would_send(
    caller, channel, conversation, graph
):
    settings = {"sandbox": True, "phone_number_id": None}
    assert (
        caller.patch(f"/v1/channels/{channel['id']}", json={"settings": settings}).status_code
        == 200
    )
    message = queue(caller, conversation, text="Oi")
    assert sending.send_queued() == 1
    recorded = shown(caller, message)["metadata"]["sandbox_request"]
    assert (
        recorded["url"] == f"{graph.base}/PHONE_NUMBER_ID/messages"
    )  # the Cloud API docs' placeholder


def test_an_answer_nested_too_deep_is_a_retried_error_with_its_reason(caller, conversation, graph):
    message = queue(caller, conversation)
    graph.script.append(Scripted(200, b"[" * 5000 + b"]" * 5000))
    sending.send_queued()
    waiting = shown(caller, message)
    assert waiting["status"] == "queued"
    # Meta's answer refused like any answer without JSON, not a crash of the sender.
    assert waiting["error"]["code"] == "INVALID_RESPONSE"
    sending.send_queued(now=utcnow() + timedelta(hours=1))
    assert shown(caller, message)["status"] == "sent"
