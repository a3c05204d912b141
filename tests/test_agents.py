import pytest

from agent_platform.models import (
    Channel,
    ContextEntry,
    Conversation,
    CreditUsage,
    Event,
    Training,
)
from agent_platform.services import credits
from conftest import assert_error

SPEC_FIELDS = {
    "id",
    "name",
    "description",
    "is_active",
    "is_default",
    "workflow_type",
    "language",
    "tone",
    "personality",
    "greeting_message",
    "custom_instructions",
    "business_context",
    "created_at",
    "updated_at",
}
MISSING_ID = "6f1c4b9e-8a47-4a1e-9f0e-3e2b1c0d9a88"


def create(caller, **values):
    return caller.post("/v1/agents", json={"name": "Ana", **values})


def agent_id(caller, **values):
    response = create(caller, **values)
    assert response.status_code == 201, response.get_json()
    return response.get_json()["data"]["id"]


def test_create_returns_the_spec_fields_with_defaults(caller):
    response = create(caller, description="Answers billing questions", greeting_message="Hi!")
    assert response.status_code == 201
    agent = response.get_json()["data"]
    assert set(agent) == SPEC_FIELDS
    assert agent["workflow_type"] == "support"
    assert agent["language"] == "en"
    assert agent["tone"] == "professional"
    assert agent["is_active"] is True and agent["is_default"] is False
    assert agent["greeting_message"] == "Hi!"
    assert agent["created_at"].endswith("Z")
    assert caller.get(f"/v1/agents/{agent['id']}").get_json()["data"] == agent


def test_every_allowed_value_is_accepted(caller):
    for workflow_type in ("support", "sales", "scheduling", "lead_qualification", "faq", "custom"):
        assert create(caller, workflow_type=workflow_type).status_code == 201
    for tone in ("professional", "friendly", "formal", "casual", "empathetic", "enthusiastic"):
        assert create(caller, tone=tone).status_code == 201


@pytest.mark.parametrize(
    "given, stored",
    [("en", "en"), ("pt-br", "pt-BR"), ("ZH-hant-tw", "zh-Hant-TW"), ("es-419", "es-419")],
)
def test_language_is_a_bcp47_tag_in_canonical_case(caller, given, stored):
    assert create(caller, language=given).get_json()["data"]["language"] == stored


@pytest.mark.parametrize(
    "values, field",
    [
        ({"language": "english"}, "language"),
        ({"language": "en_US"}, "language"),
        ({"language": "e"}, "language"),
        ({"workflow_type": "chitchat"}, "workflow_type"),
        ({"tone": "grumpy"}, "tone"),
        ({"name": ""}, "name"),
        ({"name": "x" * 201}, "name"),
        ({"is_default": "perhaps"}, "is_default"),
        ({"colour": "red"}, "colour"),
    ],
)
def test_invalid_values_are_400_naming_the_field(caller, values, field):
    assert_error(create(caller, **values), 400, "VALIDATION_ERROR", field)
    assert caller.get("/v1/agents").get_json()["pagination"]["total"] == 0


def test_name_is_required(caller):
    response = caller.post("/v1/agents", json={"tone": "friendly"})
    assert_error(response, 400, "MISSING_REQUIRED_FIELD", "name")


def test_update(caller):
    agent = agent_id(caller)
    response = caller.patch(
        f"/v1/agents/{agent}", json={"name": "Bea", "language": "fr-ca", "tone": "casual"}
    )
    assert response.status_code == 200
    updated = response.get_json()["data"]
    assert (updated["name"], updated["language"], updated["tone"]) == ("Bea", "fr-CA", "casual")
    assert updated["updated_at"] >= updated["created_at"]
    assert_error(
        caller.patch(f"/v1/agents/{agent}", json={"tone": "rude"}), 400, "VALIDATION_ERROR", "tone"
    )
    assert_error(
        caller.patch(f"/v1/agents/{agent}", json={"language": "xx-yy-zz-"}),
        400,
        "VALIDATION_ERROR",
        "language",
    )
    assert caller.get(f"/v1/agents/{agent}").get_json()["data"]["tone"] == "casual"


