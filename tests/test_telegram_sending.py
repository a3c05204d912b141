"""Sending on Telegram through the Bot API stand-in, and the agent answering
a customer end to end in both intake modes."""

from datetime import timedelta

import pytest

from agent_platform.channels.telegram import polling, tasks
from agent_platform.channels.telegram.sender import split
from agent_platform.models import Conversation, Message
from agent_platform.models.base import utcnow
from agent_platform.services import idle_actions, replies, sending
from conftest import assert_error
from conversations_helpers import data, events, make_contact, make_conversation
from telegram_helpers import *  # noqa: F403  (the fixtures)
from telegram_helpers import delivered, telegram_channel
from telegram_stub import CUSTOMER, Scripted, message_update

GREETING = "Olá! Sou a Ana, da Pizzaria Roma."
DELIVERY = ("Quanto custa a entrega?", "A entrega custa R$ 5 em São Paulo.")


def post(caller, conversation, **body):
    return caller.post(f"/v1/conversations/{conversation.id}/messages", json=body)


def test_a_text_is_sent_plain_to_the_chat(caller, bot_api, chat):
    message = data(post(caller, chat, text="Oi, *Bia*! <b>bem-vinda</b>"), 201)
    sending.send_queued()
    [sent] = bot_api.sent("sendMessage")
    assert sent == {"chat_id": str(CUSTOMER["id"]), "text": "Oi, *Bia*! <b>bem-vinda</b>"}
    shown = data(caller.get(f"/v1/messages/{message['id']}"))
    assert (shown["status"], shown["external_id"]) == ("sent", f"{CUSTOMER['id']}:1001")
    assert [body["id"] for _, body in events(caller.workspace_id, "message.sent")] == [shown["id"]]


def test_a_long_text_is_split_at_the_limit(caller, bot_api, chat):
    """The API takes 4,096 characters; a model's answer may be longer."""
    text = ("palavra " * 1000).strip()  # 7,999 characters
    Message.insert(
        id="01a20000-0000-7000-8000-000000000002",
        conversation=chat.id,
        channel=chat.channel_id,
        contact_id=chat.contact_id,
        direction="outbound",
        sender_type="agent",
        status="queued",
        type="text",
        text=text,
    ).execute()
    sending.send_queued()
    parts = [body["text"] for body in bot_api.sent("sendMessage")]
    assert len(parts) == 2 and all(len(part) <= 4096 for part in parts)
    assert "".join(parts) == text and parts[0].endswith(" ")
    shown = data(caller.get("/v1/messages/01a20000-0000-7000-8000-000000000002"))
    chat_id = CUSTOMER["id"]
    assert shown["metadata"]["telegram_parts"] == [f"{chat_id}:1001", f"{chat_id}:1002"]


def test_split_counts_utf16_units():
    emoji = "😀" * 3000  # 6,000 UTF-16 units
    parts = split(emoji)
    assert [len(part) for part in parts] == [2048, 952]
    assert split("") == [""] and split("oi") == ["oi"]


def test_a_photo_is_sent_by_url_with_its_caption(caller, bot_api, chat):
    body = {"type": "image", "media_url": "https://example.com/p.jpg", "caption": "Cardápio"}
    data(post(caller, chat, **body), 201)
    sending.send_queued()
    [sent] = bot_api.sent("sendPhoto")
    assert sent == {
        "chat_id": str(CUSTOMER["id"]),
        "photo": "https://example.com/p.jpg",
        "caption": "Cardápio",
    }


def test_a_document_is_sent_by_url_and_its_id_kept(caller, bot_api, chat):
    url = "https://example.com/cardapio.pdf"
    body = {"type": "document", "media_url": url, "caption": "Cardápio de verão"}
    message = data(post(caller, chat, **body), 201)
    sending.send_queued()
    assert bot_api.sent("sendDocument") == [
        {"chat_id": str(CUSTOMER["id"]), "document": url, "caption": "Cardápio de verão"}
    ]
    assert bot_api.sent("sendMessage") == [] and bot_api.sent("sendPhoto") == []
    shown = data(caller.get(f"/v1/messages/{message['id']}"))
    assert (shown["status"], shown["external_id"]) == ("sent", f"{CUSTOMER['id']}:1001")


