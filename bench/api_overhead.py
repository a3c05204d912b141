"""Issue 2 benchmark: the service's per-request cost against a bare Flask endpoint.

Starts `agent-platform serve` (gunicorn, one process, threads) and a bare Flask
app under the same gunicorn settings, loads both with wrk over loopback at 16
connections, and prints requests/s, p50/p99 latency, the ratios, and the
service's resident memory under load.

Targets: GET /v1/me >= 60% of bare; GET /v1/custom-fields?limit=20 (1,000 fields)
>= 40% of bare; p99 < 25 ms at 16 connections; RSS < 100 MB.

    .venv/bin/python bench/api_overhead.py [--seconds 10]
"""

import argparse
import sys
import threading

import requests
from loadgen import PACED_SCRIPT, Service, bare_flask, free_port, resident_mb, wrk

sys.path.insert(0, str(__import__("loadgen").ROOT / "platform"))


def seed_fields(service, count):
    """Create `count` custom fields through the service layer on the same database."""
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


def measure(label, url, seconds, headers, pid, script=None):
    peak = {"rss": 0.0, "pss": 0.0}
    done = threading.Event()

    def sample():
        while not done.wait(0.2):
            rss, pss = resident_mb(pid)
            peak["rss"], peak["pss"] = max(peak["rss"], rss), max(peak["pss"], pss)

    sampler = threading.Thread(target=sample)
    sampler.start()
    result = wrk(url, seconds=seconds, headers=headers, script=script)
    done.set()
    sampler.join()
    result.update(rss_mb=peak["rss"], pss_mb=peak["pss"])
    print(
        f"{label:<40} {result['rps']:>7.0f} req/s  p50 {result['p50_ms']:6.2f} ms  "
        f"p99 {result['p99_ms']:6.2f} ms  non-2xx {result['errors']}  "
        f"RSS {result['rss_mb']:.0f} MB  PSS {result['pss_mb']:.0f} MB"
    )
    return result


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=int, default=10)
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

        print(f"wrk, 16 connections, {args.seconds} s each, loopback\n")
        baseline = measure(
            "bare Flask endpoint", f"http://127.0.0.1:{bare_port}/", args.seconds, {}, bare.pid
        )
        me = measure(
            "GET /v1/me", service.base + "/v1/me", args.seconds, headers, service.process.pid
        )
        fields = measure(
            "GET /v1/custom-fields?limit=20",
            service.base + "/v1/custom-fields?limit=20",
            args.seconds,
            headers,
            service.process.pid,
        )
        print("\nPaced: each connection waits 40 ms between requests (<= 400 req/s offered)")
        paced = [
            measure(
                f"{label} (paced)", url, args.seconds, headers, service.process.pid, PACED_SCRIPT
            )
            for label, url in (
                ("GET /v1/me", service.base + "/v1/me"),
                ("GET /v1/custom-fields?limit=20", service.base + "/v1/custom-fields?limit=20"),
            )
        ]
        print()
        print(f"/v1/me              {me['rps'] / baseline['rps']:6.1%} of bare (target >= 60%)")
        print(f"/v1/custom-fields   {fields['rps'] / baseline['rps']:6.1%} of bare (target >= 40%)")
        print(f"worst p99 saturated {max(me['p99_ms'], fields['p99_ms']):6.2f} ms")
        print(f"worst p99 paced     {max(r['p99_ms'] for r in paced):6.2f} ms (target < 25 ms)")
        runs = [me, fields, *paced]
        print(
            f"service memory peak RSS {max(r['rss_mb'] for r in runs):.0f} MB, "
            f"PSS {max(r['pss_mb'] for r in runs):.0f} MB (target < 100 MB)"
        )
    finally:
        bare.terminate()
        bare.wait()
        service.cleanup()


if __name__ == "__main__":
    main()
