"""Message stored -> shown in an open inbox, with inboxes open beside 500 widgets.

`agent-platform serve` on a fresh database, with bench/widget.py's website
channel and agent, and N people (20 by default) signed in through the
sign-in form, each with the same conversation open in the inbox, as
inbox.js drives the page: it listens to /app/events and, on a change, asks
the page again for its regions (X-Inbox-Part: the list, and the thread
when the change is about the conversation shown), 300 ms after its last
refresh for the thread or a conversation's state, 750 ms for the list alone.
Meanwhile 500 widgets listen to their push streams and write every 20-40 s
(bench/widget.py's pushed widgets), and a probe visitor, the one whose
conversation the inboxes show, writes a new line every 2 s. Shown: from the
probe's POST answered 201 (the message is stored) to the first thread region
an inbox fetched that holds the line, for every inbox and line; p50/p95/max.
Also the inboxes' refreshes per second and their p95, and the /app/events
streams' and the pages' errors.

    .venv/bin/python bench/inbox_live.py [--inboxes 20] [--widgets 500] [--seconds 60]
"""

import argparse
import json
import statistics
import threading
import time
import uuid

import requests
from inbox_pages import PASSWORD, signed_in
from loadgen import Service
from widget import ORIGIN, Control, Figures, run_widgets, setup

SOON_PAUSE, LIST_PAUSE = 0.3, 0.75  # inbox.js's SOON_MS and LIST_MS
PROBE_EVERY = 2.0


class Inbox(threading.Thread):
    """One person's open conversation page, refreshed as inbox.js does."""

    def __init__(self, base, email, conversation_id, probes, stop):
        super().__init__(daemon=True)
        self.base, self.email, self.page = base, email, f"/app/conversations/{conversation_id}"
        self.conversation_id, self.probes, self.stop = conversation_id, probes, stop
        self.session, self.shown, self.refreshes, self.errors = None, [], [], 0
        self.wanted, self.changed, self.urgent = set(), threading.Event(), False

    def run(self):
        self.session = signed_in(self.base, self.email)
        threading.Thread(target=self.listen, daemon=True).start()
        last = 0.0
        while not self.stop.is_set():
            if not self.changed.wait(0.1):
                continue
            pause = SOON_PAUSE if "thread" in self.wanted or self.urgent else LIST_PAUSE
            if time.monotonic() < last + pause:
                time.sleep(0.02)  # as a timer would, seeing a sooner change meanwhile
                continue
            self.changed.clear()
            parts, self.wanted, self.urgent = self.wanted, set(), False
            last = time.monotonic()
            self.refresh(parts or {"list", "thread"})

    def listen(self):
        try:
            self.follow()
        except requests.RequestException:
            self.errors += not self.stop.is_set()

    def follow(self):
        with self.session.get(self.base + "/app/events", stream=True, timeout=60) as stream:
            for line in stream.iter_lines():
                if self.stop.is_set():
                    return
                if line.startswith(b"data: "):
                    changes = json.loads(line[6:])
                    self.urgent |= not changes or any(
                        not c["event"].startswith("message.") for c in changes
                    )
                    about = not changes or any(
                        c["conversation"] == self.conversation_id for c in changes
                    )
                    self.wanted |= {"list", "thread"} if about else {"list"}
                    self.changed.set()

    def refresh(self, parts):
        started = time.monotonic()
        try:
            answer = self.session.get(
                self.base + self.page, headers={"X-Inbox-Part": ",".join(sorted(parts))}, timeout=30
            )
        except requests.RequestException:
            self.errors += not self.stop.is_set()  # the service stopping is no error
            return
        self.refreshes.append(time.monotonic() - started)
        if answer.status_code != 200:
            self.errors += 1
            return
        seen_at = time.monotonic()
        for line, stored_at in list(self.probes.items()):
            if line in answer.text and line not in self.seen:
                self.seen.add(line)
                self.shown.append(seen_at - stored_at)

    seen = None


class Probe:
    """A visitor of the site writing a new line every PROBE_EVERY seconds."""

    def __init__(self, base, channel):
        self.base = f"{base}/widget/{channel}/api/"
        self.session = requests.Session()
        self.session.headers["Origin"] = ORIGIN
        started = self.session.post(self.base + "session", json={}, timeout=10).json()
        self.session.headers["X-Visitor-Token"] = started["data"]["visitor_token"]
        self.stored = {}  # line -> when the service answered 201

    def write(self):
        line = f"probe {uuid.uuid4().hex[:12]}"
        body = {"text": line, "client_message_id": line}
        answer = self.session.post(self.base + "messages", json=body, timeout=10)
        if answer.status_code == 201:
            self.stored[line] = time.monotonic()
        return answer