def test_list_filters_and_sorts(caller):
    agent_id(caller, name="Sales bot")
    quiet = agent_id(caller, name="Support bot")
    agent_id(caller, name="Helper")
    caller.post(f"/v1/agents/{quiet}/deactivate")
    names = [a["name"] for a in caller.get("/v1/agents?sort=name&order=asc").get_json()["data"]]
    assert names == ["Helper", "Sales bot", "Support bot"]
    found = caller.get("/v1/agents?q=BOT&sort=name&order=asc").get_json()
    assert [a["name"] for a in found["data"]] == ["Sales bot", "Support bot"]
    inactive = caller.get("/v1/agents?is_active=false").get_json()["data"]
    assert [a["name"] for a in inactive] == ["Support bot"]
    page = caller.get("/v1/agents?limit=2&page=2").get_json()
    assert len(page["data"]) == 1 and page["pagination"]["total_pages"] == 2
    assert_error(caller.get("/v1/agents?sort=tone"), 400, "VALIDATION_ERROR", "sort")
    assert_error(caller.get("/v1/agents?active=true"), 400, "VALIDATION_ERROR", "active")


def test_one_default_agent_at_most(caller):
    first = agent_id(caller, is_default=True)
    second = agent_id(caller, is_default=True)
    assert caller.get(f"/v1/agents/{first}").get_json()["data"]["is_default"] is False
    assert caller.get(f"/v1/agents/{second}").get_json()["data"]["is_default"] is True
    caller.patch(f"/v1/agents/{first}", json={"is_default": True})
    defaults = [a["id"] for a in caller.get("/v1/agents").get_json()["data"] if a["is_default"]]
    assert defaults == [first]
    caller.patch(f"/v1/agents/{first}", json={"is_default": False})
    assert not any(a["is_default"] for a in caller.get("/v1/agents").get_json()["data"])


def test_activate_and_deactivate_are_idempotent(caller):
    agent = agent_id(caller)
    for _ in range(2):
        response = caller.post(f"/v1/agents/{agent}/deactivate")
        assert response.status_code == 200
        assert response.get_json()["data"]["is_active"] is False
    for _ in range(2):
        assert caller.post(f"/v1/agents/{agent}/activate").get_json()["data"]["is_active"] is True


def test_settings_have_safe_defaults_and_keep_what_is_not_given(caller):
    agent = agent_id(caller)
    settings = caller.get(f"/v1/agents/{agent}/settings").get_json()["data"]
    assert settings == {
        "model_provider": "knowledge",
        "model_name": "gpt-4o-mini",
        "temperature": 0.7,
        "max_reply_length": 1000,
        "knowledge_enabled": True,
        "knowledge_max_results": 5,
        "tools_enabled": True,
        "handoff_keywords": ["human", "operator", "talk to a person"],
        # The reply engine's (issue 7).
        "base_url": None,
        "api_key_set": False,
        "max_tokens": 512,
        "timeout_seconds": None,
        "history_messages": 20,
        "fallback_message": "",
        "handoff_message": "",
        "handoff_on_fallback": True,
        "qa_threshold": 0.40,
        "qa_margin": 0.03,
        "passage_threshold": 0.55,
        "clarify_enabled": True,  # issue 22: ask back when unsure
    }
    response = caller.put(
        f"/v1/agents/{agent}/settings",
        json={"temperature": 0.2, "handoff_keywords": ["atendente"], "model_provider": "ollama"},
    )
    assert response.status_code == 200
    changed = caller.get(f"/v1/agents/{agent}/settings").get_json()["data"]
    assert changed == response.get_json()["data"]
    assert changed["temperature"] == 0.2 and changed["handoff_keywords"] == ["atendente"]
    assert changed["model_provider"] == "ollama"
    assert changed["max_reply_length"] == 1000


