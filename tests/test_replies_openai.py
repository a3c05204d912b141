"""The `openai` provider against a local OpenAI-compatible stand-in: what the
engine sends (system prompt parts, history with the human operator's
messages marked, knowledge with scores, tools), MCP tool calls run on a real
MCP server, retries with backoff, fallback and handoff, token credits, the
write-only API key, and reply-preview."""

from datetime import timedelta

import pytest

from agent_platform.models import Conversation
from agent_platform.models.base import utcnow
from conftest import assert_error
from conversations_helpers import data, event_names
from mcp_helpers import RunningMcpServer
from openai_stub import OpenAIStub, answer, failure, hang, tool_calls
from replies_helpers import (
    add_qa,
    add_text,
    agent_channel,
    at,
    customer_says,
    fake,  # noqa: F401  (fixture)
    jobs,
    make_agent,
    outbound,
    run_replies,
    texts,
)


@pytest.fixture
def settings(tmp_path):
    return {
        "DATABASE_PATH": str(tmp_path / "test.db"),
        "MCP_ALLOW_PRIVATE_URLS": True,
        "MCP_TIMEOUT_SECONDS": 5,
        "REPLIES_RETRY_SCHEDULE": [5, 30],
        "REPLIES_MODEL_TIMEOUT_SECONDS": 1,
        "REPLIES_MAX_TOOL_STEPS": 2,
    }


@pytest.fixture(scope="module")
def stub():
    with OpenAIStub() as server:
        yield server


@pytest.fixture(autouse=True)
def fresh_stub(stub):
    stub.requests.clear()
    stub._script.clear()


@pytest.fixture(scope="module")
def tools_server():
    with RunningMcpServer(json_response=True) as server:
        yield server


AGENT = {
    "name": "Ana",
    "description": "Pizza Roma's helper.",
    "language": "pt-BR",
    "tone": "friendly",
    "personality": "Cheerful and brief.",
    "custom_instructions": "Always offer the menu link.",
    "business_context": "Pizza Roma, Rua Augusta 100, São Paulo.",
}


@pytest.fixture
def shop(caller, fake, stub):  # noqa: F811
    settings = {
        "model_provider": "openai",
        "model_name": "test-model",
        "base_url": stub.url,
        "api_key": "sk-test-secret",
        "temperature": 0.2,
        "max_tokens": 300,
    }
    agent_id = make_agent(caller, settings=settings, **AGENT)
    channel = agent_channel(caller, agent_id)
    return {"agent_id": agent_id, "channel_id": channel["id"], "fake": fake}


