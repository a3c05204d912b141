"""Helpers for the reply engine tests: a fake sender on the WhatsApp type, an
agent on a channel, customers writing at a given time, and running the
reply job at a given time."""

from datetime import timedelta

import pytest

from agent_platform.channels import InboundMessage, get_sender, register_sender
from agent_platform.channels.fake import FakeSender
from agent_platform.models import Channel, Message, ReplyJob
from agent_platform.models.base import utcnow
from agent_platform.services import inbound as inbound_service
from agent_platform.services import replies
from conversations_helpers import WA_SETTINGS, data, make_channel

# Every test starts its clock here; a whole minute so offsets read well.
T0 = utcnow().replace(second=0, microsecond=0)


def at(seconds):
    return T0 + timedelta(seconds=seconds)


@pytest.fixture
def fake():
    """A FakeSender for whatsapp channels (the real sender, if any, is put back)."""
    previous = get_sender("whatsapp")
    sender = FakeSender()
    register_sender("whatsapp", sender)
    yield sender
    if previous is not None:
        register_sender("whatsapp", previous)
    else:
        from agent_platform.channels import unregister_sender

        unregister_sender("whatsapp")


def make_agent(caller, settings=None, **fields):
    body = {"name": "Ana", **fields}
    agent = data(caller.post("/v1/agents", json=body), 201)
    if settings:
        data(caller.put(f"/v1/agents/{agent['id']}/settings", json=settings))
    return agent["id"]


def add_qa(caller, agent_id, question, answer):
    body = {"type": "qa", "question": question, "answer": answer}
    return data(caller.post(f"/v1/agents/{agent_id}/trainings", json=body), 201)["id"]


def add_text(caller, agent_id, content, title=None):
    body = {"type": "text", "content": content, **({"title": title} if title else {})}
    return data(caller.post(f"/v1/agents/{agent_id}/trainings", json=body), 201)["id"]


def agent_channel(caller, agent_id, name="WhatsApp"):
    return make_channel(caller, name=name, settings=WA_SETTINGS, agent_id=agent_id)


_counter = iter(range(1, 10**9))


def customer_says(channel_id, text, when, sender_id="5511933334444", **values):
    """A customer's message through receive_inbound, at `when`; the stored message."""
    channel = Channel.get_by_id(channel_id)
    external_id = values.pop("external_id", f"wamid.{next(_counter)}")
    message = InboundMessage(external_id=external_id, sender_id=sender_id, text=text, **values)
    return inbound_service.receive_inbound(channel, message, now=when).message


def run_replies(when):
    return replies.run_due_replies(now=when)


def outbound(conversation_id):
    """The conversation's outbound messages, oldest first."""
    return list(
        Message.select()
        .where(Message.conversation == conversation_id, Message.direction == "outbound")
        .order_by(Message.created_at, Message.id)
    )


def texts(conversation_id):
    return [message.text for message in outbound(conversation_id)]


def jobs(conversation_id):
    return list(ReplyJob.of_conversation(conversation_id))


def conversation_of(caller, message):
    return data(caller.get(f"/v1/conversations/{message.conversation_id}"))
