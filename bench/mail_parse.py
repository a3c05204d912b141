"""How long the e-mail channel takes to read hostile mail, on the server's
one loop (the poll job runs there): the email package's cost per MIME part,
an HTML body's conversion to text, and a long text/plain body.

Each shape is parsed with channels/email/parser.parse as the channel does,
once; the time is wall time on an idle machine. A shape past the parser's
bounds ends in TooComplex, which the channel records as a failed mail with
its reason (docs/channels/email.md). Besides, the email package's own
parse without the channel's bounds (message_from_bytes, policy.default,
the HTML converted whole) shows what each bound saves.

    .venv/bin/python bench/mail_parse.py [--megabytes 20]
"""

import argparse
import time
from email import message_from_bytes, policy

from agent_platform.channels.email import text as mail_text
from agent_platform.channels.email.parser import TooComplex, parse

HEAD = b"From: a@b.example\r\nMessage-ID: <bench@b.example>\r\nMIME-Version: 1.0\r\n"


def empty_parts(count):
    part = b"--B\r\nContent-Type: application/octet-stream\r\n\r\nx\r\n"
    return HEAD + b"Content-Type: multipart/mixed; boundary=B\r\n\r\n" + part * count + b"--B--\r\n"


def nested_parts(depth):
    opened = b"".join(
        b'Content-Type: multipart/mixed; boundary="n%d"\r\n\r\n--n%d\r\n' % (i, i)
        for i in range(depth)
    )
    closed = b"".join(b"--n%d--\r\n" % i for i in reversed(range(depth)))
    return HEAD + opened + b"Content-Type: text/plain\r\n\r\nhi\r\n" + closed


def html_body(megabytes):
    line = b"<p>Hello <b>there</b>, a line of a newsletter.</p>\r\n"
    return HEAD + b"Content-Type: text/html\r\n\r\n" + line * (megabytes * 1_000_000 // len(line))


def text_body(megabytes):
    line = b"Hello there, a line of a long mail of plain text.\r\n"
    return HEAD + b"Content-Type: text/plain\r\n\r\n" + line * (megabytes * 1_000_000 // len(line))


def timed(function, raw):
    started = time.perf_counter()
    try:
        function(raw)
        outcome = "read"
    except TooComplex as refused:
        outcome = f"refused ({refused})"
    except RecursionError:
        outcome = "RecursionError"
    return time.perf_counter() - started, outcome


def unbounded(raw):
    """The email package's parse, the HTML body converted whole."""
    message = message_from_bytes(raw, policy=policy.default)
    body = message.get_body(preferencelist=("html",))
    if body is not None:
        mail_text.html_to_text(body.get_content())


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--megabytes", type=int, default=20)
    size = parser.parse_args().megabytes
    shapes = [
        ("100,000 empty parts", empty_parts(100_000)),
        ("2,000 nested parts", nested_parts(2000)),
        (f"{size} MB of HTML", html_body(size)),
        (f"{size} MB of plain text", text_body(size)),
    ]
    for name, raw in shapes:
        bounded, outcome = timed(parse, raw)
        whole, whole_outcome = timed(unbounded, raw)
        print(
            f"{name:24} {len(raw) / 1e6:6.1f} MB   the channel: {bounded:6.2f} s, {outcome}"
            f"   unbounded: {whole:6.2f} s, {whole_outcome}"
        )


if __name__ == "__main__":
    main()
