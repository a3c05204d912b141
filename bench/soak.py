"""Issue 41 soak: an hour of mixed load on `agent-platform serve`, memory and
read latency minute by minute.

The service (bench/loadgen.Service: `serve` on a fresh database, one
gevent worker, jobs in the same process) gets, at a steady moderate pace:

- intake: signed WhatsApp webhook POSTs (text messages from 500 customers,
  a question the agent knows or not), each answered by the reply engine and
  sent to a local Graph API stand-in;
- webhook deliveries: every event (message.received, message.sent, ...) to
  a local receiver answering 200;
- widget conversations: visitors of a website channel write now and then
  and poll for the answers, as widget.js does;
- API reads: conversations, a conversation's messages, agents, GET /v1/me,
  timed one by one;
- a Prometheus scrape of GET /metrics every 15 s.

Beside it, in the same run, a bare Flask app under the same server
(bench/bare_server.py) gets GET / at the API reads' pace: its memory and
p99 show what the machine and the server do without the service.

Every minute: RSS and PSS of the service's processes and of the bare app's
(loadgen.resident_mb), p99 of the minute's API reads and of the bare reads,
the service's CPU share of one core, requests and errors, the database's
size and the machine's load average. At the end, minute 10 against the last
minute (target: RSS and p99 flat within 10%), and the minutes as JSON and CSV.

    .venv/bin/python bench/soak.py [--minutes 60] [--out /tmp/soak]

Keep the load moderate on a shared machine (--reads-per-second,
--intake-per-second, --visitors): the defaults kept the service at 12 to
18% of one core on a 2-core machine.
"""

import argparse
import csv
import hashlib
import hmac
import itertools
import json
import os
import random
import statistics
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import requests
from loadgen import Service, bare_flask, cpu_seconds, free_port, resident_mb

APP_SECRET = "soak-app-secret"
PHONE_NUMBER_ID = "106540352242922"
CUSTOMERS = 500
ORIGIN = "https://shop.example.com"
QUESTION, ANSWER = "What are your opening hours?", "We open every day from 9 am to 6 pm."
OTHER = "Do you deliver to Porto on Sundays?"  # unknown: the fallback answers
SCRAPE_SECONDS = 15


class Stub(ThreadingHTTPServer):
    """A loopback HTTP server answering every request with `answer(path)`."""

    daemon_threads = True

    def __init__(self, answer):
        self.answer, self.hits, self.lock = answer, 0, threading.Lock()
        super().__init__(("127.0.0.1", 0), _StubHandler)
        threading.Thread(target=self.serve_forever, daemon=True).start()

    @property
    def base(self):
        return f"http://127.0.0.1:{self.server_address[1]}"


class _StubHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def _answer(self):
        length = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(length)
        with self.server.lock:
            self.server.hits += 1
        body = json.dumps(self.server.answer(self.path)).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = _answer

    def log_message(self, *args):
        pass


_wamids = itertools.count(1)


def graph_answer(path):
    """The Graph API's answer to a send (and to anything else: {})."""
    if path.endswith("/messages"):
        return {"messaging_product": "whatsapp", "messages": [{"id": f"wamid.OUT{next(_wamids)}"}]}
    return {}


class Window:
    """Latencies and counts of the current minute, swapped out each minute."""

    def __init__(self):
        self.lock = threading.Lock()
        self.latencies, self.counts = {}, {}

    def timed(self, kind, seconds, ok):
        counted = kind if ok else kind + "_errors"
        with self.lock:
            self.latencies.setdefault(kind, []).append(seconds * 1000)
            self.counts[counted] = self.counts.get(counted, 0) + 1

    def take(self):
        with self.lock:
            taken = self.latencies, self.counts
            self.latencies, self.counts = {}, {}
            return taken


def paced(stop, per_second, action):
    """Call action() `per_second` times a second until `stop`, on a fixed schedule."""
    interval, due = 1 / per_second, time.monotonic()
    while not stop.is_set():
        try:
            action()
        except requests.RequestException:
            pass  # counted by the action as an error where it times one
        due += interval
        stop.wait(max(0.0, due - time.monotonic()))


