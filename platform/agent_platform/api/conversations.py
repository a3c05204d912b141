"""Conversations: listing, starting one, and the moves of its state machine."""

from flask import g
from flask.views import MethodView

from ..services import conversations
from .blueprint import ApiBlueprint
from .pagination import paginated
from .schemas.conversations import (
    AssignSchema,
    ConversationCreateSchema,
    ConversationListQuery,
    ConversationSchema,
    TransferSchema,
)

blp = ApiBlueprint(
    "conversations",
    __name__,
    url_prefix="/conversations",
    description="Conversations: open → handoff → open, open/handoff → closed → open.",
)


@blp.route("")
class Conversations(MethodView):
    @blp.scope("conversations:read")
    @blp.arguments(ConversationListQuery, location="query")
    @blp.response(200, paginated(ConversationSchema))
    @blp.errors(400)
    def get(self, query):
        """List conversations, most recent activity first"""
        return conversations.list_conversations(g.workspace_id, **query)

    @blp.scope("chats:write")
    @blp.arguments(ConversationCreateSchema)
    @blp.response(201, ConversationSchema)
    @blp.errors(400, 404, 409)
    def post(self, values):
        """Start a conversation with a contact on a channel"""
        return conversations.create_conversation(g.workspace_id, values)


@blp.route("/<conversation_id>")
class ConversationById(MethodView):
    @blp.scope("conversations:read")
    @blp.response(200, ConversationSchema)
    @blp.errors(404)
    def get(self, conversation_id):
        """Get a conversation"""
        return conversations.get_conversation(g.workspace_id, conversation_id)


@blp.route("/<conversation_id>/close")
class CloseConversation(MethodView):
    @blp.scope("chats:write")
    @blp.response(200, ConversationSchema)
    @blp.errors(404, 409)
    def post(self, conversation_id):
        """Close a conversation (from open or handoff)"""
        return conversations.transition(g.workspace_id, conversation_id, "close")


@blp.route("/<conversation_id>/reopen")
class ReopenConversation(MethodView):
    @blp.scope("chats:write")
    @blp.response(200, ConversationSchema)
    @blp.errors(404, 409)
    def post(self, conversation_id):
        """Reopen a closed conversation"""
        return conversations.transition(g.workspace_id, conversation_id, "reopen")


@blp.route("/<conversation_id>/assign")
class AssignConversation(MethodView):
    @blp.scope("chats:write")
    @blp.arguments(AssignSchema)
    @blp.response(200, ConversationSchema)
    @blp.errors(400, 404)
    def post(self, values, conversation_id):
        """Assign a conversation to a human operator, or to nobody (null)"""
        return conversations.assign(g.workspace_id, conversation_id, values["assigned_to"])


@blp.route("/<conversation_id>/transfer")
class TransferConversation(MethodView):
    @blp.scope("chats:write")
    @blp.arguments(TransferSchema)
    @blp.response(200, ConversationSchema)
    @blp.errors(400, 404, 409)
    def post(self, values, conversation_id):
        """Transfer a conversation to another agent of the workspace"""
        return conversations.transfer(g.workspace_id, conversation_id, values["agent_id"])
