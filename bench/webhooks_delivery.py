"""Issue 5 benchmark: webhook delivery throughput, latency, and a crash mid-way.

1. Throughput. 10,000 events to a local receiver (bench/webhooks_receiver.py, its own
   process, answers 200), sent by the real delivery job (`deliver_due`: claim with a
   lease, sign, SSRF guard, send, record each attempt) against a plain
   `requests.Session` loop posting the same 10,000 bodies, in the same run.
   Target: >= 50% of the plain loop.
2. Latency. `agent-platform serve` (gunicorn + scheduler, default 1 s poll): event
   time (envelope timestamp) to the first attempt's arrival at the receiver, p50
   and p95, for events raised at a steady pace in two ways:
   a. through the served API (POST /v1/contacts, a `contact.created` event): the
      commit wakes the delivery job of the process at once. Target: p50 <= 0.25 s.
   b. by this script on the database, each in its own transaction: another
      process's event, which the job's poll finds. Target: p50 <= 1.5 s.
3. Crash. 10,000 events; `agent-platform serve` is killed with SIGKILL (its whole
   process group) once about half has arrived, then started again. Every event must
   arrive at least once (distinct event_ids = 10,000); duplicates are counted.
4. Isolation. `agent-platform serve` (default 1 s poll, 10 s timeout) while this
   script raises events at a steady pace for two healthy webhooks, first alone
   (the baseline), then with a third webhook whose receiver accepts every
   connection and never answers. Targets: with the hanging receiver, the healthy
   webhooks keep >= 80% of their delivery rate without it, and their event ->
   first attempt p99 stays under 2 s.

Part 2 also runs on PostgreSQL: `--only latency --postgresql` puts serve
(`[database] url = ...`) and this script's own events on an empty database of
a throwaway PostgreSQL server (Debian's package, in a temporary directory,
with its durable defaults: bench/loadgen.py's throwaway_postgresql). psycopg
is needed (the `postgresql` extra). The other parts run on SQLite only.

    .venv/bin/python bench/webhooks_delivery.py [--events 10000] [--latency-events 300]
        [--only isolation|latency] [--isolation-seconds 20] [--isolation-rate 100]
    .venv/bin/python bench/webhooks_delivery.py --only latency --postgresql
"""

import argparse
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