def test_the_request_carries_every_part_of_the_prompt(caller, shop, stub):
    add_qa(caller, shop["agent_id"], "Quanto custa a entrega?", "A entrega custa R$ 5.")
    add_text(caller, shop["agent_id"], "Temos estacionamento gratuito.", title="Visita")
    # The human's message is stored at the real time: the customer's turns are
    # placed before and after it on the same clock.
    start = utcnow() - timedelta(minutes=5)
    first = customer_says(shop["channel_id"], "Oi", start)
    conversation_id = first.conversation_id
    stub.script(answer("Olá! Em que posso ajudar?"))
    run_replies(start + timedelta(seconds=2))
    data(caller.post(f"/v1/chats/{conversation_id}/handoff"))
    caller.post(
        f"/v1/conversations/{conversation_id}/messages", json={"text": "Entrega hoje até 20h."}
    )
    data(caller.post(f"/v1/chats/{conversation_id}/handoff/complete"))
    context = {"conversation_id": conversation_id, "content": "VIP customer: be generous."}
    data(caller.post(f"/v1/agents/{shop['agent_id']}/context", json=context))
    stub.script(answer("A entrega custa R$ 5."))
    later = utcnow() + timedelta(seconds=1)
    customer_says(shop["channel_id"], "quanto custa a entrega?", later)
    run_replies(later + timedelta(seconds=2))

    request = stub.requests[-1]
    assert request["path"] == "/v1/chat/completions"
    assert request["headers"]["Authorization"] == "Bearer sk-test-secret"
    body = request["body"]
    assert (body["model"], body["temperature"], body["max_tokens"]) == ("test-model", 0.2, 300)
    assert "tools" not in body  # the agent has no tools
    system, *conversation = body["messages"]
    assert system["role"] == "system"
    for part in (
        "You are Ana, the customer support assistant of this business",
        "Pizza Roma's helper.",
        "BCP 47 tag pt-BR",
        "Tone: friendly.",
        "Personality:\nCheerful and brief.",
        "Instructions:\nAlways offer the menu link.",
        "About the business:\nPizza Roma, Rua Augusta 100, São Paulo.",
        "Context for this conversation:\nVIP customer: be generous.",
        "Q: Quanto custa a entrega? A: A entrega custa R$ 5.",
        "[Human operator] were written by a person of the team",
    ):
        assert part in system["content"], part
    assert "(score " in system["content"]
    assert conversation == [
        {"role": "user", "content": "Oi"},
        {"role": "assistant", "content": "Olá! Em que posso ajudar?"},
        {"role": "assistant", "content": "[Human operator] Entrega hoje até 20h."},
        {"role": "user", "content": "quanto custa a entrega?"},
    ]
    assert texts(conversation_id)[-1] == "A entrega custa R$ 5."
    reply = outbound(conversation_id)[-1]
    assert reply.metadata["reply"]["provider"] == "openai"
    assert reply.metadata["reply"]["model"] == "stub-model"


def test_the_api_key_is_write_only(caller, shop):
    settings = data(caller.get(f"/v1/agents/{shop['agent_id']}/settings"))
    assert "api_key" not in settings and settings["api_key_set"] is True
    assert "sk-test-secret" not in caller.get(f"/agent/{shop['agent_id']}/settings").get_data(
        as_text=True
    )
    cleared = data(caller.put(f"/v1/agents/{shop['agent_id']}/settings", json={"api_key": None}))
    assert cleared["api_key_set"] is False


def test_tools_are_offered_called_over_mcp_and_recorded(caller, shop, stub, tools_server):
    server = data(
        caller.post("/v1/mcp-servers", json={"name": "Shop", "url": tools_server.url}), 201
    )
    tools = data(caller.post(f"/v1/mcp-servers/{server['id']}/sync"))
    tool_ids = [tool["id"] for tool in data(caller.get(f"/v1/mcp-servers/{server['id']}/tools"))]
    assert tools["tools_count"] == 2
    data(caller.put(f"/v1/agents/{shop['agent_id']}/tools", json={"tool_ids": tool_ids}))
    stub.script(
        tool_calls(("lookup_order", {"number": "A17"}), ("add", {"a": 2, "b": 3})),
        tool_calls(("add", {"a": 1}), ("no_such_tool", {}), ("add", "not json")),
        answer("Your order A17 ships tomorrow."),
    )
    message = customer_says(shop["channel_id"], "where is my order A17?", at(0))
    run_replies(at(2))

    first, second, third = stub.bodies()
    offered = {tool["function"]["name"]: tool for tool in first["tools"]}
    assert set(offered) == {"add", "lookup_order"}
    assert offered["add"]["function"]["parameters"]["required"] == ["a", "b"]
    assert offered["lookup_order"]["function"]["description"] == "Find an order by its number"
    results = [m for m in second["messages"] if m["role"] == "tool"]
    assert [m["content"] for m in results] == ["order A17 ships tomorrow", "5"]
    assert second["messages"][-3]["tool_calls"][0]["function"]["name"] == "lookup_order"
    errors = [m["content"] for m in third["messages"] if m["role"] == "tool"][2:]
    assert all(content.startswith("Error: ") for content in errors)
    assert "no tool named no_such_tool" in errors[1]
    assert "not JSON" in errors[2]

    reply = data(caller.get(f"/v1/messages/{outbound(message.conversation_id)[-1].id}"))
    assert reply["text"] == "Your order A17 ships tomorrow."
    calls = reply["metadata"]["reply"]["tool_calls"]
    assert [(c["name"], c["outcome"]) for c in calls] == [
        ("lookup_order", "ok"),
        ("add", "ok"),
        ("add", "error"),
        ("no_such_tool", "error"),
        ("add", "error"),
    ]
    assert calls[0]["arguments"] == {"number": "A17"}
    assert calls[0]["result"] == "order A17 ships tomorrow"
    assert calls[0]["server_name"] == "Shop"
    assert all(isinstance(c["duration_ms"], float) for c in calls)
    assert calls[2]["error"]


