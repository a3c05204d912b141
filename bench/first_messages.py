"""Visitors' first messages while many widget streams are open.

Starts `agent-platform serve` (this checkout's code, or the one PYTHONPATH
names first) with a website channel and its agent, opens --streams push
streams (GET /widget/<id>/api/events), each of a new visitor from a
loopback address of its own, and once they are all open sends the first
message of --messages of those visitors, --rate a second, each answered by
the agent. A visitor without a contact listens to the whole channel until
its first message makes one, so every first message concerns every such
stream. Prints the worker's CPU time over the messages (from their first
to 3 s after the last) per first message.

    .venv/bin/python bench/first_messages.py [--streams 500] [--messages 200] [--rate 20]
"""

import argparse
import asyncio
import time

import requests
from loadgen import Service, cpu_seconds
from widget import ORIGIN, QUESTION, connect, setup, widget_address

SETTLE = 3.0  # seconds after the last message, for its reply and pushes


def settings(streams):
    return {
        "AGENT_PLATFORM_SERVER_MAX_CONNECTIONS": str(2 * streams + 100),
        "AGENT_PLATFORM_REPLIES_DEBOUNCE_SECONDS": "0",
        "AGENT_PLATFORM_WIDGET_ADDRESS_REQUESTS_PER_MINUTE": "1000000",
        "AGENT_PLATFORM_WIDGET_ADDRESS_NEW_VISITORS_PER_MINUTE": "1000000",
    }


async def open_streams(port, base, tokens):
    streams = []
    for number, token in enumerate(tokens):
        reader, writer = await connect(port, widget_address(number))
        lines = [f"GET {base}events?token={token} HTTP/1.0", "Host: bench", f"Origin: {ORIGIN}"]
        writer.write(("\r\n".join(lines) + "\r\n\r\n").encode())
        streams.append((reader, writer))
    for reader, _ in streams:
        assert b" 200 " in await reader.readline(), "a stream was refused"
    return streams


async def first_messages(service, base, tokens, rate):
    """The worker's CPU seconds over the messages, and their wall time."""
    session, started = requests.Session(), time.monotonic()
    before, url = cpu_seconds(service.process.pid), service.base + base + "messages"
    for number, token in enumerate(tokens):
        headers = {"Origin": ORIGIN, "X-Visitor-Token": token}
        body = {"text": QUESTION, "client_message_id": "first"}
        sent = await asyncio.to_thread(session.post, url, json=body, headers=headers)
        assert sent.status_code == 201, sent.text
        await asyncio.sleep(max(0.0, started + (number + 1) / rate - time.monotonic()))
    await asyncio.sleep(SETTLE)
    return cpu_seconds(service.process.pid) - before, time.monotonic() - started


async def run(service, base, tokens, options):
    streams = await open_streams(service.port, base, tokens)
    await asyncio.sleep(SETTLE)  # every stream subscribed and waiting
    try:
        return await first_messages(service, base, tokens[: options.messages], options.rate)
    finally:
        for _, writer in streams:
            writer.close()


def visitor_token(base_url):
    started = requests.post(base_url + "session", json={}, headers={"Origin": ORIGIN})
    return started.json()["data"]["visitor_token"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--streams", type=int, default=500)
    parser.add_argument("--messages", type=int, default=200)
    parser.add_argument("--rate", type=float, default=20.0, help="first messages a second")
    options = parser.parse_args()
    assert options.messages <= options.streams, "each message is one stream's visitor's"
    service = Service(settings(options.streams)).start()
    try:
        base = f"/widget/{setup(service)}/api/"
        tokens = [visitor_token(service.base + base) for _ in range(options.streams)]
        cpu, took = asyncio.run(run(service, base, tokens, options))
    finally:
        service.cleanup()
    per_message = cpu / options.messages * 1000
    print(
        f"{options.messages} first messages at {options.rate:g}/s, {options.streams} streams "
        f"open: worker CPU {cpu:.2f} s over {took:.1f} s, {per_message:.1f} ms per message"
    )


if __name__ == "__main__":
    main()
