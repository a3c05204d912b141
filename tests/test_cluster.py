"""Several processes on one PostgreSQL database, started as docs/postgresql.md's
"Try it on one machine" says (migrate, two `serve`, a worker; and a second
worker), each running the jobs, on a throwaway server. Whatever engine the
rest of the suite runs on, these run on PostgreSQL: on SQLite a second
process serving one file is refused (tests/test_one_server.py)."""

import json
import os
import signal
import subprocess
import sys
import time
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests

from conftest import new_postgres_database
from conversations_helpers import WA_SETTINGS
from telegram_stub import TelegramStub
from test_cli import ROOT, free_port, serving
from test_service_jobs import Api
from webhooks_helpers import Receiver
from whatsapp_helpers import messages_payload, sign, text

DOCS = ROOT / "docs" / "postgresql.md"
BURST = 160  # customer messages, sent to both servers at once


def documented_commands():
    """The commands of docs/postgresql.md's "Try it on one machine", each
    as its arguments: migrate, two servers and a worker."""
    section = DOCS.read_text().split("### Try it on one machine", 1)[1]
    block = section.split("```sh\n", 1)[1].split("```", 1)[0]
    commands = [line.removesuffix("&").split()[1:] for line in block.splitlines()
                if line.startswith("agent-platform ")]  # fmt: skip
    assert [command[0] for command in commands] == ["migrate", "serve", "serve", "worker"]
    return commands


def environ_for(settings):
    environ = dict(os.environ)
    environ.update({f"AGENT_PLATFORM_{k}": json.dumps(v) for k, v in settings.items()})
    return environ


def started(arguments, environ, log):
    with open(log, "a") as errors:  # what a process says when it fails
        return subprocess.Popen(
            [sys.executable, "-m", "agent_platform", *arguments],
            cwd=ROOT,
            env=environ,
            stdout=subprocess.DEVNULL,
            stderr=errors,
        )


def answering(base, log, seconds=30):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if requests.get(base + "/v1/health", timeout=1).status_code == 200:
                return
        except requests.RequestException:
            pass
        time.sleep(0.1)
    pytest.fail(f"{base} never answered:\n{log.read_text()[-3000:]}")


def stop(process):
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=40)


@pytest.fixture
def peers():
    receiver, bot_api = Receiver(), TelegramStub()
    yield receiver, bot_api
    receiver.close()
    bot_api.close()


@pytest.fixture
def cluster(postgres_server, peers, tmp_path):
    """Serve A (made the database's first key), serve B, workers 1 and 2."""
    receiver, bot_api = peers
    settings = {
        "DATABASE_URL": new_postgres_database(postgres_server),
        "MEDIA_DIR": str(tmp_path / "media"),
        "SECRETS_KEY_FILE": str(tmp_path / "secrets.key"),  # every process's
        "WEBHOOKS_ALLOW_PRIVATE_TARGETS": True,
        "WEBHOOKS_ALLOWED_PORTS": [receiver.port],
        "WEBHOOKS_LEASE_SECONDS": 5,
        "INBOUND_MAX_REQUESTS_PER_MINUTE": 10_000,
        "TELEGRAM_API_BASE": bot_api.base,
        "TELEGRAM_POLL_SECONDS": 1,
    }
    environ = environ_for(settings)
    migrate, serve_a, serve_b, worker = documented_commands()
    ports = {serve_a[-1]: free_port(), serve_b[-1]: free_port()}
    port_a, port_b = ports[serve_a[-1]], ports[serve_b[-1]]
    log = tmp_path / "processes.log"
    started(migrate, environ, log).wait(timeout=60)
    with serving([*serve_a[1:-1], str(port_a)], environ, port_a) as (base_a, lines):
        processes = [started([*serve_b[:-1], str(port_b)], environ, log)]
        # The documented worker, and one more: two of each, as in production.
        processes += [started(worker, environ, log) for _ in range(2)]
        base_b = f"http://127.0.0.1:{port_b}"
        answering(base_b, log)
        key = lines[1].strip()
        try:
            yield {"a": Api(base_a, key), "b": Api(base_b, key), "workers": processes[1:]}
        finally:
            for process in processes:
                stop(process)


