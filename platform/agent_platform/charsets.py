"""The charset a peer declares for its text (a mail's part, a fetched page),
read only when it names a character set.

Two of Python's text codecs are not character sets of text but encodings of
domain names, which Python decodes in Python, in time that grows with the
square of their input: 200 KB declared as punycode took 1.6 s to decode, as
idna 2.9 s; a few megabytes would take hours of the server's one loop. Text
declared in them is read as text of an unknown charset.
"""

import codecs

_NOT_CHARSETS = frozenset({"punycode", "idna"})
# The longest registered charset name has 45 characters; Python reads a
# name character by character to look it up.
_LONGEST_NAME = 64


def readable(charset):
    """`charset` when Python reads it as a character set, else None (none
    declared, unknown, or one of _NOT_CHARSETS)."""
    if not charset or len(charset) > _LONGEST_NAME:
        return None
    try:
        name = codecs.lookup(charset).name
    except (LookupError, ValueError):
        return None
    return None if name in _NOT_CHARSETS else charset
