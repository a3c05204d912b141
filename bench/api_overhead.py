"""Issue 2 benchmark: the service's per-request cost against a bare Flask endpoint.

Starts `agent-platform serve` (gunicorn: a small master, one gevent worker,
the scheduler in the worker) and a bare Flask app under the same server
(bench/bare_server.py: the same worker class and options), and loads both
with wrk over loopback at 16 connections: the bare endpoint, authenticated
GET /v1/me, and GET /v1/custom-fields?limit=20
with 1,000 fields present, in alternating rounds so that all three see the
same machine. Prints per round and as medians: requests/s, p50/p99 latency,
CPU time per request of each server (utime + stime of its processes over the
requests wrk completed: it stays comparable when the machine is busy, where
requests/s moves with whatever else runs), the ratios, and the service's
resident memory under load (RSS summed over its processes, and PSS, which
counts the pages they share once).

Latency is measured twice, in rounds of each kind: saturated (every
connection sends its next request as soon as the last is answered, so latency
is mostly queueing: at 16 connections p50 is about 16 / throughput), and
paced, where each connection waits 40 ms between requests (at most 400
requests/s offered; --pace-ms).

The custom fields do not change during the run, so after the first request
the page is served from memory (models/pagination.py); a page rendered anew
costs about 1.35 M instructions in process against 0.80 M when kept (README).

The service runs on a SQLite file by default. With --postgresql it runs on
an empty database of a throwaway PostgreSQL server (Debian's package, in a
temporary directory, with its durable defaults: bench/loadgen.py's
throwaway_postgresql), through AGENT_PLATFORM_DATABASE_URL; the 1,000 fields
are seeded there. The bare app uses no database either way. The service's CPU
then leaves out the database's work, so PostgreSQL's CPU per request (its
postmaster and the backends under it) is reported beside it, and the ratio by
CPU is given with and without it. psycopg is needed (the `postgresql` extra).

The rate limit is lifted to 100,000,000 requests per window so that wrk
meets no 429; the limiter still counts every request. Its window, 60 s as
configured by default, can be set with --rate-window SECONDS: on PostgreSQL
the shared window is held in 64 slices (migration 0027), whose cost is the
same at any rate and window; before them it listed every hit, a cost that
grew with both (docs/benchmarks.md).

With --floor, bench/floor_app.py is served as well, under the same server:
the same two requests, bodies and headers answered by Flask, flask-smorest
and marshmallow from memory, with no key, limiter or database behind them.
Its ratios are the most the chosen stack allows these requests.

Targets (issue 43): GET /v1/me >= 75% of bare; GET /v1/custom-fields?limit=20
(1,000 fields) >= 65% of bare; the service's memory (PSS) within 30 MB of the
bare app's under the same load; p99 < 25 ms at 16 connections, paced.

    .venv/bin/python bench/api_overhead.py [--seconds 8] [--rounds 3] [--pace-ms 40]
        [--postgresql] [--rate-window SECONDS] [--floor]
"""

import argparse
import sqlite3
import statistics
import sys
import threading
from contextlib import contextmanager

import requests
from loadgen import (
    PACED_SCRIPT,
    ROOT,
    Service,
    bare_flask,
    cpu_seconds,
    free_port,
    resident_mb,
    throwaway_postgresql,
    wrk,
)

sys.path.insert(0, str(ROOT / "platform"))


@contextmanager
def database(postgresql):
    """The engine the service runs on: (its name, the service's settings for
    it, the PID whose CPU is the database's own, None where it runs in the
    service's processes)."""
    if not postgresql:
        yield f"SQLite {sqlite3.sqlite_version}", {}, None
        return
    with throwaway_postgresql() as server:
        settings = {"AGENT_PLATFORM_DATABASE_URL": server.url()}
        yield f"PostgreSQL {server.version()}", settings, server.postmaster_pid()


def seed_fields(service, count):
    """Create `count` custom fields through the model layer on the same database."""
    from agent_platform import create_app
    from agent_platform.models import ApiKey, CustomField

    url = service.env.get("AGENT_PLATFORM_DATABASE_URL")
    where = {"DATABASE_URL": url} if url else {"DATABASE_PATH": service.database}
    app = create_app({**where, "LOG_LEVEL": "WARNING"})
    with app.app_context():
        workspace_id = ApiKey.get().workspace_id
        rows = [
            {"workspace": workspace_id, "name": f"field {i}", "field_type": "text", "options": []}
            for i in range(count)
        ]
        CustomField.insert_many(rows).execute()


