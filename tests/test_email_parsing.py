"""What the agent reads of a mail, and mail no one wrote carefully: the
parser never raises on a mail's content but past its bounds (public
functions, no server)."""

import base64
import time

import pytest

from agent_platform.channels.email.intake import skip_reason
from agent_platform.channels.email.parser import (
    MAX_HEADER_CHARS,
    MAX_HTML_CHARS,
    MAX_PARTS,
    MAX_TEXT_CHARS,
    TooComplex,
    parse,
)
from agent_platform.channels.email.sender import subject
from agent_platform.channels.email.text import html_to_text, stripped, to_html


@pytest.mark.parametrize(
    "history",
    [
        "On Tue, 24 Nov 2026 at 10:00, Loja <help@example.com> wrote:\n> Olá\n> Como vai?",
        "Em ter., 24 de nov. de 2026 às 10:00, Loja <help@example.com> escreveu:\n> Olá",
        "Le mar. 24 nov. 2026 à 10:00, Loja <help@example.com> a écrit :\n> Bonjour",
        "-----Original Message-----\nFrom: Loja\nSent: Tuesday\nSubject: Olá\n\nOlá",
        "From: Loja <help@example.com>\nSent: Tuesday, November 24, 2026 10:00\nTo: Bia\n\nOlá",
        "-- \nBia Souza\nCompras | Empresa X\n+55 11 99999-0000",
        "Sent from my iPhone",
    ],
)
def test_quoted_history_and_signatures_are_cut_off(history):
    assert stripped(f"Quero mudar o endereço.\n\n{history}") == "Quero mudar o endereço."


def test_a_mail_that_is_all_quote_keeps_its_text():
    assert stripped("> só uma citação") == "> só uma citação"


def test_a_from_line_in_the_customers_own_words_is_kept():
    text = "From: the order form I got an error.\nCan you help?"
    assert stripped(text) == text


def test_html_links_entities_and_hidden_parts():
    markup = "<p>Ver <a href='https://x.example'>pedido</a> &amp; &lt;nota&gt;</p><style>x</style>"
    assert html_to_text(markup) == "Ver pedido & <nota>"
    assert html_to_text("<div>a<br>b</div><table><tr><td>c</td></tr></table>") == "a\nb\n\nc"


def test_the_html_part_escapes_the_text():
    assert "<p>1 &lt; 2 &amp; <b>" not in to_html("1 < 2 & <b>")
    assert "<p>1 &lt; 2 &amp; &lt;b&gt;</p>" in to_html("1 < 2 & <b>")
    assert "<p>a<br>b</p>\n<p>c</p>" in to_html("a\nb\n\nc")


@pytest.mark.parametrize(
    ("before", "after"),
    [
        ("Horário", "Re: Horário"),
        ("Re: Horário", "Re: Horário"),
        ("RE: Re: re:Horário", "Re: Horário"),
        ("Fwd: Re: Pedido", "Re: Pedido"),
        ("AW: Pedido", "Re: Pedido"),
        ("Re:", "Re:"),
        ("  many   spaces\r\n folded  ", "Re: many spaces folded"),
    ],
)
def test_re_is_added_once(before, after):
    class Anchor:
        metadata = {"email": {"subject": before}}

    class Outgoing:
        metadata = {}

    assert subject({"from_address": "a@b.co"}, Outgoing, Anchor) == after


HOSTILE = [
    b"",
    b"\x00\xff\xfe garbage with no headers",
    b"From: =?x-unknown?q?caf=E9?= <a@b.co>\r\nSubject: =?utf-8?b?!!!?=\r\n\r\nbody",
    b"From: a@b.co\r\nContent-Type: text/plain; charset=x-no-such-charset\r\n\r\ncaf\xe9",
    b"From: a@b.co\r\nDate: Fri, 31 Dec 9999 23:59:59 -1200\r\n\r\nfar future",
    b"From: a@b.co\r\nMessage-ID: <" + b"x" * 400 + b"@y>\r\n\r\nlong id",
    b"From: a@b.co\r\nContent-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\n" * 200,
    b"From: \r\nIn-Reply-To: <<<>>>\r\nReferences: " + b"<r@x> " * 5000 + b"\r\n\r\nrefs",
]


