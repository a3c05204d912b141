"""Messages: sending through the API, reading, editing, soft deletion, and the
Idempotency-Key of POST; isolation and scopes."""

import threading
import time
from datetime import timedelta

import pytest

from agent_platform.db import database, is_postgresql
from agent_platform.models import IdempotencyKey, Message
from agent_platform.models.base import utcnow
from agent_platform.models.messages import LEADING_COLUMNS, TRAILING_COLUMNS
from agent_platform.services import idempotency, messages
from conftest import Caller, assert_error
from conversations_helpers import data, events, inbound, send, setup_chat

FIELDS = {
    "id",
    "conversation_id",
    "contact_id",
    "channel_id",
    "direction",
    "sender_type",
    "author_user_id",
    "type",
    "text",
    "caption",
    "media_url",
    "media_mime_type",
    "external_id",
    "reply_to_id",
    "status",
    "error",
    "metadata",
    "edit_history",
    "sent_at",
    "delivered_at",
    "read_at",
    "failed_at",
    "created_at",
    "updated_at",
    "edited_at",
    "deleted_at",
}


@pytest.fixture
def chat(caller):
    return setup_chat(caller)


def test_send_a_text_message(caller, chat):
    conversation = chat["conversation"]
    message = data(send(caller, conversation["id"], text="Olá!", metadata={"ticket": 7}), 201)
    assert set(message) == FIELDS
    assert message["conversation_id"] == conversation["id"]
    assert message["contact_id"] == chat["contact"]["id"]
    assert message["channel_id"] == chat["channel"]["id"]
    assert (message["direction"], message["sender_type"], message["type"]) == (
        "outbound",
        "human",
        "text",
    )
    assert (message["text"], message["status"], message["metadata"]) == (
        "Olá!",
        "queued",
        {"ticket": 7},
    )
    assert message["external_id"] is None and message["error"] is None
    assert data(caller.get(f"/v1/messages/{message['id']}")) == message
    # Queued is not sent: no message event yet.
    assert [name for name, _ in events(caller.workspace_id) if name.startswith("message.")] == []


def test_send_media_by_url(caller, chat):
    message = data(
        send(
            caller,
            chat["conversation"]["id"],
            text=None,
            type="image",
            media_url="https://cdn.example.com/a.png",
            media_mime_type="image/png",
            caption="Our menu",
            sender_type="agent",
        ),
        201,
    )
    assert (message["type"], message["media_url"], message["caption"], message["text"]) == (
        "image",
        "https://cdn.example.com/a.png",
        "Our menu",
        None,
    )
    assert message["sender_type"] == "agent"


@pytest.mark.parametrize(
    "body, code, field",
    [
        ({}, "MISSING_REQUIRED_FIELD", "text"),
        ({"text": ""}, "VALIDATION_ERROR", "text"),
        ({"text": "x" * 4097}, "VALIDATION_ERROR", "text"),
        ({"type": "image"}, "MISSING_REQUIRED_FIELD", "media_url"),
        ({"type": "image", "media_url": "ftp://x/a.png"}, "VALIDATION_ERROR", "media_url"),
        (
            {"type": "audio", "media_url": "https://x/a.ogg", "text": "hi"},
            "VALIDATION_ERROR",
            "text",
        ),
        ({"text": "hi", "caption": "c"}, "VALIDATION_ERROR", "caption"),
        ({"text": "hi", "media_url": "https://x/a.png"}, "VALIDATION_ERROR", "media_url"),
        ({"type": "sticker", "media_url": "https://x/a"}, "VALIDATION_ERROR", "type"),
        ({"text": "hi", "sender_type": "contact"}, "VALIDATION_ERROR", "sender_type"),
        ({"text": "hi", "media_mime_type": "png"}, "VALIDATION_ERROR", "media_mime_type"),
        (
            {"text": "hi", "reply_to_id": "6f1c4b9e-8a47-4a1e-9f0e-3e2b1c0d9a88"},
            "VALIDATION_ERROR",
            "reply_to_id",
        ),
        ({"text": "hi", "extra": 1}, "VALIDATION_ERROR", "extra"),
    ],
)
def test_bad_messages_are_refused(caller, chat, body, code, field):
    response = caller.post(f"/v1/conversations/{chat['conversation']['id']}/messages", json=body)
    assert_error(response, 400, code, field)
    assert Message.select().count() == 0


