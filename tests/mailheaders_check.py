"""What agent_platform.mailheaders guarantees, checked with the standard
library alone, so that test_email_headers.py runs it on every other Python
3.11+ it finds (the email package changed in 3.11.10 and 3.12.5) as well as
on its own: `PYTHONPATH=platform python tests/mailheaders_check.py` prints
how many values it checked, or fails.

For each hostile value (encoded words in q and b, nested ones, CR, LF, NEL,
VT, FF, NUL, U+2028, lone surrogates, quotes, brackets, commas...) as a
subject and as a sender's name, what is written, read back as a receiver
reads it, has exactly the headers composed, none of them a line break once
decoded, and the subject and the name read as mailheaders.text made them.
"""

import random
import sys
from email import message_from_bytes, policy
from email.message import EmailMessage

from agent_platform import mailheaders

PIECES = [
    "=?", "?=", "utf-8", "?q?", "?b?", "=0D", "=0A", "=3D", "=3F", "\r", "\n", "\r\n",
    "\u2028", "\u2029", "\x85", "\x0b", "\x0c", "\x00", "\t", " ", "Bcc:", "Reply-To:",
    "a", "é", "日本", '"', "\\", "<", ">", "(", ")", ",", ";", ":", "@", "_", "x" * 80,
    "\udcff", "=?utf-8?q?a=0D=0Ab?=", "=?utf-8?b?YQ0KYg==?=", "Re:", "\U0001f600",
]  # fmt: skip
CASES = [
    "=?utf-8?q?=3D=3Futf-8=3Fq=3FHours=3D0D=3D0ABcc=3A=5Fevil6=40evil.example"
    "=3D0D=3D0AReply-To=3A=5Fattacker=40evil.example=3F=3D?=",
    "=?utf-8?q?Invoice=0D=0AReply-To:_attacker@evil.example=0D=0A=0D=0Abody?=",
    "=?utf-8?b?SW52b2ljZQ0KQmNjOiB4QGV2aWwuZXhhbXBsZQ==?=",
    "=?utf-8?q?Carl=0D=0ABcc:_x@evil.example?=",
    "Loja da Ana: atendimento, vendas; suporte técnico (segunda a sexta) " * 2,
]
ATTACK = "=?utf-8?q?Invoice=0D=0ABcc:_x@evil.example?="


def check(count=300, seed=37):
    """The number of values checked; AssertionError at the first that fails."""
    chance = random.Random(seed)
    values = CASES + [
        "".join(chance.choice(PIECES) for _ in range(chance.randint(1, 40))) for _ in range(count)
    ]
    for value in values:
        _check(value)
    _check_refusals()
    return len(values)


def _check(value):
    mail = mailheaders.new_message()
    mail["From"] = mailheaders.mailbox("From", "help@example.com", value)
    mail["To"] = mailheaders.mailbox("To", "bia@customer.example")
    mail["Subject"] = mailheaders.text(value)
    mail["In-Reply-To"] = "<c1@customer.example>"
    mail.set_content("body")
    mail.add_alternative("<p>body</p>", subtype="html")
    for utf8 in (False, True):
        read = message_from_bytes(mailheaders.serialized(mail, utf8=utf8), policy=policy.default)
        assert read.keys() == mail.keys(), value
        for name in read.keys():
            assert not any(c in str(read[name]) for c in "\r\n\x0b\x0c\x85\u2028"), (value, name)
        # Python's reader spaces adjacent encoded words (others join them).
        assert _words(read["Subject"]) == _words(mailheaders.text(value)), value
        [sender] = read["From"].addresses
        assert _words(sender.display_name) == _words(mailheaders.text(value, 200)), value
        assert sender.addr_spec == "help@example.com" and read["To"] == "bia@customer.example"
        assert read.get_body(preferencelist=("plain",)).get_content().strip() == "body"


def _words(text):
    return str(text).replace(" ", "")


def _check_refusals():
    # The policy stores no header that decodes to a line break.
    try:
        mailheaders.new_message()["Subject"] = ATTACK
        raise AssertionError("the policy stored a subject with a line break")
    except mailheaders.UnsafeHeader:
        pass
    # Bytes whose header would decode to a line break are not handed over,
    # whatever this Python's own writer does with such a header.
    plain = EmailMessage()
    plain["Subject"] = ATTACK
    plain.set_content("body")
    try:
        mailheaders.serialized(plain)
        raise AssertionError("serialized() passed a subject with a line break")
    except (mailheaders.UnsafeHeader, ValueError):  # or the email package's own check
        pass


if __name__ == "__main__":
    print(f"ok: {check()} values on Python {sys.version.split()[0]}")
