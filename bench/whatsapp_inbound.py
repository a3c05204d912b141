"""Issue 6 benchmark: signed WhatsApp webhook POSTs stored per second.

`agent-platform serve` (gunicorn, one gevent worker, the scheduler in
the same process, WAL with synchronous=NORMAL: every 200 is answered after
its COMMIT) receives single-message POSTs at /inbound/whatsapp/{channel_id},
each signed with the channel's app secret (X-Hub-Signature-256 over the raw
bytes) and carrying a new message id, from 1,000 customers whose contacts and
conversations a warm-up created (the steady state of a busy number; the
warm-up's rate, where every message makes a new contact, is printed too).
Side by side in
the same run, in alternating rounds, a bare Flask endpoint that reads the body
and answers 200 under the same server (bench/bare_server.py: the same
gevent worker and options) gets the same bodies.

Load generator: wrk (outside Python, so the figures measure the servers).
wrk's Lua has no HMAC, so the bodies are signed beforehand here: every round
gets its own file of distinct signed bodies, split between wrk's threads,
more than a round can send, so every request stores a new message (if a
round ever sends them all, the bodies are reused: those repeats are stored
once, and the script says so). Messages stored per second are counted in
the database after each round (rows, not answers).

    .venv/bin/python bench/whatsapp_inbound.py [--seconds 10] [--rounds 3]

Target: service requests/s >= 60% of the bare endpoint's (issue 43; an earlier
issue set 40%).
"""

import argparse
import hashlib
import hmac
import json
import os
import re
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time

import requests
from loadgen import Service, _latency, bare_flask, cpu_seconds, free_port

APP_SECRET = "bench-app-secret"
PHONE_NUMBER_ID = "106540352242922"
CUSTOMERS = 1000
THREADS, CONNECTIONS = 2, 16

LUA = """
-- Cycle through this thread's pre-signed bodies (file <prefix>.<thread id>).
local counter = 0
function setup(thread)
   thread:set("id", counter)
   counter = counter + 1
end
function init(args)
   signatures, bodies, i = {}, {}, 0
   for line in io.lines(args[1] .. "." .. id) do
      local tab = line:find("\\t")
      signatures[#signatures + 1] = line:sub(1, tab - 1)
      bodies[#bodies + 1] = line:sub(tab + 1)
   end
   pause = tonumber(args[2] or "0")
end
function request()
   i = i % #bodies + 1
   local headers = {["Content-Type"] = "application/json",
                    ["X-Hub-Signature-256"] = signatures[i]}
   return wrk.format("POST", nil, headers, bodies[i])
end
function delay()
   return pause
end
"""


def body(number, round_name):
    wa_id = str(5511900000000 + number % CUSTOMERS)
    value = {
        "messaging_product": "whatsapp",
        "metadata": {"display_phone_number": "5511987654321", "phone_number_id": PHONE_NUMBER_ID},
        "contacts": [{"profile": {"name": f"Customer {number % CUSTOMERS}"}, "wa_id": wa_id}],
        "messages": [
            {
                "from": wa_id,
                "id": f"wamid.{round_name}.{number:08d}",
                "timestamp": str(1767323045 + number),
                "type": "text",
                "text": {"body": f"Hello, is order {number} ready for pickup today?"},
            }
        ],
    }
    entry = {"id": "102290129340398", "changes": [{"field": "messages", "value": value}]}
    return json.dumps({"object": "whatsapp_business_account", "entry": [entry]}).encode()


def write_bodies(prefix, round_name, count, first=0):
    """`count` signed bodies in THREADS files: '<signature>\\t<body>' per line."""
    files = [open(f"{prefix}.{n}", "w") for n in range(THREADS)]
    for number in range(first, first + count):
        raw = body(number, round_name)
        signature = "sha256=" + hmac.new(APP_SECRET.encode(), raw, hashlib.sha256).hexdigest()
        files[number % THREADS].write(f"{signature}\t{raw.decode()}\n")
    for handle in files:
        handle.close()
    return prefix


def bare_server(port, extra_env):
    """The baseline, under the service's server with the same settings."""
    return bare_flask("bare_inbound_app:app", port, extra_env)


def warm_up(url, prefix):
    session, started = requests.Session(), time.perf_counter()
    for n in range(THREADS):
        with open(f"{prefix}.{n}") as lines:
            for line in lines:
                signature, raw = line.rstrip("\n").split("\t", 1)
                headers = {"X-Hub-Signature-256": signature, "Content-Type": "application/json"}
                response = session.post(url, data=raw.encode(), headers=headers, timeout=30)
                response.raise_for_status()
    return time.perf_counter() - started


def create_channel(service):
    headers = {"x-api-key": service.admin_key}
    settings = {
        "phone_number_id": PHONE_NUMBER_ID,
        "app_secret": APP_SECRET,
        "verify_token": "bench",
        "access_token": "bench-token",
    }
    response = requests.post(
        service.base + "/v1/channels",
        json={"name": "WhatsApp", "type": "whatsapp", "settings": settings},
        headers=headers,
        timeout=10,
    )
    response.raise_for_status()
    return response.json()["data"]["id"]


def stored(database):
    with sqlite3.connect(database) as connection:
        return connection.execute("SELECT COUNT(*) FROM message").fetchone()[0]


