"""A Telegram channel set up through the API against the Bot API stand-in
(tests/telegram_stub.py), and updates delivered to it both ways."""

import pytest

from agent_platform.channels.telegram import polling
from agent_platform.models import Conversation
from conversations_helpers import data, make_agent, make_channel
from telegram_stub import TOKEN, message_update

PUBLIC_URL = "https://agents.example.com"

# `from telegram_helpers import *` brings the fixtures (and only them;
# `bot_api`, the stand-in, is conftest's).
__all__ = ["settings", "chat"]


@pytest.fixture
def settings(tmp_path, bot_api):
    return {
        "DATABASE_PATH": str(tmp_path / "test.db"),
        "TELEGRAM_API_BASE": bot_api.base,
        "TELEGRAM_TIMEOUT_SECONDS": 2,
        "MEDIA_DIR": str(tmp_path / "media"),
        "SERVER_PUBLIC_URL": PUBLIC_URL,
        "REPLIES_DEBOUNCE_SECONDS": 0,
    }


def telegram_channel(caller, mode=None, agent=True, name="Telegram", **settings):
    values = {"bot_token": TOKEN, "bot_username": "loja_da_ana_bot", **settings}
    if mode:
        values["intake_mode"] = mode
    agent_id = make_agent(caller) if agent else None
    return make_channel(caller, name=name, type="telegram", settings=values, agent_id=agent_id)


def deliver(client, channel_id, update, secret):
    """POST an Update to the channel's webhook as Telegram does."""
    headers = {"X-Telegram-Bot-Api-Secret-Token": secret} if secret else {}
    return client.post(f"/inbound/telegram/{channel_id}", json=update, headers=headers)


def delivered(client, channel_id, update, secret):
    return data(deliver(client, channel_id, update, secret))


def customer_chat(caller, bot_api):
    """A customer who wrote to the bot (so the bot may write to them)."""
    telegram_channel(caller)
    bot_api.push(message_update("Oi"))
    polling.poll_updates()
    return Conversation.get()


@pytest.fixture
def chat(caller, bot_api):
    return customer_chat(caller, bot_api)