class Target:
    def __init__(self, label, url, headers, pid, database_pid=None):
        self.label, self.url, self.headers, self.pid = label, url, headers, pid
        self.database_pid = database_pid  # PostgreSQL's postmaster, if it runs on one
        self.runs = []

    def cpu(self):
        """CPU seconds used so far by the server, and by PostgreSQL (0 without)."""
        database = cpu_seconds(self.database_pid) if self.database_pid else 0.0
        return cpu_seconds(self.pid), database

    def measure(self, seconds, script=None, pace_ms=40):
        peak = {"rss": 0.0, "pss": 0.0}
        done = threading.Event()

        def sample():
            while not done.wait(0.2):
                rss, pss = resident_mb(self.pid)
                peak["rss"], peak["pss"] = max(peak["rss"], rss), max(peak["pss"], pss)

        sampler = threading.Thread(target=sample)
        sampler.start()
        before = self.cpu()
        result = wrk(
            self.url, seconds=seconds, headers=self.headers, script=script, pace_ms=pace_ms
        )
        server, database = (after - first for after, first in zip(self.cpu(), before, strict=True))
        result["cpu_ms"] = server / result["requests"] * 1000
        if self.database_pid:
            result["database_cpu_ms"] = database / result["requests"] * 1000
        done.set()
        sampler.join()
        result.update(rss_mb=peak["rss"], pss_mb=peak["pss"])
        self.runs.append(result)
        print(f"  {self.label:<34} {line(result)}", flush=True)
        return result

    def median(self, key):
        return statistics.median(run[key] for run in self.runs)


def line(result):
    return (
        f"{result['rps']:>7.0f} req/s  p50 {result['p50_ms']:6.2f} ms  "
        f"p99 {result['p99_ms']:6.2f} ms  CPU {result['cpu_ms']:.2f} ms/req"
        f"{database_cpu(result.get('database_cpu_ms'))}  "
        f"non-2xx {result['errors']}  RSS {result['rss_mb']:.0f} MB  PSS {result['pss_mb']:.0f} MB"
    )


def database_cpu(ms):
    """PostgreSQL's CPU per request, beside the server's; nothing on SQLite."""
    return "" if ms is None else f" + PostgreSQL {ms:.2f} ms/req"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--pace-ms", type=int, default=40, help="pause per connection, paced runs")
    parser.add_argument(
        "--postgresql", action="store_true", help="the service on a throwaway PostgreSQL server"
    )
    parser.add_argument("--rate-window", type=int, default=60, help="the rate limit's window, s")
    parser.add_argument(
        "--floor", action="store_true", help="also the stack's floor (bench/floor_app.py)"
    )
    args = parser.parse_args()
    with database(args.postgresql) as (engine, settings, database_pid):
        run(args, engine, settings, database_pid)