def timed_get(session, url, window, kind):
    started = time.perf_counter()
    try:
        ok = session.get(url, timeout=30).status_code == 200
    except requests.RequestException:
        ok = False
    window.timed(kind, time.perf_counter() - started, ok)


def setup(service, receiver):
    api = requests.Session()
    api.headers["x-api-key"] = service.admin_key

    def post(path, body):
        response = api.post(service.base + path, json=body, timeout=10)
        response.raise_for_status()
        return response.json()["data"]

    agent = post("/v1/agents", {"name": "Ana"})["id"]
    post(f"/v1/agents/{agent}/trainings", {"type": "qa", "question": QUESTION, "answer": ANSWER})
    # The fallback answers the unknown question without handing the chat to a
    # person: a held conversation gets no more replies, and within minutes
    # every customer's would be held (the first soak's WhatsApp replies
    # stopped at minute 6).
    settings = api.put(
        f"{service.base}/v1/agents/{agent}/settings",
        json={"handoff_on_fallback": False},
        timeout=10,
    )
    settings.raise_for_status()
    whatsapp = {
        "phone_number_id": PHONE_NUMBER_ID,
        "app_secret": APP_SECRET,
        "verify_token": "soak",
        "access_token": "soak-token",
    }
    channel = post("/v1/channels", {"name": "WA", "type": "whatsapp", "settings": whatsapp})
    site = {"name": "Site", "type": "website", "settings": {"allowed_origins": [ORIGIN]}}
    website = post("/v1/channels", site)
    for connected in (channel, website):
        post(f"/v1/channels/{connected['id']}/connect", {"agent_id": agent})
    post("/v1/webhooks", {"url": receiver.base + "/hook", "events": ["*"]})
    return api, agent, channel["id"], website["id"]


def intake(service, channel_id, window):
    session, numbers = requests.Session(), itertools.count()
    url = f"{service.base}/inbound/whatsapp/{channel_id}"

    def post():
        number = next(numbers)
        wa_id = str(5511900000000 + number % CUSTOMERS)
        words = QUESTION if number % 3 else OTHER
        item = {"from": wa_id, "id": f"wamid.SOAK{number:09d}", "type": "text"}
        item.update(timestamp=str(int(time.time())), text={"body": words})
        value = {
            "messaging_product": "whatsapp",
            "metadata": {
                "display_phone_number": "5511987654321",
                "phone_number_id": PHONE_NUMBER_ID,
            },
            "contacts": [{"profile": {"name": f"Customer {wa_id[-3:]}"}, "wa_id": wa_id}],
            "messages": [item],
        }
        change = {"field": "messages", "value": value}
        body = {"object": "whatsapp_business_account", "entry": [{"id": "1", "changes": [change]}]}
        raw = json.dumps(body).encode()
        signature = "sha256=" + hmac.new(APP_SECRET.encode(), raw, hashlib.sha256).hexdigest()
        headers = {"Content-Type": "application/json", "X-Hub-Signature-256": signature}
        started = time.perf_counter()
        try:
            ok = session.post(url, data=raw, headers=headers, timeout=30).status_code == 200
        except requests.RequestException:
            ok = False
        window.timed("intake", time.perf_counter() - started, ok)

    return post


def api_reads(service, api, window):
    """One read a call, in turn: the paths a dashboard or an integration reads."""
    base, turn = service.base, itertools.count()

    def read():
        which = next(turn) % 4
        if which == 0:
            timed_get(api, base + "/v1/conversations?limit=20", window, "api")
        elif which == 1:
            timed_get(api, base + "/v1/agents", window, "api")
        elif which == 2:
            timed_get(api, base + "/v1/me", window, "api")
        else:
            page = api.get(base + "/v1/conversations?limit=5", timeout=30).json()["data"]
            if page:
                path = f"/v1/conversations/{random.choice(page)['id']}/messages?limit=20"
                timed_get(api, base + path, window, "api")

    return read