def test_429_waits_the_retry_after_telegram_asks(caller, bot_api, chat):
    message = data(post(caller, chat, text="Oi"), 201)
    now = utcnow()
    bot_api.fail_next(429, "Too Many Requests: retry after 30", retry_after=30)
    sending.send_queued(now=now)
    waiting = Message.get_by_id(message["id"])
    assert (waiting.status, waiting.error["code"]) == ("queued", "429")
    assert waiting.error["details"] == {"retry_after": 30}
    assert sending.send_queued(now=now + timedelta(seconds=29)) == 0
    assert sending.send_queued(now=now + timedelta(seconds=30)) == 1
    assert Message.get_by_id(message["id"]).status == "sent"


@pytest.mark.parametrize(("asked", "waited"), [(10**30, 86400), (True, 5), (-3, 5)])
def test_a_retry_after_beyond_a_day_or_not_a_number_of_seconds(
    caller, bot_api, chat, asked, waited
):
    message = data(post(caller, chat, text="Oi"), 201)
    now = utcnow()
    bot_api.fail_next(429, "Too Many Requests", retry_after=asked)
    sending.send_queued(now=now)
    waiting = Message.get_by_id(message["id"])
    assert (waiting.status, waiting.lease_until) == ("queued", now + timedelta(seconds=waited))


def test_a_blocked_bot_fails_the_message_with_the_reason(caller, bot_api, chat):
    message = data(post(caller, chat, text="Oi"), 201)
    bot_api.fail_next(403, "Forbidden: bot was blocked by the user")
    sending.send_queued()
    failed = data(caller.get(f"/v1/messages/{message['id']}"))
    assert failed["status"] == "failed"
    assert failed["error"]["code"] == "403"
    assert failed["error"]["title"] == "Forbidden: bot was blocked by the user"
    [(_, event)] = events(caller.workspace_id, "message.failed")
    assert event["id"] == message["id"]


def test_a_refusal_of_another_shape_fails_the_message_in_words(caller, bot_api, chat):
    # An error_code or description of another type was stored as it came.
    message = data(post(caller, chat, text="Oi"), 201)
    body = {"ok": False, "error_code": [400], "description": {"text": "Bad Request"}}
    bot_api.script.append(Scripted(403, body))
    sending.send_queued()
    failed = data(caller.get(f"/v1/messages/{message['id']}"))
    assert failed["status"] == "failed"
    assert failed["error"]["code"] == "403"
    assert failed["error"]["title"] == "The Bot API answered HTTP 403 without a result"


def test_an_unreachable_bot_api_is_retried_and_never_shows_the_token(app, caller, bot_api, chat):
    message = data(post(caller, chat, text="Oi"), 201)
    app.config["TELEGRAM_API_BASE"] = "http://127.0.0.1:9"
    sending.send_queued(max_attempts=1)
    failed = data(caller.get(f"/v1/messages/{message['id']}"))
    assert (failed["status"], failed["error"]["code"]) == ("failed", "UNREACHABLE")
    assert "AAHdq" not in str(failed["error"])


def test_a_channel_without_token_refuses_messages(caller):
    channel = telegram_channel(caller, bot_token=None)
    contact = make_contact(caller, name="Bia")
    conversation = make_conversation(caller, contact["id"], channel["id"])
    response = caller.post(f"/v1/conversations/{conversation['id']}/messages", json={"text": "Oi"})
    assert_error(response, 409, "CHANNEL_CANNOT_SEND", "settings.bot_token")


def test_a_template_message_is_refused_on_telegram(caller, bot_api, chat):
    template = {"name": "hi", "language": "en"}
    refused = assert_error(
        post(caller, chat, type="template", template=template), 400, "VALIDATION_ERROR"
    )
    assert refused["message"] == "type: template messages are sent on WhatsApp channels only"
    assert Message.select().where(Message.direction == "outbound").count() == 0


