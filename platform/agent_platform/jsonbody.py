"""JSON request bodies read with limits: nesting depth, text that is
Unicode, and (for the API's bodies) how many members they hold.
Used by the API's argument parser and the networks' callbacks.

Python's json parser recurses once per level, so a body of 100,000 `[`
ends in a RecursionError; a JSON escape of a lone surrogate (`"\\ud800"`)
loads as a str that SQLite cannot store; and each value is a Python object
built on the loop: 2.4 million numbers in 4.8 MB held every other request
a second. All are the sender's doing, refused with the place at fault
instead of failing deeper down.

The checks before the parse count bytes (in C); those after it walk the
document's objects and arrays, not its text: a regular expression stepping
through a string of megabytes a character at a time took seconds.
"""

import json
import re

MAX_DEPTH = 32

_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")


class BodyError(ValueError):
    def __init__(self, field, problem):
        super().__init__(f"{field}: {problem}")
        self.field, self.problem = field, problem

    def told_of(self, what):
        """The problem in a sentence about `what`, for a peer's answer:
        "the answer is nested deeper than 32 levels"."""
        if self.field == "body":
            return f"{what} {self.problem}"
        return f"{what}'s {self.field} {self.problem}"


def loads(body, most_members=None, most_in_all=None):
    """The document in `body` (bytes), or BodyError (or ValueError when it
    is not JSON at all). `most_members`: the most an object or an array may
    hold; `most_in_all`: the most they may hold together, counted before
    the body is parsed (None: any number)."""
    escapes = b"\\" in body  # memchr: most bodies have none to look for
    if most_in_all is not None:
        _check_in_all(body, most_in_all, escapes)
    document = _parsed(body)
    if body.count(b"[") + body.count(b"{") > MAX_DEPTH:  # else none is that deep
        _check_depth(document, 1)
    if escapes and _SURROGATE_ESCAPE.search(body):
        _check_text(document, ())
    if most_members is not None and body.count(b",") >= most_members:
        _check_members(document, (), most_members)  # n members, n - 1 commas
    return document


def _parsed(body):
    try:
        return json.loads(body)
    except RecursionError:  # hundreds of levels: past MAX_DEPTH all the same
        raise _too_deep() from None


def _too_deep():
    return BodyError("body", f"is nested deeper than {MAX_DEPTH} levels")


def _check_in_all(body, most, escapes):
    """More than `most` members in all, told without parsing `body`, in C.
    Members are separated by commas, and a member holds at most two strings
    (its key, its value): more commas outside strings than `most`, or more
    strings than twice as many, is more members."""
    commas = body.count(b",")
    if commas <= most:
        return
    # Escaped backslashes go first: a quote after one ends its string.
    if escapes:
        body = body.replace(b"\\\\", b"").replace(b'\\"', b"")
    strings = body.count(b'"') // 2  # no quote is escaped now
    if strings > 2 * most + 1 or commas - _commas_in_strings(body) > most:
        raise BodyError("body", f"holds more than {most:,} members in all; at most {most:,}")


def _commas_in_strings(body):
    """The commas inside the strings of `body`, whose quotes are none escaped."""
    return sum(text.count(b",") for text in body.split(b'"')[1::2])


def _containers(value):
    """The objects and arrays directly inside `value`, with their keys."""
    keyed = value.items() if isinstance(value, dict) else enumerate(value)
    return [(key, item) for key, item in keyed if isinstance(item, (dict, list))]


def _check_depth(value, depth):
    if not isinstance(value, (dict, list)):
        return
    if depth > MAX_DEPTH:
        raise _too_deep()
    for _, item in _containers(value):
        _check_depth(item, depth + 1)


def _check_members(value, path, most):
    if not isinstance(value, (dict, list)):
        return
    if len(value) > most:
        field = ".".join(path) or "body"
        raise BodyError(field, f"holds {len(value):,} members; at most {most:,}")
    for key, item in _containers(value):
        _check_members(item, (*path, str(key)), most)


def _check_text(value, path):
    """Every string (keys too) encodes as UTF-8: no lone surrogate."""
    if isinstance(value, str):
        _check_string(value, path)
    elif isinstance(value, dict):
        for key, item in value.items():
            _check_string(key, path)
            _check_text(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _check_text(item, (*path, str(index)))


def _check_string(text, path):
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        field = ".".join(path) or "body"
        raise BodyError(field, "contains a lone UTF-16 surrogate (\\ud800-\\udfff)") from None
