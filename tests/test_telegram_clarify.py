"""The agent's clarifying question on Telegram, end to end through the Bot
API stand-in: an inline keyboard with the choices, a press (a callback
query, polled) answered with the chosen training."""

from agent_platform.channels.telegram import polling
from agent_platform.models import Message
from agent_platform.services import replies, sending
from conversations_helpers import data
from telegram_helpers import *  # noqa: F403  (the fixtures)
from telegram_helpers import telegram_channel
from telegram_stub import CUSTOMER, message_update

COST = ("Quanto custa a entrega?", "A entrega custa R$ 5 em São Paulo.")
AREA = ("Vocês entregam no centro?", "Entregamos em todo o centro.")


def test_an_inline_keyboard_is_offered_and_a_press_is_answered(caller, bot_api):
    agent_id = data(caller.post("/v1/agents", json={"name": "Ana", "language": "pt-BR"}), 201)["id"]
    for question, answer in (COST, AREA):
        body = {"type": "qa", "question": question, "answer": answer}
        data(caller.post(f"/v1/agents/{agent_id}/trainings", json=body), 201)
    channel = telegram_channel(caller, mode="polling", agent=False)
    data(caller.post(f"/v1/channels/{channel['id']}/connect", json={"agent_id": agent_id}))
    bot_api.push(message_update("entrega?", message_id=1))
    polling.poll_updates()
    replies.run_due_replies()
    sending.send_queued()
    [asked] = bot_api.sent("sendMessage")
    assert asked["text"] == "Você quer saber:"
    keyboard = [row[0] for row in asked["reply_markup"]["inline_keyboard"]]
    assert keyboard == [
        {"text": COST[0], "callback_data": "choice:1"},
        {"text": AREA[0], "callback_data": "choice:2"},
        {"text": "Nenhuma destas", "callback_data": "choice:0"},
    ]
    bot_message = {"message_id": 1001, "chat": {"id": CUSTOMER["id"], "type": "private"}}
    query = {"id": "78", "from": CUSTOMER, "message": bot_message, "data": "choice:2"}
    bot_api.push({"callback_query": query})
    polling.poll_updates()
    replies.run_due_replies()
    sending.send_queued()
    assert bot_api.sent("sendMessage")[-1]["text"] == AREA[1]
    question = Message.get(Message.text == "Você quer saber:")
    [clarification] = data(
        caller.get(f"/v1/conversations/{question.conversation_id}/clarifications")
    )
    assert clarification["status"] == "chosen"
    assert clarification["choices"][1]["label"] == AREA[0]
