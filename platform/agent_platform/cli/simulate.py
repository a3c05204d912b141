"""`agent-platform simulate "TEXT"`: a customer's WhatsApp message played
through the real signed intake of the running service, and the agent's
answer printed as it leaves, without Meta.

The command reads the channel's app secret from the database (it runs on
the service's machine, with its configuration), builds the webhook body Meta
sends, signs it as Meta does, and POSTs it to the running service; then it
waits for the agent's outbound messages in that conversation.

With no WhatsApp channel connected to an agent yet, it makes the sandbox
(services.sandbox): an agent that knows a few answers, on a channel whose
replies are recorded instead of sent to Meta, so a fresh install answers
at once.
"""

import json
import time
import uuid

import click
import requests

from ..channels.whatsapp.signature import expected_signature
from ..models import Channel, Contact, Conversation, Message
from ..services import sandbox, users
from .base import main, with_app

CUSTOMER = "15557014422"


@main.command()
@click.argument("text")
@click.option(
    "--channel",
    "channel_id",
    help="WhatsApp channel id (default: the first one with an agent, else the sandbox).",
)
@click.option(
    "--from", "sender", default=CUSTOMER, show_default=True, help="Customer's number, digits."
)
@click.option("--url", help="The running service (default: server.public_url).")
@click.option("--wait", default=30.0, show_default=True, help="Seconds to wait for the answer.")
@with_app()
def simulate(app, text, channel_id, sender, url, wait):
    """Play a customer's WhatsApp message through the running service and print the answer."""
    channel = _channel(channel_id)
    _check_not_held(channel, sender, app.config["SERVER_PUBLIC_URL"])
    body = _webhook_body(channel, sender, text)
    base = (url or app.config["SERVER_PUBLIC_URL"]).rstrip("/")
    _post(f"{base}/inbound/whatsapp/{channel.id}", body, channel.settings.get("app_secret", ""))
    click.echo(f"Customer (+{sender}): {text}")
    answers = _answers(sender, channel, wait)
    if not answers:
        raise click.ClickException(
            f"no answer within {wait:g} s: is the agent active, and the conversation not "
            "held by a human? (GET /v1/conversations shows it)"
        )
    for message in answers:
        click.echo(f"Agent ({message.status}): {message.text}")


def _channel(channel_id):
    query = Channel.select().where(
        Channel.type == "whatsapp",
        Channel.is_active == True,  # noqa: E712
    )
    if channel_id:
        query = query.where(Channel.id == channel_id)
    else:
        query = query.where(Channel.agent.is_null(False))
    channel = query.order_by(Channel.created_at).first()
    if channel is None and not channel_id:
        channel = _new_sandbox()
    if channel is None:
        raise click.ClickException(f"no active WhatsApp channel {channel_id}")
    if not channel.settings.get("sandbox"):
        click.echo(
            f"Channel {channel.id} is not a sandbox: its answer goes to the Graph API for real.",
            err=True,
        )
    return channel


def _check_not_held(channel, sender, public_url):
    """A conversation people hold gets no answer from the agent: said at
    once, with how to hand it back, and the message is not sent."""
    contact = Contact.get_or_none(
        Contact.workspace == channel.workspace_id, Contact.phone == f"+{sender}"
    )
    current = contact and Conversation.current_for(channel.workspace_id, contact.id, channel.id)
    if not current or current.status != "handoff":
        return
    holder = current.assigned_to and users.display_name(channel.workspace_id, current.assigned_to)
    holder = holder or "a person"
    raise click.ClickException(
        f"{holder} holds conversation {current.id} (a human took it over): the agent stays "
        "silent until it is handed back. Hand it back in the inbox "
        f"({public_url.rstrip('/')}/app/conversations/{current.id}, Hand back) or with "
        f"POST /v1/chats/{current.id}/handoff/complete; then simulate again."
    )


def _new_sandbox():
    try:
        channel = sandbox.create_sandbox()
    except sandbox.SandboxError as error:
        raise click.ClickException(str(error)) from error
    click.echo(
        f"No WhatsApp channel had an agent: created the sandbox, channel {channel.id} "
        f"({channel.name}) with the agent {sandbox.AGENT_NAME}, which knows "
        f"{len(sandbox.KNOWLEDGE)} answers; its replies are recorded, not sent.",
        err=True,
    )
    return channel


def _webhook_body(channel, sender, text):
    """The body Meta POSTs for one customer text (WhatsApp Cloud API webhook)."""
    message = {
        "from": sender, "id": f"wamid.SIMULATED{uuid.uuid4().hex}",
        "timestamp": str(int(time.time())), "type": "text", "text": {"body": text},
    }  # fmt: skip
    value = {
        "messaging_product": "whatsapp",
        "metadata": {"phone_number_id": channel.settings.get("phone_number_id", "")},
        "contacts": [{"profile": {"name": "Simulated customer"}, "wa_id": sender}],
        "messages": [message],
    }
    entry = {"id": "simulated", "changes": [{"field": "messages", "value": value}]}
    document = {"object": "whatsapp_business_account", "entry": [entry]}
    return json.dumps(document).encode()


def _post(url, body, app_secret):
    signature = expected_signature(body, app_secret)
    headers = {"Content-Type": "application/json", "X-Hub-Signature-256": signature}
    try:
        response = requests.post(url, data=body, headers=headers, timeout=10)
    except requests.RequestException as error:
        raise click.ClickException(
            f"the service at {url} does not answer ({error}): is it running?"
        ) from error
    if response.status_code != 200:
        raise click.ClickException(f"the service answered {response.status_code}: {response.text}")


def _answers(sender, channel, wait):
    """The agent's messages to `sender` after this one, once they stop coming."""
    deadline, found, started = time.monotonic() + wait, [], None
    while time.monotonic() < deadline:
        found = _latest_answers(sender, channel)
        if found and started is None:
            started = time.monotonic()
        if started is not None and time.monotonic() - started > 1.0:
            return found  # a greeting and its answer come a moment apart
        time.sleep(0.2)
    return found


def _latest_answers(sender, channel):
    contact = Contact.get_or_none(
        Contact.workspace == channel.workspace_id, Contact.phone == f"+{sender}"
    )
    if contact is None:
        return []
    last_in = (
        Message.select().where(Message.contact_id == contact.id, Message.direction == "inbound")
        .order_by(Message.created_at.desc()).first()
    )  # fmt: skip
    if last_in is None:
        return []
    return list(
        Message.select()
        .where(
            Message.conversation == last_in.conversation_id,
            Message.direction == "outbound",
            Message.sender_type == "agent",
            Message.created_at >= last_in.created_at,
        )
        .order_by(Message.created_at, Message.id)
    )
