"""Chats: the live conversations, human handoff, and message edits."""

from flask import g
from flask.views import MethodView

from ..services import conversations, messages
from .blueprint import ApiBlueprint
from .pagination import paginated
from .schemas.conversations import ChatListQuery, ConversationSchema, HandoffSchema
from .schemas.messages import MessageEditSchema, MessageSchema

blp = ApiBlueprint(
    "chats",
    __name__,
    url_prefix="/chats",
    description="Live chats (open and handoff conversations) and human handoff.",
)


@blp.route("")
class Chats(MethodView):
    @blp.scope("chats:write")
    @blp.arguments(ChatListQuery, location="query")
    @blp.response(200, paginated(ConversationSchema))
    @blp.errors(400)
    def get(self, query):
        """List open and handoff conversations, most recent activity first"""
        return conversations.list_chats(g.workspace_id, **query)


@blp.route("/<conversation_id>/handoff")
class Handoff(MethodView):
    @blp.scope("chats:write")
    @blp.arguments(HandoffSchema, required=False)
    @blp.response(200, ConversationSchema)
    @blp.errors(400, 404, 409)
    def post(self, values, conversation_id):
        """A human takes the chat over: the agent is silent until the handoff completes.

        With `assigned_to`, that person holds it: taking a handoff nobody holds
        assigns it, taking one they hold changes nothing, and one held by
        someone else is 409 CONVERSATION_HELD naming who."""
        return conversations.take_over(g.workspace_id, conversation_id, values.get("assigned_to"))


@blp.route("/<conversation_id>/handoff/complete")
class CompleteHandoff(MethodView):
    @blp.scope("chats:write")
    @blp.response(200, ConversationSchema)
    @blp.errors(404, 409)
    def post(self, conversation_id):
        """Give the chat back to the agent"""
        return conversations.transition(g.workspace_id, conversation_id, "complete_handoff")


@blp.route("/<conversation_id>/messages/<message_id>")
class ChatMessage(MethodView):
    @blp.scope("chats:write")
    @blp.arguments(MessageEditSchema)
    @blp.response(200, MessageSchema)
    @blp.errors(400, 404, 409)
    def put(self, changes, conversation_id, message_id):
        """Edit a message of the chat (text, or a media message's caption)"""
        return messages.edit_message(
            g.workspace_id, message_id, changes, conversation_id=conversation_id
        )