def visitor(service, channel_id, number, stop, window, ask_every, poll_every):
    """A widget visitor: a session, a question every `ask_every` seconds,
    a poll of new messages every `poll_every` (the answers come back there)."""
    session = requests.Session()
    session.headers["Origin"] = ORIGIN
    base = f"{service.base}/widget/{channel_id}/api"
    started = session.post(base + "/session", json={}, timeout=30).json()["data"]
    session.headers["X-Visitor-Token"] = started["visitor_token"]
    since, asked, next_ask = (
        None,
        itertools.count(),
        time.monotonic() + random.uniform(0, ask_every),
    )
    while not stop.wait(poll_every):
        if time.monotonic() >= next_ask:
            body = {"text": QUESTION, "client_message_id": f"v{number}-{next(asked)}"}
            begun = time.perf_counter()
            status = session.post(base + "/messages", json=body, timeout=30).status_code
            window.timed("widget_ask", time.perf_counter() - begun, status == 201)
            next_ask += ask_every
        query = f"?since={since}" if since else ""
        begun = time.perf_counter()
        response = session.get(base + "/messages" + query, timeout=30)
        window.timed("widget_poll", time.perf_counter() - begun, response.status_code in (200, 204))
        if response.status_code == 200:
            since = response.json()["data"].get("since") or since


def scraper(service, api, window):
    def scrape():
        timed_get(api, service.base + "/metrics", window, "scrape")

    return scrape


def percentile(values, fraction):
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def minute_row(minute, service, bare, window, cpu_before, elapsed):
    latencies, counts = window.take()
    rss, pss = resident_mb(*service.pids)
    bare_rss, bare_pss = resident_mb(bare.pid)
    cpu_now = cpu_seconds(service.process.pid)
    load1, load5, _ = os.getloadavg()
    row = {
        "minute": minute,
        "rss_mb": round(rss, 1),
        "pss_mb": round(pss, 1),
        "bare_rss_mb": round(bare_rss, 1),
        "bare_pss_mb": round(bare_pss, 1),
        "api_p50_ms": _rounded(percentile(latencies.get("api", []), 0.5)),
        "api_p99_ms": _rounded(percentile(latencies.get("api", []), 0.99)),
        "bare_p99_ms": _rounded(percentile(latencies.get("bare", []), 0.99)),
        "intake_p99_ms": _rounded(percentile(latencies.get("intake", []), 0.99)),
        "widget_poll_p99_ms": _rounded(percentile(latencies.get("widget_poll", []), 0.99)),
        "scrape_max_ms": _rounded(max(latencies.get("scrape", [0]))),
        "service_cpu_pct": round(100 * (cpu_now - cpu_before) / elapsed, 1),
        "load1": round(load1, 2),
        "load5": round(load5, 2),
        "db_mb": round(_database_mb(service.database), 1),
    }
    row.update({f"n_{kind}": count for kind, count in sorted(counts.items())})
    return row, cpu_now


def _rounded(value):
    return None if value is None else round(value, 1)


def _database_mb(path):
    return sum(os.path.getsize(p) for p in (path, path + "-wal") if os.path.exists(p)) / 2**20


def parse_options():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=int, default=60)
    parser.add_argument("--out", default=f"/tmp/soak-{time.strftime('%Y%m%d-%H%M%S')}")
    parser.add_argument("--reads-per-second", type=float, default=30)
    parser.add_argument("--intake-per-second", type=float, default=5)
    parser.add_argument("--visitors", type=int, default=15)
    parser.add_argument("--ask-every", type=float, default=20, help="seconds, per visitor")
    parser.add_argument("--poll-every", type=float, default=2, help="seconds, per visitor")
    return parser.parse_args()


def start_load(options, service, bare_port, stop, window, receiver):
    api, _, channel_id, website_id = setup(service, receiver)
    bare_session = requests.Session()
    jobs = [
        (options.intake_per_second, intake(service, channel_id, window)),
        (options.reads_per_second, api_reads(service, api, window)),
        (
            options.reads_per_second,
            lambda: timed_get(bare_session, f"http://127.0.0.1:{bare_port}/", window, "bare"),
        ),
        (1 / SCRAPE_SECONDS, scraper(service, api, window)),
    ]
    threads = [
        threading.Thread(target=paced, args=(stop, rate, job), daemon=True) for rate, job in jobs
    ]
    for number in range(options.visitors):
        arguments = (
            service,
            website_id,
            number,
            stop,
            window,
            options.ask_every,
            options.poll_every,
        )
        threads.append(threading.Thread(target=visitor, args=arguments, daemon=True))
    for thread in threads:
        thread.start()
    return threads


