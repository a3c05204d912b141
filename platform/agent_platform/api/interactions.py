"""Interactions: the conversations as the team's work items."""

from flask import g
from flask.views import MethodView

from ..services import interactions, messages
from .blueprint import ApiBlueprint
from .pagination import paginated
from .schemas.interactions import (
    CloseManySchema,
    CloseOutcomeSchema,
    InteractionListQuery,
    InteractionSchema,
)
from .schemas.messages import MessageListQuery, MessageSchema

blp = ApiBlueprint(
    "interactions",
    __name__,
    url_prefix="/interactions",
    description="Conversations as work items: filtered queries and closing.",
)


@blp.route("")
class Interactions(MethodView):
    @blp.scope("interactions:read")
    @blp.arguments(InteractionListQuery, location="query")
    @blp.response(200, paginated(InteractionSchema))
    @blp.errors(400)
    def get(self, query):
        """Query interactions with combinable filters"""
        return interactions.query_interactions(g.workspace_id, **query)


@blp.route("/close")
class CloseMany(MethodView):
    @blp.scope("interactions:write")
    @blp.arguments(CloseManySchema)
    @blp.response(200, CloseOutcomeSchema)
    @blp.errors(400)
    def post(self, values):
        """Close many interactions at once (each raises conversation.closed)"""
        return interactions.close_interactions(g.workspace_id, values["conversation_ids"])


@blp.route("/<conversation_id>")
class InteractionById(MethodView):
    @blp.scope("interactions:read")
    @blp.response(200, InteractionSchema)
    @blp.errors(404)
    def get(self, conversation_id):
        """Get an interaction"""
        return interactions.get_interaction(g.workspace_id, conversation_id)


@blp.route("/<conversation_id>/messages")
class InteractionMessages(MethodView):
    @blp.scope("interactions:read")
    @blp.arguments(MessageListQuery, location="query")
    @blp.response(200, paginated(MessageSchema))
    @blp.errors(400, 404)
    def get(self, query, conversation_id):
        """An interaction's messages (newest first unless order=asc)"""
        return messages.list_messages(g.workspace_id, conversation_id, **query)


@blp.route("/<conversation_id>/close")
class CloseOne(MethodView):
    @blp.scope("interactions:write")
    @blp.response(200, InteractionSchema)
    @blp.errors(404, 409)
    def post(self, conversation_id):
        """Close an interaction (from open or handoff; conversation.closed)"""
        return interactions.close_interaction(g.workspace_id, conversation_id)
