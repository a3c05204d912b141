"""models.fastsql: a message or event built and inserted without peewee's
constructor reads back exactly as one made with it."""

from datetime import datetime

import pytest

from agent_platform.db import transaction
from agent_platform.models import Message
from agent_platform.models.fastsql import fetch_one, insert, new
from conversations_helpers import inbound, make_channel

MOMENT = datetime(2026, 1, 2, 3, 4, 5, 678901)


def test_new_holds_the_values_and_the_defaults_peewee_would(caller):
    conversation_id = inbound(make_channel(caller)["id"], "wamid.1").message.conversation_id
    values = {
        "conversation": conversation_id,
        "direction": "inbound",
        "sender_type": "contact",
        "status": "received",
        "text": "Oi",
        "metadata": {"network_timestamp": "2026-01-02T03:04:05.000000Z"},
        "created_at": MOMENT,
        "updated_at": MOMENT,
    }
    ours, peewees = new(Message, values), Message(**values)
    for name in Message._meta.fields:
        if name != "id":
            assert getattr(ours, name) == getattr(peewees, name), name
    assert ours.id != peewees.id and len(ours.id) == 36
    with transaction():
        insert(ours)
    stored = fetch_one(Message, 'SELECT * FROM "message" WHERE "id" = ?', ours.id)
    assert stored.as_dict() == ours.as_dict()


def test_an_unknown_field_is_refused():
    with pytest.raises(TypeError, match="no field"):
        new(Message, {"colour": "blue"})
