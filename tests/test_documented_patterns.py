"""The patterns /openapi.json documents promise what the server accepts: any
string a pattern matches, generated from it, passes the server's own check.
(The fuzz test sends such strings through the API, the list filter's too;
here each rule alone, many more of them.)"""

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from agent_platform import formats
from agent_platform.api.schemas.common import NAME_PATTERN
from agent_platform.api.schemas.contacts import PHONE_PATTERN

EXAMPLES = settings(max_examples=300, derandomize=True, database=None, deadline=None)


def documented(pattern):
    # JSON Schema patterns are ECMA-262: `$` ends the text, not a final "\n" too.
    compiled = re.compile(pattern)
    return st.from_regex(pattern).filter(lambda text: _ecma_match(compiled, text))


def _ecma_match(compiled, text):
    return compiled.search(text) is not None and not text.endswith("\n")


@EXAMPLES
@given(documented(NAME_PATTERN))
def test_a_documented_name_is_accepted(name):
    assert formats.name_problem(name) is None


@EXAMPLES
@given(documented(PHONE_PATTERN))
def test_a_documented_phone_is_accepted(phone):
    assert re.fullmatch(r"\+[1-9][0-9]{6,14}", formats.phone(phone, "phone"))


def test_the_patterns_refuse_what_the_server_refuses():
    for name in ("a\x00b", "two\nlines", "   ", "\u3000"):
        assert not re.search(NAME_PATTERN, name) and formats.name_problem(name)
    for phone in ("0000000", "12", "+0155501234", "11 98765-4321"):
        assert not re.search(PHONE_PATTERN, phone)
