"""`agent-platform simulate "TEXT"` plays a customer's message through the
running service's real signed intake and prints the agent's answer."""

import os
import subprocess
import sys

import requests

from conversations_helpers import WA_SETTINGS
from test_cli import ROOT, free_port, serving

QUESTION, ANSWER = "What time do you open?", "Every day from 9 am to 6 pm."


def api(base, key, method, path, body=None, status=200):
    response = requests.request(
        method, base + path, json=body, headers={"x-api-key": key}, timeout=10
    )
    assert response.status_code == status, response.text
    return response.json()["data"]


def simulate(environ, *arguments):
    return subprocess.run(
        [sys.executable, "-m", "agent_platform", "simulate", *arguments],
        cwd=ROOT, env=environ, capture_output=True, text=True, timeout=90,
    )  # fmt: skip


def test_the_agent_answers_a_simulated_message_through_the_running_service(tmp_path):
    port = free_port()
    environ = {
        **os.environ,
        "AGENT_PLATFORM_DATABASE_PATH": str(tmp_path / "sim.db"),
        "AGENT_PLATFORM_SERVER_PORT": str(port),
        "AGENT_PLATFORM_REPLIES_DEBOUNCE_SECONDS": "0",
        "AGENT_PLATFORM_WHATSAPP_GRAPH_API_BASE": "http://127.0.0.1:9/unreachable",
    }
    with serving(["--port", str(port)], environ, port) as (base, lines):
        key = lines[1].strip()
        agent = api(base, key, "POST", "/v1/agents", {"name": "Ana"}, 201)["id"]
        qa = {"type": "qa", "question": QUESTION, "answer": ANSWER}
        api(base, key, "POST", f"/v1/agents/{agent}/trainings", qa, 201)
        channel = {"name": "WhatsApp", "type": "whatsapp", "settings": WA_SETTINGS}
        channel_id = api(base, key, "POST", "/v1/channels", channel, 201)["id"]
        api(base, key, "POST", f"/v1/channels/{channel_id}/connect", {"agent_id": agent})
        result = simulate(environ, QUESTION)
        assert result.returncode == 0, result.stderr
        assert f"Customer (+15557014422): {QUESTION}" in result.stdout
        assert f": {ANSWER}" in result.stdout.splitlines()[-1]
        [contact] = api(base, key, "GET", "/v1/contacts")
        assert contact["phone"] == "+15557014422"


def test_without_a_connected_channel_it_says_what_to_do(tmp_path):
    environ = {**os.environ, "AGENT_PLATFORM_DATABASE_PATH": str(tmp_path / "none.db")}
    subprocess.run([sys.executable, "-m", "agent_platform", "migrate"], env=environ, cwd=ROOT,
                   capture_output=True, check=True, timeout=60)  # fmt: skip
    result = simulate(environ, "hello")
    assert result.returncode == 1
    assert "no WhatsApp channel connected to an agent" in result.stderr
