"""Sending on Telegram at its edges: captions past Telegram's limit, buttons
under a message sent in parts, answers without a message_id, a bot token
removed while a message waits, and where a long text is cut."""

import pytest

from agent_platform.channels.telegram.sender import split
from agent_platform.models import ContactIdentity, Message
from agent_platform.services import sending
from conversations_helpers import data, make_conversation
from telegram_helpers import *  # noqa: F403  (the fixtures)
from telegram_helpers import telegram_channel
from telegram_stub import CUSTOMER, Scripted

CHAT = str(CUSTOMER["id"])
BUTTONS = [{"text": "Sim", "data": "yes"}]
SECOND_BOT = "7345678901:" + "N" * 35


def post(caller, conversation, **body):
    return data(caller.post(f"/v1/conversations/{conversation.id}/messages", json=body), 201)


def queued_text(conversation, text, metadata=None):
    """A text longer than the API takes (a model's answer may be)."""
    return Message.create(
        conversation=conversation.id,
        channel=conversation.channel_id,
        contact_id=conversation.contact_id,
        direction="outbound",
        sender_type="agent",
        status="queued",
        type="text",
        text=text,
        metadata=metadata or {},
    )


def shown(caller, message_id):
    return data(caller.get(f"/v1/messages/{message_id}"))


def test_a_caption_over_1024_utf16_units_follows_the_photo_as_text(caller, bot_api, chat):
    """513 emoji are 513 characters (the API takes them) but 1,026 UTF-16 units."""
    caption = "😀" * 513
    body = {"type": "image", "media_url": "https://example.com/p.jpg", "caption": caption}
    message = post(caller, chat, **body)
    sending.send_queued()
    assert bot_api.sent("sendPhoto") == [{"chat_id": CHAT, "photo": "https://example.com/p.jpg"}]
    assert bot_api.sent("sendMessage") == [{"chat_id": CHAT, "text": caption}]
    sent = shown(caller, message["id"])
    assert (sent["status"], sent["external_id"]) == ("sent", f"{CHAT}:1001")
    assert sent["metadata"]["telegram_parts"] == [f"{CHAT}:1001", f"{CHAT}:1002"]


def test_a_caption_of_exactly_1024_units_stays_a_caption(caller, bot_api, chat):
    caption = "😀" * 512
    body = {"type": "video", "media_url": "https://example.com/v.mp4", "caption": caption}
    message = post(caller, chat, **body)
    sending.send_queued()
    assert bot_api.sent("sendVideo") == [
        {"chat_id": CHAT, "video": "https://example.com/v.mp4", "caption": caption}
    ]
    assert bot_api.sent("sendMessage") == []
    assert "telegram_parts" not in shown(caller, message["id"])["metadata"]


def test_media_without_a_caption_is_sent_without_one(caller, bot_api, chat):
    post(caller, chat, type="audio", media_url="https://example.com/a.ogg")
    sending.send_queued()
    assert bot_api.sent("sendAudio") == [{"chat_id": CHAT, "audio": "https://example.com/a.ogg"}]
    assert bot_api.sent("sendMessage") == []


def test_buttons_go_under_the_caption_that_follows_a_photo(caller, bot_api, chat):
    body = {"type": "image", "media_url": "https://example.com/p.jpg", "caption": "😀" * 600}
    post(caller, chat, metadata={"buttons": BUTTONS}, **body)
    sending.send_queued()
    [photo] = bot_api.sent("sendPhoto")
    [text] = bot_api.sent("sendMessage")
    assert "reply_markup" not in photo
    assert text["reply_markup"] == {"inline_keyboard": [[{"text": "Sim", "callback_data": "yes"}]]}


def test_buttons_go_under_the_last_of_three_parts(caller, bot_api, chat):
    message = queued_text(chat, ("palavra " * 1500).strip(), {"buttons": BUTTONS})
    sending.send_queued()
    parts = bot_api.sent("sendMessage")
    assert len(parts) == 3
    assert ["reply_markup" in part for part in parts] == [False, False, True]
    assert Message.get_by_id(message.id).metadata["telegram_parts"] == [
        f"{CHAT}:{n}" for n in (1001, 1002, 1003)
    ]


