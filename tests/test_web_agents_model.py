"""The agent page's "Test the model" button over HTTP, against a local
stand-in of the OpenAI-compatible API: the model's answer, a refused key
(never shown, even when the server echoes it), an unreachable server, and
the built-in knowledge provider that calls no model. Nothing is stored or
charged; another workspace's agent is 404, the agent role 403."""

import json
import socket

import pytest

from agent_platform.models import Conversation, Message
from agent_platform.services import credits
from openai_stub import OpenAIStub, answer, failure
from replies_helpers import make_agent
from web_helpers import make_user, page_token, sign_in, text

KEY = "sk-very-secret-provider-key"


@pytest.fixture(scope="module")
def stub():
    with OpenAIStub() as server:
        yield server


@pytest.fixture
def admin(client, caller):
    make_user(caller.workspace_id)
    sign_in(client)
    return client


def model_agent(caller, base_url):
    settings = {
        "model_provider": "openai-compatible",
        "model_name": "tiny-model",
        "base_url": base_url,
        "api_key": KEY,
    }
    return make_agent(caller, settings=settings, name="Model bot")


def press(client, agent_id):
    path = f"/app/agents/{agent_id}/model-test"
    return client.post(path, data={"csrf_token": page_token(client, f"/app/agents/{agent_id}")})


def nothing_stored(workspace_id, agent_id):
    counts = (Conversation.select().count(), Message.select().count())
    return counts == (0, 0) and credits.usage_report(workspace_id, agent_id)["total_credits"] == 0


def test_the_models_answer_is_shown_and_nothing_is_stored(admin, caller, stub):
    stub.requests.clear()
    agent_id = model_agent(caller, stub.url)
    usage = {"prompt_tokens": 20, "completion_tokens": 5, "total_tokens": 25}
    stub.script(answer("Hello, I am <b>ready</b>.", usage=usage))
    pressed = press(admin, agent_id)
    page = text(pressed)
    assert pressed.status_code == 200
    assert "The openai-compatible model &#34;tiny-model&#34; answered:" in page
    assert "Hello, I am &lt;b&gt;ready&lt;/b&gt;." in page and "<b>ready" not in page
    (request,) = stub.requests
    assert request["headers"]["Authorization"] == f"Bearer {KEY}"
    assert request["body"]["model"] == "tiny-model" and "tools" not in request["body"]
    assert request["body"]["messages"][-1]["role"] == "user"
    assert KEY not in page and nothing_stored(caller.workspace_id, agent_id)


def test_a_refused_key_says_so_without_showing_the_key(admin, caller, stub):
    agent_id = model_agent(caller, stub.url)
    echoed = json.dumps({"error": {"message": f"Incorrect API key provided: {KEY}"}})
    stub.script(failure(401, echoed))
    page = text(press(admin, agent_id))
    assert "did not answer: the model server answered HTTP 401" in page
    assert "Incorrect API key provided: [the API key]" in page
    assert "the API key is missing or refused" in page
    assert KEY not in page and nothing_stored(caller.workspace_id, agent_id)


def test_an_unreachable_model_server_is_named(admin, caller):
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    page = text(press(admin, model_agent(caller, f"http://127.0.0.1:{port}/v1")))
    assert f"cannot connect to the model server at http://127.0.0.1:{port}/v1" in page


def test_the_knowledge_provider_calls_no_model(admin, caller, stub):
    stub.requests.clear()
    agent_id = make_agent(caller, name="Offline bot")
    page = text(press(admin, agent_id))
    assert "built-in knowledge provider" in page and "nothing to test" in page
    assert stub.requests == [] and nothing_stored(caller.workspace_id, agent_id)


def test_another_workspaces_agent_is_404(admin, other, stub):
    stub.requests.clear()
    assert press_blind(admin, model_agent(other, stub.url)).status_code == 404
    assert stub.requests == []


def test_the_agent_role_cannot_press_it(client, caller, stub):
    stub.requests.clear()
    make_user(caller.workspace_id, email="bia@example.com", name="Bia", role="agent")
    sign_in(client, email="bia@example.com")
    assert press_blind(client, model_agent(caller, stub.url)).status_code == 403
    assert stub.requests == []


def press_blind(client, agent_id):
    """Pressed with a token of a page the user may open."""
    token = page_token(client, "/app")
    return client.post(f"/app/agents/{agent_id}/model-test", data={"csrf_token": token})