@pytest.mark.parametrize(
    "values, field",
    [
        ({"temperature": 2.5}, "temperature"),
        ({"model_provider": "skynet"}, "model_provider"),
        ({"max_reply_length": 0}, "max_reply_length"),
        ({"knowledge_max_results": 100}, "knowledge_max_results"),
        ({"handoff_keywords": [""]}, "handoff_keywords"),
        ({"model_name": ""}, "model_name"),
        ({"mood": "happy"}, "mood"),
    ],
)
def test_invalid_settings_are_400_naming_the_field(caller, values, field):
    agent = agent_id(caller)
    response = caller.put(f"/v1/agents/{agent}/settings", json=values)
    assert_error(response, 400, "VALIDATION_ERROR", field)


def test_delete_detaches_channels_and_keeps_history(caller):
    agent = agent_id(caller, is_default=True)
    channel = Channel.create(
        workspace=caller.workspace_id, agent=agent, name="Site", type="website"
    )
    conversation = Conversation.create(workspace=caller.workspace_id, agent=agent)
    credits.record_usage(caller.workspace_id, agent, 2.5, conversation_id=conversation.id)
    caller.post(
        f"/v1/agents/{agent}/trainings", json={"type": "qa", "question": "q", "answer": "a"}
    )
    assert Training.select().where(Training.agent == agent).count() == 1

    response = caller.delete(f"/v1/agents/{agent}")
    assert response.status_code == 204 and response.data == b""

    assert Channel.get_by_id(channel.id).agent_id is None
    disconnected = Event.select().where(Event.name == "channel.disconnected")
    assert [event.data["id"] for event in disconnected] == [channel.id]
    assert disconnected.get().data["previous_agent_id"] == agent
    assert Conversation.get_by_id(conversation.id).agent_id == agent
    assert CreditUsage.select().where(CreditUsage.agent == agent).count() == 1
    assert Training.select().where(Training.agent == agent).count() == 0
    for method, path in (
        ("GET", ""),
        ("PATCH", ""),
        ("DELETE", ""),
        ("POST", "/activate"),
        ("GET", "/settings"),
        ("GET", "/credits"),
        ("GET", "/trainings"),
    ):
        body = {"name": "x"} if method == "PATCH" else {}
        response = caller.request(method, f"/v1/agents/{agent}{path}", json=body)
        assert_error(response, 404, "AGENT_NOT_FOUND")
    assert caller.get("/v1/agents").get_json()["data"] == []
    # The default slot is free again.
    assert create(caller, is_default=True).get_json()["data"]["is_default"] is True


def test_unknown_and_malformed_ids_are_not_found(caller):
    for agent in (MISSING_ID, "not-a-uuid"):
        assert_error(caller.get(f"/v1/agents/{agent}"), 404, "AGENT_NOT_FOUND")
        assert_error(caller.delete(f"/v1/agents/{agent}"), 404, "AGENT_NOT_FOUND")
        assert_error(caller.put(f"/v1/agents/{agent}/settings", json={}), 404, "AGENT_NOT_FOUND")


def test_another_workspace_sees_nothing(caller, other):
    agent = agent_id(caller)
    for method, path, body in (
        ("GET", "", None),
        ("PATCH", "", {"name": "x"}),
        ("DELETE", "", None),
        ("POST", "/activate", None),
        ("POST", "/deactivate", None),
        ("GET", "/settings", None),
        ("PUT", "/settings", {"temperature": 1}),
        ("GET", "/credits", None),
        ("POST", "/context", {"conversation_id": MISSING_ID, "content": "x"}),
    ):
        response = other.request(method, f"/v1/agents/{agent}{path}", json=body)
        assert_error(response, 404, "AGENT_NOT_FOUND")
    assert other.get("/v1/agents").get_json()["data"] == []
    # Defaults are per workspace.
    agent_id(other, is_default=True)
    agent_id(caller, is_default=True)
    assert len([a for a in other.get("/v1/agents").get_json()["data"] if a["is_default"]]) == 1
    assert caller.get(f"/v1/agents/{agent}").get_json()["data"]["name"] == "Ana"


