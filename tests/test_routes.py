"""Walk every route: each declares its scope, documents it, and fails in the shared shape."""

import re

import pytest

from agent_platform.api.pipeline import is_public, view_method
from conftest import assert_error

# Routes reachable without a key: health, the docs, inbound network callbacks,
# media files, the website widget (its script, page and visitor API) and the
# inbox's pages (people sign in with a session instead: tests/test_web_sign_in.py).
PUBLIC_PATHS = re.compile(
    r"^(/v1/health|/openapi\.json|/docs.*|/static/.*|/inbound/.*|/media/.*|/widget/.*|/app.*)$"
)
METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")
SAMPLE_ID = "6f1c4b9e-8a47-4a1e-9f0e-3e2b1c0d9a88"


@pytest.fixture
def settings(tmp_path):
    # One key calls every operation: more of them than the default rate limit.
    return {"DATABASE_PATH": str(tmp_path / "test.db"), "RATE_LIMIT_REQUESTS": 10_000}


def operations(app):
    for rule in app.url_map.iter_rules():
        for method in sorted(rule.methods & set(METHODS)):
            yield rule, method


def concrete(rule, workspace_id=SAMPLE_ID):
    def value(match):
        return workspace_id if "workspace" in match.group(1).lower() else SAMPLE_ID

    return re.sub(r"<(?:[^:<>]+:)?([^<>]+)>", value, rule.rule)


def test_every_operation_declares_a_scope_or_is_public(app):
    undeclared = []
    for rule, method in operations(app):
        public = is_public(rule.endpoint, method)
        if PUBLIC_PATHS.match(rule.rule):
            continue
        assert not public, f"{method} {rule.rule} is public but not in the public list"
        if getattr(view_method(rule.endpoint, method), "_required_scope", None) is None:
            undeclared.append(f"{method} {rule.rule}")
    assert undeclared == []


def test_openapi_documents_scope_and_errors_of_every_operation(client, app):
    spec = client.get("/openapi.json").get_json()
    documented = 0
    for path, item in spec["paths"].items():
        for method, operation in item.items():
            if method not in {m.lower() for m in METHODS}:
                continue
            documented += 1
            assert operation.get("summary"), f"{method} {path} has no summary"
            if path.startswith("/inbound/") and method == "post":  # the network retries a 503
                assert "503" in operation["responses"], f"{method} {path} lacks 503"
            if operation.get("security") == []:
                continue
            assert "x-required-scope" in operation, f"{method} {path}"
            for status in ("401", "403", "429", "500", "503"):
                assert status in operation["responses"], f"{method} {path} lacks {status}"
            if "{" in path:
                assert "404" in operation["responses"] or "403" in operation["responses"], (
                    f"{method} {path}"
                )
            if "requestBody" in operation or operation.get("parameters"):
                assert "400" in operation["responses"] or "404" in operation["responses"], (
                    f"{method} {path}"
                )
    routed = {
        (method.lower(), re.sub(r"<(?:[^:<>]+:)?([^<>]+)>", r"{\1}", rule.rule))
        for rule, method in operations(app)
        # The widget's script, page and visitor API are its own protocol,
        # described in docs/channels/*.md rather than in the OpenAPI document;
        # the inbox's pages are for people (docs/inbox.md).
        if not rule.rule.startswith(("/docs", "/openapi", "/static", "/widget", "/app"))
    }
    in_document = {
        (method, path)
        for path, item in spec["paths"].items()
        for method in item
        if method in {m.lower() for m in METHODS}
    }
    assert sorted(routed - in_document) == []  # every route is documented
    assert documented == len(in_document)


def test_without_a_key_every_protected_operation_is_401(client, app):
    for rule, method in operations(app):
        if PUBLIC_PATHS.match(rule.rule):
            continue
        response = client.open(concrete(rule), method=method)
        assert_error(response, 401, "MISSING_API_KEY")


def test_a_key_without_scopes_is_403_everywhere(app, make_caller):
    # A key with one unrelated scope reaches the scope check of every operation.
    limited = make_caller(scopes=["leads:read"])
    for rule, method in operations(app):
        if PUBLIC_PATHS.match(rule.rule):
            continue
        scope = view_method(rule.endpoint, method)._required_scope
        if scope in ("*", "leads:read"):
            continue
        response = limited.request(method, concrete(rule, limited.workspace_id))
        assert_error(response, 403, "INSUFFICIENT_SCOPE", scope)


