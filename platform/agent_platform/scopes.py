"""Every API key scope, with what it grants (both listings of the spec)."""

from functools import cache

SCOPES = {
    "agents:read": "Read agents, settings, webhooks, credits, history",
    "agents:write": "Create, update, activate/deactivate agents",
    "agents:delete": "Delete agents",
    "trainings:read": "Read agent trainings",
    "trainings:write": "Create, update, delete trainings",
    "channels:read": "Read channels, settings, QR code, widget",
    "channels:write": "Create, update, delete channels",
    "contacts:read": "Read contacts",
    "contacts:write": "Create, update, delete contacts",
    "conversations:read": "Read conversations",
    "messages:read": "Read conversation messages",
    "messages:write": "Send messages in conversations",
    "messages:delete": "Delete messages",
    "chats:write": "Chat operations, message editing, human handoff",
    "custom-fields:read": "Read custom fields",
    "custom-fields:write": "Create, update, archive custom fields",
    "mcp:read": "Read MCP servers and tools",
    "mcp:write": "Manage MCP servers and tools",
    "webhooks:read": "Read webhooks and delivery history",
    "webhooks:write": "Create, update, test webhooks",
    "webhooks:delete": "Delete webhooks",
    "leads:read": "Read leads",
    "leads:write": "Create, update, delete leads",
    "pipeline:read": "Read opportunities and pipeline columns",
    "pipeline:write": "Create, update, delete opportunities",
    "interactions:read": "Read interactions and messages",
    "interactions:write": "Close interactions",
    "intentions:read": "Read intentions",
    "intentions:write": "Create, update, delete intentions",
    "idle-actions:read": "Read idle actions",
    "idle-actions:write": "Create, update, delete idle actions",
    "transfer-rules:read": "Read transfer rules",
    "transfer-rules:write": "Create, update, delete transfer rules",
    # Not in the spec, which names no scope for appointments (docs/appointments.md).
    "appointments:read": "Read appointments, availability, free slots, settings",
    "appointments:write": "Book, reschedule, cancel, complete appointments; set availability",
    "permissions:read": "List the workspace's API keys (never the keys themselves)",
    "permissions:write": "Revoke the workspace's API keys",
    # Not in the spec: the people who sign in to the inbox (docs/inbox.md).
    "users:read": "Read the workspace's users (never their passwords)",
    "users:write": "Create and update users, make their sign-in links",
    # Not in the spec: Prometheus scrapes of the workspace (docs/operations.md).
    "metrics:read": "Read the workspace's metrics (GET /metrics, Prometheus text format)",
}


def permissions(scopes):
    """Map each resource to the actions the scopes allow: {"agents": ("read",)}.
    The map is shared between callers: read it, don't change it."""
    return _permissions(tuple(sorted(scopes)))


@cache
def _permissions(scopes):
    # Keys carry a handful of scope sets; the map is answered on every GET /v1/me.
    allowed = {}
    for scope in scopes:
        resource, action = scope.split(":")
        allowed.setdefault(resource, []).append(action)
    return {resource: tuple(actions) for resource, actions in allowed.items()}


def unknown_scopes(scopes):
    return sorted(set(scopes) - set(SCOPES))
