"""The inbox's pages: the list of conversations (`/app`) and one
conversation (`/app/conversations/<id>`) with the list beside it.

Both are whole pages without JavaScript, every filter a query parameter.
inbox.js asks for the same URL with `X-Inbox-Part` (list, thread or both,
comma-separated) when something changed, and gets only those regions,
which it swaps in: the server renders (and escapes) every byte of HTML."""

from flask import render_template, request, url_for

from ..errors import ValidationError
from ..services import inbox_pages
from . import session, timefmt  # noqa: F401  (timefmt adds the templates' filters)
from .blueprint import blp

PART_HEADER = "X-Inbox-Part"
LIST_PAGE = 30
THREAD_PAGE = 50
# Which query parameters of a list a conversation's link keeps (not the cursor).
KEPT = ("state", "channel", "agent", "q")


@blp.route("")
@session.signed_in
def home():
    parts = _parts({"list"})
    return _render("app/inbox.html", parts, **_list_context(with_cursor=True))


@blp.route("/conversations/<conversation_id>")
@session.signed_in
def conversation(conversation_id):
    parts = _parts({"list", "thread"})
    user = session.current_user()
    # The thread first: showing it marks it read, which the list beside then shows.
    context = _thread_context(user, conversation_id) if "thread" in parts else {"people": {}}
    if "list" in parts:
        listed = _list_context(with_cursor=False)
        context.update(listed, people={**listed["people"], **context["people"]})
    return _render("app/conversation.html", parts, **context)


def _parts(offered):
    """The regions asked for by X-Inbox-Part (without it, all `offered`: the whole page)."""
    asked = request.headers.get(PART_HEADER)
    if asked is None:
        return offered
    wanted = {part.strip() for part in asked.split(",")}
    if not wanted or not wanted <= offered:
        named = ", ".join(sorted(offered))
        raise ValidationError(PART_HEADER, f"the parts of this page are {named}")
    return wanted


def _render(template, parts, **context):
    user = session.current_user()
    kept = {name: request.args[name] for name in KEPT if request.args.get(name)}
    context.update(user=user, workspace=user.workspace, parts=parts)
    context.update(list_url=_list_url(kept), conversation_url=_conversation_url(kept))
    if request.headers.get(PART_HEADER) is not None:
        template = "app/parts.html"
    return render_template(template, **context), 200, {"Vary": PART_HEADER}


def _list_context(with_cursor):
    user = session.current_user()
    values = request.args if with_cursor else {**request.args.to_dict(), "cursor": None}
    return inbox_pages.list_page(user.workspace_id, user.id, values, LIST_PAGE)


def _thread_context(user, conversation_id):
    before = request.args.get("before")
    shown = inbox_pages.thread_page(
        user.workspace_id, user.id, conversation_id, before, THREAD_PAGE
    )
    return {**shown, "before": before}


def _list_url(kept):
    """The list's URL with this page's filters, changed by `changes` (None drops one)."""

    def list_url(**changes):
        merged = {**kept, "cursor": request.args.get("cursor"), **changes}
        if request.endpoint != "web.home" and "cursor" not in changes:
            merged.pop("cursor")
        return url_for("web.home", **{name: value for name, value in merged.items() if value})

    return list_url


def _conversation_url(kept):
    def conversation_url(conversation_id, **more):
        return url_for("web.conversation", conversation_id=conversation_id, **kept, **more)

    return conversation_url