@pytest.mark.parametrize("result", [{}, True, [1001]])
def test_an_answer_without_a_message_id_is_retried_with_the_reason(caller, bot_api, chat, result):
    message = post(caller, chat, text="Oi")
    bot_api.script.append(Scripted(200, {"ok": True, "result": result}))
    sending.send_queued()
    waiting = Message.get_by_id(message["id"])
    assert waiting.status == "queued"
    assert waiting.error == {
        "code": "INVALID_RESPONSE",
        "title": "The Bot API gave no message_id",
        "details": None,
    }


def test_a_part_answered_without_an_id_keeps_the_parts_sent_before(caller, bot_api, chat):
    message = queued_text(chat, ("palavra " * 1000).strip())
    bot_api.script.append(None)  # the first part goes through
    bot_api.script.append(Scripted(200, {"ok": True, "result": {}}))
    sending.send_queued()
    waiting = Message.get_by_id(message.id)
    assert (waiting.status, waiting.error["code"]) == ("queued", "INVALID_RESPONSE")
    assert waiting.metadata["telegram_parts"] == [f"{CHAT}:1001"]


def test_a_refused_first_part_leaves_no_parts(caller, bot_api, chat):
    message = queued_text(chat, ("palavra " * 1000).strip())
    bot_api.fail_next(500, "Internal Server Error")
    sending.send_queued()
    waiting = Message.get_by_id(message.id)
    assert (waiting.status, waiting.error["code"]) == ("queued", "500")
    assert "telegram_parts" not in (waiting.metadata or {})


def test_a_bot_token_removed_while_a_message_waits_fails_it(caller, bot_api, chat):
    message = post(caller, chat, text="Oi")
    changed = caller.patch(
        f"/v1/channels/{chat.channel_id}", json={"settings": {"bot_token": None}}
    )
    data(changed)
    sending.send_queued()
    failed = shown(caller, message["id"])
    assert failed["status"] == "failed"
    assert failed["error"] == {
        "code": "CHANNEL_NOT_CONFIGURED",
        "title": "The channel has no bot_token",
        "details": None,
    }
    assert bot_api.sent("sendMessage") == []


def test_a_contact_without_a_telegram_chat_fails_with_the_reason(caller, bot_api, chat):
    message = post(caller, chat, text="Oi")
    data(caller.patch(f"/v1/contacts/{chat.contact_id}", json={"identities": []}))
    sending.send_queued()
    failed = shown(caller, message["id"])
    assert failed["status"] == "failed"
    assert failed["error"] == {
        "code": "NO_RECIPIENT",
        "title": "The contact has no Telegram chat with the bot",
        "details": None,
    }


def test_a_long_text_is_cut_after_its_last_separator():
    first = "\n".join(["linha"] * 400) + "\n"  # 2,400 characters
    text = first + "x" * 1000 + " " + "y" * 3000
    parts = split(text)
    # The space at 3,400 is the last separator: the cut falls after it.
    assert parts == [text[:3401], text[3401:]]
    lines = "a" * 3000 + "\n" + "b" * 500 + "\n" + "c" * 1000
    assert split(lines) == ["a" * 3000 + "\n" + "b" * 500 + "\n", "c" * 1000]
    # A newline past the limit is in the next part: the space before it counts.
    later = "a" * 3000 + " " + "b" * 2000 + "\n" + "c" * 10
    assert split(later) == [later[:3001], later[3001:]]
    spaces = "a" * 3000 + " " + "b" * 500 + " " + "c" * 1000
    assert split(spaces) == [spaces[:3502], spaces[3502:]]


def test_a_text_of_exactly_the_limit_is_one_part():
    text = "a" * 3000 + " " + "b" * 1095  # 4,096 characters, a space past the middle
    assert split(text) == [text]