def test_reply_to_a_message_of_the_same_conversation(caller, chat, other):
    first = data(send(caller, chat["conversation"]["id"]), 201)
    reply = data(send(caller, chat["conversation"]["id"], reply_to_id=first["id"]), 201)
    assert reply["reply_to_id"] == first["id"]
    elsewhere = setup_chat(other)
    foreign = data(send(other, elsewhere["conversation"]["id"]), 201)
    response = send(caller, chat["conversation"]["id"], reply_to_id=foreign["id"])
    assert_error(response, 400, "VALIDATION_ERROR", "reply_to_id")


def test_closed_conversations_and_handoffs_limit_who_writes(caller, chat):
    conversation_id = chat["conversation"]["id"]
    caller.post(f"/v1/chats/{conversation_id}/handoff")
    assert_error(send(caller, conversation_id, sender_type="agent"), 409, "CONVERSATION_IN_HANDOFF")
    assert send(caller, conversation_id, sender_type="human").status_code == 201
    caller.post(f"/v1/conversations/{conversation_id}/close")
    assert_error(send(caller, conversation_id), 409, "CONVERSATION_CLOSED")


def test_list_reads_the_chat_newest_first_by_default(caller, chat):
    conversation_id = chat["conversation"]["id"]
    sent = [data(send(caller, conversation_id, text=f"m{i}"), 201)["id"] for i in range(5)]
    listed = caller.get(f"/v1/conversations/{conversation_id}/messages").get_json()
    assert [m["id"] for m in listed["data"]] == sent[::-1]
    assert listed["pagination"]["total"] == 5
    asc = data(caller.get(f"/v1/conversations/{conversation_id}/messages?order=asc&limit=2"))
    assert [m["id"] for m in asc] == sent[:2]
    page = data(caller.get(f"/v1/conversations/{conversation_id}/messages?limit=2&page=3"))
    assert [m["id"] for m in page] == sent[:1]
    assert_error(
        caller.get(f"/v1/conversations/{conversation_id}/messages?sort=text"),
        400,
        "VALIDATION_ERROR",
        "sort",
    )


def test_a_page_shows_each_message_as_its_own_read_does(caller, chat):
    # A page reads each message's columns from its edit history on as the
    # answer reaches it (Message.page): every kind of message comes out whole.
    conversation_id = chat["conversation"]["id"]
    edited = data(send(caller, conversation_id, text="v0", metadata={"order": 7}), 201)
    for number in range(1, 4):
        caller.patch(f"/v1/messages/{edited['id']}", json={"text": f"v{number} é"})
    media = {"type": "image", "media_url": "https://cdn.example.com/a.png", "caption": "Menu"}
    data(send(caller, conversation_id, text=None, sender_type="agent", **media), 201)
    deleted = data(send(caller, conversation_id, text="secret"), 201)
    caller.delete(f"/v1/messages/{deleted['id']}")
    listed = data(caller.get(f"/v1/conversations/{conversation_id}/messages?limit=100"))
    assert len(listed) == 3 and [m["id"] for m in listed][::2] == [deleted["id"], edited["id"]]
    for message in listed:
        assert message == data(caller.get(f"/v1/messages/{message['id']}"))


def test_a_page_reads_the_columns_before_the_edit_history_at_once(caller):
    # The model's fields are declared in the table's order, so the columns a
    # page reads at once (LEADING_COLUMNS) are those SQLite stores before
    # the edit history; PostgreSQL has no such order to keep.
    columns = [*LEADING_COLUMNS, *TRAILING_COLUMNS]
    assert columns[len(LEADING_COLUMNS)] == "edit_history"
    if is_postgresql():
        sql = "SELECT column_name FROM information_schema.columns WHERE table_name = 'message'"
        assert sorted(row[0] for row in database.execute_sql(sql)) == sorted(columns)
    else:
        pragma = database.execute_sql('PRAGMA table_info("message")')
        assert [row[1] for row in pragma] == columns


def test_edit_keeps_the_history(caller, chat):
    message = data(send(caller, chat["conversation"]["id"], text="Helo"), 201)
    path = f"/v1/messages/{message['id']}"
    edited = data(caller.patch(path, json={"text": "Hello"}))
    assert edited["text"] == "Hello"
    assert edited["edited_at"] is not None
    assert [(h["text"], h["caption"]) for h in edited["edit_history"]] == [("Helo", None)]
    assert edited["edit_history"][0]["replaced_at"] == edited["edited_at"]
    again = data(caller.patch(path, json={"text": "Hello!"}))
    assert [h["text"] for h in again["edit_history"]] == ["Helo", "Hello"]
    assert data(caller.patch(path, json={"text": "Hello!"})) == again  # no change, no entry
    assert_error(caller.patch(path, json={"caption": "x"}), 400, "VALIDATION_ERROR", "caption")
    assert_error(caller.patch(path, json={}), 400, "VALIDATION_ERROR", "body")
    assert_error(caller.patch(path, json={"text": "a", "caption": "b"}), 400, "VALIDATION_ERROR")