@pytest.mark.parametrize("raw", HOSTILE)
def test_hostile_mail_is_parsed_without_raising(raw):
    mail = parse(raw)
    assert mail.message_id.startswith("<") and len(mail.message_id) <= 200
    assert len(mail.thread) <= 50 and isinstance(mail.text, str)


def parts_mail(count, nested=False):
    """A mail of `count` one-byte attachment parts, or of parts nested `count` deep."""
    head = b"From: a@b.co\r\nMessage-ID: <p@b.co>\r\nMIME-Version: 1.0\r\n"
    if nested:
        opened = b"".join(
            b'Content-Type: multipart/mixed; boundary="n%d"\r\n\r\n--n%d\r\n' % (i, i)
            for i in range(count)
        )
        closed = b"".join(b"--n%d--\r\n" % i for i in reversed(range(count)))
        return head + opened + b"Content-Type: text/plain\r\n\r\nhi\r\n" + closed
    part = b"--B\r\nContent-Type: application/octet-stream\r\n\r\nx\r\n"
    return head + b"Content-Type: multipart/mixed; boundary=B\r\n\r\n" + part * count + b"--B--\r\n"


def test_a_mail_of_too_many_parts_is_refused_while_it_is_read():
    # 100,000 parts took 23 s on the server's one loop; 100 MB of them would
    # have outlasted gunicorn's timeout, and been read again after each restart.
    assert len(parse(parts_mail(MAX_PARTS - 1)).attachments) == MAX_PARTS - 1
    with pytest.raises(TooComplex, match=f"more than {MAX_PARTS} MIME parts"):
        parse(parts_mail(MAX_PARTS))  # its parts and the mail itself
    started = time.thread_time()
    with pytest.raises(TooComplex):
        parse(parts_mail(100_000))
    assert time.thread_time() - started < 2  # stopped at the limit, not after the rest
    with pytest.raises(TooComplex, match="nested too deep"):
        parse(parts_mail(2000, nested=True))  # a RecursionError in the email package


def test_only_the_first_characters_of_a_plain_body_are_kept_and_the_mail_says_so():
    # 60 mails of a million characters made a page of messages 120 MB of
    # JSON, and the server's memory grew by 520 MB while it was written.
    text = "ã" * (MAX_TEXT_CHARS - 1) + "\r\n" + "b" * 3_000_000
    mail = parse(b"From: a@b.co\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n" + text.encode())
    assert mail.text == mail.full_text == "ã" * (MAX_TEXT_CHARS - 1)
    assert mail.clipped is True
    whole = parse(b"From: a@b.co\r\n\r\n" + b"a" * MAX_TEXT_CHARS)
    assert (len(whole.text), whole.clipped) == (MAX_TEXT_CHARS, False)


def test_only_the_first_characters_of_an_html_body_are_read_and_kept():
    html = "<p>" + "a" * MAX_HTML_CHARS + "</p><p>" + "b" * 3_000_000 + "</p>"
    raw = b"From: a@b.co\r\nContent-Type: text/html\r\n\r\n" + html.encode()
    mail, seconds = timed_parse(raw)
    assert seconds < 1  # 100 MB of it took 40 s to convert
    assert (mail.text, mail.clipped) == ("a" * MAX_TEXT_CHARS, True)
    markup = "<p>" + "a" * (MAX_TEXT_CHARS + 1) + "</p>"  # read whole, its text longer
    raw = b"From: a@b.co\r\nContent-Type: text/html\r\n\r\n" + markup.encode()
    assert (parse(raw).text, parse(raw).clipped) == ("a" * MAX_TEXT_CHARS, True)
    short = b"From: a@b.co\r\nContent-Type: text/html\r\n\r\n<div><p>Oi</p></div>"
    assert (parse(short).text, parse(short).clipped) == ("Oi", False)


