"""Value formats shared by channels, contacts and messages, and the JSON form
of stored objects (for events).

Validators take the value and the field name to blame, return the value in
its canonical form, and raise errors.ValidationError naming the field.
"""

import re
from datetime import UTC, date, datetime
from urllib.parse import urlsplit

from . import mailheaders
from .errors import ValidationError

# E.164: a plus, a country code not starting with 0, at most 15 digits in all.
# Seven digits is the shortest number any country plan assigns in practice.
_E164 = re.compile(r"^\+[1-9][0-9]{6,14}$")
_EMAIL = re.compile(
    r"^[^@\s]{1,64}@[A-Za-z0-9](?:[A-Za-z0-9-]{0,62}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,62}[A-Za-z0-9])?)+$"
)
_HEX_COLOR = re.compile(r"^#(?:[0-9a-fA-F]{3}|[0-9a-fA-F]{6})$")
_HOSTNAME = re.compile(
    r"^(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,62}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,62}[A-Za-z0-9])?)*$"
)


# What people and Meta put between digits: "+1 555-701-4422", "(11) 98765.4321".
_SEPARATORS = re.compile(r"[\s\-.()\u2010\u2011]")
# Unicode's control characters (category Cc), all 65 of them: a pattern
# searches a name in C, where a test of each character's category cost
# 60 ms per million characters, before any length was checked.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")


def phone(value, field):
    """A phone number as E.164 (+ and 7 to 15 digits), else 400 INVALID_PHONE_FORMAT.

    Accepted as Meta shows them: with spaces, dashes, dots or parentheses
    after the plus ("+1 555-701-4422", its dashboard), or digits alone
    without it ("15557014422", its webhook payloads), always with the
    country code; 00 for the plus as well. Stored as +15557014422.
    """
    normalised = _e164(value) if isinstance(value, str) else None
    if normalised is None:
        raise ValidationError(
            field,
            "must be a phone number with its country code, e.g. +15557014422, "
            "+1 555-701-4422 or 15557014422 (7 to 15 digits in all)",
            code="INVALID_PHONE_FORMAT",
        )
    return normalised


def _e164(value):
    stripped = value.strip()
    compact = _SEPARATORS.sub("", stripped)
    if compact.startswith("00"):
        compact = "+" + compact[2:]
    elif stripped.isdigit():
        # Digits alone are Meta's payload form, country code first. With
        # separators and no plus ("11 98765-4321") a number is local: refused.
        compact = "+" + compact
    return compact if _E164.match(compact) else None


def name_problem(text):
    """Why `text` cannot be a name people read (one line of visible text,
    valid Unicode), or None. Lengths are each name's own."""
    if _CONTROL.search(text):
        return "Must not contain control characters (NUL, line breaks)."
    if text and not text.strip():
        return "Must not be only spaces."
    if not _encodes(text):
        # A command-line argument that is not UTF-8 arrives with lone surrogates.
        return "Must be valid Unicode text (UTF-8)."
    return None


def one_line(text):
    """`text` with each control character (line breaks, tabs, NUL) as a
    space: what name_problem would refuse, made readable instead, for text
    nobody typed as a name (a file's name)."""
    return _CONTROL.sub(" ", text)


def _encodes(text):
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def email(value, field):
    """An e-mail address, lower-cased (addresses are compared without case),
    that a mail's From or To can carry as it is (mailheaders.address: no
    quotes, commas, brackets, controls or encoded words)."""
    address = value.strip().lower() if isinstance(value, str) and len(value) <= 254 else ""
    if not _EMAIL.match(address) or mailheaders.address(address) is None:
        raise ValidationError(field, "must be an e-mail address such as ana@example.com")
    return address


def http_url(value, field):
    if not isinstance(value, str) or len(value) > 2048:
        raise ValidationError(field, "must be an http or https URL of at most 2048 characters")
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValidationError(field, "must be an http or https URL with a host")
    return value


def origin(value, field):
    """A web origin: scheme, host and optional port, nothing after."""
    if not isinstance(value, str):
        raise ValidationError(field, "must be an origin such as https://shop.example.com")
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.path not in ("", "/"):
        raise ValidationError(field, "must be an origin such as https://shop.example.com")
    if parts.query or parts.fragment or parts.username:
        raise ValidationError(field, "must be an origin such as https://shop.example.com")
    return f"{parts.scheme}://{parts.netloc}".lower()


def origins(limit):
    """A list of at most `limit` origins, each checked, without repeats."""

    def check(value, field):
        if not isinstance(value, list) or len(value) > limit:
            raise ValidationError(field, f"must be a list of at most {limit} origins")
        checked = [origin(item, f"{field}[{index}]") for index, item in enumerate(value)]
        return list(dict.fromkeys(checked))

    return check


def flag(value, field):
    if not isinstance(value, bool):
        raise ValidationError(field, "must be true or false")
    return value


def hostname(value, field):
    if not isinstance(value, str) or not _HOSTNAME.match(value):
        raise ValidationError(field, "must be a host name such as smtp.example.com")
    return value.lower()


def port(value, field):
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 65535:
        raise ValidationError(field, "must be a port number from 1 to 65535")
    return value


def color(value, field):
    if not isinstance(value, str) or not _HEX_COLOR.match(value):
        raise ValidationError(field, "must be a hex color such as #1a73e8")
    return value.lower()


def text(max_length, min_length=1):
    def check(value, field):
        if not isinstance(value, str) or not min_length <= len(value) <= max_length:
            raise ValidationError(
                field, f"must be a string of {min_length} to {max_length} characters"
            )
        return value

    return check


def pattern(regex, description):
    compiled = re.compile(regex)

    def check(value, field):
        if not isinstance(value, str) or not compiled.match(value):
            raise ValidationError(field, f"must be {description}")
        return value

    return check


def one_of(*allowed):
    def check(value, field):
        if value not in allowed:
            raise ValidationError(field, f"must be one of: {', '.join(allowed)}")
        return value

    return check


def iso_date(value, field):
    try:
        return date.fromisoformat(value).isoformat() if isinstance(value, str) else _bad()
    except ValueError:
        raise ValidationError(field, "must be a date as YYYY-MM-DD") from None


def _bad():
    raise ValueError


def jsonable(value):
    """`value` with datetimes as ISO 8601 UTC strings (the API's form), for events."""
    if isinstance(value, dict):
        return {key: jsonable(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(item) for item in value]
    if isinstance(value, datetime):
        return utc_timestamp(value)
    return value


def naive_utc(moment):
    """A network's aware time as stored: naive UTC."""
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC).replace(tzinfo=None)
    return moment


def utc_timestamp(value):
    """A stored (naive UTC) time in the API's form: ISO 8601 with microseconds and Z."""
    return value.isoformat(timespec="microseconds") + "Z"
