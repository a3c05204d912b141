"""Issue 7 benchmark: from a customer's WhatsApp message to the agent's reply
leaving for the network.

One process, as `agent-platform serve` runs it: the app on a fresh SQLite
file (real migrations) and the real scheduler (the reply job every
REPLIES_POLL_SECONDS, the send job, every other job). The agent uses the
`openai` provider pointed at a local OpenAI-compatible stand-in that answers
at once (tests/openai_stub.py), so each reply makes a real HTTP round trip;
`--provider knowledge` answers offline instead.

The way in (`--via whatsapp`, the default) is the WhatsApp callback: a signed
POST /inbound/whatsapp/{channel_id} through the whole WSGI app (Flask test
client, in process: signature, parsing, receive_inbound), and the way out is
the WhatsApp sender posting to the local Graph API stand-in
(tests/graph_stub.py), where the clock stops when its POST .../messages
arrives. `--via service` calls services.inbound.receive_inbound and a
recording sender instead (no adapter).

Latency: 20 customers write at the same time; each starts a conversation (a
new number), waits until the agent's reply reaches the Graph API, and starts
the next: 1,000 conversations. Per conversation: callback POST -> send
request, p50 and p99, and what is left once the debounce is taken off.
Throughput (`--burst`): the customers post all their messages without
waiting; replies per second from the first reply due to the last one sent.

    .venv/bin/python bench/replies_latency.py [--conversations 1000] [--customers 20]
        [--debounce 2.0] [--provider openai|knowledge] [--via whatsapp|service] [--burst]
"""

import argparse
import hashlib
import hmac
import json
import logging
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "platform"))
sys.path.insert(0, str(ROOT / "tests"))

from agent_platform import create_app  # noqa: E402
from agent_platform.channels import InboundMessage, SendResult, register_sender  # noqa: E402
from agent_platform.db import database  # noqa: E402
from agent_platform.migrate import apply_migrations  # noqa: E402
from agent_platform.models import Channel, Message  # noqa: E402
from agent_platform.scheduler import build_scheduler  # noqa: E402
from agent_platform.services import agents, channels, inbound, keys, trainings  # noqa: E402
from graph_stub import GraphStub  # noqa: E402
from openai_stub import OpenAIStub, answer  # noqa: E402

WA_SETTINGS = {
    "phone_number_id": "106540352242922",
    "business_account_id": "102290129340398",
    "display_phone_number": "+5511987654321",
    "access_token": "EAAG-bench-token",
    "app_secret": "bench-app-secret",
    "verify_token": "verify",
}


class Arrivals:
    """When the reply to each customer number reached the network."""

    def __init__(self):
        self.lock = threading.Lock()
        self.events, self.at, self.count = {}, {}, 0

    def event(self, number):
        with self.lock:
            return self.events.setdefault(number, threading.Event())

    def arrived(self, number):
        now = time.perf_counter()
        with self.lock:
            self.count += 1
            self.at.setdefault(number, now)
        self.event(number).set()


class TimedGraph(GraphStub):
    """The Graph API stand-in, noting when each message POST arrives."""

    def __init__(self, arrivals):
        super().__init__(token=WA_SETTINGS["access_token"])
        self.arrivals = arrivals

    def _send(self, seen):
        if seen.json.get("status") != "read":
            self.arrivals.arrived(seen.json["to"])
        return super()._send(seen)


class RecordingSender:
    """`--via service`: a sender that only notes the time."""

    def __init__(self, arrivals):
        self.arrivals = arrivals

    def send(self, channel, message):
        contact = Message.get_by_id(message.id).contact_id
        self.arrivals.arrived(contact)
        return SendResult(external_id=f"sent-{message.id}")


def build(path, args, model_url, graph_base):
    app = create_app(
        {
            "DATABASE_PATH": str(path),
            "REPLIES_DEBOUNCE_SECONDS": args.debounce,
            "WHATSAPP_GRAPH_API_BASE": graph_base,
            "MEDIA_DIR": str(path.parent / "media"),
            "INBOUND_MAX_REQUESTS_PER_MINUTE": 10**6,
        }
    )
    with app.app_context():
        apply_migrations()
        workspace = keys.create_workspace("Bench")
        agent = agents.create_agent(workspace.id, {"name": "Ana"})
        settings = {"model_provider": args.provider, "base_url": model_url, "api_key": "sk-b"}
        agents.update_settings(workspace.id, agent.id, settings)
        for number in range(30):
            qa = {"type": "qa", "question": f"Question {number} about topic{number}?"}
            trainings.create_training(workspace.id, agent.id, {**qa, "answer": f"Answer {number}."})
        delivery = {"type": "qa", "question": "How much is delivery?", "answer": "It is $5."}
        trainings.create_training(workspace.id, agent.id, delivery)
        channel = channels.create_channel(
            workspace.id, {"name": "WA", "type": "whatsapp", "settings": WA_SETTINGS}
        )
        channels.connect(workspace.id, channel.id, agent.id)
        channel_id = channel.id
    database.close()
    return app, channel_id