def test_a_contact_who_never_wrote_to_the_bot_fails_with_no_recipient(caller, bot_api):
    channel = telegram_channel(caller)
    contact = make_contact(caller, name="Bia", phone="+5511911112222")
    conversation = make_conversation(caller, contact["id"], channel["id"])
    message = data(
        caller.post(f"/v1/conversations/{conversation['id']}/messages", json={"text": "Oi"}), 201
    )
    sending.send_queued()
    failed = data(caller.get(f"/v1/messages/{message['id']}"))
    assert (failed["status"], failed["error"]["code"]) == ("failed", "NO_RECIPIENT")
    assert bot_api.sent("sendMessage") == []


# -- The agent answers on Telegram ---------------------------------------------


def shop(caller, mode):
    body = {"name": "Ana", "language": "pt-BR", "greeting_message": GREETING}
    agent_id = data(caller.post("/v1/agents", json=body), 201)["id"]
    qa = {"type": "qa", "question": DELIVERY[0], "answer": DELIVERY[1]}
    data(caller.post(f"/v1/agents/{agent_id}/trainings", json=qa), 201)
    channel = telegram_channel(caller, mode=mode, agent=False)
    path = f"/v1/channels/{channel['id']}/connect"
    return data(caller.post(path, json={"agent_id": agent_id}))


def said(bot_api):
    return [(body["chat_id"], body["text"]) for body in bot_api.sent("sendMessage")]


def test_the_agent_answers_a_polled_update(caller, bot_api):
    shop(caller, "polling")
    bot_api.push(message_update("Oi! quanto custa a entrega?"))
    assert polling.poll_updates() == 1
    assert replies.run_due_replies() == 1
    chat_id = str(CUSTOMER["id"])
    assert said(bot_api) == [(chat_id, GREETING), (chat_id, DELIVERY[1])]
    reply = Message.get(Message.text == DELIVERY[1])
    assert (reply.sender_type, reply.status) == ("agent", "sent")
    assert reply.metadata["reply"]["provider"] == "knowledge"


def test_the_agent_answers_a_webhook_update(client, caller, bot_api):
    channel = shop(caller, "webhook")
    update = {"update_id": 9100, **message_update("Oi! quanto custa a entrega?")}
    counts = delivered(client, channel["id"], update, bot_api.webhook["secret_token"])
    assert counts["messages"] == 1
    assert bot_api.sent("sendMessage") == []  # the agent answers from its job
    assert replies.run_due_replies() == 1
    chat_id = str(CUSTOMER["id"])
    assert said(bot_api) == [(chat_id, GREETING), (chat_id, DELIVERY[1])]
    assert [name for name, _ in events(caller.workspace_id) if name.startswith("message.")] == [
        "message.received",
        "message.sent",
        "message.sent",
    ]


def test_buttons_become_an_inline_keyboard_and_a_press_comes_back(caller, bot_api, chat):
    buttons = [{"text": "Grande", "data": "size:large"}, {"text": "Site", "url": "https://x.io"}]
    data(post(caller, chat, text="Qual tamanho?", metadata={"buttons": buttons}), 201)
    sending.send_queued()
    [sent] = bot_api.sent("sendMessage")
    assert sent["reply_markup"] == {
        "inline_keyboard": [
            [{"text": "Grande", "callback_data": "size:large"}],
            [{"text": "Site", "url": "https://x.io"}],
        ]
    }
    bot_message = {"message_id": 1001, "chat": {"id": CUSTOMER["id"], "type": "private"}}
    query = {"id": "77", "from": CUSTOMER, "message": bot_message, "data": "size:large"}
    bot_api.push({"callback_query": query})
    polling.poll_updates()
    pressed = Message.get(Message.type == "button")
    assert (pressed.text, pressed.conversation_id) == ("size:large", chat.id)
    asked = Message.get(Message.text == "Qual tamanho?")
    assert pressed.reply_to_id == asked.id
    assert tasks.run_tasks() == 1  # the spinner on the button stops
    assert bot_api.sent("answerCallbackQuery") == [{"callback_query_id": "77"}]