def test_after_the_last_tool_round_the_model_must_answer(caller, shop, stub, tools_server):
    server = data(
        caller.post("/v1/mcp-servers", json={"name": "Shop", "url": tools_server.url}), 201
    )
    data(caller.post(f"/v1/mcp-servers/{server['id']}/sync"))
    tool_ids = [tool["id"] for tool in data(caller.get(f"/v1/mcp-servers/{server['id']}/tools"))]
    data(caller.put(f"/v1/agents/{shop['agent_id']}/tools", json={"tool_ids": tool_ids}))
    stub.script(
        tool_calls(("add", {"a": 1, "b": 1})),
        tool_calls(("add", {"a": 2, "b": 2})),
        answer("Done."),
    )
    message = customer_says(shop["channel_id"], "add things", at(0))
    run_replies(at(2))
    bodies = stub.bodies()
    assert len(bodies) == 3  # REPLIES_MAX_TOOL_STEPS = 2 rounds, then an answer
    assert "tool_choice" not in bodies[1] and bodies[2]["tool_choice"] == "none"
    assert texts(message.conversation_id)[-1] == "Done."


def test_tool_arguments_nested_too_deep_are_a_tool_error(caller, shop, stub, tools_server):
    server = data(
        caller.post("/v1/mcp-servers", json={"name": "Shop", "url": tools_server.url}), 201
    )
    data(caller.post(f"/v1/mcp-servers/{server['id']}/sync"))
    tool_ids = [tool["id"] for tool in data(caller.get(f"/v1/mcp-servers/{server['id']}/tools"))]
    data(caller.put(f"/v1/agents/{shop['agent_id']}/tools", json={"tool_ids": tool_ids}))
    stub.script(tool_calls(("add", "[" * 5000 + "]" * 5000)), answer("Sorry."))
    message = customer_says(shop["channel_id"], "add things", at(0))
    run_replies(at(2))
    [result] = [m["content"] for m in stub.bodies()[1]["messages"] if m["role"] == "tool"]
    assert result == "Error: the arguments' JSON is nested deeper than 32 levels"
    assert texts(message.conversation_id)[-1] == "Sorry."


def test_a_provider_that_is_down_is_retried_then_the_fallback_hands_off(caller, shop, stub):
    stub.script(failure(503), hang(1.5), failure(500))
    message = customer_says(shop["channel_id"], "hello?", at(0))
    run_replies(at(2))
    (job,) = jobs(message.conversation_id)
    assert (job.status, job.attempts, job.due_at) == ("pending", 1, at(7))
    assert "HTTP 503" in job.last_error
    assert run_replies(at(6)) == 0
    run_replies(at(7))  # times out after 1 s
    (job,) = jobs(message.conversation_id)
    assert (job.attempts, job.due_at) == (2, at(37))
    assert "no answer within 1 seconds" in job.last_error
    assert texts(message.conversation_id) == []
    run_replies(at(37))  # the last try fails too
    (job,) = jobs(message.conversation_id)
    assert (job.status, job.outcome) == ("failed", "fallback")
    assert "Desculpe" in texts(message.conversation_id)[-1]  # pt-BR built-in fallback
    assert Conversation.get_by_id(message.conversation_id).status == "handoff"
    assert "agent.handoff_started" in event_names(caller.workspace_id)
    assert len(stub.requests) == 3