def test_the_history_keeps_the_first_version_and_the_latest(caller, chat):
    message = data(send(caller, chat["conversation"]["id"], text="v0"), 201)
    for number in range(1, 26):
        edited = data(caller.patch(f"/v1/messages/{message['id']}", json={"text": f"v{number}"}))
    history = [entry["text"] for entry in edited["edit_history"]]
    assert history == ["v0", *(f"v{number}" for number in range(6, 25))]


def test_bodies_are_json_in_utf_8_whatever_their_values(caller, chat):
    """Bodies are encoded by orjson, and by Python's encoder where orjson
    refuses a value (an integer past 64 bits): JSON either way."""
    conversation_id = chat["conversation"]["id"]
    text = "Olá, 世界 😀 \u2028 </script>"
    sent = send(caller, conversation_id, text=text, metadata={"least": -(2**63)})
    assert text.encode() in sent.data  # UTF-8, nothing escaped
    message = data(sent, 201)
    assert (message["text"], message["metadata"]) == (text, {"least": -(2**63)})
    huge = {"count": 2**70, "text": text}
    sent = send(caller, conversation_id, text=text, metadata=huge)
    assert b"1180591620717411303424" in sent.data
    message = data(sent, 201)
    assert (message["text"], message["metadata"]) == (text, huge)
    assert data(caller.get(f"/v1/messages/{message['id']}")) == message


def test_metadata_is_kept_to_16384_characters_of_json(caller, chat):
    conversation = chat["conversation"]["id"]
    fits = {"note": "é" * (16_384 - len('{"note":""}'))}  # counted as characters
    assert data(send(caller, conversation, text="hi", metadata=fits), 201)["metadata"] == fits
    response = send(caller, conversation, text="hi", metadata={"note": "x" * 4_900_000})
    assert_error(response, 400, "VALIDATION_ERROR", "metadata")
    assert "4,900,011 characters as JSON; at most 16,384" in response.get_json()["error"]["message"]
    assert_error(
        send(caller, conversation, text="hi", metadata={**fits, "more": 1}),
        400,
        "VALIDATION_ERROR",
        "metadata",
    )
    assert Message.select().count() == 1


def test_edit_a_media_caption(caller, chat):
    media = data(
        send(
            caller,
            chat["conversation"]["id"],
            text=None,
            type="document",
            media_url="https://x.io/a.pdf",
        ),
        201,
    )
    edited = data(caller.patch(f"/v1/messages/{media['id']}", json={"caption": "Invoice"}))
    assert edited["caption"] == "Invoice"
    assert edited["edit_history"][0]["caption"] is None
    assert_error(
        caller.patch(f"/v1/messages/{media['id']}", json={"text": "x"}),
        400,
        "VALIDATION_ERROR",
        "text",
    )


def test_what_the_contact_wrote_cannot_be_edited(caller, chat):
    received = inbound(chat["channel"]["id"], "wamid.1", sender_id="5511911112222").message
    response = caller.patch(f"/v1/messages/{received.id}", json={"text": "changed"})
    assert_error(response, 409, "MESSAGE_NOT_EDITABLE", "inbound")


def test_delete_is_soft(caller, chat):
    message = data(send(caller, chat["conversation"]["id"], text="secret"), 201)
    caller.patch(f"/v1/messages/{message['id']}", json={"text": "secret 2"})
    deleted = data(caller.delete(f"/v1/messages/{message['id']}"))
    assert deleted["deleted_at"] is not None
    assert (deleted["text"], deleted["edit_history"]) == (None, [])
    # It was still queued: it will never be sent.
    assert (deleted["status"], deleted["error"]["code"]) == ("failed", "MESSAGE_DELETED")
    assert [name for name, _ in events(caller.workspace_id) if name.startswith("message.")] == [
        "message.failed"
    ]
    assert data(caller.get(f"/v1/messages/{message['id']}")) == deleted
    listed = data(caller.get(f"/v1/conversations/{chat['conversation']['id']}/messages"))
    assert [m["id"] for m in listed] == [message["id"]]
    assert "secret" not in caller.get(
        f"/v1/conversations/{chat['conversation']['id']}/messages"
    ).get_data(as_text=True)
    assert data(caller.delete(f"/v1/messages/{message['id']}")) == deleted
    assert_error(
        caller.patch(f"/v1/messages/{message['id']}", json={"text": "x"}),
        409,
        "MESSAGE_NOT_EDITABLE",
        "deleted",
    )
    assert len(events(caller.workspace_id, "message.failed")) == 1


