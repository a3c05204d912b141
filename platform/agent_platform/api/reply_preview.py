"""Reply preview: what the engine would give the provider for the next reply."""

from flask import g
from flask.views import MethodView

from ..services import reply_preview
from .blueprint import ApiBlueprint
from .schemas.replies import ReplyPreviewSchema

blp = ApiBlueprint(
    "reply-preview",
    __name__,
    url_prefix="/conversations",
    description="What the agent would be asked for the next reply (debugging).",
)


@blp.route("/<conversation_id>/reply-preview")
class ReplyPreview(MethodView):
    @blp.scope("agents:read")
    @blp.response(200, ReplyPreviewSchema)
    @blp.errors(404)
    def get(self, conversation_id):
        """Preview the prompt and provider request of the next reply (nothing is sent)"""
        return reply_preview.preview(g.workspace_id, conversation_id)