import requests
from loadgen import throwaway_postgresql

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "platform"))


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Receiver:
    def __init__(self):
        self.port = free_port()
        self.process = subprocess.Popen(
            [sys.executable, str(ROOT / "bench" / "webhooks_receiver.py"), str(self.port)],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.process.stdout.readline().strip() == "ready"
        self.base = f"http://127.0.0.1:{self.port}"
        self.url = self.base + "/hook"

    def stats(self):
        return requests.get(self.base + "/stats", timeout=30).json()

    def dump(self):
        return requests.get(self.base + "/dump", timeout=60).json()

    def reset(self):
        requests.post(self.base + "/reset", timeout=30)

    def wait_for(self, distinct, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            stats = self.stats()
            if stats["distinct"] >= distinct:
                return stats
            time.sleep(0.2)
        return self.stats()

    def stop(self):
        self.process.terminate()
        self.process.wait(timeout=10)


def is_url(database):
    """A PostgreSQL database's URL (--postgresql) rather than a SQLite file's path."""
    return database.startswith("postgresql://")


def bench_app(database, **extra):
    """The app on `database`, a SQLite file's path or a PostgreSQL URL, migrated."""
    from agent_platform import create_app
    from agent_platform.migrate import apply_migrations

    settings = {
        ("DATABASE_URL" if is_url(database) else "DATABASE_PATH"): database,
        "LOG_LEVEL": "WARNING",
        "WEBHOOKS_ALLOW_PRIVATE_TARGETS": True,
        "WEBHOOKS_ALLOWED_PORTS": [],
        **extra,
    }
    app = create_app(settings)
    with app.app_context():
        apply_migrations()
    return app


def register_webhook(app, url):
    from agent_platform.services import keys, webhooks

    with app.app_context():
        workspace_id = keys.create_workspace("bench").id
        hook = webhooks.create_webhook(workspace_id, {"url": url, "events": ["*"]})
        return workspace_id, hook.id


def raise_events(app, workspace_id, count, per_transaction=500):
    from agent_platform.db import transaction
    from agent_platform.events import emit

    with app.app_context():
        for start in range(0, count, per_transaction):
            with transaction():
                for number in range(start, min(count, start + per_transaction)):
                    emit(workspace_id, "message.received", {"n": number, "text": "Hello there"})


def bodies_of(app, webhook_id):
    from agent_platform.models.webhooks import Delivery

    with app.app_context():
        query = Delivery.select(Delivery.body).where(Delivery.webhook == webhook_id)
        return [row.body.encode() for row in query.order_by(Delivery.created_at)]


def plain_loop(url, bodies):
    session = requests.Session()
    headers = {"Content-Type": "application/json"}
    started = time.perf_counter()
    for body in bodies:
        response = session.post(url, data=body, headers=headers, timeout=10)
        assert response.status_code == 200
    return len(bodies) / (time.perf_counter() - started)


def throughput(count, directory):
    from agent_platform.events.delivery import deliver_due

    receiver = Receiver()
    try:
        app = bench_app(os.path.join(directory, "throughput.db"))
        workspace_id, webhook_id = register_webhook(app, receiver.url)
        raise_events(app, workspace_id, count)
        bodies = bodies_of(app, webhook_id)
        plain_before = plain_loop(receiver.url, bodies)
        receiver.reset()
        with app.app_context():
            started = time.perf_counter()
            attempts = deliver_due()
            elapsed = time.perf_counter() - started
        stats = receiver.stats()
        receiver.reset()
        plain_after = plain_loop(receiver.url, bodies)
    finally:
        receiver.stop()
    plain = max(plain_before, plain_after)
    ours = attempts / elapsed
    print(f"[1] throughput, {count:,} events, one webhook, receiver answers 200")
    print(
        f"    plain requests.Session loop  {plain:8.0f} posts/s   "
        f"(best of two runs: {plain_before:.0f}, {plain_after:.0f})"
    )
    print(
        f"    delivery job (deliver_due)   {ours:8.0f} deliveries/s  "
        f"({attempts:,} attempts in {elapsed:.2f} s)"
    )
    print(f"    ratio                        {ours / plain:8.0%}   target >= 50%")
    print(f"    received {stats['received']:,}, distinct event_ids {stats['distinct']:,}")
    return ours / plain


class Serve:
    """`agent-platform serve` in its own process group, on a config file."""

    def __init__(self, directory, database, **webhooks):
        self.directory = directory
        self.port = free_port()
        self.config = os.path.join(directory, f"serve-{self.port}.toml")
        where = f"{'url' if is_url(database) else 'path'} = {json.dumps(database)}"
        lines = ["[database]", where, "[log]", 'level = "WARNING"', "[webhooks]"]
        lines += ["allow_private_targets = true", "allowed_ports = []"]
        lines += [f"{key} = {json.dumps(value)}" for key, value in webhooks.items()]
        # The latency run's contacts come from one key faster than the default limit.
        lines += ["[rate_limit]", "requests = 1000000"]
        Path(self.config).write_text("\n".join(lines) + "\n")
        self.process = None

    def start(self):
        # This checkout's code, whichever one the environment's package points at.
        environ = dict(os.environ, PYTHONPATH=str(ROOT / "platform"))
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "agent_platform",
                "serve",
                "--config",
                self.config,
                "--port",
                str(self.port),
            ],
            cwd=self.directory,
            env=environ,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        threading.Thread(target=self.process.stdout.read, daemon=True).start()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                if requests.get(f"http://127.0.0.1:{self.port}/v1/health", timeout=1).ok:
                    return self
            except requests.RequestException:
                time.sleep(0.1)
        raise RuntimeError("serve did not come up")

    def contact(self, api_key, number):
        """POST /v1/contacts: one `contact.created` event, committed by the server."""
        answer = requests.post(
            f"http://127.0.0.1:{self.port}/v1/contacts",
            json={"name": f"Bench {number}", "phone": f"+5511{number:09d}"},
            headers={"X-API-Key": api_key},
            timeout=10,
        )
        assert answer.status_code == 201, answer.text

    def kill(self):
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=10)

    def stop(self):
        if self.process and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            # gunicorn gives its worker 30 s to finish a send to a hanging receiver.
            self.process.wait(timeout=60)


def parse_time(text):
    return datetime.fromisoformat(text.replace("Z", "+00:00")).replace(tzinfo=UTC).timestamp()


