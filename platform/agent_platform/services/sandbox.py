"""The WhatsApp sandbox of `agent-platform simulate`: an agent that answers
from a few Q&A pairs, on a WhatsApp channel whose replies are recorded on
the message instead of sent to Meta (its `sandbox` setting; see
channels/whatsapp/sender.py). Made when a simulation finds no channel to
play on, so that a fresh install answers at once."""

import secrets

from ..models import Channel, Workspace
from . import agents, channels, trainings

CHANNEL_NAME = "WhatsApp sandbox"
AGENT_NAME = "Sandbox agent"
# What the sandbox agent knows.
KNOWLEDGE = (
    (
        "What are your opening hours?",
        "We are open Monday to Friday from 9:00 to 18:00, and on Saturday from 10:00 to 14:00.",
    ),
    ("Where are you located?", "You find us at 12 Harbour Street, next to the central station."),
    ("How can I pay?", "We accept cards, cash and bank transfers."),
)
# A made-up phone number id (the Graph API's ids are digits).
PHONE_NUMBER_ID = "100000000000001"


class SandboxError(Exception):
    """The sandbox cannot be made; the message says why."""


def create_sandbox():
    """A sandbox channel, in the oldest workspace, connected to a new agent
    that knows KNOWLEDGE. The app secret is random: the simulation reads it
    from the database to sign as Meta does."""
    workspace = Workspace.select().order_by(Workspace.created_at).first()
    if workspace is None:
        raise SandboxError("the database has no workspace yet: start the service first")
    agent = agents.create_agent(workspace.id, {"name": AGENT_NAME, "language": "en"})
    for question, answer in KNOWLEDGE:
        values = {"type": "qa", "question": question, "answer": answer}
        trainings.create_training(workspace.id, agent.id, values)
    settings = {
        "sandbox": True,
        "phone_number_id": PHONE_NUMBER_ID,
        "app_secret": secrets.token_hex(16),
        "verify_token": secrets.token_hex(16),
    }
    values = {"name": _free_name(workspace.id), "type": "whatsapp", "settings": settings}
    channel = channels.create_channel(workspace.id, values)
    return channels.connect(workspace.id, channel.id, agent.id)


def _free_name(workspace_id):
    name, number = CHANNEL_NAME, 1
    while Channel.named(workspace_id, name):
        number += 1
        name = f"{CHANNEL_NAME} {number}"
    return name