def people(service, count):
    api = requests.Session()
    api.headers["x-api-key"] = service.admin_key
    emails = [f"person{n}@example.com" for n in range(count)]
    for n, email in enumerate(emails):
        body = {"email": email, "name": f"Person {n}", "role": "agent", "password": PASSWORD}
        api.post(service.base + "/v1/users", json=body, timeout=10).raise_for_status()
    return emails, api


def conversation_of_probe(api, base):
    found = api.get(base + "/v1/conversations", timeout=10).json()["data"]
    assert len(found) == 1, found
    return found[0]["id"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--inboxes", type=int, default=20)
    parser.add_argument("--widgets", type=int, default=500)
    parser.add_argument("--seconds", type=int, default=60)
    args = parser.parse_args()
    environ = {
        "AGENT_PLATFORM_REPLIES_DEBOUNCE_SECONDS": "0",
        "AGENT_PLATFORM_WIDGET_ADDRESS_REQUESTS_PER_MINUTE": "1000000",
        "AGENT_PLATFORM_WIDGET_ADDRESS_NEW_VISITORS_PER_MINUTE": "1000000",
        "AGENT_PLATFORM_RATE_LIMIT_REQUESTS": "100000000",
        "AGENT_PLATFORM_SERVER_MAX_CONNECTIONS": str(2 * args.widgets + 4 * args.inboxes + 100),
    }
    service = Service(environ).start()
    stop, control, figures = threading.Event(), Control(), Figures()
    try:
        channel = setup(service)
        emails, api = people(service, args.inboxes)
        probe = Probe(service.base, channel)
        probe.write().raise_for_status()
        conversation = conversation_of_probe(api, service.base)
        widgets = threading.Thread(
            target=run_widgets,
            args=(service.port, channel, args.widgets, control, figures, False, (20, 40), True),
        )
        widgets.start()
        inboxes = [Inbox(service.base, e, conversation, probe.stored, stop) for e in emails]
        for inbox in inboxes:
            inbox.seen = set()
            inbox.start()
        time.sleep(20)  # every widget has its stream and has begun writing
        probe.stored.clear()
        for inbox in inboxes:
            inbox.shown.clear()
            inbox.refreshes.clear()
        ends = time.monotonic() + args.seconds
        while time.monotonic() < ends:
            probe.write()
            time.sleep(PROBE_EVERY)
        time.sleep(3)  # the last line's refreshes
        report(args, probe, inboxes, figures)
    finally:
        stop.set()
        control.stop()
        service.cleanup()


def report(args, probe, inboxes, figures):
    shown = sorted(s for inbox in inboxes for s in inbox.shown)
    refreshes = sorted(r for inbox in inboxes for r in inbox.refreshes)
    expected = len(probe.stored) * len(inboxes)
    print(
        f"{args.inboxes} inboxes with the probe's conversation open beside {args.widgets} "
        f"widgets ({figures.streams} streams opened), {args.seconds} s, "
        f"a probe line every {PROBE_EVERY:g} s"
    )
    print(
        f"  shown: {len(shown)} of {expected} (lines x inboxes): p50 {pct(shown, 0.5):.2f} s, "
        f"p95 {pct(shown, 0.95):.2f} s, max {shown[-1] if shown else float('nan'):.2f} s"
    )
    print(
        f"  refreshes: {len(refreshes) / (args.seconds + 3):.1f}/s, p50 "
        f"{pct(refreshes, 0.5) * 1000:.0f} ms, p95 {pct(refreshes, 0.95) * 1000:.0f} ms; "
        f"errors: pages {sum(i.errors for i in inboxes)}, widgets {dict(figures.errors)}"
    )
    if figures.visible:
        visible = sorted(figures.visible)
        print(f"  widgets' reply visible p95 {pct(visible, 0.95):.2f} s")


def pct(values, fraction):
    if not values:
        return float("nan")
    if len(values) < 2:
        return values[0]
    return statistics.quantiles(values, n=100)[round(fraction * 100) - 1]


if __name__ == "__main__":
    main()
