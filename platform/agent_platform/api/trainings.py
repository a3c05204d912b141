"""Trainings: an agent's knowledge, and searching it."""

from flask import Response, current_app, g, request
from flask.views import MethodView

from ..errors import ValidationError
from ..models.trainings import MAX_TITLE
from ..services import trainings
from .blueprint import ApiBlueprint
from .pagination import paginated
from .schemas.messages import IdempotencyHeaders
from .schemas.trainings import (
    TrainingCreateSchema,
    TrainingHitSchema,
    TrainingListQuery,
    TrainingSchema,
    TrainingSearchQuery,
    TrainingUpdateSchema,
)

blp = ApiBlueprint(
    "trainings",
    __name__,
    url_prefix="",
    description="Agent knowledge: texts, Q&A pairs, web pages and documents, searchable.",
)
# Trainings are created from JSON, a document from multipart/form-data (its
# fields plus `file`): one requestBody documented with both media types.
blp.DEFAULT_LOCATION_CONTENT_TYPE_MAPPING = {
    **ApiBlueprint.DEFAULT_LOCATION_CONTENT_TYPE_MAPPING,
    "json_or_form": "application/json",
}
DOCUMENT_FORM = {
    "type": "object",
    "required": ["type", "file"],
    "properties": {
        "type": {"type": "string", "enum": ["document"]},
        "title": {"type": "string", "maxLength": MAX_TITLE},
        "file": {"type": "string", "format": "binary", "description": ".txt, .md, .html or .csv"},
    },
    "additionalProperties": False,  # as the JSON bodies: an unknown field is refused
}


@blp.route("/agents/<agent_id>/trainings")
class AgentTrainings(MethodView):
    @blp.scope("trainings:read")
    @blp.arguments(TrainingListQuery, location="query")
    @blp.response(200, paginated(TrainingSchema))
    @blp.errors(400, 404)
    def get(self, query, agent_id):
        """List an agent's trainings"""
        return trainings.list_trainings(g.workspace_id, agent_id, **query)

    @blp.scope("trainings:write")
    @blp.arguments(IdempotencyHeaders, location="headers")
    @blp.arguments(TrainingCreateSchema, location="json_or_form")
    @blp.doc(requestBody={"content": {"multipart/form-data": {"schema": DOCUMENT_FORM}}})
    @blp.response(201, TrainingSchema)
    @blp.errors(400, 404, 409)
    def post(self, headers, values, agent_id):
        """Add a training (JSON; a document as multipart/form-data with `file`)

        Idempotency-Key honoured."""
        training, replayed = trainings.create_training_once(
            g.workspace_id,
            agent_id,
            values,
            _upload(),
            key=headers.get("idempotency_key"),
            ttl_hours=current_app.config["MESSAGES_IDEMPOTENCY_HOURS"],
        )
        return training, 201, {"Idempotent-Replayed": "true" if replayed else "false"}


def _upload():
    """The document's one `file` part, or None. Any other file part is
    refused by name, as an unknown text field is (the schema sees only
    those), rather than silently dropped."""
    for name in request.files:
        if name != "file":
            raise ValidationError(name, "Unknown field (a document is sent as `file`).")
    uploads = request.files.getlist("file")
    if len(uploads) > 1:
        raise ValidationError("file", f"send one file, not {len(uploads)}")
    return uploads[0] if uploads else None


@blp.route("/agents/<agent_id>/trainings/search")
class SearchTrainings(MethodView):
    @blp.scope("trainings:read")
    @blp.arguments(TrainingSearchQuery, location="query")
    @blp.response(200, TrainingHitSchema(many=True))
    @blp.errors(400, 404)
    def get(self, query, agent_id):
        """Search an agent's knowledge (best first, with a relevance score)"""
        return trainings.search_streamed(g.workspace_id, agent_id, **query)


@blp.route("/trainings/<training_id>")
class TrainingById(MethodView):
    @blp.scope("trainings:read")
    @blp.response(200, TrainingSchema)
    @blp.errors(404)
    def get(self, training_id):
        """Get a training"""
        return trainings.get_training(g.workspace_id, training_id)

    @blp.scope("trainings:write")
    @blp.arguments(TrainingUpdateSchema)
    @blp.response(200, TrainingSchema)
    @blp.errors(400, 404)
    def patch(self, changes, training_id):
        """Update a training (a url training fetches its page again when url is given)"""
        return trainings.update_training(g.workspace_id, training_id, changes)

    @blp.scope("trainings:write")
    @blp.response(204)
    @blp.errors(404)
    def delete(self, training_id):
        """Delete a training"""
        trainings.delete_training(g.workspace_id, training_id)
        return Response(status=204)
