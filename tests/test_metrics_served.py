"""GET /metrics of a real `agent-platform serve` after real traffic: customers
write through the signed WhatsApp intake, the agent's replies go out to the
Graph API stand-in (one of them refused), a webhook's receiver refuses every
delivery, and a person takes a conversation over. The scrape is parsed with
prometheus_client's own parser."""

import json
import os
import socket
import subprocess
import sys

import requests
from prometheus_client.parser import text_string_to_metric_families

from inbox_served import KNOWN, ROOT, call, cli, customer_writes, served, shop, wait_for
from test_cli import free_port
from webhooks_helpers import Receiver, Reply


def scrape(base, api):
    """{(sample name, frozenset of labels but workspace): value}, and the
    workspaces the samples name."""
    response = api.get(f"{base}/metrics", timeout=10)
    assert response.status_code == 200, response.text
    assert response.headers["Content-Type"].startswith("text/plain; version=0.0.4")
    samples, workspaces = {}, set()
    for family in text_string_to_metric_families(response.text):
        for sample in family.samples:
            labels = dict(sample.labels)
            workspaces.add(labels.pop("workspace", None))
            samples[sample.name, frozenset(labels.items())] = sample.value
    return samples, workspaces


def value(samples, name, **labels):
    return samples.get((name, frozenset(labels.items())), 0)


def whatsapp(direction, status):
    return {"channel": "whatsapp", "direction": direction, "status": status}


def test_a_scrape_of_the_served_service_counts_its_real_traffic(tmp_path):
    receiver = Receiver(default=Reply(status=503, body=b"not now"))
    settings = {
        "WEBHOOKS_ALLOW_PRIVATE_TARGETS": True,
        "WEBHOOKS_ALLOWED_PORTS": [receiver.port],
        "WEBHOOKS_POLL_SECONDS": 0.2,
        "WEBHOOKS_RETRY_SCHEDULE": [600],  # one attempt each within the test
    }
    try:
        with served(tmp_path, **settings) as (base, api, _, graph):
            channel_id = shop(base, api)
            webhook = {"url": receiver.url, "events": ["message.received"]}
            call(api, "POST", f"{base}/v1/webhooks", webhook, 201)

            customer_writes(base, channel_id, KNOWN[0], "wamid.A1", sender="5511900000001")
            wait_for(graph.sent, "the first reply sent")
            graph.fail_next(400)  # the network refuses the second reply
            customer_writes(base, channel_id, KNOWN[0], "wamid.B1", sender="5511900000002")

            def settled():
                samples, _ = scrape(base, api)
                failed = value(
                    samples, "agent_platform_messages_total", **whatsapp("outbound", "failed")
                )
                attempts = value(samples, "agent_platform_webhook_attempts_total", result="failure")
                return samples if failed == 1 and attempts == 2 else None

            samples = wait_for(settled, "the failed send and both failed deliveries", every=0.2)
            conversation = call(api, "GET", f"{base}/v1/conversations")[0]["id"]
            call(api, "POST", f"{base}/v1/chats/{conversation}/handoff", {})
            after, workspaces = scrape(base, api)
    finally:
        receiver.close()

    messages = "agent_platform_messages_total"
    assert value(samples, messages, **whatsapp("inbound", "received")) == 2
    assert value(samples, messages, **whatsapp("outbound", "queued")) == 2
    assert value(samples, messages, **whatsapp("outbound", "sent")) == 1
    assert value(samples, messages, **whatsapp("outbound", "failed")) == 1
    assert value(samples, "agent_platform_message_send_errors_total", channel="whatsapp") == 1
    assert len(receiver.requests) == 2
    assert value(samples, "agent_platform_webhook_attempts_total", result="success") == 0
    assert value(samples, "agent_platform_webhook_deliveries_total", status="failed") == 0
    # The first customer's reply only: the refused one was never sent.
    latency = "agent_platform_reply_latency_seconds"
    assert value(samples, latency + "_count") == 1
    assert 0 < value(samples, latency + "_sum") < 15
    assert value(samples, latency + "_bucket", le="+Inf") == 1
    assert value(samples, latency + "_bucket", le="300") == 1
    for gauge in ("messages_to_send", "webhook_deliveries_due", "handoffs_waiting"):
        assert ("agent_platform_" + gauge, frozenset()) in samples  # present at 0
        assert value(samples, "agent_platform_" + gauge) == 0
    assert value(samples, "agent_platform_replies_pending", state="pending") == 0
    assert value(after, "agent_platform_handoffs_waiting") == 1
    # One workspace's figures: nothing of the instance's.
    assert len(workspaces) == 1 and None not in workspaces
    assert not any(name == "agent_platform_database_size_bytes" for name, _ in after)


def test_the_operators_listen_address_shows_every_workspace_and_the_database_size(tmp_path):
    port = free_port()
    with served(tmp_path, METRICS_LISTEN=f"127.0.0.1:{port}") as (base, api, environ, _):
        channel_id = shop(base, api)
        customer_writes(base, channel_id, KNOWN[0], "wamid.OP1")
        cli(environ, "workspaces", "create", "--name", "Second shop")
        response = requests.get(f"http://127.0.0.1:{port}/metrics", timeout=10)  # no key
        assert response.status_code == 200
        families = {f.name: f for f in text_string_to_metric_families(response.text)}
        assert requests.get(f"{base}/metrics", timeout=10).status_code == 401
    (size,) = families["agent_platform_database_size_bytes"].samples
    assert size.value > 100_000
    handoffs = families["agent_platform_handoffs_waiting"].samples
    assert len({sample.labels["workspace"] for sample in handoffs}) == 2
    (received,) = [
        sample.value
        for sample in families["agent_platform_messages"].samples
        if sample.labels["direction"] == "inbound"
    ]
    assert received == 1


def test_serve_refuses_a_metrics_port_in_use(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        address = f"127.0.0.1:{taken.getsockname()[1]}"
        environ = {**os.environ, "AGENT_PLATFORM_DATABASE_PATH": str(tmp_path / "m.db")}
        environ["AGENT_PLATFORM_METRICS_LISTEN"] = json.dumps(address)
        done = subprocess.run(
            [sys.executable, "app.py", "--port", str(free_port())],
            cwd=ROOT, env=environ, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
    assert done.returncode != 0
    assert "is in use; choose another with metrics.listen" in done.stderr
