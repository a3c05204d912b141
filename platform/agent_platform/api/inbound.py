"""Callbacks of the messaging networks: no API key (the network signs its
requests), not rate limited per key but bounded per channel."""

import json

import marshmallow as ma
from flask import Response, current_app, request
from flask.views import MethodView
from marshmallow import fields

from ..channels.whatsapp import intake
from .blueprint import ApiBlueprint
from .ratelimit import SlidingWindowLimiter

blp = ApiBlueprint(
    "inbound",
    __name__,
    url_prefix="/inbound",
    description="Callback URLs of the messaging networks (signed by the network, no API key).",
)

CHALLENGE_RESPONSE = {
    "description": "The hub.challenge value, as it was sent",
    "content": {"text/plain": {"schema": {"type": "string"}}},
}
EVENTS_BODY = {
    "required": True,
    "description": "A WhatsApp Cloud API webhook payload, signed in X-Hub-Signature-256",
    "content": {"application/json": {"schema": {"type": "object"}}},
}


class SubscriptionQuery(ma.Schema):
    class Meta:
        unknown = ma.EXCLUDE

    mode = fields.String(data_key="hub.mode")
    verify_token = fields.String(data_key="hub.verify_token")
    challenge = fields.String(data_key="hub.challenge")


class ReceivedSchema(ma.Schema):
    messages = fields.Integer(metadata={"description": "New messages stored"})
    duplicates = fields.Integer(metadata={"description": "Messages already stored (redelivered)"})
    statuses = fields.Integer()
    reactions = fields.Integer()
    notices = fields.Integer(metadata={"description": "Entries written to the channel's log"})
    failed = fields.Integer(metadata={"description": "Items that could not be stored (logged)"})


def _bound():
    """The per-channel limiter's hit function (one limiter per app)."""
    limiter = current_app.extensions.get("inbound_limiter")
    if limiter is None:
        per_minute = current_app.config["INBOUND_MAX_REQUESTS_PER_MINUTE"]
        limiter = current_app.extensions.setdefault(
            "inbound_limiter", SlidingWindowLimiter(per_minute, 60)
        )
    return limiter.hit


@blp.route("/whatsapp/<channel_id>")
class WhatsAppCallback(MethodView):
    @blp.public
    @blp.arguments(SubscriptionQuery, location="query")
    @blp.response(200)
    @blp.doc(responses={"200": CHALLENGE_RESPONSE})
    @blp.errors(403, 404)
    def get(self, query, channel_id):
        """WhatsApp subscription check: hub.challenge back when hub.verify_token matches"""
        challenge = intake.verify_subscription(
            channel_id, query.get("mode"), query.get("verify_token"), query.get("challenge")
        )
        return Response(challenge, mimetype="text/plain")

    @blp.public
    @blp.response(200, ReceivedSchema)
    @blp.doc(requestBody=EVENTS_BODY)
    @blp.errors(400, 401, 404, 413, 429)
    def post(self, channel_id):
        """WhatsApp events (messages, statuses, notices), signed with the app secret"""
        signature = request.headers.get("X-Hub-Signature-256")
        counts = intake.receive(channel_id, request.get_data(), signature, bound=_bound())
        # Rendered here: the hottest route skips the schema's generic dump.
        return Response(json.dumps({"data": counts}), mimetype="application/json")
