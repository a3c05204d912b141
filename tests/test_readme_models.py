"""README's "Connect a model": each body it sends is accepted by the agent
settings API as written, and the agent then asks `{base_url}/chat/completions`
with that model (read through the reply preview, nothing is sent)."""

import json
import re
from pathlib import Path

import pytest

from conversations_helpers import data
from replies_helpers import agent_channel, at, customer_says, fake, make_agent  # noqa: F401

README = (Path(__file__).resolve().parents[1] / "README.md").read_text()
SECTION = README.split("## Connect a model", 1)[1].split("\n## ", 1)[0]
BODIES = [json.loads(body) for body in re.findall(r"-d '(\{.*?\})'", SECTION, re.S)]


def test_the_section_shows_a_hosted_api_ollama_and_llama_cpp():
    assert [body["model_provider"] for body in BODIES] == ["openai-compatible", "ollama", "ollama"]
    assert BODIES[1]["base_url"] == "http://localhost:11434/v1"
    assert BODIES[2]["base_url"] == "http://localhost:8081/v1"


@pytest.mark.parametrize("body", BODIES, ids=lambda body: body["base_url"])
def test_a_readme_body_is_accepted_and_used(caller, fake, body):  # noqa: F811
    agent_id = make_agent(caller)
    stored = data(caller.put(f"/v1/agents/{agent_id}/settings", json=body))
    for name in ("model_provider", "model_name", "base_url"):
        assert stored[name] == body[name]
    assert stored["api_key_set"] == ("api_key" in body) and "api_key" not in stored
    message = customer_says(agent_channel(caller, agent_id)["id"], "hello there", at(0))
    preview = data(caller.get(f"/v1/conversations/{message.conversation_id}/reply-preview"))
    request = preview["provider_request"]
    assert request["url"] == body["base_url"] + "/chat/completions"
    assert request["request"]["model"] == body["model_name"]
    assert "sk-" not in json.dumps(preview)
