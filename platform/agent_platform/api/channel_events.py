"""A channel's event log (what its network said that is not a message) and
its credential check."""

from flask import g
from flask.views import MethodView

from ..services import channels
from .blueprint import ApiBlueprint
from .pagination import paginated
from .schemas.channel_events import ChannelEventQuery, ChannelEventSchema, VerificationSchema

blp = ApiBlueprint(
    "channel_events",
    __name__,
    url_prefix="/channels",
    description="A channel's network event log and credential check.",
)


@blp.route("/<channel_id>/events")
class ChannelEvents(MethodView):
    @blp.scope("channels:read")
    @blp.arguments(ChannelEventQuery, location="query")
    @blp.response(200, paginated(ChannelEventSchema))
    @blp.errors(400, 404)
    def get(self, query, channel_id):
        """The channel's event log: network notices and errors, skipped payloads, checks"""
        return channels.list_events(g.workspace_id, channel_id, **query)


@blp.route("/<channel_id>/verify")
class VerifyChannel(MethodView):
    @blp.scope("channels:write")
    @blp.response(200, VerificationSchema)
    @blp.errors(404, 409)
    def post(self, channel_id):
        """Check the channel's credentials with its network (channel.connected or channel.error)"""
        return channels.verify(g.workspace_id, channel_id)