def load(url, script, prefix, seconds, pause=0, pid=None):
    """wrk with the signing script (loadgen.wrk passes no script arguments);
    with `pid`, the server's CPU time per request too ("cpu_ms")."""
    before = cpu_seconds(pid) if pid else None
    command = ["wrk", "-t", str(THREADS), "-c", str(CONNECTIONS), "-d", f"{seconds}s"]
    command += ["--latency", "-s", script, url, "--", prefix, str(pause)]
    output = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    used = cpu_seconds(pid) - before if pid else None
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", output)
    requests_done = int(re.search(r"(\d+) requests in", output).group(1))
    return {
        "cpu_ms": used * 1000 / requests_done if pid and requests_done else None,
        "rps": float(re.search(r"Requests/sec:\s+([\d.]+)", output).group(1)),
        "p50_ms": _latency(output, "50%"),
        "p99_ms": _latency(output, "99%"),
        "errors": int(errors.group(1)) if errors else 0,
    }


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--bodies", type=int, default=40000, help="signed bodies per round")
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="whatsapp-bench-")
    script = os.path.join(work, "signed.lua")
    with open(script, "w") as handle:
        handle.write(LUA)
    environ = {
        "AGENT_PLATFORM_INBOUND_MAX_REQUESTS_PER_MINUTE": "1000000000",
        "AGENT_PLATFORM_MEDIA_DIR": os.path.join(work, "media"),
    }
    service = Service(environ).start()
    bare_port = free_port()
    bare = bare_server(bare_port, environ)
    try:
        channel_id = create_channel(service)
        url = f"{service.base}/inbound/whatsapp/{channel_id}"
        started = time.perf_counter()
        files = [
            write_bodies(os.path.join(work, f"round{n}"), f"R{n}", args.bodies, CUSTOMERS)
            for n in range(args.rounds + 1)
        ]
        warm_bodies = write_bodies(os.path.join(work, "warm"), "W", CUSTOMERS)
        print(
            f"{args.bodies} signed bodies per round written in "
            f"{time.perf_counter() - started:.1f} s; wrk -t{THREADS} -c{CONNECTIONS}, "
            f"{args.seconds} s per run, loopback, one gevent worker each, "
            f"{os.cpu_count()} CPUs shared by all\n"
        )
        # Warm-up: one message per customer, each making a contact, a
        # conversation and three events (one connection, from Python).
        elapsed = warm_up(url, warm_bodies)
        assert stored(service.database) == CUSTOMERS
        print(
            f"warm-up: {CUSTOMERS} first messages of new customers, one connection: "
            f"{CUSTOMERS / elapsed:.0f} msg/s\n"
        )
        rows = []
        for n in range(args.rounds):
            base = load(
                f"http://127.0.0.1:{bare_port}/", script, files[n], args.seconds, 0, bare.pid
            )
            before = stored(service.database)
            result = load(url, script, files[n], args.seconds, 0, service.process.pid)
            new = stored(service.database) - before
            sent = result["rps"] * args.seconds
            rows.append((base, result, new / args.seconds))
            note = "  (bodies reused: raise --bodies)" if sent > args.bodies else ""
            print(
                f"round {n + 1}: bare {base['rps']:7.0f} req/s p99 {base['p99_ms']:6.2f} ms "
                f"CPU {base['cpu_ms']:.2f} ms/req | "
                f"service {result['rps']:7.0f} req/s p99 {result['p99_ms']:6.2f} ms "
                f"CPU {result['cpu_ms']:.2f} ms/req non-2xx {result['errors']} | "
                f"stored {new / args.seconds:7.0f} msg/s | "
                f"{result['rps'] / base['rps']:6.1%} of bare{note}"
            )
        paced = load(url, script, files[-1], args.seconds, pause=40)
        med = statistics.median
        bare_rps = med(r[0]["rps"] for r in rows)
        service_rps = med(r[1]["rps"] for r in rows)
        print()
        print(
            f"bare Flask (read body, 200)   {bare_rps:7.0f} req/s  p99 "
            f"{med(r[0]['p99_ms'] for r in rows):6.2f} ms  p50 "
            f"{med(r[0]['p50_ms'] for r in rows):6.2f} ms  CPU "
            f"{med(r[0]['cpu_ms'] for r in rows):.2f} ms/req (median of {args.rounds})"
        )
        print(
            f"POST /inbound/whatsapp/{{id}}  {service_rps:7.0f} req/s  p99 "
            f"{med(r[1]['p99_ms'] for r in rows):6.2f} ms  p50 "
            f"{med(r[1]['p50_ms'] for r in rows):6.2f} ms  CPU "
            f"{med(r[1]['cpu_ms'] for r in rows):.2f} ms/req"
        )
        print(f"messages stored               {med(r[2] for r in rows):7.0f} msg/s")
        ratio = service_rps / bare_rps
        print(f"ratio                         {ratio:7.1%} of bare (target >= 60%)")
        print(f"paced (40 ms between requests per connection, <= 400 req/s offered): "
              f"{paced['rps']:.0f} req/s, p50 {paced['p50_ms']:.2f} ms, "
              f"p99 {paced['p99_ms']:.2f} ms")  # fmt: skip
        print(f"messages in the database: {stored(service.database)}")
    finally:
        bare.terminate()
        bare.wait()
        service.cleanup()
        subprocess.run(["rm", "-rf", work], check=False)


if __name__ == "__main__":
    sys.exit(main())