@pytest.mark.parametrize(
    "buttons, title",
    [
        ([{"text": "Grande", "data": "x" * 65}], "metadata.buttons[0] needs data of 1 to 64 bytes"),
        ([{"data": "size:large"}], "metadata.buttons[0] needs a text"),
        (["Grande"], "metadata.buttons[0] needs a text"),
        ([], "metadata.buttons must list 1 to 20"),
        (
            [{"text": str(n), "data": str(n)} for n in range(21)],
            "metadata.buttons must list 1 to 20",
        ),
        ({"text": "Grande", "data": "size:large"}, "metadata.buttons must list 1 to 20"),
    ],
)
def test_malformed_buttons_fail_the_message_with_the_reason(caller, bot_api, chat, buttons, title):
    bad = {"buttons": buttons}
    message = data(post(caller, chat, text="Qual tamanho?", metadata=bad), 201)
    sending.send_queued()
    failed = data(caller.get(f"/v1/messages/{message['id']}"))
    assert (failed["status"], failed["error"]["code"]) == ("failed", "INVALID_BUTTONS")
    assert failed["error"]["title"].startswith(title)
    assert bot_api.sent("sendMessage") == []


def test_twenty_buttons_are_sent(caller, bot_api, chat):
    buttons = [{"text": str(n), "data": str(n)} for n in range(20)]
    data(post(caller, chat, text="Qual?", metadata={"buttons": buttons}), 201)
    sending.send_queued()
    [sent] = bot_api.sent("sendMessage")
    assert len(sent["reply_markup"]["inline_keyboard"]) == 20


def test_handoff_on_telegram_a_human_answers_then_the_agent_again(caller, bot_api):
    shop(caller, "polling")
    chat_id = str(CUSTOMER["id"])
    bot_api.push(message_update("Oi", message_id=1))
    polling.poll_updates()
    replies.run_due_replies()
    bot_api.push(message_update("quero falar com um atendente", message_id=2))
    polling.poll_updates()
    replies.run_due_replies()
    conversation = Conversation.get()
    assert conversation.status == "handoff"
    assert "agent.handoff_started" in [name for name, _ in events(caller.workspace_id)]
    bot_api.push(message_update("alô?", message_id=3))
    polling.poll_updates()
    assert replies.run_due_replies() == 0  # the agent is silent while a human holds it
    human = {"text": "Oi, aqui é o Carlos."}
    data(caller.post(f"/v1/conversations/{conversation.id}/messages", json=human), 201)
    sending.send_queued()
    assert said(bot_api)[-1] == (chat_id, "Oi, aqui é o Carlos.")
    data(caller.post(f"/v1/chats/{conversation.id}/handoff/complete"))
    bot_api.push(message_update(DELIVERY[0], message_id=4))
    polling.poll_updates()
    replies.run_due_replies()
    assert said(bot_api)[-1] == (chat_id, DELIVERY[1])


def test_a_split_text_retried_goes_on_from_the_part_that_failed(caller, bot_api, chat):
    Message.insert(
        id="01a20000-0000-7000-8000-000000000003",
        conversation=chat.id,
        channel=chat.channel_id,
        contact_id=chat.contact_id,
        direction="outbound",
        sender_type="agent",
        status="queued",
        type="text",
        text=("palavra " * 1000).strip(),
    ).execute()
    now = utcnow()
    bot_api.script.append(None)  # the first part goes through
    bot_api.fail_next(502, "Bad Gateway")
    sending.send_queued(now=now)
    waiting = Message.get_by_id("01a20000-0000-7000-8000-000000000003")
    assert waiting.status == "queued"
    assert waiting.metadata["telegram_parts"] == [f"{CUSTOMER['id']}:1001"]
    sending.send_queued(now=now + timedelta(seconds=5))
    sent = Message.get_by_id("01a20000-0000-7000-8000-000000000003")
    assert sent.status == "sent" and len(sent.metadata["telegram_parts"]) == 2
    texts = [body["text"] for body in bot_api.sent("sendMessage")]
    assert len(texts) == 3 and texts[1] == texts[2]  # the second part, tried twice
    assert "".join(texts[::2]) == sent.text


def test_an_idle_telegram_conversation_is_closed_by_its_idle_action(caller, bot_api):
    agent_id = shop(caller, "polling")["agent_id"]
    action = {"name": "close", "minutes": 15, "action": "close", "message": "Até logo!"}
    data(caller.post(f"/v1/agents/{agent_id}/idle-actions", json=action), 201)
    when = utcnow()
    bot_api.push(message_update(DELIVERY[0]))
    polling.poll_updates()
    replies.run_due_replies()
    assert idle_actions.run_idle_actions(now=when + timedelta(minutes=15, seconds=2)) == 1
    sending.send_queued_job(now=when + timedelta(minutes=15, seconds=3))
    assert said(bot_api)[-1] == (str(CUSTOMER["id"]), "Até logo!")
    assert Conversation.get().status == "closed"


