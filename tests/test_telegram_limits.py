"""Telegram's limits through the Bot API stand-in: a caption over Telegram's
1,024 (UTF-16 units: the API's limit of 1,024 characters lets emoji take a
caption over it) follows its file as text rather than being cut, and a 429's
retry_after is waited by the media job (getFile) and by long polling."""

from datetime import timedelta

from agent_platform.channels.telegram import polling, tasks
from agent_platform.models import Message
from agent_platform.models.base import utcnow
from agent_platform.services import sending
from conversations_helpers import data, events
from telegram_helpers import *  # noqa: F403  (the fixtures)
from telegram_helpers import customer_chat, telegram_channel
from telegram_stub import CUSTOMER, message_update, private_message

PIZZA = "\U0001f355"  # one character, two UTF-16 units: Telegram counts the units
URL = "https://example.com/cardapio.jpg"


def sent_photo(caller, bot_api, caption):
    conversation = customer_chat(caller, bot_api)
    body = {"type": "image", "media_url": URL, "caption": caption}
    path = f"/v1/conversations/{conversation.id}/messages"
    message = data(caller.post(path, json=body), 201)
    sending.send_queued()
    return data(caller.get(f"/v1/messages/{message['id']}"))


def test_a_caption_over_the_limit_follows_the_file_as_text(caller, bot_api):
    # 960 characters (the API takes up to 1,024), 1,080 units for Telegram.
    caption = f"Pizza {PIZZA} " * 120
    shown = sent_photo(caller, bot_api, caption)
    chat_id = str(CUSTOMER["id"])
    assert bot_api.sent("sendPhoto") == [{"chat_id": chat_id, "photo": URL}]
    assert [body["text"] for body in bot_api.sent("sendMessage")] == [caption]
    assert bot_api.calls()[-2:] == ["sendPhoto", "sendMessage"]  # the file first
    assert shown["status"] == "sent"
    assert shown["external_id"] == f"{chat_id}:1001"  # the file's id
    assert shown["metadata"]["telegram_parts"] == [f"{chat_id}:1001", f"{chat_id}:1002"]


def test_a_caption_at_the_limit_stays_a_caption_counted_in_utf16_units(caller, bot_api):
    at_limit = "a" * 1022 + PIZZA  # 1,023 characters, 1,024 units
    sent_photo(caller, bot_api, at_limit)
    assert bot_api.sent("sendPhoto")[0]["caption"] == at_limit
    assert bot_api.sent("sendMessage") == []


def test_a_caption_one_unit_over_the_limit_is_sent_as_text(caller, bot_api):
    over = "a" * 1023 + PIZZA  # 1,024 characters, 1,025 units
    sent_photo(caller, bot_api, over)
    assert "caption" not in bot_api.sent("sendPhoto")[0]
    assert [body["text"] for body in bot_api.sent("sendMessage")] == [over]


def test_the_media_job_waits_the_retry_after_of_a_429(caller, bot_api):
    telegram_channel(caller)
    bot_api.add_file("large", b"\xff\xd8\xff a jpeg", "photos/file_3.jpg")
    bot_api.refuse["getFile"] = (429, "Too Many Requests: retry after 120", 120)
    photo = [{"file_id": "large", "file_unique_id": "l", "width": 800, "height": 600}]
    bot_api.push({"message": private_message(None, 1, photo=photo)})
    polling.poll_updates()
    now = utcnow()
    assert tasks.run_tasks(now) == 1
    del bot_api.refuse["getFile"]
    # Not at the 10 s of the usual schedule: at the 120 s Telegram asked for.
    assert tasks.run_tasks(now + timedelta(seconds=119)) == 0
    assert bot_api.calls().count("getFile") == 1
    assert tasks.run_tasks(now + timedelta(seconds=120)) == 1
    message = Message.get()
    assert message.media_url and message.error is None


def test_polling_waits_the_retry_after_of_a_429(caller, bot_api):
    telegram_channel(caller)
    bot_api.refuse["getUpdates"] = (429, "Too Many Requests: retry after 5", 5)
    now = utcnow()
    assert polling.poll_updates(now) == 0
    del bot_api.refuse["getUpdates"]
    bot_api.push(message_update("Oi"))
    assert polling.poll_updates(now + timedelta(seconds=4)) == 0
    assert bot_api.calls().count("getUpdates") == 1  # not asked again meanwhile
    assert polling.poll_updates(now + timedelta(seconds=5)) == 1
    assert events(caller.workspace_id, "channel.error") == []  # a wait, not a fault
