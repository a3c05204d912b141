"""A channel type as a new module under channels/ would add it: the whole of
an SMS gateway's adapter, for tests/test_channel_contract.py (which puts this
folder on the channels package's path in a process of its own)."""

import json

from agent_platform import formats
from agent_platform.channels.adapters import Adapter, register_adapter
from agent_platform.channels.neutral import InboundMessage
from agent_platform.channels.senders import SendResult
from agent_platform.models import Channel
from agent_platform.services.inbound import receive_inbound

SENT = []  # (chat, text) of every message "sent"


class SmsAdapter(Adapter):
    type = "sms"
    order = 5
    settings = {"sender_id": formats.text(11), "api_key": formats.text(100)}
    secret_settings = ("api_key",)
    settings_doc = "sender_id, api_key*"
    link_setting, link_prefix = "sender_id", "sms:"
    identity = staticmethod(formats.pattern(r"^[0-9]{6,15}$", "a phone number's digits"))
    text_limit = 160

    def missing_settings(self, settings):
        return [] if settings.get("api_key") else ["api_key"]

    def send(self, channel, message):
        SENT.append(message.text)
        return SendResult(external_id=f"sms-{len(SENT)}")

    def receive(self, channel_id, callback, bound=None):
        body = json.loads(callback.body)
        channel = Channel.active_by_id(channel_id)
        inbound = InboundMessage(body["id"], body["from"], text=body["text"])
        return {"messages": int(not receive_inbound(channel, inbound).duplicate)}


register_adapter(SmsAdapter())