def test_a_separator_in_the_first_half_is_not_used():
    """Cutting there would make a part of a few characters: the cut is hard."""
    text = "a" * 2048 + " " + "b" * 3000  # the space at the middle exactly
    assert split(text) == [text[:4096], text[4096:]]
    text = "a" * 2049 + " " + "b" * 3000
    assert split(text) == [text[:2050], text[2050:]]
    text = "a" * 1500 + "\n" + "b" * 3000
    assert split(text) == [text[:4096], text[4096:]]


def test_split_cuts_exactly_at_the_limit_and_counts_emoji_twice():
    assert [len(part) for part in split("a" * 4097)] == [4096, 1]
    assert split("a" * 8192) == ["a" * 4096, "a" * 4096]
    assert split("a" * 10, limit=4) == ["aaaa", "aaaa", "aa"]
    assert split("😀😀a", limit=4) == ["😀😀", "a"]
    assert split("a😀😀", limit=4) == ["a😀", "😀"]
    assert split(None) == [""]


def test_a_button_may_open_an_http_url(caller, bot_api, chat):
    buttons = [{"text": "Site", "url": "http://loja.example.com/menu"}]
    post(caller, chat, text="Veja", metadata={"buttons": buttons})
    sending.send_queued()
    [sent] = bot_api.sent("sendMessage")
    assert sent["reply_markup"] == {"inline_keyboard": [buttons]}


def test_a_contact_known_to_two_bots_is_written_to_on_the_conversations_bot(caller, bot_api, chat):
    """A chat id first seen on this channel wins over an older one on another."""
    bot_api.add_bot(SECOND_BOT)
    second = telegram_channel(caller, name="Second", bot_token=SECOND_BOT)
    ContactIdentity.create(
        workspace=caller.workspace_id,
        contact=chat.contact_id,
        type="telegram",
        external_id="777000",
        channel=second["id"],
    )
    there = make_conversation(caller, chat.contact_id, second["id"])
    data(caller.post(f"/v1/conversations/{there['id']}/messages", json={"text": "Oi"}), 201)
    post(caller, chat, text="Olá")
    sending.send_queued()
    sent = {body["text"]: body["chat_id"] for body in bot_api.sent("sendMessage")}
    assert sent == {"Oi": "777000", "Olá": CHAT}


def test_a_stored_message_of_a_type_telegram_cannot_send_fails(caller, bot_api, chat):
    """A row the API would not queue (an older version's, say)."""
    message = queued_text(chat, None)
    Message.update(type="location").where(Message.id == message.id).execute()
    sending.send_queued()
    failed = Message.get_by_id(message.id)
    assert failed.status == "failed"
    assert failed.error == {
        "code": "UNSUPPORTED_TYPE",
        "title": "A location message cannot be sent",
        "details": None,
    }


def test_button_data_of_1_and_64_bytes_is_sent(caller, bot_api, chat):
    buttons = [{"text": "Um", "data": "1"}, {"text": "Longo", "data": "ç" * 32}]
    post(caller, chat, text="Qual?", metadata={"buttons": buttons})
    sending.send_queued()
    [sent] = bot_api.sent("sendMessage")
    assert [row[0]["callback_data"] for row in sent["reply_markup"]["inline_keyboard"]] == [
        "1",
        "ç" * 32,
    ]


def test_split_counts_the_last_bmp_character_once_and_the_first_astral_one_twice():
    assert split("\uffff" * 5, limit=4) == ["\uffff" * 4, "\uffff"]
    assert split("\U00010000" * 3, limit=4) == ["\U00010000" * 2, "\U00010000"]


def test_a_character_wider_than_the_limit_is_a_part_of_its_own():
    """An emoji is 2 UTF-16 units: under a limit of 1 nothing fits, and each
    goes alone instead of the cut never moving."""
    assert split("😀a😀", limit=1) == ["😀", "a", "😀"]
    assert split("😀😀😀", limit=3) == ["😀", "😀", "😀"]
