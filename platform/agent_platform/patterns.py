"""Patterns a user writes (a transfer rule's `regex`) run on RE2.

Python's `re` backtracks: a pattern such as `(a|aa)+$` against a few dozen
characters of a customer's message can hold a thread for minutes, and with
it the server every workspace shares. RE2 matches in time linear in the
text, for a cost per character that grows with the size of the compiled
program, so that size is bounded too: a 10 kB message then takes a few
milliseconds against any pattern accepted here.

RE2 has no back-references, look-around or possessive quantifiers (they are
what needs backtracking); a pattern using them is refused with the reason.
"""

import functools

import re2

# Instructions of a compiled pattern: `(.*){49}` is about 500 and matches
# 10 kB in about 15 ms; typical rules are under 100.
MAX_PROGRAM_SIZE = 500
# RE2's own memory budget per pattern (its default is 8 MB).
MAX_MEMORY_BYTES = 1 << 20

# RE2's parse errors, as a user can act on them.
_UNSUPPORTED = (
    ("invalid perl operator: (?<", "look-behind (?<= (?<! is not supported"),
    ("invalid perl operator: (?=", "look-ahead (?= is not supported"),
    ("invalid perl operator: (?!", "look-ahead (?! is not supported"),
    ("invalid escape sequence: \\1", "back-references (\\1 ... \\9) are not supported"),
    ("bad repetition operator: ++", "possessive quantifiers (a++) are not supported"),
    ("bad repetition operator: *+", "possessive quantifiers (a*+) are not supported"),
)
_ENGINE = "patterns run on RE2, a linear-time engine (docs/api.md#patterns)"


class PatternError(ValueError):
    """A pattern RE2 cannot run, or may not: the message says why."""


def _options():
    options = re2.Options()
    options.case_sensitive = False
    options.max_mem = MAX_MEMORY_BYTES
    options.log_errors = False  # a refused pattern is the user's, not a server error
    return options


_OPTIONS = _options()


@functools.lru_cache(maxsize=1024)
def compiled(pattern):
    """The pattern compiled (any case), or PatternError with the reason."""
    try:
        found = re2.compile(pattern, _OPTIONS)
    except re2.error as error:
        raise PatternError(_reason(error)) from None
    if found.programsize > MAX_PROGRAM_SIZE:
        raise PatternError(
            f"too complex: it compiles to {found.programsize} instructions, at most "
            f"{MAX_PROGRAM_SIZE} on RE2 (repeat less, e.g. {{1,20}} instead of {{1,1000}})"
        )
    return found


def _reason(error):
    message = error.args[0] if error.args else str(error)
    if isinstance(message, bytes):
        message = message.decode("utf-8", "replace")
    for prefix, reason in _UNSUPPORTED:
        if message.startswith(prefix):
            return f"{reason}: {_ENGINE}"
    return f"not a valid regular expression ({message}): {_ENGINE}"
