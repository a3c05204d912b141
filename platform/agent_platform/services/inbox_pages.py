"""What the inbox's pages show, put together from services/inbox.py: a
list page (rows, counts, the channels and agents its filters offer, its
filters checked as a person sends them: query parameters of a page, not the
API's schemas) and a conversation page (the view, read by whoever sees
it), each with the names of the people who wrote or hold a conversation."""

from ..errors import ValidationError
from ..models import Agent, Channel
from ..models.users import User
from . import inbox
from .inbox import STATES

SEARCH_MAX_CHARS = 200


def filter_choices(workspace_id):
    """{"channels": [{id, name, type}], "agents": [{id, name}]}, by name."""
    channels = Channel.in_workspace(workspace_id).order_by(Channel.name, Channel.id)
    agents = Agent.in_workspace(workspace_id).order_by(Agent.name, Agent.id)
    return {
        "channels": [{"id": c.id, "name": c.name, "type": c.type} for c in channels],
        "agents": [{"id": a.id, "name": a.name} for a in agents],
    }


def list_filters(workspace_id, values):
    """The filters of a list page from its query parameters (`state`,
    `channel`, `agent`, `q`, `cursor`), checked; a bad one is refused by name."""
    choices = filter_choices(workspace_id)
    state = values.get("state") or None
    if state not in STATES:
        named = ", ".join(name for name in STATES if name)
        raise ValidationError("state", f"must be one of {named}, or empty for every conversation")
    search = values.get("q", "").strip()
    if len(search) > SEARCH_MAX_CHARS:
        raise ValidationError("q", f"a search is at most {SEARCH_MAX_CHARS} characters")
    return {
        "state": state,
        "channel_id": _one_of(values, "channel", choices["channels"], "channel of this workspace"),
        "agent_id": _one_of(values, "agent", choices["agents"], "agent of this workspace"),
        "search": search or None,
        "cursor": values.get("cursor") or None,
    }, choices


def _one_of(values, name, options, what):
    wanted = values.get(name) or None
    if wanted is not None and wanted not in {option["id"] for option in options}:
        raise ValidationError(name, f"not a {what}")
    return wanted


def people_named(workspace_id, user_ids):
    """{user id: name} of the workspace's users among `user_ids` (others absent)."""
    wanted = {user_id for user_id in user_ids if user_id}
    if not wanted:
        return {}
    found = User.in_workspace(workspace_id).where(User.id.in_(list(wanted)))
    return {user.id: user.name for user in found}


def list_page(workspace_id, user_id, values, limit):
    """A page of the list by the query parameters `values`, with its counts,
    filters, their choices, and the names of the people rows are assigned to."""
    filters, choices = list_filters(workspace_id, values)
    page = inbox.inbox_list(workspace_id, user_id, limit=limit, **filters)
    last = [row["last_message"] or {} for row in page["items"]]
    named = [row["assigned_to"] for row in page["items"]] + [m.get("author_user_id") for m in last]
    return {
        "page": page,
        "counts": inbox.inbox_counts(workspace_id, user_id),
        "filters": filters,
        "choices": choices,
        "people": people_named(workspace_id, named),
    }


def thread_page(workspace_id, user_id, conversation_id, before, limit):
    """The conversation's view, read by the user now that it is shown, and
    the names of the people who wrote in it or hold it."""
    view = inbox.conversation_view(workspace_id, user_id, conversation_id, before, limit)
    inbox.mark_read(workspace_id, user_id, view["conversation"]["id"])
    authors = [message["author"]["user_id"] for message in view["messages"]]
    people = people_named(workspace_id, [*authors, view["conversation"]["assigned_to"]])
    return {"view": view, "people": people}
