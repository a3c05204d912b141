"""An agent's knowledge in the admins' pages: its trainings (list, search,
add - a document as an uploaded file -, edit, delete), the gaps (the
customers' questions it left to a person, each turned into a Q&A in one
form) and the test chat (services/chat_trial.py: nothing stored or sent)."""

import json

from flask import redirect, render_template, request, url_for

from .. import jsonbody
from ..api.schemas.learning import LearnSchema
from ..api.schemas.trainings import (
    TrainingCreateSchema,
    TrainingSearchQuery,
    TrainingUpdateSchema,
)
from ..errors import ApiError
from ..services import agents, chat_trial, trainings, unanswered
from . import forms, session
from .blueprint import blp

LISTED = 100  # trainings on the page, the newest
# Of each training's content, the characters read for the list, which shows
# 300 of them: a content may be 5 million, and 40 such read whole for the
# page took 200 MB of the server's memory.
PREVIEW_CHARS = 1000
TRAINING_FIELDS = ("type", "title", "content", "question", "answer", "url")
TRANSCRIPT_TURNS = 20  # the test chat shows the last ones
DONE = {
    "added": "The training is added: the agent answers from it now.",
    "saved": "The training is saved.",
    "deleted": "The training is deleted.",
    "learned": "The Q&A is added: the agent answers that question by itself now.",
}


@blp.route("/agents/<agent_id>/knowledge")
@session.signed_in(role="admin")
def knowledge_page(agent_id):
    return _knowledge_page(_agent(agent_id))


@blp.route("/agents/<agent_id>/knowledge", methods=["POST"])
@session.signed_in(role="admin")
def add_training(agent_id):
    agent, entered = _agent(agent_id), forms.filled(TRAINING_FIELDS)
    upload = request.files.get("file")
    upload = upload if upload and upload.filename else None
    try:
        values = forms.load(TrainingCreateSchema(), entered)
        trainings.create_training(agent.workspace_id, agent.id, values, upload)
    except ApiError as error:
        return _knowledge_page(agent, error=error.message, status=error.status, entered=entered)
    return _back("web.knowledge_page", agent.id, "added")


@blp.route("/agents/<agent_id>/knowledge/<training_id>")
@session.signed_in(role="admin")
def training_page(agent_id, training_id):
    agent = _agent(agent_id)
    return _training_page(agent, _training(agent, training_id))


@blp.route("/agents/<agent_id>/knowledge/<training_id>", methods=["POST"])
@session.signed_in(role="admin")
def save_training(agent_id, training_id):
    agent = _agent(agent_id)
    training = _training(agent, training_id)
    names = trainings.FIELDS[training.type]
    entered = {name: request.form.get(name, "").strip() for name in names if name in request.form}
    try:
        changes = forms.load(TrainingUpdateSchema(), entered)
        trainings.update_training(agent.workspace_id, training.id, changes)
    except ApiError as error:
        return _training_page(agent, training, error=error.message, status=error.status)
    return _back("web.knowledge_page", agent.id, "saved")


@blp.route("/agents/<agent_id>/knowledge/<training_id>/delete", methods=["POST"])
@session.signed_in(role="admin")
def delete_training(agent_id, training_id):
    agent = _agent(agent_id)
    trainings.delete_training(agent.workspace_id, _training(agent, training_id).id)
    return _back("web.knowledge_page", agent.id, "deleted")


@blp.route("/agents/<agent_id>/gaps")
@session.signed_in(role="admin")
def gaps_page(agent_id):
    return _gaps_page(_agent(agent_id))


@blp.route("/agents/<agent_id>/gaps/<group_id>", methods=["POST"])
@session.signed_in(role="admin")
def learn_gap(agent_id, group_id):
    agent, entered = _agent(agent_id), forms.filled(("question", "answer"))
    try:
        values = forms.load(LearnSchema(), entered)
        unanswered.learn(agent.workspace_id, agent.id, group_id, values)
    except ApiError as error:
        return _gaps_page(agent, error=error.message, status=error.status)
    return _back("web.gaps_page", agent.id, "learned")


@blp.route("/agents/<agent_id>/test-chat", methods=["GET", "POST"])
@session.signed_in(role="admin")
def test_chat_page(agent_id):
    """The transcript travels in the form (a hidden field): nothing of the
    test chat is kept on the server."""
    agent, error, status = _agent(agent_id), None, 200
    transcript = _transcript(request.form.get("transcript", ""))
    if request.method == "POST":
        question = request.form.get("text", "").strip()
        if question:
            reply = chat_trial.ask(agent.workspace_id, agent.id, question[:4000])
            transcript = [*transcript, {"question": question[:4000], **reply}]
        else:
            error, status = "text: write what a customer would ask.", 400
    transcript = transcript[-TRANSCRIPT_TURNS:]
    page = render_template(
        "app/agents/test_chat.html",
        **_common(agent),
        error=error,
        transcript=transcript,
        transcript_json=json.dumps(transcript),
    )
    return page, status


def _transcript(raw):
    """The turns the form sent back, or none when it is not what we sent."""
    try:  # with jsonbody's limits: the form's field is the client's text
        turns = jsonbody.loads(raw.encode()) if raw else []
    except ValueError:
        return []
    if not isinstance(turns, list) or not all(_is_turn(turn) for turn in turns):
        return []
    return turns


def _is_turn(turn):
    return (
        isinstance(turn, dict)
        and isinstance(turn.get("question"), str)
        and isinstance(turn.get("why"), str)
        and isinstance(turn.get("text"), str | None)
        and isinstance(turn.get("trainings"), list)
        and all(isinstance(item, dict) for item in turn["trainings"])
    )


def _agent(agent_id):
    return agents.get_agent(session.current_user().workspace_id, agent_id)


def _training(agent, training_id):
    return trainings.get_agent_training(agent.workspace_id, agent.id, training_id)


def _back(endpoint, agent_id, done):
    return redirect(url_for(endpoint, agent_id=agent_id, done=done), forms.SEE_OTHER)


def _common(agent):
    user = session.current_user()
    return {"user": user, "workspace": user.workspace, "agent": agent}


def _knowledge_page(agent, error=None, status=200, entered=None):
    query = request.args.get("q", "").strip()
    try:
        shown = _trainings(agent, query)
    except ApiError as found_error:
        shown, error, status = [], found_error.message, found_error.status
    page = render_template(
        "app/agents/knowledge.html",
        **_common(agent),
        trainings=shown,
        query=query,
        error=error,
        entered=entered or {},
        notice=forms.notice(DONE),
    )
    return page, status


def _trainings(agent, query):
    if not query:
        return trainings.previews(agent.workspace_id, agent.id, LISTED, PREVIEW_CHARS)
    values = forms.load(TrainingSearchQuery(), {"q": query, "match": "any", "limit": 50})
    return trainings.search(agent.workspace_id, agent.id, **values, content_chars=PREVIEW_CHARS)


def _training_page(agent, training, error=None, status=200):
    page = render_template(
        "app/agents/training.html",
        **_common(agent),
        training=training,
        error=error,
    )
    return page, status


def _gaps_page(agent, error=None, status=200):
    groups = unanswered.list_groups(agent.workspace_id, agent.id)
    page = render_template(
        "app/agents/gaps.html",
        **_common(agent),
        groups=groups,
        error=error,
        notice=forms.notice(DONE),
    )
    return page, status
