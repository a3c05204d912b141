"""The variant address form: same service, no /v1, same checks."""

import pytest

from agent_platform.models import ApiKey
from agent_platform.services.keys import hash_key
from conftest import assert_error
from test_agents import SPEC_FIELDS

MISSING_ID = "6f1c4b9e-8a47-4a1e-9f0e-3e2b1c0d9a88"
AGENT = {
    "name": "Ana",
    "description": "Front desk",
    "workflow_type": "sales",
    "language": "pt-br",
    "tone": "friendly",
    "personality": "Warm",
    "greeting_message": "Olá!",
}


def create_agent(caller, workspace_id=None, **values):
    workspace_id = workspace_id or caller.workspace_id
    return caller.post(f"/workspace/{workspace_id}/agents", json={**AGENT, **values})


def new_agent(caller):
    return create_agent(caller).get_json()["data"]["agent"]["id"]


def test_create_agent(caller):
    response = create_agent(caller)
    assert response.status_code == 201
    body = response.get_json()
    assert set(body) == {"success", "data"} and body["success"] is True
    agent = body["data"]["agent"]
    assert set(agent) == SPEC_FIELDS
    assert (agent["language"], agent["tone"], agent["greeting_message"]) == (
        "pt-BR",
        "friendly",
        "Olá!",
    )
    assert caller.get(f"/v1/agents/{agent['id']}").get_json()["data"] == agent
    assert response.headers["X-RateLimit-Limit"] == "100"


def test_create_agent_checks_the_workspace_scope_and_body(caller, other, make_caller):
    assert_error(
        create_agent(caller, other.workspace_id), 403, "WORKSPACE_ACCESS_DENIED", other.workspace_id
    )
    assert_error(create_agent(caller, "not-a-workspace"), 403, "WORKSPACE_ACCESS_DENIED")
    reader = make_caller(scopes=["agents:read"], workspace_id=caller.workspace_id)
    assert_error(create_agent(reader), 403, "INSUFFICIENT_SCOPE", "agents:write")
    assert_error(create_agent(caller, tone="grumpy"), 400, "VALIDATION_ERROR", "tone")
    assert_error(create_agent(caller, language="english"), 400, "VALIDATION_ERROR", "language")
    assert_error(create_agent(caller, is_default=True), 400, "VALIDATION_ERROR", "is_default")
    response = caller.post(f"/workspace/{caller.workspace_id}/agents", json={"tone": "friendly"})
    assert_error(response, 400, "MISSING_REQUIRED_FIELD", "name")
    response = caller.client.post(f"/workspace/{caller.workspace_id}/agents", json=AGENT)
    assert_error(response, 401, "MISSING_API_KEY")
    assert caller.get("/v1/agents").get_json()["data"] == []
    assert other.get("/v1/agents").get_json()["data"] == []


def test_name_is_enough(caller):
    response = caller.post(f"/workspace/{caller.workspace_id}/agents", json={"name": "Min"})
    agent = response.get_json()["data"]["agent"]
    assert (agent["workflow_type"], agent["language"], agent["tone"]) == (
        "support",
        "en",
        "professional",
    )


def test_qa_training(caller, other, make_caller):
    agent = new_agent(caller)
    body = {
        "agent_id": agent,
        "question": "Do you deliver on Sundays?",
        "answer": "No, Monday to Saturday.",
    }
    response = caller.post("/training/qa", json=body)
    assert response.status_code == 201
    created = response.get_json()
    assert created["success"] is True
    training = created["data"]["training"]
    assert (training["type"], training["question"], training["agent_id"]) == (
        "qa",
        body["question"],
        agent,
    )
    hits = caller.get(f"/v1/agents/{agent}/trainings/search?q=sundays").get_json()["data"]
    assert [hit["id"] for hit in hits] == [training["id"]]
    assert_error(other.post("/training/qa", json=body), 404, "AGENT_NOT_FOUND")
    assert_error(
        caller.post("/training/qa", json={**body, "agent_id": MISSING_ID}), 404, "AGENT_NOT_FOUND"
    )
    assert_error(
        caller.post("/training/qa", json={**body, "agent_id": "x"}),
        400,
        "VALIDATION_ERROR",
        "agent_id",
    )
    missing = {"agent_id": agent, "question": "q"}
    assert_error(caller.post("/training/qa", json=missing), 400, "MISSING_REQUIRED_FIELD", "answer")
    reader = make_caller(scopes=["trainings:read"], workspace_id=caller.workspace_id)
    assert_error(
        reader.post("/training/qa", json=body), 403, "INSUFFICIENT_SCOPE", "trainings:write"
    )


