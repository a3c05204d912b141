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
from loadgen import Service, bare_flask, free_port, resident_mb, wrk

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


def measure(label, url, seconds, headers, pid):
    peak = {"mb": 0.0}
    done = threading.Event()

    def sample():
        while not done.wait(0.2):
            peak["mb"] = max(peak["mb"], resident_mb(pid))

    sampler = threading.Thread(target=sample)
    sampler.start()
    result = wrk(url, seconds=seconds, headers=headers)
    done.set()
    sampler.join()
    result["rss_mb"] = peak["mb"]
    print(
        f"{label:<34} {result['rps']:>9.0f} req/s   p50 {result['p50_ms']:6.2f} ms   "
        f"p99 {result['p99_ms']:6.2f} ms   non-2xx {result['errors']}   "
        f"RSS {result['rss_mb']:.0f} MB"
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
        print()
        print(f"/v1/me            {me['rps'] / baseline['rps']:6.1%} of bare (target >= 60%)")
        print(f"/v1/custom-fields {fields['rps'] / baseline['rps']:6.1%} of bare (target >= 40%)")
        worst_p99 = max(me["p99_ms"], fields["p99_ms"])
        print(f"worst p99         {worst_p99:6.2f} ms (target < 25 ms)")
        print(f"service RSS peak  {max(me['rss_mb'], fields['rss_mb']):6.0f} MB (target < 100 MB)")
    finally:
        bare.terminate()
        bare.wait()
        service.cleanup()


if __name__ == "__main__":
    main()
