"""Issue 17 benchmark: Telegram webhook-mode updates stored per second.

`agent-platform serve` (one gevent worker, the scheduler in it, WAL)
receives single-message Updates at /inbound/telegram/{channel_id}, each with
the channel's X-Telegram-Bot-Api-Secret-Token and a new update_id and
message_id, from 1,000 customers whose contacts and conversations a warm-up
created. Side by side in the same run, in alternating rounds, the bare Flask
endpoint of bench/whatsapp_inbound.py (reads the body, answers 200, under the
same server) gets the same bodies. Updates stored per second are
counted in the database after each round (rows, not answers).

wrk makes the bodies itself (Lua): each thread numbers its own, so every
request is a new update (nothing to sign, unlike WhatsApp). The channel is
made in webhook mode with a given secret_token; its setWebhook goes to a
closed port (the Bot API is not needed to receive) and is logged as failed.

    .venv/bin/python bench/telegram_inbound.py [--seconds 10] [--rounds 3]

Target: service requests/s >= 40% of the bare endpoint's.
"""

import argparse
import os
import statistics
import sys
import tempfile
import time

import requests
from loadgen import Service, free_port
from whatsapp_inbound import CUSTOMERS, THREADS, bare_server, load, stored

SECRET = "bench-telegram-secret-token"
TOKEN = "7234567890:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw1"
FIRST_CHAT = 55500000

LUA = """
-- Every request a new Update: update_id and message_id from the round,
-- the thread and a counter; 1,000 customers' private chats.
local counter = 0
function setup(thread)
   thread:set("id", counter)
   counter = counter + 1
end
function init(args)
   round, pause, n = tonumber(args[1]), tonumber(args[2] or "0"), 0
end
function request()
   n = n + 1
   local number = round * 100000000 + id * 10000000 + n
   local chat = %(first_chat)d + n %% %(customers)d
   local body = string.format('{"update_id":%%d,"message":{"message_id":%%d,'
      .. '"from":{"id":%%d,"is_bot":false,"first_name":"Customer"},'
      .. '"chat":{"id":%%d,"first_name":"Customer","type":"private"},"date":1767323045,'
      .. '"text":"Hello, is order %%d ready for pickup today?"}}',
      number, number, chat, chat, number)
   local headers = {["Content-Type"] = "application/json",
                    ["X-Telegram-Bot-Api-Secret-Token"] = "%(secret)s"}
   return wrk.format("POST", nil, headers, body)
end
function delay()
   return pause
end
"""


def create_channel(service):
    settings = {"bot_token": TOKEN, "intake_mode": "webhook", "secret_token": SECRET}
    response = requests.post(
        service.base + "/v1/channels",
        json={"name": "Telegram", "type": "telegram", "settings": settings},
        headers={"x-api-key": service.admin_key},
        timeout=30,
    )
    response.raise_for_status()
    return response.json()["data"]["id"]


def warm_up(url):
    """One first message per customer (each makes a contact and a conversation)."""
    session, started = requests.Session(), time.perf_counter()
    headers = {"X-Telegram-Bot-Api-Secret-Token": SECRET}
    for number in range(CUSTOMERS):
        chat = {"id": FIRST_CHAT + number, "first_name": "Customer", "type": "private"}
        message = {"message_id": number + 1, "from": chat, "chat": chat, "date": 1767323045}
        update = {"update_id": number + 1, "message": {**message, "text": "Hi"}}
        session.post(url, json=update, headers=headers, timeout=30).raise_for_status()
    return time.perf_counter() - started


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="telegram-bench-")
    script = os.path.join(work, "updates.lua")
    with open(script, "w") as handle:
        handle.write(LUA % {"first_chat": FIRST_CHAT, "customers": CUSTOMERS, "secret": SECRET})
    service = Service(
        {
            "AGENT_PLATFORM_INBOUND_MAX_REQUESTS_PER_MINUTE": "1000000000",
            "AGENT_PLATFORM_SERVER_PUBLIC_URL": "https://bench.example.com",
            "AGENT_PLATFORM_TELEGRAM_API_BASE": "http://127.0.0.1:9",
            "AGENT_PLATFORM_TELEGRAM_TIMEOUT_SECONDS": "1",
            "AGENT_PLATFORM_MEDIA_DIR": os.path.join(work, "media"),
        }
    ).start()
    bare_port = free_port()
    bare = bare_server(bare_port, {})
    try:
        url = f"{service.base}/inbound/telegram/{create_channel(service)}"
        print(
            f"wrk -t{THREADS} -c16, {args.seconds} s per run, loopback, one gevent worker "
            f"each, {os.cpu_count()} CPUs shared by all\n"
        )
        elapsed = warm_up(url)
        assert stored(service.database) == CUSTOMERS
        print(f"warm-up: {CUSTOMERS} first messages, one connection: {CUSTOMERS / elapsed:.0f}/s\n")
        rows = [
            round_of(n, args, script, bare, bare_port, service, url) for n in range(args.rounds)
        ]
        summary(rows, args.rounds)
        paced = load(url, script, str(args.rounds + 1), args.seconds, pause=40)
        print(
            f"paced (40 ms between requests per connection): {paced['rps']:.0f} req/s, "
            f"p50 {paced['p50_ms']:.2f} ms, p99 {paced['p99_ms']:.2f} ms"
        )
        print(f"messages in the database: {stored(service.database)}")
    finally:
        bare.terminate()
        bare.wait()
        service.cleanup()


def round_of(n, args, script, bare, bare_port, service, url):
    base = load(f"http://127.0.0.1:{bare_port}/", script, str(n + 1), args.seconds, 0, bare.pid)
    before = stored(service.database)
    result = load(url, script, str(n + 1), args.seconds, 0, service.process.pid)
    new = (stored(service.database) - before) / args.seconds
    print(
        f"round {n + 1}: bare {base['rps']:7.0f} req/s p99 {base['p99_ms']:6.2f} ms | "
        f"service {result['rps']:7.0f} req/s p99 {result['p99_ms']:6.2f} ms "
        f"CPU {result['cpu_ms']:.2f} ms/req non-2xx {result['errors']} | "
        f"stored {new:7.0f} msg/s | {new / base['rps']:6.1%} of bare"
    )
    return base, result, new


def summary(rows, rounds):
    med = statistics.median
    bare_rps = med(r[0]["rps"] for r in rows)
    print()
    print(f"bare Flask (read body, 200)   {bare_rps:7.0f} req/s (median of {rounds})")
    service = [r[1] for r in rows]
    print(
        f"POST /inbound/telegram/{{id}}  {med(r['rps'] for r in service):7.0f} req/s  p99 "
        f"{med(r['p99_ms'] for r in service):6.2f} ms  "
        f"p50 {med(r['p50_ms'] for r in service):.2f} ms"
    )
    stored_rate = med(r[2] for r in rows)
    print(f"updates stored                {stored_rate:7.0f} msg/s")
    print(f"ratio                         {stored_rate / bare_rps:7.1%} of bare (target >= 40%)")


if __name__ == "__main__":
    sys.exit(main())