def test_credits_run_out_on_telegram_as_on_whatsapp(app, caller, bot_api):
    app.config["PLAN_CREDITS"] = 1
    shop(caller, "polling")
    for number, text in enumerate((DELIVERY[0], DELIVERY[0]), start=1):
        bot_api.push(message_update(text, message_id=number))
        polling.poll_updates()
        replies.run_due_replies()
    assert [text for _, text in said(bot_api)] == [GREETING, DELIVERY[1]]  # no second answer
    assert "credit.depleted" in [name for name, _ in events(caller.workspace_id)]
    assert Conversation.get().status == "handoff"


def test_a_transfer_rule_hands_off_on_telegram(caller, bot_api):
    channel = shop(caller, "polling")
    rule = {
        "name": "refunds", "match_type": "regex", "pattern": r"reembolso|estorno",
        "action": "handoff", "message": "Vou chamar alguém do financeiro.",
    }  # fmt: skip
    data(caller.post(f"/v1/agents/{channel['agent_id']}/transfer-rules", json=rule), 201)
    bot_api.push(message_update("quero o REEMBOLSO do pedido 42", message_id=7))
    polling.poll_updates()
    replies.run_due_replies()
    chat_id = str(CUSTOMER["id"])
    assert said(bot_api)[-1] == (chat_id, "Vou chamar alguém do financeiro.")
    assert Conversation.get().status == "handoff"
    started = [
        data for name, data in events(caller.workspace_id) if name == "agent.handoff_started"
    ]
    assert len(started) == 1


def test_an_answer_nested_too_deep_is_a_retried_error_with_its_reason(caller, bot_api, chat):
    message = data(post(caller, chat, text="Oi"), 201)
    bot_api.script.append(Scripted(200, b"[" * 5000 + b"]" * 5000))
    sending.send_queued()
    waiting = Message.get_by_id(message["id"])
    # Telegram's answer refused like any answer without a result, not a crash of the sender.
    assert (waiting.status, waiting.error["code"]) == ("queued", "200"), waiting.error
    sending.send_queued(now=utcnow() + timedelta(hours=1))
    assert Message.get_by_id(message["id"]).status == "sent"


def test_a_reply_to_the_customers_message_quotes_it(caller, bot_api, chat):
    asked = Message.get(Message.conversation == chat.id, Message.direction == "inbound")
    chat_id, message_id = asked.external_id.split(":")
    data(post(caller, chat, text="Sim!", reply_to_id=asked.id), 201)
    data(post(caller, chat, text="Sem citação"), 201)
    sending.send_queued()
    quoted, plain = bot_api.sent("sendMessage")
    assert (quoted["chat_id"], quoted["text"]) == (chat_id, "Sim!")
    assert quoted["reply_parameters"] == {
        "message_id": int(message_id),
        "allow_sending_without_reply": True,
    }
    assert "reply_parameters" not in plain


def test_a_reply_to_a_message_without_a_telegram_id_is_sent_unquoted(caller, bot_api, chat):
    note = data(post(caller, chat, text="first"), 201)
    sending.send_queued()
    Message.update(external_id="imported").where(Message.id == note["id"]).execute()
    second = data(post(caller, chat, text="second", reply_to_id=note["id"]), 201)
    sending.send_queued()
    # Not yet sent, so without an id of its own at all.
    unsent = data(post(caller, chat, text="third"), 201)
    Message.update(status="failed").where(Message.id == unsent["id"]).execute()
    fourth = data(post(caller, chat, text="fourth", reply_to_id=unsent["id"]), 201)
    sending.send_queued()
    sent = bot_api.sent("sendMessage")
    assert [request["text"] for request in sent] == ["first", "second", "fourth"]
    assert not [request for request in sent if "reply_parameters" in request]
    assert {Message.get_by_id(m["id"]).status for m in (second, fourth)} == {"sent"}
