"""The conversation page's actions: POST forms (or fetches) that call one
service function each (services/inbox_actions.py, the API's own calls),
then send the browser back to the conversation (303).

What happened is told once on the page as a notice: a short-lived cookie
limited to that conversation's path, signed with the session's CSRF token
(so no other site or session can plant one), read and cleared when the
page's action area (`_actions.html`) is shown. A fetch (Accept:
application/json) gets `{"data": ...}`, or the API's error body instead.
"""

from flask import jsonify, redirect, request
from itsdangerous import BadSignature, URLSafeTimedSerializer

from .. import formats
from ..errors import ApiError
from ..services import conversations, inbox_actions
from . import session
from .blueprint import PREFIX, blp, error_page, wants_json
from .forms import SEE_OTHER

NOTICE_COOKIE = "agent_platform_notice"
NOTICE_SECONDS = 60
NOTICE_MAX_CHARS = 600
_READ_KEY = "agent_platform.web_notice_read"
DONE = {
    "take-over": "You hold this conversation now: the agent is silent until you hand it back.",
    "reply": "Your reply is on its way to the customer.",
    "template": "The template is on its way to the customer.",
    "hand-back": "The agent answers this conversation again.",
    "assign": "The assignment is saved.",
    "transfer": "The conversation is with the other agent now.",
    "close": "The conversation is closed.",
    "reopen": "The conversation is open again.",
}


def conversation_path(conversation_id):
    return f"{PREFIX}/conversations/{conversation_id}"


@blp.route("/conversations/<conversation_id>/take-over", methods=["POST"])
@session.signed_in
def act_take_over(conversation_id):
    return _act("take-over", conversation_id, inbox_actions.take_over)


@blp.route("/conversations/<conversation_id>/reply", methods=["POST"])
@session.signed_in
def act_reply(conversation_id):
    return _act("reply", conversation_id, inbox_actions.reply, request.form.get("text"))


@blp.route("/conversations/<conversation_id>/template", methods=["POST"])
@session.signed_in
def act_template(conversation_id):
    """`template` is "name:language" (the page's choice); `parameters`, one a line."""
    name, _, language = request.form.get("template", "").partition(":")
    lines = request.form.get("parameters", "").splitlines()
    parameters = [line.strip() for line in lines if line.strip()]
    send = inbox_actions.send_template
    return _act("template", conversation_id, send, name, language, parameters)


@blp.route("/conversations/<conversation_id>/hand-back", methods=["POST"])
@session.signed_in
def act_hand_back(conversation_id):
    return _act("hand-back", conversation_id, inbox_actions.hand_back)


@blp.route("/conversations/<conversation_id>/assign", methods=["POST"])
@session.signed_in
def act_assign(conversation_id):
    """`assigned_to`: a colleague's user id, or empty for nobody."""
    assignee = request.form.get("assigned_to", "")
    return _act("assign", conversation_id, inbox_actions.assign, assignee)


@blp.route("/conversations/<conversation_id>/transfer", methods=["POST"])
@session.signed_in
def act_transfer(conversation_id):
    agent_id = request.form.get("agent_id", "")
    return _act("transfer", conversation_id, inbox_actions.transfer, agent_id)


@blp.route("/conversations/<conversation_id>/close", methods=["POST"])
@session.signed_in
def act_close(conversation_id):
    return _act("close", conversation_id, inbox_actions.close)


@blp.route("/conversations/<conversation_id>/reopen", methods=["POST"])
@session.signed_in
def act_reopen(conversation_id):
    return _act("reopen", conversation_id, inbox_actions.reopen)


def _act(name, conversation_id, action, *args):
    """Run `action` for the signed-in user; another workspace's (or no)
    conversation is the 404 page, any other refusal a notice."""
    user = session.current_user()
    conversation_id = conversations.get_conversation(user.workspace_id, conversation_id).id
    try:
        done = action(user, conversation_id, *args)
    except ApiError as error:
        if wants_json():
            return error_page(error)
        return _back(conversation_id, "refused", inbox_actions.in_words(error))
    if wants_json():
        return jsonify({"data": formats.jsonable(done.as_dict())})
    return _back(conversation_id, "done", DONE[name])


def _back(conversation_id, kind, text):
    path = conversation_path(conversation_id)
    response = redirect(path, SEE_OTHER)
    notice = {"conversation_id": conversation_id, "kind": kind, "text": text[:NOTICE_MAX_CHARS]}
    response.set_cookie(
        NOTICE_COOKIE,
        _signer().dumps(notice),
        max_age=NOTICE_SECONDS,
        path=path,
        httponly=True,
        samesite="Lax",
        secure=session.is_https(),
    )
    return response


def _signer():
    return URLSafeTimedSerializer(session.csrf_token(), salt="agent_platform.web.notice")


def notice_for(conversation_id):
    """The notice ({"kind": "done" | "refused", "text"}) this browser was
    sent back with for the conversation, or None; shown once."""
    raw = request.cookies.get(NOTICE_COOKIE)
    if not raw:
        return None
    request.environ[_READ_KEY] = conversation_id
    try:
        notice = _signer().loads(raw, max_age=NOTICE_SECONDS)
    except BadSignature:  # forged, of another session, or expired
        return None
    return notice if notice.get("conversation_id") == conversation_id else None


@blp.after_request  # whichever page included the action area: all are the blueprint's
def _forget_notice(response):
    conversation_id = request.environ.get(_READ_KEY)
    if conversation_id is not None:
        response.delete_cookie(
            NOTICE_COOKIE, path=conversation_path(conversation_id), httponly=True, samesite="Lax"
        )
    return response


@blp.app_template_global()
def conversation_actions(view, user):
    """What `_actions.html` shows for `view` (conversation_view's dict) and
    the signed-in `user`: services.inbox_actions.action_area, plus the
    notice this browser was sent back with."""
    area = inbox_actions.action_area(user, view)
    return {**area, "notice": notice_for(view["conversation"]["id"])}
