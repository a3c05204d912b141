"""Sending through the Cloud API: POST {graph}/{phone_number_id}/messages.

Text (with `metadata.buttons` as an interactive message: whatsapp/buttons.py),
and image/audio/video/document by link (the message's media_url, which
Meta fetches itself), with `context.message_id` when the message replies to
one the network knows. Meta's answer gives the message id that the status
webhooks will name. Called by the send job (services.sending), which stores
the outcome; nothing here writes to the database.

A channel with the `sandbox` setting sends nothing: the request it would
make (method, URL, the exact JSON body) is kept in the message's metadata
as `sandbox_request`, and the message counts as sent. It is the outbound
side of `agent-platform simulate`, to try an agent without Meta.
"""

import uuid

from ...models.contacts import Contact, ContactIdentity
from ...models.fastsql import fetch_one, scalar
from ..senders import SendError, SendResult
from .buttons import interactive
from .graph import GraphError, client
from .window import reengagement

CAPTIONED = ("image", "video", "document")
MEDIA = ("image", "audio", "video", "document")


class WhatsAppSender:
    def send(self, channel, message):
        if channel.settings.get("sandbox"):
            return _recorded(channel, message_body(message, recipient(channel, message)))
        token, number_id = _credentials(channel)
        body = message_body(message, recipient(channel, message))
        try:
            answer = client().post(f"{number_id}/messages", token, body)
        except GraphError as error:
            raise _send_error(error) from None
        sent = answer.get("messages")
        if not (
            isinstance(sent, list) and sent and isinstance(sent[0], dict) and sent[0].get("id")
        ):
            raise SendError("INVALID_RESPONSE", "The Graph API gave no message id", answer, True)
        return SendResult(external_id=str(sent[0]["id"]))


def _send_error(error):
    """Meta's error as the message's (its re-engagement refusal mapped)."""
    mapped = reengagement(error.as_dict())
    return SendError(mapped["code"], mapped["title"], mapped["details"], error.retryable)


def _recorded(channel, body):
    number_id = channel.settings.get("phone_number_id") or "PHONE_NUMBER_ID"
    request = {"method": "POST", "url": client().url(f"{number_id}/messages"), "json": body}
    return SendResult(f"wamid.sandbox.{uuid.uuid4().hex}", {"sandbox_request": request})


def missing_settings(settings):
    """The settings a WhatsApp channel needs to send that `settings` lack
    (a sandbox channel sends nowhere, so it needs none)."""
    if settings.get("sandbox"):
        return []
    return [name for name in ("phone_number_id", "access_token") if not settings.get(name)]


def _credentials(channel):
    settings = channel.settings
    missing = missing_settings(settings)
    if missing:
        raise SendError("CHANNEL_NOT_CONFIGURED", f"The channel has no {' or '.join(missing)}")
    return settings["access_token"], settings["phone_number_id"]


def recipient(channel, message):
    """The contact's WhatsApp id: the one first seen on this channel, else
    any of theirs, else the digits of their phone."""
    wa_id = ContactIdentity.address_on(message.contact_id, "whatsapp", channel.id)
    if wa_id:
        return wa_id
    contact = fetch_one(Contact, 'SELECT * FROM "contact" WHERE "id" = ?', message.contact_id)
    if contact is not None and contact.phone:
        return contact.phone.lstrip("+")
    raise SendError("NO_RECIPIENT", "The contact has no WhatsApp id or phone")


def message_body(message, to):
    """The Cloud API request body for a stored message."""
    body = {"messaging_product": "whatsapp", "recipient_type": "individual", "to": to}
    if message.type == "text" and (message.metadata or {}).get("buttons") is not None:
        body.update(type="interactive", interactive=interactive(message.text, message.metadata))
    elif message.type == "text":
        body.update(type="text", text={"body": message.text, "preview_url": False})
    elif message.type in MEDIA:
        media = {"link": message.media_url}
        if message.caption and message.type in CAPTIONED:
            media["caption"] = message.caption
        if message.type == "document" and (message.metadata or {}).get("filename"):
            media["filename"] = message.metadata["filename"]
        body.update({"type": message.type, message.type: media})
    elif message.type == "template":
        body.update(type="template", template=template_body(message.metadata["template"]))
    else:
        raise SendError("UNSUPPORTED_TYPE", f"A {message.type} message cannot be sent")
    replied = _replied_external_id(message)
    if replied:
        body["context"] = {"message_id": replied}
    return body


def _replied_external_id(message):
    if not message.reply_to_id:
        return None
    return scalar('SELECT "external_id" FROM "message" WHERE "id" = ?', message.reply_to_id)


def template_body(template):
    """The Cloud API's template object: name, language code, and the body's
    parameters in order, as text."""
    body = {"name": template["name"], "language": {"code": template["language"]}}
    parameters = template.get("parameters") or []
    if parameters:
        texts = [{"type": "text", "text": text} for text in parameters]
        body["components"] = [{"type": "body", "parameters": texts}]
    return body