def test_scopes(make_caller):
    reader = make_caller(scopes=["agents:read"])
    writer = make_caller(scopes=["agents:write"], workspace_id=reader.workspace_id)
    agent = agent_id(writer)
    assert_error(create(reader), 403, "INSUFFICIENT_SCOPE", "agents:write")
    assert_error(writer.get("/v1/agents"), 403, "INSUFFICIENT_SCOPE", "agents:read")
    assert_error(writer.get(f"/v1/agents/{agent}/settings"), 403, "INSUFFICIENT_SCOPE")
    assert_error(reader.delete(f"/v1/agents/{agent}"), 403, "INSUFFICIENT_SCOPE", "agents:delete")
    assert_error(reader.put(f"/v1/agents/{agent}/settings", json={}), 403, "INSUFFICIENT_SCOPE")
    assert_error(reader.post(f"/v1/agents/{agent}/activate"), 403, "INSUFFICIENT_SCOPE")
    assert reader.get(f"/v1/agents/{agent}").status_code == 200
    deleter = make_caller(scopes=["agents:delete"], workspace_id=reader.workspace_id)
    assert deleter.delete(f"/v1/agents/{agent}").status_code == 204


class TestPlanLimit:
    @pytest.fixture
    def settings(self, tmp_path):
        return {"DATABASE_PATH": str(tmp_path / "test.db"), "PLAN_MAX_AGENTS": 2}

    def test_creating_beyond_the_plan_is_refused(self, caller, other):
        first = agent_id(caller)
        agent_id(caller)
        error = assert_error(create(caller), 403, "PLAN_LIMIT_REACHED", "PLAN_MAX_AGENTS")
        assert "2 agents" in error["message"]
        # The limit is per workspace.
        assert create(other).status_code == 201
        # A deleted agent no longer counts.
        caller.delete(f"/v1/agents/{first}")
        assert create(caller).status_code == 201


def test_context_is_stored_for_the_conversation(caller):
    agent = agent_id(caller)
    conversation = Conversation.create(workspace=caller.workspace_id)
    response = caller.post(
        f"/v1/agents/{agent}/context",
        json={"conversation_id": conversation.id, "content": "VIP customer"},
    )
    assert response.status_code == 200
    assert response.get_json() == {"data": {"success": True}}
    caller.post(
        f"/v1/agents/{agent}/context",
        json={"conversation_id": conversation.id, "content": "Asked twice", "role": "user"},
    )
    entries = list(ContextEntry.for_conversation(conversation.id, agent))
    assert [(e.role, e.content) for e in entries] == [
        ("system", "VIP customer"),
        ("user", "Asked twice"),
    ]


def test_context_errors(caller, other, make_caller):
    agent = agent_id(caller)
    theirs = Conversation.create(workspace=other.workspace_id)
    path = f"/v1/agents/{agent}/context"
    for conversation_id in (MISSING_ID, theirs.id):
        response = caller.post(path, json={"conversation_id": conversation_id, "content": "x"})
        assert_error(response, 404, "CONVERSATION_NOT_FOUND")
    mine = Conversation.create(workspace=caller.workspace_id).id
    assert_error(
        caller.post(path, json={"content": "x"}), 400, "MISSING_REQUIRED_FIELD", "conversation_id"
    )
    assert_error(
        caller.post(path, json={"conversation_id": mine}), 400, "MISSING_REQUIRED_FIELD", "content"
    )
    for body, field in (
        ({"conversation_id": "nope", "content": "x"}, "conversation_id"),
        ({"conversation_id": mine, "content": ""}, "content"),
        ({"conversation_id": mine, "content": "x", "role": "robot"}, "role"),
    ):
        assert_error(caller.post(path, json=body), 400, "VALIDATION_ERROR", field)
    assert ContextEntry.select().count() == 0
    reader = make_caller(scopes=["agents:read"], workspace_id=caller.workspace_id)
    response = reader.post(path, json={"conversation_id": mine, "content": "ok"})
    assert_error(response, 403, "INSUFFICIENT_SCOPE", "agents:write")