def test_a_refused_key_is_not_retried(caller, shop, stub):
    stub.script(failure(401, '{"error": {"message": "Incorrect API key"}}'))
    message = customer_says(shop["channel_id"], "hello?", at(0))
    run_replies(at(2))
    (job,) = jobs(message.conversation_id)
    assert (job.status, job.outcome, job.attempts) == ("failed", "fallback", 1)
    assert "HTTP 401" in job.detail["error"] and "Incorrect API key" in job.detail["error"]


def test_an_answer_nested_too_deep_is_a_provider_error_not_a_crash(caller, shop, stub):
    # json.loads would raise RecursionError on it, and end the job with it.
    stub.script(failure(200, '{"choices": ' + "[" * 5000 + "]" * 5000 + "}"))
    message = customer_says(shop["channel_id"], "hello?", at(0))
    run_replies(at(2))
    (job,) = jobs(message.conversation_id)
    assert (job.status, job.attempts) == ("pending", 1)  # tried again later
    assert "the model's answer is nested deeper than 32 levels" in job.last_error


def test_a_new_message_during_a_retry_wait_is_answered_in_the_same_reply(caller, shop, stub):
    stub.script(failure(500), answer("Both answered."))
    message = customer_says(shop["channel_id"], "first question", at(0))
    run_replies(at(2))
    customer_says(shop["channel_id"], "second question", at(3))
    run_replies(at(7))
    assert texts(message.conversation_id) == ["Both answered."]
    users = [m["content"] for m in stub.bodies()[-1]["messages"] if m["role"] == "user"]
    assert users == ["first question", "second question"]


def test_token_usage_is_charged_per_thousand_tokens(caller, shop, stub, app):
    app.config["CREDITS_PER_1K_TOKENS"] = 2
    stub.script(answer("Sure.", usage={"prompt_tokens": 900, "completion_tokens": 100,
                                       "total_tokens": 1000}))  # fmt: skip
    message = customer_says(shop["channel_id"], "hello?", at(0))
    run_replies(at(2))
    assert data(caller.get(f"/v1/agents/{shop['agent_id']}/credits"))["total_credits"] == 2
    reply = outbound(message.conversation_id)[-1]
    assert reply.metadata["reply"]["usage"]["total_tokens"] == 1000
    app.config["CREDITS_PER_1K_TOKENS"] = None
    stub.script(answer("Again."))  # no usage reported: CREDITS_PER_REPLY
    customer_says(shop["channel_id"], "and?", at(10))
    run_replies(at(12))
    assert data(caller.get(f"/v1/agents/{shop['agent_id']}/credits"))["total_credits"] == 3


def test_token_counts_no_call_can_have_are_taken_as_not_reported(caller, shop, stub, app):
    # Credits are charged by them: -5 failed the job as an internal error,
    # 10**30 spent 2e27 credits at once.
    app.config["CREDITS_PER_1K_TOKENS"] = 2
    for number, count in enumerate((-5, 10**30, True, 1.5e3)):
        usage = {"prompt_tokens": count, "completion_tokens": count, "total_tokens": count}
        stub.script(answer(f"Sure {number}.", usage=usage))
        message = customer_says(shop["channel_id"], f"hello {number}?", at(number * 100))
        assert run_replies(at(number * 100 + 2)) == 1
        assert outbound(message.conversation_id)[-1].text == f"Sure {number}."
        assert outbound(message.conversation_id)[-1].metadata["reply"].get("usage") is None
    credits = data(caller.get(f"/v1/agents/{shop['agent_id']}/credits"))
    assert credits["total_credits"] == 4  # CREDITS_PER_REPLY (1) each