def test_delete_an_inbound_message(caller, chat):
    received = inbound(
        chat["channel"]["id"], "wamid.1", sender_id="5511911112222", text="rude words"
    ).message
    deleted = data(caller.delete(f"/v1/messages/{received.id}"))
    assert (deleted["text"], deleted["status"]) == (None, "received")


def test_idempotency_key_returns_the_first_result(caller, chat):
    conversation_id = chat["conversation"]["id"]
    headers = {"Idempotency-Key": "order-42-confirmation"}
    first = send(caller, conversation_id, text="Confirmed", headers=headers)
    assert first.status_code == 201
    assert first.headers["Idempotent-Replayed"] == "false"
    again = send(caller, conversation_id, text="Confirmed", headers=headers)
    assert again.status_code == 201
    assert again.headers["Idempotent-Replayed"] == "true"
    assert data(again, 201) == data(first, 201)
    assert Message.select().count() == 1
    assert data(caller.get(f"/v1/conversations/{conversation_id}"))["message_count"] == 1


def test_a_repeat_sent_while_the_first_is_still_storing_returns_the_first(
    monkeypatch, app, caller, chat
):
    """Two processes or greenlets at once: the second waits for the first's
    commit and replays its message; nothing is stored twice, nothing fails."""
    conversation_id = chat["conversation"]["id"]
    headers = {"Idempotency-Key": "sent-twice"}
    remembering, real_remember = threading.Event(), idempotency.remember

    def slow_remember(*args):
        remembering.set()
        time.sleep(0.5)  # the repeat arrives meanwhile
        real_remember(*args)

    monkeypatch.setattr(idempotency, "remember", slow_remember)
    answers = {}

    def first():
        answers["first"] = send(caller, conversation_id, headers=headers)
        database.close()

    writer = threading.Thread(target=first)
    writer.start()
    assert remembering.wait(10)
    repeat = Caller(app.test_client(), caller.key, caller.workspace_id)
    again = send(repeat, conversation_id, headers=headers)
    writer.join(10)
    assert data(again, 201) == data(answers["first"], 201)
    assert again.headers["Idempotent-Replayed"] == "true"
    assert Message.select().count() == 1


def test_idempotency_key_with_another_request_is_409(caller, chat):
    conversation_id = chat["conversation"]["id"]
    headers = {"Idempotency-Key": "k1"}
    send(caller, conversation_id, text="One", headers=headers)
    assert_error(
        send(caller, conversation_id, text="Two", headers=headers),
        409,
        "IDEMPOTENCY_KEY_REUSED",
        "k1",
    )
    other_chat = setup_chat_on_new_contact(caller, chat)
    assert_error(
        send(caller, other_chat, text="One", headers=headers), 409, "IDEMPOTENCY_KEY_REUSED"
    )
    assert Message.select().count() == 1


def setup_chat_on_new_contact(caller, chat):
    contact = data(caller.post("/v1/contacts", json={"name": "Other"}), 201)
    body = {"contact_id": contact["id"], "channel_id": chat["channel"]["id"]}
    return data(caller.post("/v1/conversations", json=body), 201)["id"]


def test_idempotency_keys_are_per_workspace(caller, chat, other):
    other_chat = setup_chat(other)
    headers = {"Idempotency-Key": "same"}
    mine = data(send(caller, chat["conversation"]["id"], headers=headers), 201)
    theirs = data(send(other, other_chat["conversation"]["id"], headers=headers), 201)
    assert mine["id"] != theirs["id"]


def test_idempotency_survives_state_changes_and_a_replay_is_not_refused(caller, chat):
    conversation_id = chat["conversation"]["id"]
    headers = {"Idempotency-Key": "k"}
    first = data(send(caller, conversation_id, headers=headers), 201)
    caller.post(f"/v1/conversations/{conversation_id}/close")
    assert data(send(caller, conversation_id, headers=headers), 201)["id"] == first["id"]