def test_settings(caller, other, make_caller):
    agent = new_agent(caller)
    caller.put(f"/v1/agents/{agent}/settings", json={"temperature": 0.3})
    response = caller.get(f"/agent/{agent}/settings")
    assert response.status_code == 200
    body = response.get_json()
    assert body["success"] is True
    assert body["data"] == caller.get(f"/v1/agents/{agent}/settings").get_json()["data"]
    assert body["data"]["temperature"] == 0.3
    assert_error(other.get(f"/agent/{agent}/settings"), 404, "AGENT_NOT_FOUND")
    assert_error(caller.get(f"/agent/{MISSING_ID}/settings"), 404, "AGENT_NOT_FOUND")
    writer = make_caller(scopes=["agents:write"], workspace_id=caller.workspace_id)
    assert_error(writer.get(f"/agent/{agent}/settings"), 403, "INSUFFICIENT_SCOPE", "agents:read")


def test_permission_creates_a_working_key(caller):
    response = caller.post(
        "/workspaces/permissions",
        json={"name": "Zapier", "scopes": ["agents:read", "trainings:read"]},
    )
    assert response.status_code == 201
    body = response.get_json()
    assert body["success"] is True
    permission = body["data"]["permission"]
    assert set(permission) == {
        "id", "name", "workspace_id", "scopes", "parent_id", "key", "created_at",
    }  # fmt: skip
    assert permission["workspace_id"] == caller.workspace_id
    assert permission["parent_id"] == ApiKey.by_lookup_id(caller.key[4:16]).id  # the caller's
    assert permission["scopes"] == ["agents:read", "trainings:read"]
    # Only the hash is stored; the key works and has just these scopes.
    stored = ApiKey.get_by_id(permission["id"])
    assert stored.key_hash == hash_key(permission["key"]) and permission["key"] not in str(
        stored.__data__
    )
    headers = {"x-api-key": permission["key"]}
    me = caller.client.get("/v1/me", headers=headers).get_json()["data"]
    assert (me["key_name"], me["workspace_id"]) == ("Zapier", caller.workspace_id)
    assert caller.client.get("/v1/agents", headers=headers).status_code == 200
    response = caller.client.post("/v1/agents", headers=headers, json={"name": "x"})
    assert_error(response, 403, "INSUFFICIENT_SCOPE")


def test_permission_is_never_broader_than_the_caller(make_caller, other):
    limited = make_caller(scopes=["agents:read", "contacts:read"])
    path = "/workspaces/permissions"
    response = limited.post(path, json={"name": "x", "scopes": ["agents:read", "agents:write"]})
    assert_error(response, 403, "INSUFFICIENT_SCOPE", "agents:write")
    assert limited.post(path, json={"name": "x", "scopes": ["contacts:read"]}).status_code == 201
    # A key created this way cannot climb back up either.
    narrower = limited.post(path, json={"name": "y", "scopes": ["agents:read"]}).get_json()
    raw = narrower["data"]["permission"]["key"]
    response = limited.client.post(
        path, headers={"x-api-key": raw}, json={"name": "z", "scopes": ["contacts:read"]}
    )
    assert_error(response, 403, "INSUFFICIENT_SCOPE", "contacts:read")
    # The workspace named in the body must be the key's own.
    body = {"name": "x", "scopes": ["agents:read"], "workspace_id": other.workspace_id}
    assert_error(limited.post(path, json=body), 403, "WORKSPACE_ACCESS_DENIED")
    body["workspace_id"] = limited.workspace_id
    assert limited.post(path, json=body).status_code == 201


@pytest.mark.parametrize(
    "body, code, field",
    [
        ({"scopes": ["agents:read"]}, "MISSING_REQUIRED_FIELD", "name"),
        ({"name": "x"}, "MISSING_REQUIRED_FIELD", "scopes"),
        ({"name": "x", "scopes": []}, "VALIDATION_ERROR", "scopes"),
        ({"name": "x", "scopes": ["agents:fly"]}, "VALIDATION_ERROR", "scopes"),
        ({"name": "x", "scopes": ["agents:read"], "admin": True}, "VALIDATION_ERROR", "admin"),
    ],
)
def test_permission_validation(caller, body, code, field):
    assert_error(caller.post("/workspaces/permissions", json=body), 400, code, field)


def test_variant_paths_are_documented_and_tagged(client):
    spec = client.get("/openapi.json").get_json()
    for path, method, scope in (
        ("/workspace/{workspaceId}/agents", "post", "agents:write"),
        ("/training/qa", "post", "trainings:write"),
        ("/agent/{agent_id}/settings", "get", "agents:read"),
        ("/workspaces/permissions", "post", "*"),
    ):
        operation = spec["paths"][path][method]
        assert operation["tags"] == ["variant"]
        assert operation["x-required-scope"] == scope


class TestSharedRateLimit:
    @pytest.fixture
    def settings(self, tmp_path):
        return {"DATABASE_PATH": str(tmp_path / "test.db"), "RATE_LIMIT_REQUESTS": 3}

    def test_both_forms_count_against_one_limit(self, caller):
        agent = new_agent(caller)
        assert caller.get(f"/v1/agents/{agent}").status_code == 200
        assert caller.get(f"/agent/{agent}/settings").status_code == 200
        assert_error(caller.get(f"/agent/{agent}/settings"), 429, "RATE_LIMIT_EXCEEDED")
        assert_error(caller.get(f"/v1/agents/{agent}"), 429, "RATE_LIMIT_EXCEEDED")
