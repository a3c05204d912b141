"""A network callback the database cannot store: 503 with Retry-After, so
that the network sends it again, and nothing of it left behind (no part of
the batch, no item recorded as failed for good).

The connection is made read-only the way SQLite reports a read-only file
(PRAGMA query_only: SQLITE_READONLY at the first write statement, inside the
intake's shared transaction); the service must then drop that connection, so
the retry, on a new one, is stored. Served for real on a small disk in
test_storage.py."""

import json
import logging

import pytest

from agent_platform.db import database
from agent_platform.models import ChannelEvent, Message
from conftest import assert_error
from conversations_helpers import WA_SETTINGS, data, make_channel
from telegram_helpers import *  # noqa: F403  (the fixtures)
from telegram_helpers import deliver, telegram_channel
from telegram_stub import message_update
from whatsapp_helpers import messages_payload, sign, text


def whatsapp(caller, bot_api):
    channel = make_channel(caller, settings=dict(WA_SETTINGS))["id"]
    body = json.dumps(messages_payload(text("Oi", wamid="wamid.RO"))).encode()
    headers = {"X-Hub-Signature-256": sign(body), "Content-Type": "application/json"}
    return lambda: caller.client.post(f"/inbound/whatsapp/{channel}", data=body, headers=headers)


def telegram(caller, bot_api):
    channel = telegram_channel(caller, mode="webhook")["id"]
    update = {"update_id": 7, **message_update("Oi")}
    secret = bot_api.webhook["secret_token"]
    return lambda: deliver(caller.client, channel, update, secret)


@pytest.mark.sqlite_only(
    reason="a read-only SQLite connection (PRAGMA query_only) is the failure, "
    "and its cure a new connection; PostgreSQL's storage failures are the server's"
)
@pytest.mark.parametrize("network", [whatsapp, telegram])
def test_a_callback_the_database_cannot_store_is_503_and_sent_again(
    caller, bot_api, caplog, network
):
    post = network(caller, bot_api)
    database.execute_sql("PRAGMA query_only = 1")  # this thread's connection, the client's
    with caplog.at_level(logging.INFO):
        refused = post()
        assert_error(refused, 503, "STORAGE_UNAVAILABLE", "the database is read-only")
        assert refused.headers["Retry-After"] == "30"
        assert Message.select().count() == 0
        assert ChannelEvent.select().where(ChannelEvent.kind == "item_failed").count() == 0

        assert data(post())["messages"] == 1  # on a new connection
    assert Message.select().count() == 1
    logged = [(record.levelname, record.getMessage().split(":")[0]) for record in caplog.records]
    assert logged == [
        ("ERROR", f"The database {database.database} cannot take writes"),
        ("INFO", f"The database {database.database} takes writes again, after 0 s."),
    ]