def run(options, out):
    graph, receiver = Stub(graph_answer), Stub(lambda path: {"ok": True})
    environ = {
        "AGENT_PLATFORM_WHATSAPP_GRAPH_API_BASE": graph.base + "/v21.0",
        "AGENT_PLATFORM_WEBHOOKS_ALLOW_PRIVATE_TARGETS": "true",
        "AGENT_PLATFORM_REPLIES_DEBOUNCE_SECONDS": "1",
        "AGENT_PLATFORM_RATE_LIMIT_REQUESTS": "100000000",
        "AGENT_PLATFORM_WIDGET_ADDRESS_REQUESTS_PER_MINUTE": "1000000",
        "AGENT_PLATFORM_WIDGET_ADDRESS_NEW_VISITORS_PER_MINUTE": "1000000",
    }
    environ["AGENT_PLATFORM_WEBHOOKS_ALLOWED_PORTS"] = f"[{receiver.server_address[1]}]"
    service = Service(environ).start()
    bare_port = free_port()
    bare = bare_flask("bare_app:app", bare_port)
    stop, window, rows = threading.Event(), Window(), []
    try:
        start_load(options, service, bare_port, stop, window, receiver)
        rows = measure(options, service, bare, window, out, receiver, graph)
    finally:
        stop.set()
        bare.terminate()
        bare.wait()
        print("service log (last lines):", *service.logged(10), sep="\n  ")
        service.cleanup()
    return rows


def measure(options, service, bare, window, out, receiver, graph):
    rows, cpu_before, last = [], cpu_seconds(service.process.pid), time.monotonic()
    for minute in range(1, options.minutes + 1):
        time.sleep(max(0.0, last + 60 - time.monotonic()))
        now = time.monotonic()
        row, cpu_before = minute_row(minute, service, bare, window, cpu_before, now - last)
        row["webhooks_received"], row["graph_requests"] = receiver.hits, graph.hits
        last = now
        rows.append(row)
        print(json.dumps(row), flush=True)
        write(out, rows)
    return rows


def write(out, rows):
    Path(out).mkdir(parents=True, exist_ok=True)
    Path(out, "minutes.json").write_text(json.dumps(rows, indent=1))
    columns = list(dict.fromkeys(key for row in rows for key in row))
    with open(Path(out, "minutes.csv"), "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns)
        writer.writeheader()
        writer.writerows(rows)


def compare(rows):
    """Minute 10 (or the first, in a short run) against the last minute."""
    first = rows[min(9, len(rows) - 1)]
    last = rows[-1]
    print(f"\nminute {first['minute']} vs minute {last['minute']}:")
    for key in ("rss_mb", "pss_mb", "api_p99_ms", "bare_rss_mb", "bare_p99_ms", "load1"):
        before, after = first.get(key), last.get(key)
        change = (
            f"{100 * (after - before) / before:+.1f}%" if before and after is not None else "n/a"
        )
        print(f"  {key:14} {before!s:>8} -> {after!s:>8}  ({change})")
    later = rows[min(9, len(rows) - 1) :]
    p99s = [row["api_p99_ms"] for row in later if row["api_p99_ms"] is not None]
    if p99s:
        print(
            f"  api p99 from minute {first['minute']} on: median {statistics.median(p99s)} ms, "
            f"max {max(p99s)} ms"
        )


def main():
    options = parse_options()
    print(f"soak: {options.minutes} minutes, minutes written to {options.out}", flush=True)
    rows = run(options, options.out)
    if rows:
        compare(rows)
        print(f"\nminutes written to {options.out}/minutes.json and minutes.csv")


if __name__ == "__main__":
    main()
