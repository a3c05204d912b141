"""A Telegram bot served as a user runs it: `agent-platform serve` (gunicorn,
the scheduler in its worker) with the Bot API stand-in as TELEGRAM_API_BASE
answers a customer from the agent's knowledge in both intake modes, the
update fetched by the service's own getUpdates job or POSTed to its webhook
intake. No test code calls a job function: only the served app's scheduler
can poll, reply and send."""

import json
import os

import pytest
import requests

from telegram_stub import CUSTOMER, TOKEN, message_update
from test_cli import free_port, serving
from test_service_jobs import Api, wait_for

QUESTION, ANSWER = "A que horas vocês abrem?", "Abrimos todos os dias das 9h às 18h."
PUBLIC_URL = "https://agents.example.com"  # Telegram calls webhooks on HTTPS only


@pytest.fixture
def served(tmp_path, bot_api):
    port = free_port()
    settings = {
        "DATABASE_PATH": str(tmp_path / "served.db"),
        "MEDIA_DIR": str(tmp_path / "media"),
        "TELEGRAM_API_BASE": bot_api.base,
        "TELEGRAM_POLL_SECONDS": 0.5,
        "SERVER_PUBLIC_URL": PUBLIC_URL,
        "REPLIES_DEBOUNCE_SECONDS": 0,
        "MESSAGES_SEND_POLL_SECONDS": 0.5,
    }
    environ = dict(os.environ)
    environ.update({f"AGENT_PLATFORM_{k}": json.dumps(v) for k, v in settings.items()})
    with serving(["--port", str(port)], environ, port) as (base, lines):
        yield Api(base, lines[1].strip())


def bot(api, mode):
    """An agent that knows one answer, connected to a Telegram channel in `mode`."""
    agent = api.call("POST", "/v1/agents", {"name": "Ana"}, 201)["id"]
    qa = {"type": "qa", "question": QUESTION, "answer": ANSWER}
    api.call("POST", f"/v1/agents/{agent}/trainings", qa, 201)
    settings = {"bot_token": TOKEN, "intake_mode": mode}
    channel = {"name": "Telegram", "type": "telegram", "settings": settings}
    channel_id = api.call("POST", "/v1/channels", channel, 201)["id"]
    api.call("POST", f"/v1/channels/{channel_id}/connect", {"agent_id": agent})
    return channel_id


def answers_to_the_customer(bot_api):
    chat_id = str(CUSTOMER["id"])
    return [body["text"] for body in bot_api.sent() if str(body["chat_id"]) == chat_id]


def statuses(api):
    """{text: status} of the messages of the one conversation."""
    [conversation] = api.call("GET", "/v1/conversations")
    messages = api.call("GET", f"/v1/conversations/{conversation['id']}/messages")
    return {message["text"]: message["status"] for message in messages}


def test_a_polling_bot_fetches_the_update_and_answers_by_itself(served, bot_api):
    bot(served, "polling")
    assert bot_api.webhook is None  # polling sets nothing up with Telegram
    bot_api.push(message_update(QUESTION))
    wait_for(lambda: ANSWER in answers_to_the_customer(bot_api), "answered the polled update")
    assert "getUpdates" in bot_api.calls()
    wait_for(lambda: statuses(served).get(ANSWER) == "sent", "marked the answer sent")
    assert statuses(served)[QUESTION] == "received"


def test_a_webhook_bot_answers_an_update_posted_to_its_intake(served, bot_api):
    channel_id = bot(served, "webhook")
    # Creating the channel registered the webhook with its secret.
    assert bot_api.webhook["url"] == f"{PUBLIC_URL}/inbound/telegram/{channel_id}"
    secret = bot_api.webhook["secret_token"]
    update = {"update_id": 731001, **message_update(QUESTION)}
    intake = f"{served.base}/inbound/telegram/{channel_id}"
    forged = requests.post(
        intake, json=update, headers={"X-Telegram-Bot-Api-Secret-Token": "x" * 43}, timeout=10
    )
    assert forged.status_code == 401
    assert forged.json()["error"]["code"] == "INVALID_SECRET_TOKEN"
    headers = {"X-Telegram-Bot-Api-Secret-Token": secret}
    stored = requests.post(intake, json=update, headers=headers, timeout=10)
    assert stored.status_code == 200, stored.text
    assert stored.json()["data"]["messages"] == 1
    wait_for(lambda: ANSWER in answers_to_the_customer(bot_api), "answered the webhook update")
    # Telegram redelivers an update it thinks was lost: stored and answered once.
    again = requests.post(intake, json=update, headers=headers, timeout=10)
    assert again.json()["data"]["duplicates"] == 1
    assert "getUpdates" not in bot_api.calls()  # a webhook channel is never polled
    assert answers_to_the_customer(bot_api).count(ANSWER) == 1