def latency(count, rate, directory, database=None):
    """Event -> first attempt, p50 and p95: (a) raised through the API, (b) by this
    script; on `database` (a PostgreSQL URL), else on a SQLite file in `directory`."""
    receiver = Receiver()
    database = database or os.path.join(directory, "latency.db")
    # serve's key of stored secrets is beside its config file, in `directory`;
    # this script's app seals the webhook's secret with the same one (the
    # default, beside the database, is there too on SQLite; PostgreSQL has no file).
    app = bench_app(database, SECRETS_KEY_FILE=os.path.join(directory, "secrets.key"))
    workspace_id, _ = register_webhook(app, receiver.url)
    api_key = admin_key(app, workspace_id)
    serve = Serve(directory, database)
    try:
        serve.start()  # default poll: 1 s
        through_api = _latency_run(receiver, count, rate, lambda n: serve.contact(api_key, n))
        by_script = _latency_run(
            receiver, count, rate, lambda n: raise_events(app, workspace_id, 1)
        )
    finally:
        serve.stop()
        receiver.stop()
    engine = "PostgreSQL" if is_url(database) else "SQLite"
    print(
        f"[2] latency, `agent-platform serve` on {engine}, poll 1 s, "
        f"{count} events at {rate}/s each way"
    )
    _print_latency("a. raised through the API (woken)", through_api, "p50 <= 0.25 s")
    _print_latency("b. raised by another process (poll)", by_script, "p50 <= 1.5 s")
    return through_api["p50"], by_script["p50"]


def _latency_run(receiver, count, rate, raise_one):
    receiver.reset()
    for number in range(count):
        raise_one(number)
        time.sleep(1 / rate)
    stats = receiver.wait_for(count, timeout=60)
    first = {}
    for event_id, received_at, stamp in receiver.dump():
        first.setdefault(event_id, received_at - parse_time(stamp))
    delays = sorted(first.values())
    return {
        "p50": statistics.median(delays),
        "p95": delays[int(len(delays) * 0.95) - 1],
        "max": delays[-1],
        "received": stats["received"],
        "distinct": stats["distinct"],
    }


def _print_latency(label, run, target):
    print(
        f"    {label:38} p50 {run['p50']:.3f} s  p95 {run['p95']:.3f} s  "
        f"max {run['max']:.3f} s   target {target}"
    )
    print(f"    {'':38} received {run['received']}, distinct {run['distinct']}")


def admin_key(app, workspace_id):
    from agent_platform.services import keys

    with app.app_context():
        return keys.create_key(workspace_id, "bench", keys.all_scopes())[1]


def crash(count, directory):
    receiver = Receiver()
    database = os.path.join(directory, "crash.db")
    app = bench_app(database)
    workspace_id, _ = register_webhook(app, receiver.url)
    raise_events(app, workspace_id, count)
    # A short lease so the restarted process takes over the killed one's claims soon.
    settings = {"lease_seconds": 10, "timeout_seconds": 2}
    serve = Serve(directory, database, **settings).start()
    try:
        started = time.monotonic()
        while receiver.stats()["received"] < count // 2:
            time.sleep(0.02)
        serve.kill()
        killed_at = receiver.stats()
        first_run = time.monotonic() - started
        time.sleep(1)
        restarted = time.monotonic()
        serve = Serve(directory, database, **settings).start()
        final = receiver.wait_for(count, timeout=300)
        recovery = time.monotonic() - restarted
        records = receiver.dump()
    finally:
        serve.stop()
        receiver.stop()
    delivered_rate = killed_at["received"] / first_run
    duplicates = final["received"] - final["distinct"]
    print(f"[3] crash: {count:,} events, serve SIGKILLed mid-way and restarted (lease 10 s)")
    print(
        f"    before the kill: {killed_at['received']:,} received in {first_run:.1f} s "
        f"({delivered_rate:.0f}/s through serve)"
    )
    print(f"    after restart: all done in {recovery:.1f} s")
    print(
        f"    distinct event_ids received {final['distinct']:,} of {count:,}   (must be {count:,})"
    )
    print(f"    received in total {final['received']:,}; delivered twice: {duplicates}")
    assert len(records) == final["received"]
    return final["distinct"], duplicates


class HangingReceiver:
    """Accepts every connection and never answers (until closed)."""

    def __init__(self):
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}/hook"
        self.held, self.accepted = [], 0
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                connection, _ = self.server.accept()
            except OSError:
                return
            self.held.append(connection)  # read nothing, answer nothing
            self.accepted += 1

    def close(self):
        self.server.close()
        for connection in self.held:
            connection.close()