def test_a_failed_request_does_not_use_up_its_key(caller, chat):
    conversation_id = chat["conversation"]["id"]
    headers = {"Idempotency-Key": "k"}
    caller.post(f"/v1/conversations/{conversation_id}/close")
    assert_error(send(caller, conversation_id, headers=headers), 409, "CONVERSATION_CLOSED")
    caller.post(f"/v1/conversations/{conversation_id}/reopen")
    assert send(caller, conversation_id, headers=headers).status_code == 201


def test_idempotency_key_expires_after_its_lifetime(caller, chat):
    workspace_id, conversation_id = caller.workspace_id, chat["conversation"]["id"]
    start = utcnow()
    body = {"type": "text", "text": "hi", "sender_type": "human"}
    first, replayed = messages.post_message(workspace_id, conversation_id, body, "k", 24, now=start)
    assert replayed is False
    later = start + timedelta(hours=23, minutes=59)
    same, replayed = messages.post_message(workspace_id, conversation_id, body, "k", 24, now=later)
    assert (same.id, replayed) == (first.id, True)
    expired = start + timedelta(hours=24, seconds=1)
    new, replayed = messages.post_message(workspace_id, conversation_id, body, "k", 24, now=expired)
    assert new.id != first.id and replayed is False
    assert messages.purge_idempotency_keys(now=expired + timedelta(hours=25)) == 1
    assert IdempotencyKey.select().count() == 0


def test_bad_idempotency_key_is_400(caller, chat):
    response = send(caller, chat["conversation"]["id"], headers={"Idempotency-Key": "x" * 256})
    assert_error(response, 400, "VALIDATION_ERROR", "Idempotency-Key")


def test_messages_of_another_workspace_are_404(caller, chat, other):
    message = data(send(caller, chat["conversation"]["id"]), 201)
    for method, body in (("GET", None), ("PATCH", {"text": "x"}), ("DELETE", None)):
        response = other.request(method, f"/v1/messages/{message['id']}", json=body)
        assert_error(response, 404, "MESSAGE_NOT_FOUND", message["id"])
    assert data(caller.get(f"/v1/messages/{message['id']}"))["text"] == "Hello"
    assert_error(caller.get("/v1/messages/nope"), 404, "MESSAGE_NOT_FOUND")


def test_scopes(make_caller):
    owner = make_caller()
    chat = setup_chat(owner)
    conversation_id = chat["conversation"]["id"]
    message = data(send(owner, conversation_id), 201)
    ws = owner.workspace_id
    reader = make_caller(scopes=["messages:read"], workspace_id=ws)
    writer = make_caller(scopes=["messages:write"], workspace_id=ws)
    deleter = make_caller(scopes=["messages:delete"], workspace_id=ws)
    editor = make_caller(scopes=["chats:write"], workspace_id=ws)
    assert reader.get(f"/v1/conversations/{conversation_id}/messages").status_code == 200
    assert reader.get(f"/v1/messages/{message['id']}").status_code == 200
    assert_error(send(reader, conversation_id), 403, "INSUFFICIENT_SCOPE", "messages:write")
    assert send(writer, conversation_id).status_code == 201
    assert_error(
        writer.get(f"/v1/messages/{message['id']}"), 403, "INSUFFICIENT_SCOPE", "messages:read"
    )
    assert_error(
        writer.patch(f"/v1/messages/{message['id']}", json={"text": "x"}),
        403,
        "INSUFFICIENT_SCOPE",
        "chats:write",
    )
    assert editor.patch(f"/v1/messages/{message['id']}", json={"text": "x"}).status_code == 200
    assert_error(
        writer.delete(f"/v1/messages/{message['id']}"), 403, "INSUFFICIENT_SCOPE", "messages:delete"
    )
    assert deleter.delete(f"/v1/messages/{message['id']}").status_code == 200


def test_documented_fields_are_exactly_the_rendered_ones(caller, chat):
    from agent_platform.api.schemas.channels import ChannelSchema
    from agent_platform.api.schemas.contacts import ContactSchema
    from agent_platform.api.schemas.conversations import ConversationSchema
    from agent_platform.api.schemas.messages import MessageSchema

    message = data(send(caller, chat["conversation"]["id"]), 201)
    rendered = {
        ChannelSchema: chat["channel"],
        ContactSchema: chat["contact"],
        ConversationSchema: chat["conversation"],
        MessageSchema: message,
    }
    for schema, body in rendered.items():
        assert set(schema().fields) == set(body), schema.__name__
    spec = caller.get("/openapi.json").get_json()["components"]["schemas"]
    assert set(spec["Message"]["properties"]) == set(message)
