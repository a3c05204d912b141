"""JSON from outside (API bodies, network callbacks), parsed within limits.

Python's parser recurses once per level of nesting, so a body of a few
thousand `[` ends in a RecursionError; and it turns a `\\ud800` escape into
a lone surrogate, a string no database or encoder will take. Both are
refused here, before anything stores or walks the document.
"""

import json
import re
from itertools import accumulate

from .errors import ValidationError

# Deepest nesting of arrays and objects a document may have. Real bodies
# nest a handful of levels; 64 stays far below the interpreter's recursion limit.
MAX_DEPTH = 64

# Strings are dropped before brackets are counted: a "[" inside one is text.
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_DEPTH_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}
# A \uD800-\uDFFF escape: the only way a surrogate gets into parsed text
# (strict UTF-8 decoding refuses encoded ones); paired ones become one character.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_SURROGATE = re.compile("[\ud800-\udfff]")


def loads(document):
    """The parsed document; json.JSONDecodeError when it is not JSON,
    errors.ValidationError (naming the field) when it breaks a limit."""
    text = document.decode("utf-8") if isinstance(document, bytes | bytearray) else document
    check_depth(text)
    value = json.loads(text)
    if _SURROGATE_ESCAPE.search(text):
        _refuse_surrogates(value, ())
    return value


def check_depth(text):
    # Cheap first: a document with fewer opening brackets cannot be deeper.
    if text.count("[") + text.count("{") <= MAX_DEPTH:
        return
    brackets = _NOT_BRACKET.sub("", _STRING.sub("", text))
    if brackets and max(accumulate(_DEPTH_STEP[char] for char in brackets)) > MAX_DEPTH:
        raise ValidationError("body", f"nests deeper than {MAX_DEPTH} levels of arrays and objects")


def _refuse_surrogates(value, path):
    if isinstance(value, str):
        if _SURROGATE.search(value):
            _raise_surrogate(path, "contains")
    elif isinstance(value, dict):
        for key, item in value.items():
            if _SURROGATE.search(key):
                _raise_surrogate(path, "has a key with")
            _refuse_surrogates(item, path + (key,))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _refuse_surrogates(item, path + (str(index),))


def _raise_surrogate(path, where):
    raise ValidationError(
        ".".join(path) or "body",
        f"{where} a lone UTF-16 surrogate (\\ud800-\\udfff), which is not a character",
    )
