"""Messages: a conversation's messages, and each message by its id."""

from flask import current_app, g
from flask.views import MethodView

from ..services import messages
from .blueprint import ApiBlueprint
from .pagination import paginated
from .schemas.messages import (
    IdempotencyHeaders,
    MessageCreateSchema,
    MessageEditSchema,
    MessageListQuery,
    MessageSchema,
)

blp = ApiBlueprint(
    "messages",
    __name__,
    url_prefix="",
    description="Messages of conversations: send, read, edit, delete.",
)


@blp.route("/conversations/<conversation_id>/messages")
class ConversationMessages(MethodView):
    @blp.scope("messages:read")
    @blp.arguments(MessageListQuery, location="query")
    @blp.response(200, paginated(MessageSchema))
    @blp.errors(400, 404)
    def get(self, query, conversation_id):
        """List a conversation's messages (newest first unless order=asc)"""
        return messages.list_messages(g.workspace_id, conversation_id, **query)

    @blp.scope("messages:write", "chats:write")
    @blp.arguments(IdempotencyHeaders, location="headers")
    @blp.arguments(MessageCreateSchema)
    @blp.response(201, MessageSchema)
    @blp.errors(400, 404, 409)
    def post(self, headers, values, conversation_id):
        """Send a message (queued, then sent through the channel); Idempotency-Key honoured"""
        message, replayed = messages.post_message(
            g.workspace_id,
            conversation_id,
            values,
            idempotency_key=headers.get("idempotency_key"),
            ttl_hours=current_app.config["MESSAGES_IDEMPOTENCY_HOURS"],
        )
        return message, 201, {"Idempotent-Replayed": "true" if replayed else "false"}


@blp.route("/messages/<message_id>")
class MessageById(MethodView):
    @blp.scope("messages:read")
    @blp.response(200, MessageSchema)
    @blp.errors(404)
    def get(self, message_id):
        """Get a message"""
        return messages.get_message(g.workspace_id, message_id)

    @blp.scope("chats:write")
    @blp.arguments(MessageEditSchema)
    @blp.response(200, MessageSchema)
    @blp.errors(400, 404, 409)
    def patch(self, changes, message_id):
        """Edit an outbound message's text or caption (the history is kept)"""
        return messages.edit_message(g.workspace_id, message_id, changes)

    @blp.scope("messages:delete", "chats:write")
    @blp.response(200, MessageSchema)
    @blp.errors(404)
    def delete(self, message_id):
        """Delete a message (its content is removed; the record stays, marked deleted)"""
        return messages.delete_message(g.workspace_id, message_id)