def run(args, engine, settings, database_pid):
    # The rate limit (100/min) would turn the load into 429s; lift it, the
    # limiter still does its full work on every request.
    limits = {
        "AGENT_PLATFORM_RATE_LIMIT_REQUESTS": "100000000",
        "AGENT_PLATFORM_RATE_LIMIT_WINDOW_SECONDS": str(args.rate_window),
    }
    service = Service({**limits, **settings}).start()
    bare_port, floor_port = free_port(), free_port()
    bare = bare_flask("bare_app:app", bare_port)
    floor = bare_flask("floor_app:app", floor_port) if args.floor else None
    try:
        seed_fields(service, 1000)
        headers = {"x-api-key": service.admin_key}
        check = requests.get(
            service.base + "/v1/custom-fields?limit=20", headers=headers, timeout=5
        )
        assert check.status_code == 200 and check.json()["pagination"]["total"] == 1000, check.text
        pid = service.process.pid
        targets = [
            Target("bare Flask endpoint", f"http://127.0.0.1:{bare_port}/", {}, bare.pid),
            Target("GET /v1/me", service.base + "/v1/me", headers, pid, database_pid),
            Target("GET /v1/custom-fields?limit=20", check.url, headers, pid, database_pid),
        ]
        if floor:
            targets += floor_targets(floor_port, floor.pid)
        paced = [  # the floor is loaded saturated only: its ratios are what it is for
            Target(f"{t.label} (paced)", t.url, t.headers, t.pid, t.database_pid)
            for t in targets[:3]
        ]
        print(
            f"wrk, 16 connections, {args.seconds} s per run, loopback, one gevent worker, "
            f"the service on {engine}, rate limit window {args.rate_window} s\n"
        )
        for number in range(1, args.rounds + 1):
            print(f"round {number}")
            for target in targets:
                target.measure(args.seconds)
        offered = 16 * 1000 / args.pace_ms
        print(f"\nPaced: each connection waits {args.pace_ms} ms between requests ", end="")
        print(f"(<= {offered:.0f} req/s offered)")
        for number in range(1, args.rounds + 1):
            print(f"round {number}")
            for target in paced:
                target.measure(args.seconds, PACED_SCRIPT, args.pace_ms)
        report(targets, paced)
    finally:
        for server in filter(None, (bare, floor)):
            server.terminate()
            server.wait()
        service.cleanup()


def floor_targets(port, pid):
    """The same two requests answered by the stack alone (bench/floor_app.py)."""
    from floor_app import KEY  # here: importing it builds its app, wanted with --floor only

    base, headers = f"http://127.0.0.1:{port}/v1", {"x-api-key": KEY}
    return [
        Target("floor: GET /v1/me", base + "/me", headers, pid),
        Target("floor: GET /v1/custom-fields", base + "/custom-fields?limit=20", headers, pid),
    ]


def report(targets, paced):
    bare, me, fields, *floor = targets
    print(f"\nMedians of {len(bare.runs)} rounds:")
    for target in targets:
        print(
            f"  {target.label:<34} {target.median('rps'):>7.0f} req/s  "
            f"p50 {target.median('p50_ms'):6.2f} ms  p99 {target.median('p99_ms'):6.2f} ms  "
            f"CPU {target.median('cpu_ms'):.2f} ms/req{database_cpu(median_database_cpu(target))}"
        )
    goals = ["target >= 75%", "target >= 65%"] + ["the stack alone"] * len(floor)
    for target, goal in zip((me, fields, *floor), goals, strict=True):
        by_rps = target.median("rps") / bare.median("rps")
        by_cpu = bare.median("cpu_ms") / target.median("cpu_ms")
        print(
            f"{target.label:<34} {by_rps:6.1%} of bare by req/s, {by_cpu:6.1%} by CPU per "
            f"request ({goal})"
        )
        if target.database_pid:
            with_database = target.median("cpu_ms") + median_database_cpu(target)
            print(f"{'':<34} {bare.median('cpu_ms') / with_database:6.1%} by CPU per request "
                  "counting PostgreSQL's")  # fmt: skip
    print(f"Paced, medians of {len(paced[0].runs)} rounds:")
    for target in paced:
        highest = max(run["p99_ms"] for run in target.runs)
        print(
            f"  {target.label:<34} p50 {target.median('p50_ms'):6.2f} ms  "
            f"p99 {target.median('p99_ms'):6.2f} ms (highest round {highest:.2f} ms)"
        )
    worst = max(target.median("p99_ms") for target in paced[1:])
    print(f"worst p99 paced (service)          {worst:6.2f} ms (target < 25 ms)")
    runs = [run for target in (me, fields, *paced[1:]) for run in target.runs]
    bare_pss = max(run["pss_mb"] for run in (*bare.runs, *paced[0].runs))
    print(
        f"service memory peak: RSS {max(r['rss_mb'] for r in runs):.0f} MB, "
        f"PSS {max(r['pss_mb'] for r in runs):.0f} MB (bare {bare_pss:.0f} MB; "
        f"target <= {bare_pss + 30:.0f} MB)"
        + (", PostgreSQL's not counted" if me.database_pid else "")
    )


def median_database_cpu(target):
    """PostgreSQL's CPU ms per request, median of the rounds; None on SQLite."""
    return target.median("database_cpu_ms") if target.database_pid else None


if __name__ == "__main__":
    main()