def test_reply_preview_shows_the_request_without_sending_it(caller, shop, stub, make_caller):
    add_qa(caller, shop["agent_id"], "Quanto custa a entrega?", "A entrega custa R$ 5.")
    message = customer_says(shop["channel_id"], "quanto custa a entrega?", at(0))
    preview = data(caller.get(f"/v1/conversations/{message.conversation_id}/reply-preview"))
    assert stub.requests == []
    assert (preview["provider"], preview["would_answer"]) == ("openai", True)
    assert preview["prompt"]["customer_text"] == "quanto custa a entrega?"
    assert preview["prompt"]["knowledge"][0]["text"].startswith("Q: Quanto custa a entrega?")
    assert preview["prompt"]["system_parts"]["tone"] == "Tone: friendly."
    request = preview["provider_request"]
    assert request["url"] == stub.url + "/chat/completions"
    assert request["request"]["messages"][-1] == {
        "role": "user",
        "content": "quanto custa a entrega?",
    }
    assert "sk-test-secret" not in str(preview)
    reader = make_caller(scopes=["agents:read"], workspace_id=caller.workspace_id)
    assert (
        reader.get(f"/v1/conversations/{message.conversation_id}/reply-preview").status_code == 200
    )
    other = make_caller(scopes=["conversations:read"], workspace_id=caller.workspace_id)
    assert_error(
        other.get(f"/v1/conversations/{message.conversation_id}/reply-preview"),
        403,
        "INSUFFICIENT_SCOPE",
    )


def test_reply_preview_of_the_knowledge_provider_shows_its_decision(caller, shop, other):
    data(
        caller.put(f"/v1/agents/{shop['agent_id']}/settings", json={"model_provider": "knowledge"})
    )
    training = add_qa(caller, shop["agent_id"], "Quanto custa a entrega?", "R$ 5.")
    message = customer_says(shop["channel_id"], "quanto custa a entrega?", at(0))
    data(caller.post(f"/v1/chats/{message.conversation_id}/handoff"))
    preview = data(caller.get(f"/v1/conversations/{message.conversation_id}/reply-preview"))
    assert preview["would_answer"] is False
    assert preview["silence_reason"] == "the conversation is handoff"
    assert preview["provider_request"]["decision"]["training_id"] == training
    assert preview["prompt"]["tools"] == []
    assert_error(
        other.get(f"/v1/conversations/{message.conversation_id}/reply-preview"),
        404,
        "CONVERSATION_NOT_FOUND",
    )


def test_a_model_on_a_private_address_can_be_refused(caller, shop, stub, app):
    app.config["REPLIES_ALLOW_PRIVATE_MODEL_URLS"] = False
    message = customer_says(shop["channel_id"], "hello?", at(0))
    run_replies(at(2))
    (job,) = jobs(message.conversation_id)
    assert (job.status, job.outcome) == ("failed", "fallback")
    assert "the model URL is refused" in job.detail["error"]
    assert stub.requests == []


def test_failed_tries_are_logged_with_their_ids_and_reason(caller, shop, stub, caplog):
    stub.script(failure(503), failure(500), failure(500))
    message = customer_says(shop["channel_id"], "hello?", at(0))
    for moment in (2, 7, 37):
        run_replies(at(moment))
    logged = [r for r in caplog.records if r.name == "agent_platform.replies"]
    assert [r.levelname for r in logged] == ["WARNING", "WARNING", "ERROR"]
    (job,) = jobs(message.conversation_id)
    for record, attempt in zip(logged, (1, 2, 3), strict=True):
        assert (record.workspace_id, record.conversation_id) == (
            caller.workspace_id,
            message.conversation_id,
        )
        assert (record.reply_job_id, record.message_id) == (job.id, message.id)
        assert (record.agent_id, record.channel_id) == (shop["agent_id"], shop["channel_id"])
        assert record.attempt == attempt and "HTTP 5" in record.reason
    assert f"reply job {job.id}" in logged[-1].getMessage()