def test_a_mail_without_message_id_gets_one_from_its_bytes():
    raw = b"From: Bia <bia@x.example>\r\nSubject: oi\r\n\r\nola"
    assert parse(raw).message_id == parse(raw).message_id != parse(raw + b"!").message_id
    assert parse(raw).message_id.endswith("@no-message-id>")


def test_unknown_charsets_are_read_as_utf8_with_replacements():
    raw = b"From: a@b.co\r\nContent-Type: text/plain; charset=x-no-such-charset\r\n\r\ncaf\xe9"
    assert parse(raw).text == "caf\ufffd"


def timed_parse(raw):
    # The CPU time of this thread, as in every bound of this file: what else
    # runs on the machine (tests run in parallel) does not count.
    started = time.thread_time()
    return parse(raw), time.thread_time() - started


def test_a_header_of_hundreds_of_kilobytes_is_read_to_its_bound_in_a_moment():
    # The email package's header parser takes time growing with the square
    # of a header's length: a Subject of 1 MB of words took 78 s, a To of
    # 1 MB 170 s, past gunicorn's timeout at every poll that read it again.
    head = b"From: Bia <bia@x.example>\r\nMessage-ID: <h@x.example>\r\n"
    mail, seconds = timed_parse(head + b"Subject: " + b"oi " * 100_000 + b"\r\n\r\nola")
    assert seconds < 2 and mail.subject == ("oi " * 333)[:998].rstrip()
    to = b"To: " + b"".join(b"c%d@x.example, " % number for number in range(20_000))
    mail, seconds = timed_parse(head + to + b"\r\n\r\nola")
    assert seconds < 2 and mail.to == [f"c{number}@x.example" for number in range(50)]
    assert mail.text == "ola" and mail.sender == "bia@x.example"


def test_a_header_within_its_bound_is_read_whole():
    names = b", ".join(b"Someone Long-Named %d <s%d@x.example>" % (n, n) for n in range(50))
    assert len(names) < MAX_HEADER_CHARS
    mail = parse(b"From: a@b.co\r\nTo: " + names + b"\r\n\r\nola")
    assert mail.to == [f"s{number}@x.example" for number in range(50)]


@pytest.mark.parametrize("codec", ["punycode", "IDNA", "Punycode"])
def test_text_declared_in_a_codec_of_domain_names_is_read_as_utf8(codec):
    # Python decodes punycode and idna in time growing with the square of
    # their input: 200 KB took 1.6 and 2.9 s; neither is a charset of text.
    body = b"xn--abc-" + b"a" * 400_000
    raw = b"From: a@b.co\r\nContent-Type: text/plain; charset=%s\r\n\r\n" % codec.encode()
    mail, seconds = timed_parse(raw + body)
    assert seconds < 2 and mail.text == body[:MAX_TEXT_CHARS].decode() and mail.clipped
    word = base64.b64encode(body)
    subject = b"Subject: =?" + codec.encode() + b"?b?" + word + b"?=\r\n"
    mail, seconds = timed_parse(b"From: a@b.co\r\n" + subject + b"\r\nola")
    assert seconds < 2 and mail.text == "ola"


def test_text_in_a_charset_is_still_read_in_it():
    raw = b"From: a@b.co\r\nContent-Type: text/plain; charset=iso-8859-1\r\n\r\ncaf\xe9"
    assert parse(raw).text == "café"
    subject = b"Subject: =?utf-7?q?caf+AOk-?=\r\n"
    assert parse(b"From: a@b.co\r\n" + subject + b"\r\nx").subject == "café"


def test_a_far_future_date_is_dropped_rather_than_overflowing():
    raw = b"From: a@b.co\r\nDate: Fri, 31 Dec 9999 23:59:59 -1200\r\n\r\nx"
    assert parse(raw).date is None


def test_the_channels_own_address_is_recognised_whatever_its_case():
    raw = b"From: Team <team@shop.example>\r\nMessage-ID: <a@b>\r\nSubject: x\r\n\r\noi\r\n"
    settings = {"from_address": "help@shop.example", "imap_username": "Team@Shop.example"}
    assert skip_reason(settings, parse(raw)) == "sent from the channel's own address"
    assert skip_reason({"from_address": "help@shop.example"}, parse(raw)) is None
