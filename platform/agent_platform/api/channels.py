"""Channels: where customers write from, their settings, QR code and widget."""

from flask import Response, current_app, g
from flask.views import MethodView

from ..services import channels
from .blueprint import ApiBlueprint
from .pagination import paginated
from .schemas.channels import (
    ChannelCreateSchema,
    ChannelListQuery,
    ChannelSchema,
    ChannelSettingsSchema,
    ChannelUpdateSchema,
    ConnectSchema,
    QrCodeQuery,
    SettingsBodySchema,
    WidgetSchema,
)

blp = ApiBlueprint(
    "channels",
    __name__,
    url_prefix="/channels",
    description="Channels (WhatsApp, Telegram, e-mail, website), their settings, QR and widget.",
)


QR_RESPONSE = {
    "description": "The QR image; the X-Channel-Link header holds the link it encodes",
    "content": {
        "image/png": {"schema": {"type": "string", "format": "binary"}},
        "image/svg+xml": {"schema": {"type": "string", "description": "with format=svg"}},
    },
}


def _public_url():
    return current_app.config["SERVER_PUBLIC_URL"]


@blp.route("")
class Channels(MethodView):
    @blp.scope("channels:read")
    @blp.arguments(ChannelListQuery, location="query")
    @blp.response(200, paginated(ChannelSchema))
    @blp.errors(400)
    def get(self, query):
        """List active channels"""
        return channels.list_channels(g.workspace_id, **query)

    @blp.scope("channels:write")
    @blp.arguments(ChannelCreateSchema)
    @blp.response(201, ChannelSchema)
    @blp.errors(400, 409)
    def post(self, values):
        """Create a channel (403 PLAN_LIMIT_REACHED beyond the plan's channels)"""
        limit = current_app.config["PLAN_MAX_CHANNELS"]
        return channels.create_channel(g.workspace_id, values, max_channels=limit)


@blp.route("/<channel_id>")
class ChannelById(MethodView):
    @blp.scope("channels:read")
    @blp.response(200, ChannelSchema)
    @blp.errors(404)
    def get(self, channel_id):
        """Get a channel"""
        return channels.get_channel(g.workspace_id, channel_id)

    @blp.scope("channels:write")
    @blp.arguments(ChannelUpdateSchema)
    @blp.response(200, ChannelSchema)
    @blp.errors(400, 404, 409)
    def patch(self, changes, channel_id):
        """Rename a channel or change some of its settings"""
        return channels.update_channel(g.workspace_id, channel_id, changes)

    @blp.scope("channels:write")
    @blp.response(204)
    @blp.errors(404)
    def delete(self, channel_id):
        """Delete a channel (it is deactivated; its conversations keep their history)"""
        channels.delete_channel(g.workspace_id, channel_id)
        return Response(status=204)


@blp.route("/<channel_id>/settings")
class ChannelSettings(MethodView):
    @blp.scope("channels:read")
    @blp.response(200, ChannelSettingsSchema)
    @blp.errors(404)
    def get(self, channel_id):
        """Get a channel's settings (secrets only as <name>_set)"""
        return channels.get_channel(g.workspace_id, channel_id)

    @blp.scope("channels:write")
    @blp.arguments(SettingsBodySchema)
    @blp.response(200, ChannelSettingsSchema)
    @blp.errors(400, 404, 409)
    def put(self, settings, channel_id):
        """Replace a channel's settings (409 if a connected channel would lack one it needs)"""
        return channels.replace_settings(g.workspace_id, channel_id, settings)


@blp.route("/<channel_id>/connect")
class ConnectChannel(MethodView):
    @blp.scope("channels:write")
    @blp.arguments(ConnectSchema)
    @blp.response(200, ChannelSchema)
    @blp.errors(400, 404, 409)
    def post(self, values, channel_id):
        """Connect a channel to an agent (409 CHANNEL_ALREADY_CONNECTED if another has it)"""
        return channels.connect(g.workspace_id, channel_id, values["agent_id"])


@blp.route("/<channel_id>/disconnect")
class DisconnectChannel(MethodView):
    @blp.scope("channels:write")
    @blp.response(200, ChannelSchema)
    @blp.errors(404)
    def post(self, channel_id):
        """Disconnect a channel from its agent (idempotent)"""
        return channels.disconnect(g.workspace_id, channel_id)


@blp.route("/<channel_id>/qrcode")
class ChannelQrCode(MethodView):
    @blp.scope("channels:read")
    @blp.arguments(QrCodeQuery, location="query")
    @blp.response(200)
    @blp.doc(responses={"200": QR_RESPONSE})
    @blp.errors(400, 404, 409)
    def get(self, query, channel_id):
        """QR code of the channel's public link (wa.me, t.me, mailto or widget page)"""
        image, mimetype, link = channels.qrcode(
            g.workspace_id, channel_id, _public_url(), query["format"], query["scale"]
        )
        return Response(image, mimetype=mimetype, headers={"X-Channel-Link": link})


@blp.route("/<channel_id>/widget")
class ChannelWidget(MethodView):
    @blp.scope("channels:read")
    @blp.response(200, WidgetSchema)
    @blp.errors(404)
    def get(self, channel_id):
        """Embed snippet and configuration of a website channel's widget"""
        return channels.widget(g.workspace_id, channel_id, _public_url())
