"""What the agent asked back, and what it can learn from the humans."""

from flask import g
from flask.views import MethodView

from ..services import clarifications, unanswered
from .blueprint import ApiBlueprint
from .schemas.learning import ClarificationSchema, LearnSchema, UnansweredGroupSchema
from .schemas.trainings import TrainingSchema

blp = ApiBlueprint(
    "learning",
    __name__,
    url_prefix="",
    description="Clarifying questions the agent asked, and the questions it left to a human.",
)


@blp.route("/conversations/<conversation_id>/clarifications")
class Clarifications(MethodView):
    @blp.scope("conversations:read")
    @blp.response(200, ClarificationSchema(many=True))
    @blp.errors(404)
    def get(self, conversation_id):
        """List the clarifying questions the agent asked in a conversation, oldest first"""
        return clarifications.list_clarifications(g.workspace_id, conversation_id)


@blp.route("/agents/<agent_id>/unanswered")
class Unanswered(MethodView):
    @blp.scope("trainings:read")
    @blp.response(200, UnansweredGroupSchema(many=True))
    @blp.errors(404)
    def get(self, agent_id):
        """List the questions the agent left and a human answered, grouped by similarity"""
        return unanswered.list_groups(g.workspace_id, agent_id)


@blp.route("/agents/<agent_id>/unanswered/<group_id>/training")
class LearnGroup(MethodView):
    @blp.scope("trainings:write")
    @blp.arguments(LearnSchema)
    @blp.response(201, TrainingSchema)
    @blp.errors(400, 404)
    def post(self, values, agent_id, group_id):
        """Turn a group of unanswered questions into a Q&A training (the human's reply as answer)"""
        return unanswered.learn(g.workspace_id, agent_id, group_id, values)
