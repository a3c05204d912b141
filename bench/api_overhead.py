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

Targets: GET /v1/me >= 60% of bare; GET /v1/custom-fields?limit=20 (1,000 fields)
>= 40% of bare; p99 < 25 ms at 16 connections; memory < 100 MB.

    .venv/bin/python bench/api_overhead.py [--seconds 8] [--rounds 3] [--pace-ms 40]
"""

import argparse
import statistics
import sys
import threading

import requests
from loadgen import (
    PACED_SCRIPT,
    ROOT,
    Service,
    bare_flask,
    cpu_seconds,
    free_port,
    resident_mb,
    wrk,
)

sys.path.insert(0, str(ROOT / "platform"))


def seed_fields(service, count):
    """Create `count` custom fields through the model layer on the same database."""
    from agent_platform import create_app
    from agent_platform.models import ApiKey, CustomField

    app = create_app({"DATABASE_PATH": service.database, "LOG_LEVEL": "WARNING"})
    with app.app_context():
        workspace_id = ApiKey.get().workspace_id
        rows = [
            {"workspace": workspace_id, "name": f"field {i}", "field_type": "text", "options": []}
            for i in range(count)
        ]
        CustomField.insert_many(rows).execute()


class Target:
    def __init__(self, label, url, headers, pid):
        self.label, self.url, self.headers, self.pid = label, url, headers, pid
        self.runs = []

    def measure(self, seconds, script=None, pace_ms=40):
        peak = {"rss": 0.0, "pss": 0.0}
        done = threading.Event()

        def sample():
            while not done.wait(0.2):
                rss, pss = resident_mb(self.pid)
                peak["rss"], peak["pss"] = max(peak["rss"], rss), max(peak["pss"], pss)

        sampler = threading.Thread(target=sample)
        sampler.start()
        cpu_before = cpu_seconds(self.pid)
        result = wrk(
            self.url, seconds=seconds, headers=self.headers, script=script, pace_ms=pace_ms
        )
        result["cpu_ms"] = (cpu_seconds(self.pid) - cpu_before) / result["requests"] * 1000
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
        f"p99 {result['p99_ms']:6.2f} ms  CPU {result['cpu_ms']:.2f} ms/req  "
        f"non-2xx {result['errors']}  RSS {result['rss_mb']:.0f} MB  PSS {result['pss_mb']:.0f} MB"
    )


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--pace-ms", type=int, default=40, help="pause per connection, paced runs")
    args = parser.parse_args()

    # The rate limit (100/min) would turn the load into 429s; lift it, the
    # limiter still does its full work on every request.
    service = Service({"AGENT_PLATFORM_RATE_LIMIT_REQUESTS": "100000000"}).start()
    bare_port = free_port()
    bare = bare_flask("bare_app:app", bare_port)
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
            Target("GET /v1/me", service.base + "/v1/me", headers, pid),
            Target("GET /v1/custom-fields?limit=20", check.url, headers, pid),
        ]
        paced = [Target(f"{t.label} (paced)", t.url, t.headers, t.pid) for t in targets]
        print(f"wrk, 16 connections, {args.seconds} s per run, loopback, one gevent worker\n")
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
        bare.terminate()
        bare.wait()
        service.cleanup()


def report(targets, paced):
    bare, me, fields = targets
    print(f"\nMedians of {len(bare.runs)} rounds:")
    for target in targets:
        print(
            f"  {target.label:<34} {target.median('rps'):>7.0f} req/s  "
            f"p50 {target.median('p50_ms'):6.2f} ms  p99 {target.median('p99_ms'):6.2f} ms  "
            f"CPU {target.median('cpu_ms'):.2f} ms/req"
        )
    for target, goal in ((me, 0.60), (fields, 0.40)):
        by_rps = target.median("rps") / bare.median("rps")
        by_cpu = bare.median("cpu_ms") / target.median("cpu_ms")
        print(
            f"{target.label:<34} {by_rps:6.1%} of bare by req/s, {by_cpu:6.1%} by CPU per "
            f"request (target >= {goal:.0%})"
        )
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
    print(
        f"service memory peak: RSS {max(r['rss_mb'] for r in runs):.0f} MB, "
        f"PSS {max(r['pss_mb'] for r in runs):.0f} MB (target < 100 MB)"
    )


if __name__ == "__main__":
    main()