def customer_writes(api, channel_id, number):
    payload = messages_payload(text(f"Question {number}", wamid=f"wamid.BURST{number}"))
    body = json.dumps(payload)
    headers = {"Content-Type": "application/json", "X-Hub-Signature-256": sign(body.encode())}
    return requests.post(
        f"{api.base}/inbound/whatsapp/{channel_id}", data=body, headers=headers, timeout=30
    ).status_code


def received_at(receiver, event_name):
    """{event id: [when each POST of it arrived]} of the receiver's POSTs."""
    seen = defaultdict(list)
    for request in list(receiver.requests):
        body = json.loads(request.body)
        if body.get("type", body.get("event")) == event_name:
            seen[request.headers["webhook-id"]].append(request.at)
    return seen


def test_a_burst_on_two_servers_with_a_worker_killed_loses_nothing(cluster, peers):
    receiver, _ = peers
    a, b = cluster["a"], cluster["b"]
    hook = {"url": receiver.url, "events": ["message.received"]}
    a.call("POST", "/v1/webhooks", hook, 201)
    whatsapp = {"name": "WhatsApp", "type": "whatsapp", "settings": WA_SETTINGS}
    channel_id = a.call("POST", "/v1/channels", whatsapp, 201)["id"]
    with ThreadPoolExecutor(8) as pool:
        statuses = list(
            pool.map(lambda n: customer_writes((a, b)[n % 2], channel_id, n), range(BURST // 2))
        )
        killed_at = time.time()
        cluster["workers"][0].send_signal(signal.SIGKILL)  # mid-way, holding what it claimed
        statuses += list(
            pool.map(
                lambda n: customer_writes((a, b)[n % 2], channel_id, n), range(BURST // 2, BURST)
            )
        )
    assert statuses == [200] * BURST
    [conversation] = a.call("GET", "/v1/conversations")
    path = f"/v1/conversations/{conversation['id']}/messages?limit=100&page="
    pages = [a.answer("GET", f"{path}{page}") for page in (1, 2)]
    assert pages[0]["pagination"]["total"] == BURST  # every message stored, once
    listed = {message["id"] for page in pages for message in page["data"]}
    assert len(listed) == BURST  # and the pages list each once
    deadline = time.monotonic() + 60
    while len(received_at(receiver, "message.received")) < BURST and time.monotonic() < deadline:
        time.sleep(0.2)
    posts = received_at(receiver, "message.received")
    assert len(posts) == BURST  # every event delivered
    # Sent twice only what the killed worker had in flight: its lease ran
    # out and another process sent it again; none by two live processes.
    twice = {event: times for event, times in posts.items() if len(times) > 1}
    assert all(len(times) == 2 and min(times) <= killed_at for times in twice.values()), twice


def test_the_rate_limit_is_exact_across_servers(cluster):
    a, b = cluster["a"], cluster["b"]

    def me(number):
        api = (a, b)[number % 2]
        return requests.get(api.base + "/v1/me", headers=api.headers, timeout=30).status_code

    with ThreadPoolExecutor(8) as pool:
        statuses = list(pool.map(me, range(160)))
    assert statuses.count(200) == 100
    assert statuses.count(429) == 60


def test_a_job_of_the_interval_runs_once_across_four_processes(cluster, peers):
    """Four schedulers (two servers, two workers) poll a Telegram bot every
    second: the Bot API sees one getUpdates a second, not four."""
    _, bot_api = peers
    telegram = {"name": "Bot", "type": "telegram", "settings": {"bot_token": bot_api.token}}
    cluster["a"].call("POST", "/v1/channels", telegram, 201)
    time.sleep(2)  # every process has seen the channel
    before = bot_api.calls().count("getUpdates")
    time.sleep(6)
    polls = bot_api.calls().count("getUpdates") - before
    assert 4 <= polls <= 8, polls