def isolation_run(directory, seconds, rate, hanging):
    """Healthy webhooks' delivery rate and p99 under a steady pace of events."""
    receivers = [Receiver(), Receiver()]
    stuck = HangingReceiver() if hanging else None
    database = os.path.join(directory, f"isolation-{int(hanging)}.db")
    app = bench_app(database)
    workspace_id = _workspace_with_webhooks(app, [r.url for r in receivers], stuck)
    serve = Serve(directory, database).start()
    try:
        started = time.monotonic()
        raised = _raise_at_pace(app, workspace_id, seconds, rate)
        window = time.monotonic() - started
        in_window = [r.stats()["distinct"] for r in receivers]
        for receiver in receivers:
            receiver.wait_for(raised, timeout=30)
        records = [record for r in receivers for record in r.dump()]
    finally:
        serve.stop()
        for receiver in receivers:
            receiver.stop()
        if stuck:
            stuck.close()
    delays = sorted(_first_delays(records))
    return {
        "raised": raised,
        "rate": sum(in_window) / window,
        "p50": statistics.median(delays),
        "p99": delays[int(len(delays) * 0.99) - 1],
        "hung": stuck.accepted if stuck else 0,
    }


def _workspace_with_webhooks(app, urls, stuck):
    from agent_platform.services import keys, webhooks

    with app.app_context():
        workspace_id = keys.create_workspace("bench").id
        if stuck:  # registered first: its deliveries come first in every claim
            webhooks.create_webhook(workspace_id, {"url": stuck.url, "events": ["*"]})
        for url in urls:
            webhooks.create_webhook(workspace_id, {"url": url, "events": ["*"]})
        return workspace_id


def _raise_at_pace(app, workspace_id, seconds, rate):
    raised, started = 0, time.monotonic()
    while time.monotonic() - started < seconds:
        due = int((time.monotonic() - started) * rate) + 1
        if due > raised:
            raise_events(app, workspace_id, due - raised)
            raised = due
        time.sleep(0.01)
    return raised


def _first_delays(records):
    first = {}
    for event_id, received_at, stamp in records:
        first.setdefault((event_id, stamp), received_at - parse_time(stamp))
    return first.values()


def isolation(directory, seconds, rate):
    alone = isolation_run(directory, seconds, rate, hanging=False)
    with_hang = isolation_run(directory, seconds, rate, hanging=True)
    ratio = with_hang["rate"] / alone["rate"]
    print(f"[4] isolation: serve, 2 healthy webhooks, {rate:g} events/s for {seconds:g} s")
    for label, run in (("alone (baseline)", alone), ("+ hanging receiver", with_hang)):
        print(
            f"    {label:20} healthy deliveries {run['rate']:7.1f}/s   event -> first "
            f"attempt p50 {run['p50']:.3f} s  p99 {run['p99']:.3f} s   "
            f"(events {run['raised']:,}; hanging connections {run['hung']})"
        )
    print(f"    rate kept {ratio:8.0%}   target >= 80%;  p99 target < 2 s")
    return ratio, with_hang["p99"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--events", type=int, default=10_000)
    parser.add_argument("--latency-events", type=int, default=300)
    parser.add_argument("--rate", type=float, default=20.0, help="latency events per second")
    parser.add_argument("--only", choices=["isolation", "latency"], help="run only that part")
    parser.add_argument("--isolation-seconds", type=float, default=20.0)
    parser.add_argument("--isolation-rate", type=float, default=100.0)
    parser.add_argument(
        "--postgresql", action="store_true", help="with --only latency: on a PostgreSQL server"
    )
    options = parser.parse_args()
    if options.postgresql and options.only != "latency":
        parser.error("--postgresql runs part 2 only: give --only latency with it")
    directory = tempfile.mkdtemp(prefix="agent-platform-webhooks-bench-")
    if options.only:
        try:
            if options.only == "isolation":
                isolation(directory, options.isolation_seconds, options.isolation_rate)
            elif options.postgresql:
                with throwaway_postgresql() as server:
                    latency(options.latency_events, options.rate, directory, server.url())
            else:
                latency(options.latency_events, options.rate, directory)
        finally:
            shutil.rmtree(directory, ignore_errors=True)
        return
    try:
        kept, p99 = isolation(directory, options.isolation_seconds, options.isolation_rate)
        ratio = throughput(options.events, directory)
        p50_api, p50 = latency(options.latency_events, options.rate, directory)
        distinct, duplicates = crash(options.events, directory)
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    print()
    print(
        f"summary: throughput {ratio:.0%} of plain (>= 50%), p50 through the API "
        f"{p50_api:.2f} s (<= 0.25 s), from another process {p50:.2f} s (<= 1.5 s), "
        f"distinct {distinct:,}/{options.events:,}, duplicates {duplicates}, "
        f"isolation {kept:.0%} of the rate (>= 80%) with p99 {p99:.2f} s (< 2 s)"
    )


if __name__ == "__main__":
    main()
