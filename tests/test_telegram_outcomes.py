"""What a Telegram conversation leaves for the workspace's own systems: its
events, delivered and signed to a webhook receiver on loopback, and a reply
the agent queued that cannot leave (the token removed) failing with its reason
instead of staying queued."""

import hashlib
import hmac
import json

import pytest

from agent_platform.channels.telegram import polling
from agent_platform.events import delivery
from agent_platform.models import Message
from agent_platform.services import replies
from conversations_helpers import data, events
from telegram_helpers import PUBLIC_URL
from telegram_stub import CUSTOMER, message_update
from test_telegram_sending import DELIVERY, shop
from webhooks_helpers import Receiver, register


@pytest.fixture
def settings(tmp_path, bot_api):
    return {
        "DATABASE_PATH": str(tmp_path / "test.db"),
        "TELEGRAM_API_BASE": bot_api.base,
        "TELEGRAM_TIMEOUT_SECONDS": 2,
        "SERVER_PUBLIC_URL": PUBLIC_URL,
        "REPLIES_DEBOUNCE_SECONDS": 0,
        "WEBHOOKS_ALLOW_PRIVATE_TARGETS": True,
        "WEBHOOKS_ALLOWED_PORTS": [],
    }


@pytest.fixture
def receiver():
    server = Receiver()
    yield server
    server.close()


def received_events(receiver, secret):
    """(event name, data) of every POST, each checked against its signature."""
    found = []
    for seen in receiver.requests:
        headers = {name.lower(): value for name, value in seen.headers.items()}
        signed = hmac.new(secret.encode(), seen.body, hashlib.sha256).hexdigest()
        assert headers["x-service-signature"] == f"sha256={signed}"
        body = json.loads(seen.body)
        found.append((body.get("type", body.get("event")), body["data"]))
    return found


def test_a_webhook_receives_a_telegram_conversations_events(caller, bot_api, receiver):
    hook = register(caller, receiver.url, events=("message.received", "message.sent"))
    channel = shop(caller, "polling")
    bot_api.push(message_update(DELIVERY[0]))
    polling.poll_updates()
    replies.run_due_replies()
    delivery.deliver_due()
    got = received_events(receiver, hook["secret"])
    assert [name for name, _ in got] == ["message.received", "message.sent", "message.sent"]
    (_, question), (_, greeting), (_, answer) = got
    assert (question["text"], question["channel_id"]) == (DELIVERY[0], channel["id"])
    assert question["external_id"].startswith(f"{CUSTOMER['id']}:")
    assert question["contact"]["name"] == "Bia Souza"
    assert answer["text"] == DELIVERY[1] and answer["status"] == "sent"
    assert {greeting["conversation_id"], answer["conversation_id"]} == {question["conversation_id"]}


def test_a_reply_queued_after_the_token_was_removed_fails_with_the_reason(caller, bot_api):
    channel = shop(caller, "polling")
    bot_api.push(message_update(DELIVERY[0]))
    polling.poll_updates()
    removed = {"settings": {"bot_token": None}}
    assert (
        data(caller.patch(f"/v1/channels/{channel['id']}", json=removed))["settings"][
            "bot_token_set"
        ]
        is False
    )
    replies.run_due_replies()
    answers = Message.select().where(Message.direction == "outbound")
    assert {m.status for m in answers} == {"failed"} and answers.count() == 2
    for message in answers:
        assert message.error["code"] == "CHANNEL_NOT_CONFIGURED"
    failed = [body["id"] for _, body in events(caller.workspace_id, "message.failed")]
    assert sorted(failed) == sorted(m.id for m in answers)
    assert bot_api.sent() == []  # nothing left for Telegram, and nothing stays queued
    assert Message.select().where(Message.status == "queued").count() == 0
