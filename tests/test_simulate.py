"""`agent-platform simulate "TEXT"` plays a customer's message through the
running service's real signed intake and prints the agent's answer."""

import json
import os
import shlex
import signal
import subprocess
import sys
import time

import requests

from agent_platform.services import sandbox
from conversations_helpers import WA_SETTINGS
from test_cli import ROOT, free_port, serving, until_the_key
from test_readme import expected_output, readme_block

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
    # No channel: it would make the sandbox, but only the service makes the workspace.
    assert "no workspace yet: start the service first" in result.stderr


def test_a_fresh_install_gets_an_answer_from_the_sandbox(tmp_path):
    """Nothing set up but the running service: simulate makes the sandbox,
    and the agent's answer is recorded as the Graph API request it would be.
    The first message and what it prints are the README's.
    The service logs in JSON with its access log on: its output is checked too."""
    block = readme_block('agent-platform simulate "Hello')  # the first steps' question
    question = shlex.split(block.splitlines()[0])[-1]
    created, *printed = expected_output(block)
    port = free_port()
    database = tmp_path / "fresh.db"
    environ = {
        **os.environ,
        "AGENT_PLATFORM_DATABASE_PATH": str(database),
        "AGENT_PLATFORM_SERVER_PORT": str(port),
        "AGENT_PLATFORM_REPLIES_DEBOUNCE_SECONDS": "0",
        "AGENT_PLATFORM_LOG_FORMAT": "json",
        "AGENT_PLATFORM_SERVER_ACCESS_LOG": "true",
    }
    with open(tmp_path / "err.log", "w") as errors:
        process = subprocess.Popen(
            [sys.executable, "app.py"], cwd=ROOT, env=environ,
            stdout=subprocess.PIPE, stderr=errors, text=True,
        )  # fmt: skip
        try:
            key = until_the_key(process.stdout)[1].strip()
            base = f"http://127.0.0.1:{port}"
            _wait_for(base)
            first = simulate(environ, question)
            again = simulate(environ, "How can I pay?", "--from", "15559876543")
            requests.get(base + "/v1/health?probe=1", timeout=5)
            sent = [
                message
                for chat in api(base, key, "GET", "/v1/conversations")
                for message in api(base, key, "GET", f"/v1/conversations/{chat['id']}/messages")
                if message["direction"] == "outbound"
            ]
        finally:
            process.send_signal(signal.SIGTERM)
            process.wait(timeout=20)
            access = process.stdout.read().splitlines()
            process.stdout.close()
    assert first.returncode == 0, first.stderr
    before, _, after = created.partition("01a2…")
    assert first.stderr.startswith(before) and first.stderr.rstrip().endswith(after)
    assert first.stdout.splitlines() == printed
    assert printed[-1] == f"Agent (sent): {sandbox.KNOWLEDGE[0][1]}"
    assert again.returncode == 0 and "created" not in again.stderr  # the sandbox is reused
    assert again.stdout.splitlines()[-1] == f"Agent (sent): {sandbox.KNOWLEDGE[2][1]}"
    assert len(sent) == 2 and all(m["external_id"].startswith("wamid.sandbox.") for m in sent)
    [message] = [m for m in sent if m["text"] == sandbox.KNOWLEDGE[2][1]]
    assert message["metadata"]["sandbox_request"] == {
        "method": "POST",
        "url": f"https://graph.facebook.com/v21.0/{sandbox.PHONE_NUMBER_ID}/messages",
        "json": {
            "messaging_product": "whatsapp", "recipient_type": "individual", "to": "15559876543",
            "type": "text", "text": {"body": sandbox.KNOWLEDGE[2][1], "preview_url": False},
        },
    }  # fmt: skip
    _check_json_log((tmp_path / "err.log").read_text().splitlines(), access)


def _wait_for(base):
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            requests.get(base + "/v1/health", timeout=1)
            return
        except (requests.ConnectionError, requests.Timeout):
            time.sleep(0.1)


def _check_json_log(errors, access):
    # `serve` reports migrations and the database before it becomes the server.
    records = [json.loads(line) for line in errors if line.startswith("{")]
    assert len(records) >= len(errors) - 3
    assert {"time", "level", "logger", "message"} <= set(records[0])
    assert any(r["logger"] == "gunicorn.error" for r in records)
    requests_logged = [json.loads(line) for line in access if line.startswith("{")]
    [probe] = [r for r in requests_logged if r["query"] == "probe=1"]
    assert (probe["logger"], probe["method"], probe["path"], probe["status"]) == (
        "gunicorn.access", "GET", "/v1/health", 200,
    )  # fmt: skip
    assert any(r["path"].startswith("/inbound/whatsapp/") for r in requests_logged)


def test_a_conversation_a_person_holds_is_said_at_once_with_how_to_hand_it_back(tmp_path):
    """The agent is silent while a human holds the conversation: simulate
    says so at once (not "no answer" after 30 s), sends nothing, and once
    handed back the agent answers again."""
    port = free_port()
    environ = {
        **os.environ,
        "AGENT_PLATFORM_DATABASE_PATH": str(tmp_path / "held.db"),
        "AGENT_PLATFORM_SERVER_PORT": str(port),
        "AGENT_PLATFORM_REPLIES_DEBOUNCE_SECONDS": "0",
    }
    with serving(["--port", str(port)], environ, port) as (base, lines):
        key = lines[1].strip()
        assert simulate(environ, "Hello, where are you located?").returncode == 0
        [conversation] = api(base, key, "GET", "/v1/conversations")
        path = f"/v1/chats/{conversation['id']}/handoff"
        api(base, key, "POST", path, {"assigned_to": "Rui"})
        started = time.monotonic()
        held = simulate(environ, "How can I pay?")
        assert held.returncode == 1 and time.monotonic() - started < 10
        assert (
            f"Rui holds conversation {conversation['id']} (a human took it over): the agent "
            "stays silent until it is handed back. Hand it back in the inbox "
            f"({base}/app/conversations/{conversation['id']}, Hand back) or with "
            f"POST {path}/complete; then simulate again."
        ) in " ".join(held.stderr.split())
        messages = api(base, key, "GET", f"/v1/conversations/{conversation['id']}/messages")
        assert "How can I pay?" not in [message["text"] for message in messages]
        api(base, key, "POST", f"{path}/complete")
        again = simulate(environ, "How can I pay?")
        assert again.returncode == 0, again.stderr
        assert "We accept cards, cash and bank transfers." in again.stdout
