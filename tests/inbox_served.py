"""The inbox against a real `agent-platform serve`: the service with a
WhatsApp channel whose Graph API is the local stand-in, people made with
the CLI, signed in over HTTP, and customers writing through the signed intake."""

import json
import os
import re
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import requests

from conversations_helpers import WA_SETTINGS
from graph_stub import GraphStub
from test_cli import free_port, serving
from whatsapp_helpers import messages_payload, sign, text

ROOT = Path(__file__).resolve().parents[1]
PASSWORD = "correct horse battery"
KNOWN = ("What time do you open?", "We open every day from 9 am to 6 pm.")


@contextmanager
def served(tmp_path, **settings):
    """(base URL, API session, environ, graph stub) of a served instance."""
    graph = GraphStub(
        token=WA_SETTINGS["access_token"], phone_number_id=WA_SETTINGS["phone_number_id"]
    )
    port = free_port()
    values = {
        "DATABASE_PATH": str(tmp_path / "inbox.db"),
        "MEDIA_DIR": str(tmp_path / "media"),
        "WHATSAPP_GRAPH_API_BASE": graph.base,
        "REPLIES_DEBOUNCE_SECONDS": 0,
        "MESSAGES_SEND_POLL_SECONDS": 0.2,
        "SERVER_PUBLIC_URL": f"http://127.0.0.1:{port}",
        **settings,
    }
    environ = dict(os.environ)
    environ.update({f"AGENT_PLATFORM_{k}": json.dumps(v) for k, v in values.items()})
    try:
        with serving(["--port", str(port)], environ, port) as (base, lines):
            api = requests.Session()
            api.headers["x-api-key"] = lines[1].strip()
            yield base, api, environ, graph
    finally:
        graph.close()


@contextmanager
def served_shop(tmp_path):
    """A served instance with shop's channel: its base, api, environ, graph and channel."""
    with served(tmp_path) as (base, api, environ, graph):
        yield {"base": base, "api": api, "environ": environ, "graph": graph,
               "channel": shop(base, api)}  # fmt: skip


def call(api, method, url, body=None, status=200):
    response = api.request(method, url, json=body, timeout=10)
    assert response.status_code == status, response.text
    return response.json()["data"]


def shop(base, api):
    """An agent that knows one answer only, on a WhatsApp channel: its channel id."""
    agent = call(api, "POST", f"{base}/v1/agents", {"name": "Ana Bot"}, 201)["id"]
    qa = {"type": "qa", "question": KNOWN[0], "answer": KNOWN[1]}
    call(api, "POST", f"{base}/v1/agents/{agent}/trainings", qa, 201)
    channel = {"name": "WhatsApp", "type": "whatsapp", "settings": WA_SETTINGS}
    channel_id = call(api, "POST", f"{base}/v1/channels", channel, 201)["id"]
    call(api, "POST", f"{base}/v1/channels/{channel_id}/connect", {"agent_id": agent})
    return channel_id


def cli(environ, *arguments):
    return subprocess.run(
        [sys.executable, "-m", "agent_platform", *arguments],
        cwd=ROOT, env={**environ, "PYTHONPATH": str(ROOT / "platform")},
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip


def person_link(environ, email, name, workspace="Default workspace", role="admin"):
    """`agent-platform users create`: the one-time sign-in link it prints."""
    output = cli(environ, "users", "create", "--workspace", workspace, "--email", email,
                 "--name", name, "--role", role)  # fmt: skip
    return output.strip().splitlines()[-1]


def signed_in(link):
    """A requests session signed in through the link's choose-a-password form."""
    session = requests.Session()
    page = session.get(link, timeout=10)
    token = re.search(r'name="csrf_token" value="([^"]+)"', page.text).group(1)
    form = {"csrf_token": token, "password": PASSWORD, "password_again": PASSWORD}
    done = session.post(link, data=form, timeout=10)
    assert done.status_code == 200 and done.url.endswith("/app"), done.text
    return session


def customer_writes(base, channel_id, words, wamid, sender="5511933334444", name=None):
    item = text(words, wamid=wamid, sender=sender, timestamp=int(time.time()))
    contacts = [{"profile": {"name": name or f"Customer {sender[-4:]}"}, "wa_id": sender}]
    body = json.dumps(messages_payload(item, contacts=contacts)).encode()
    headers = {"Content-Type": "application/json", "X-Hub-Signature-256": sign(body)}
    response = requests.post(
        f"{base}/inbound/whatsapp/{channel_id}", data=body, headers=headers, timeout=10
    )
    assert response.status_code == 200, response.text


def wait_for(found, what, seconds=15, every=0.05):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if value := found():
            return value
        time.sleep(every)
    raise AssertionError(f"never {what} within {seconds} s")


def visitor_writes(base, channel_id, words, name, origin="https://shop.example"):
    """A visitor of the website widget writes (its public API, as widget.js calls it)."""
    url, headers = f"{base}/widget/{channel_id}/api", {"Origin": origin}
    started = requests.post(f"{url}/session", json={}, headers=headers, timeout=10)
    assert started.status_code == 200, started.text
    headers["X-Visitor-Token"] = started.json()["data"]["visitor_token"]
    body = {"text": words, "name": name, "client_message_id": f"m-{time.monotonic_ns()}"}
    sent = requests.post(f"{url}/messages", json=body, headers=headers, timeout=10)
    assert sent.status_code == 201, sent.text