# The resource each path's first id names, and the code of its 404.
NOT_FOUND_BY_PARAMETER = {
    "agent_id": "AGENT_NOT_FOUND",
    "appointment_id": "APPOINTMENT_NOT_FOUND",
    "channel_id": "CHANNEL_NOT_FOUND",
    "contact_id": "CONTACT_NOT_FOUND",
    "conversation_id": "CONVERSATION_NOT_FOUND",
    "field_id": "CUSTOM_FIELD_NOT_FOUND",
    "lead_id": "LEAD_NOT_FOUND",
    "rule_id": "SCORING_RULE_NOT_FOUND",
    "column_id": "PIPELINE_COLUMN_NOT_FOUND",
    "opportunity_id": "OPPORTUNITY_NOT_FOUND",
    "message_id": "MESSAGE_NOT_FOUND",
    "permission_id": "PERMISSION_NOT_FOUND",
    "server_id": "MCP_SERVER_NOT_FOUND",
    "training_id": "TRAINING_NOT_FOUND",
    "webhook_id": "WEBHOOK_NOT_FOUND",
    "user_id": "USER_NOT_FOUND",
}
# Operations whose body is checked before the id: an empty body is a 400.
BODY_BEFORE_ID = {
    ("POST", "/v1/agents/<agent_id>/context"): "MISSING_REQUIRED_FIELD",
    ("PUT", "/v1/agents/<agent_id>/availability"): "MISSING_REQUIRED_FIELD",
    ("POST", "/v1/appointments/<appointment_id>/reschedule"): "MISSING_REQUIRED_FIELD",
    ("POST", "/v1/agents/<agent_id>/webhooks"): "MISSING_REQUIRED_FIELD",
    ("POST", "/v1/agents/<agent_id>/idle-actions"): "MISSING_REQUIRED_FIELD",
    ("POST", "/v1/agents/<agent_id>/intentions"): "MISSING_REQUIRED_FIELD",
    ("PUT", "/v1/agents/<agent_id>/tools"): "MISSING_REQUIRED_FIELD",
    ("POST", "/v1/agents/<agent_id>/trainings"): "MISSING_REQUIRED_FIELD",
    ("GET", "/v1/agents/<agent_id>/trainings/search"): "MISSING_REQUIRED_FIELD",
    ("POST", "/v1/agents/<agent_id>/transfer-rules"): "MISSING_REQUIRED_FIELD",
    ("POST", "/v1/channels/<channel_id>/connect"): "MISSING_REQUIRED_FIELD",
    ("PUT", "/v1/chats/<conversation_id>/messages/<message_id>"): "VALIDATION_ERROR",
    ("POST", "/v1/conversations/<conversation_id>/assign"): "MISSING_REQUIRED_FIELD",
    ("POST", "/v1/conversations/<conversation_id>/transfer"): "MISSING_REQUIRED_FIELD",
    ("POST", "/v1/leads/<lead_id>/adjustments"): "MISSING_REQUIRED_FIELD",
    ("POST", "/v1/leads/<lead_id>/convert"): "MISSING_REQUIRED_FIELD",
    ("POST", "/v1/opportunities/<opportunity_id>/move"): "MISSING_REQUIRED_FIELD",
    ("POST", "/v1/webhooks/<webhook_id>/recover"): "MISSING_REQUIRED_FIELD",
    ("POST", "/workspace/<workspaceId>/agents"): "MISSING_REQUIRED_FIELD",
}


def expected_for_unknown_id(method, rule):
    if method == "PATCH":
        return 400, "VALIDATION_ERROR"  # {} changes nothing, whatever the id
    if (method, rule) in BODY_BEFORE_ID:
        return 400, BODY_BEFORE_ID[method, rule]
    first = re.search(r"<(?:[^:<>]+:)?([^<>]+)>", rule).group(1)
    return 404, NOT_FOUND_BY_PARAMETER[first]


def test_unknown_ids_are_404_with_their_resources_code(app, caller):
    seen = set()
    for rule, method in operations(app):
        if PUBLIC_PATHS.match(rule.rule) or "<" not in rule.rule:
            continue
        seen.add((method, rule.rule))
        status, code = expected_for_unknown_id(method, rule.rule)
        response = caller.request(method, concrete(rule, caller.workspace_id), json={})
        assert_error(response, status, code)
    assert set(BODY_BEFORE_ID) <= seen  # the table names only real operations


@pytest.mark.parametrize("method", METHODS)
def test_unknown_route_is_404(client, method):
    assert_error(
        client.open("/v1/no-such-thing", method=method),
        404,
        "NOT_FOUND",
        "/v1/no-such-thing",
    )


def test_wrong_method_is_405_with_allow(client):
    response = client.delete("/v1/health")
    assert_error(response, 405, "METHOD_NOT_ALLOWED")
    assert "GET" in response.headers["Allow"]
