"""JSON request bodies read with limits: nesting depth, and text that is
Unicode. Used by the API's argument parser and the networks' callbacks.

Python's json parser recurses once per level, so a body of 100,000 `[`
ends in a RecursionError; and a JSON escape of a lone surrogate (`"\\ud800"`)
loads as a str that SQLite cannot store. Both are the sender's mistakes,
refused here with the place at fault instead of failing deeper down.
"""

import json
import re

MAX_DEPTH = 32

# Strings (skipped whole, escapes included) and the brackets outside them.
_TOKENS = re.compile(rb'"(?:[^"\\]|\\.)*"|[\[\]{}]', re.DOTALL)
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


def loads(body, most_members=None):
    """The document in `body` (bytes), or BodyError (or ValueError when it
    is not JSON at all). `most_members`: the most an object or an array may
    hold (None: any number)."""
    if body.count(b"[") + body.count(b"{") > MAX_DEPTH:
        _check_depth(body)
    document = json.loads(body)
    if _SURROGATE_ESCAPE.search(body):
        _check_text(document, ())
    if most_members is not None and body.count(b",") >= most_members:
        _check_members(document, (), most_members)  # n members, n - 1 commas
    return document


def _check_members(value, path, most):
    if isinstance(value, dict):
        items = value.items()
    elif isinstance(value, list):
        items = enumerate(value)
    else:
        return
    if len(value) > most:
        field = ".".join(path) or "body"
        raise BodyError(field, f"holds {len(value):,} members; at most {most:,}")
    for key, item in items:
        _check_members(item, (*path, str(key)), most)


def _check_depth(body):
    depth = 0
    for token in _TOKENS.finditer(body):
        bracket = token.group()
        if bracket in (b"[", b"{"):
            depth += 1
            if depth > MAX_DEPTH:
                raise BodyError("body", f"is nested deeper than {MAX_DEPTH} levels")
        elif bracket in (b"]", b"}"):
            depth -= 1


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