def callback_body(number, wa_id):
    value = {
        "messaging_product": "whatsapp",
        "metadata": {
            "display_phone_number": "5511987654321",
            "phone_number_id": WA_SETTINGS["phone_number_id"],
        },
        "contacts": [{"profile": {"name": f"Customer {number}"}, "wa_id": wa_id}],
        "messages": [
            {
                "from": wa_id,
                "id": f"wamid.BENCH{number}",
                "timestamp": str(int(time.time())),
                "type": "text",
                "text": {"body": "Hi! how much is delivery?"},
            }
        ],
    }
    entry = {
        "id": WA_SETTINGS["business_account_id"],
        "changes": [{"field": "messages", "value": value}],
    }
    return json.dumps({"object": "whatsapp_business_account", "entry": [entry]}).encode()


def post_callback(client, channel_id, number, wa_id):
    body = callback_body(number, wa_id)
    digest = hmac.new(WA_SETTINGS["app_secret"].encode(), body, hashlib.sha256).hexdigest()
    headers = {"Content-Type": "application/json", "X-Hub-Signature-256": "sha256=" + digest}
    response = client.post(f"/inbound/whatsapp/{channel_id}", data=body, headers=headers)
    assert response.status_code == 200, response.get_data(as_text=True)


def customer(app, channel_id, args, arrivals, numbers, results):
    """One customer after another on this thread: write, then (unless --burst) wait."""
    client = app.test_client()
    with app.app_context():
        channel = Channel.get_by_id(channel_id)
        for number in numbers:
            wa_id = f"55119{number:08d}"
            started = time.perf_counter()
            if args.via == "whatsapp":
                post_callback(client, channel_id, number, wa_id)
                key = wa_id
            else:
                message = InboundMessage(external_id=f"wamid.{number}", sender_id=wa_id,
                                         text="Hi! how much is delivery?")  # fmt: skip
                key = inbound.receive_inbound(channel, message).message.contact_id
            results.append((key, started))
            if not args.burst:
                arrivals.event(key).wait(60 + args.debounce)
        database.close()


def percentile(values, fraction):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(fraction * (len(ordered) - 1))))]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conversations", type=int, default=1000)
    parser.add_argument("--customers", type=int, default=20)
    parser.add_argument("--debounce", type=float, default=2.0)
    parser.add_argument("--provider", choices=("openai", "knowledge"), default="openai")
    parser.add_argument("--via", choices=("whatsapp", "service"), default="whatsapp")
    parser.add_argument("--burst", action="store_true")
    args = parser.parse_args()
    logging.disable(logging.INFO)  # the scheduler's chatter
    arrivals = Arrivals()
    graph = TimedGraph(arrivals)
    with (
        OpenAIStub(default=answer("It is $5.")) as model,
        tempfile.TemporaryDirectory() as tmp,
    ):
        app, channel_id = build(Path(tmp) / "bench.db", args, model.url, graph.base)
        if args.via == "service":
            register_sender("whatsapp", RecordingSender(arrivals))
        scheduler = build_scheduler(app)
        scheduler.start()
        results, threads = [], []
        started = time.perf_counter()
        for index in range(args.customers):
            numbers = range(index, args.conversations, args.customers)
            thread = threading.Thread(
                target=customer, args=(app, channel_id, args, arrivals, numbers, results)
            )
            thread.start()
            threads.append(thread)
        for thread in threads:
            thread.join()
        deadline = time.monotonic() + 120
        while arrivals.count < args.conversations and time.monotonic() < deadline:
            time.sleep(0.05)
        elapsed = time.perf_counter() - started
        scheduler.shutdown(wait=True)
        with app.app_context():
            stored = Message.select().where(Message.sender_type == "agent").count()
            poll = app.config["REPLIES_POLL_SECONDS"]
        model_calls = len(model.requests)
    graph.close()
    report(args, poll, results, arrivals, elapsed, stored, model_calls)


def report(args, poll, results, arrivals, elapsed, stored, model_calls):
    latencies = [arrivals.at[key] - started for key, started in results if key in arrivals.at]
    print(
        f"{args.conversations} conversations, {args.customers} customers at once, via "
        f"{args.via}, provider {args.provider}, debounce {args.debounce:g} s, poll {poll:g} s"
        + (", burst" if args.burst else "")
    )
    print(
        f"replies sent: {len(latencies)} of {len(results)}; agent messages stored {stored}, "
        f"send requests {arrivals.count}, model calls {model_calls}"
    )
    if not latencies:
        return
    p50, p99 = percentile(latencies, 0.5), percentile(latencies, 0.99)
    print(f"message -> send request: p50 {p50 * 1000:.0f} ms, p99 {p99 * 1000:.0f} ms")
    print(
        f"  minus the debounce:    p50 {(p50 - args.debounce) * 1000:.0f} ms, "
        f"p99 {(p99 - args.debounce) * 1000:.0f} ms (target p50 < 250 ms)"
    )
    print(f"  mean {statistics.mean(latencies) * 1000:.0f} ms, max {max(latencies) * 1000:.0f} ms")
    if args.burst:
        first_due = min(started for _, started in results) + args.debounce
        span = max(arrivals.at.values()) - first_due
        print(f"replies per second, first due to last sent: {len(latencies) / span:.1f}")
    else:
        print(f"replies per second sustained: {len(latencies) / elapsed:.1f} ({elapsed:.1f} s)")


if __name__ == "__main__":
    main()
