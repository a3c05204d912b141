"""A fast webhook receiver for bench/webhooks_delivery.py (asyncio, HTTP/1.1 keep-alive).

Answers every POST with 200 and records (event_id, receive time, event timestamp).
Control: GET /stats -> {"received", "distinct"}; GET /dump -> [[event_id, t, ts], ...];
POST /reset clears. Runs in its own process so it never competes with the sender
for the GIL.

    python bench/webhooks_receiver.py PORT
"""

import asyncio
import json
import re
import sys
import time

EVENT_ID = re.compile(rb'"event_id":"([^"]+)"')
TIMESTAMP = re.compile(rb'"timestamp":"([^"]+)"')
OK = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Type: text/plain\r\n\r\nok"

records = []


def answer(body_bytes, content_type="application/json"):
    return (
        f"HTTP/1.1 200 OK\r\nContent-Length: {len(body_bytes)}\r\n"
        f"Content-Type: {content_type}\r\n\r\n"
    ).encode() + body_bytes


def control(method, path):
    if path == "/stats":
        distinct = len({record[0] for record in records})
        return answer(json.dumps({"received": len(records), "distinct": distinct}).encode())
    if path == "/dump":
        return answer(json.dumps(records).encode())
    if path == "/reset" and method == "POST":
        records.clear()
        return answer(b"{}")
    return None


async def handle(reader, writer):
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            request_line, _, rest = head.partition(b"\r\n")
            method, path, _ = request_line.decode().split(" ", 2)
            length = 0
            for line in rest.split(b"\r\n"):
                if line[:15].lower() == b"content-length:":
                    length = int(line[15:])
            body = await reader.readexactly(length) if length else b""
            response = control(method, path)
            if response is None:
                event_id = EVENT_ID.search(body)
                stamp = TIMESTAMP.search(body)
                records.append(
                    [
                        event_id.group(1).decode() if event_id else None,
                        time.time(),
                        stamp.group(1).decode() if stamp else None,
                    ]
                )
                response = OK
            writer.write(response)
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    finally:
        writer.close()


async def main(port):
    server = await asyncio.start_server(handle, "127.0.0.1", port, backlog=256)
    print("ready", flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1])))
