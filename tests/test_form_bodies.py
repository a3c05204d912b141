"""URL-encoded forms read in steps (api/form_bodies.py): the same fields as
Werkzeug's own parser reads, and a bound on how many."""

import io

import pytest
from werkzeug.formparser import FormDataParser

from agent_platform.api.form_bodies import MAX_FIELDS, STEP, BoundedFormDataParser
from agent_platform.errors import ValidationError

FORM = "application/x-www-form-urlencoded"


def parsed(parser, body):
    form = parser.parse(io.BytesIO(body), FORM, len(body), {})[1]
    return list(form.items(multi=True))


BODIES = [
    b"email=ana%40example.com&password=s3cret",
    b"a=1&a=2&b=&c&&=d&e=f=g",
    b"text=Hello+world%21+%2B1&plus=a+b",
    "name=Promoção&city=São+Paulo".encode(),  # literal UTF-8, as some clients send
    b"broken=%C3&lone=%FF%FE&cut=%E2%82&tail=abc%&short=%4&odd=%zz",
    b"mixed=%C3" + "é".encode() + b"%A9",
    b"",
    b"&&&",
    b"semicolons=a;b=c",
    # Long values, their steps cutting escapes and UTF-8 sequences anywhere.
    b"long=" + b"%C3%A9" * (STEP // 3 + 7),
    b"long=" + b"x" * (STEP - 1) + b"%41" * 5 + b"%E2%82%AC" * STEP,
    b"long=" + (b"ab%C3%A9+" * STEP) + b"&after=%F0%9F%98%80",
    b"long=" + b"%" * (STEP + 3) + b"%41%",
]


@pytest.mark.parametrize("body", BODIES, ids=range(len(BODIES)))
def test_a_form_reads_as_werkzeug_reads_it(body):
    assert parsed(BoundedFormDataParser(), body) == parsed(FormDataParser(), body)


def test_a_form_holds_at_most_a_thousand_fields():
    fields = "&".join(f"f{number}=v" for number in range(MAX_FIELDS)).encode()
    assert len(parsed(BoundedFormDataParser(), fields)) == MAX_FIELDS
    with pytest.raises(ValidationError) as refused:
        parsed(BoundedFormDataParser(), fields + b"&one=more")
    assert refused.value.message == "body: a form of 1,001 fields; at most 1,000"


def test_a_body_that_is_not_utf8_is_an_empty_form_as_before():
    body = b"name=\xff\xfe"
    assert parsed(BoundedFormDataParser(), body) == parsed(FormDataParser(), body) == []
