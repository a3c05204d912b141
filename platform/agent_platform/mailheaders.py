"""The headers of every mail the platform writes: one line each, whatever
they were made of (a customer's mail, an API caller's metadata, a setting).

Header values start as text someone else chose: the subject of the
customer's mail, `metadata.subject` of a posted message, a channel's
`from_name`, the Message-IDs of the thread, a webhook's URL in an alert. The
standard library's `email` package reads a string set as a header as header
*source*: an RFC 2047 encoded word in it (`=?utf-8?q?a=0D=0ABcc:_x@evil?=`)
is decoded, and before Python 3.11.10 and 3.12.5 the line break it decodes
to is written out raw, a header of the attacker's own (`Bcc:`, `Reply-To:`)
or a blank line and the start of the body. Later Pythons encode it again,
and the receiver decodes the line break all the same. So, on every Python:

- `text(value)`: one line of plain text. Encoded words are decoded (nested
  ones too), every control character (CR, LF, NUL, TAB, VT, FF, NEL, the
  other C0 and C1 ones, DEL) and U+2028/U+2029 become a space, runs of
  spaces one space, and an encoded word's opening `=?` still left is broken
  up (`= ?`): no reader decodes anything out of it, let alone a line break;
- `address(value)`: an address a header carries as it is (a dot-atom
  `local@domain`: no spaces, controls, quotes, brackets, commas, `=?`), else
  None; `mailbox(header, address, name)` a From or To of it, the name made
  text() and written by this module (plain words, a quoted string, or RFC
  2047 words when it is not ASCII), not by the standard library's folder,
  which unquotes a long quoted name (its commas would add addresses);
- `message_id(value)`: a `<id@host>` of printable ASCII without `=?`, else None;
- `POLICY`, the policy of every mail composed (`new_message()`), refuses
  (UnsafeHeader) a header whose value, as the email package reads it, holds
  a line break, and a written header with a line break not followed by a
  space (the check Python 3.11.10 added, `verify_generated_headers`);
- `serialized(mail)`: the bytes to hand to SMTP, read back first: each part
  must have exactly the headers it was given, and none of them may decode
  to a line break, else UnsafeHeader and nothing is sent.
"""

import base64
import re
import unicodedata
from email import message_from_bytes
from email import policy as policies
from email.headerregistry import Address
from email.message import EmailMessage
from email.policy import EmailPolicy

# What ends or breaks a line somewhere: C0 and C1 controls (CR, LF, NUL, TAB,
# VT, FF, NEL ...), DEL, U+2028 and U+2029.
_BREAKS = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")
_OPENER = "=?"  # how an RFC 2047 encoded word starts
_NESTING = 10  # encoded words in encoded words decoded at most
_ALNUM = "A-Za-z0-9\u00a0-\U0010ffff"  # with letters of any script (SMTPUTF8)
_ATOM = rf"[{_ALNUM}!#$%&'*+/=?^_`{{|}}~\-]+"
_LABEL = rf"[{_ALNUM}](?:[{_ALNUM}\-]{{0,61}}[{_ALNUM}])?"
_ADDRESS = re.compile(rf"{_ATOM}(?:\.{_ATOM})*@{_LABEL}(?:\.{_LABEL})+")
_MESSAGE_ID = re.compile(r"<[\x21-\x3b\x3d\x3f-\x7e]{1,250}>")  # printable ASCII but < >
_PLAIN_WORD = re.compile(r"[A-Za-z0-9!#$%&'*+/=?^_`{|}~\-]+")  # an atom: no quoting needed
_WORD_BYTES = 45  # of UTF-8 in one encoded word: =?utf-8?b?<60>?= is 72 characters
_UNFOLD = re.compile(r"\r\n|\r|\n")
_UNSTRUCTURED = policies.default.header_factory


class UnsafeHeader(ValueError):
    """A header that would carry a line break (or not the one given): the
    mail is not written."""

    def __init__(self, name, why="would carry a line break"):
        super().__init__(f"The {name} header {why}")
        self.header = name


def text(value, limit=900):
    """`value` as one line of plain text of at most `limit` characters, with
    nothing left for a mail reader to decode (see the module's docstring)."""
    line = _flat(unescaped(str(value)))
    for _ in range(_NESTING):
        decoded = _flat(_decoded(line))
        if decoded == line:
            break
        line = decoded
    # An opener left (a word Python does not decode, or nested too deep):
    # another reader may be more lenient than Python's.
    while _OPENER in line:
        line = line.replace(_OPENER, "= ?")
    return line[:limit].rstrip()


def problem(value):
    """Why `value` cannot be written in a header as it is (a setting such as
    from_name), else None."""
    if _BREAKS.search(value):
        return "must be one line: no line breaks or other control characters"
    if _OPENER in value:
        return "must be plain text, without an RFC 2047 encoded word (=?charset?q?...?=)"
    return None


def address(value):
    """`value` when it is an address a header can carry as it is, else None."""
    if not isinstance(value, str) or len(value) > 254 or _OPENER in value:
        return None
    if not _ADDRESS.fullmatch(value) or any(_unsafe_char(char) for char in value):
        return None
    return value if len(value.rsplit("@", 1)[0]) <= 64 else None


def message_id(value):
    """`value` when it is a Message-ID a header can carry as it is, else None."""
    if not isinstance(value, str) or not _MESSAGE_ID.fullmatch(value) or _OPENER in value:
        return None
    return value


def mailbox(header, email, name=None):
    """The From or To (`header`) of `email` with the display name `name` (made
    text(); none when empty). UnsafeHeader when `email` is no safe address."""
    if address(email) is None:
        raise UnsafeHeader(header, f"cannot carry the address {email!r}")
    return _Mailbox(header, email, text(name or "", 200))


class _Mailbox(str):
    """A From/To header value that writes itself (see _phrase): the standard
    library's folder drops the quotes of a long quoted name, and a comma or
    colon in it then splits the header into more addresses or a group."""

    def __new__(cls, header, email, display):
        local, domain = email.rsplit("@", 1)
        shown = Address(display_name=display, username=local, domain=domain)
        self = super().__new__(cls, str(shown))
        self.name, self.email, self.display = header, email, display
        return self

    def __reduce__(self):  # copy.deepcopy(mail): the generator may make one
        return (_Mailbox, (self.name, self.email, self.display))

    def fold(self, *, policy):
        words = [*_phrase(self.display), f"<{self.email}>"] if self.display else [self.email]
        lines = [f"{self.name}:"]
        limit = policy.max_line_length or 78
        for word in words:
            if len(lines[-1]) + 1 + len(word) > limit and lines[-1] != f"{self.name}:":
                lines.append("")
            lines[-1] += f" {word}"
        return policy.linesep.join(lines) + policy.linesep


def _phrase(name):
    """The words of display name `name`: atoms as they are, other ASCII as a
    quoted string (folded at its spaces), else RFC 2047 words."""
    words = name.split(" ")
    if all(_PLAIN_WORD.fullmatch(word) for word in words):
        return words
    if name.isascii():
        quoted = [word.replace("\\", "\\\\").replace('"', '\\"') for word in words]
        quoted[0] = f'"{quoted[0]}'
        quoted[-1] = f'{quoted[-1]}"'  # the same word when it is the only one
        return quoted
    chunks = [b""]
    for word in [f"{word} " for word in words[:-1]] + words[-1:]:
        if chunks[-1] and len(chunks[-1]) + len(word.encode("utf-8")) > _WORD_BYTES:
            chunks.append(b"")  # a word starts an encoded word rather than be cut
        for char in word:
            piece = char.encode("utf-8")
            if len(chunks[-1]) + len(piece) > _WORD_BYTES:
                chunks.append(b"")
            chunks[-1] += piece
    return [f"=?utf-8?b?{base64.b64encode(chunk).decode('ascii')}?=" for chunk in chunks]


def _unsafe_char(char):
    # Controls, format characters, surrogates, unassigned; spaces and separators.
    return unicodedata.category(char)[0] in "CZ"


def unescaped(value):
    """`value` with the bytes a parser kept as surrogates (surrogateescape:
    raw 8-bit headers) read as UTF-8, and any lone surrogate left as U+FFFD."""
    try:
        value = value.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    except UnicodeEncodeError:
        pass
    return re.sub("[\ud800-\udfff]", "\ufffd", value)


def _flat(value):
    return " ".join(_BREAKS.sub(" ", value).split())


def _decoded(value):
    """`value` as the email package reads a header set to it: its encoded
    words decoded (wherever they are: the most eager of its readers)."""
    try:
        return unescaped(str(_UNSTRUCTURED("subject", value)))
    except Exception:  # the parser on hostile input: nothing decoded
        return value


class StrictPolicy(EmailPolicy):
    """policy.SMTP (CRLF line ends) that refuses to store a header whose value
    holds a line break, and to write one with a line break that is not a
    fold, on every Python."""

    def header_store_parse(self, name, value):
        name, header = super().header_store_parse(name, value)
        if _BREAKS.search(str(header)):
            raise UnsafeHeader(name)
        return name, header

    def fold(self, name, value):
        return _checked(name, super().fold(name, value), self.linesep)

    def fold_binary(self, name, value):
        return _checked(name, super().fold_binary(name, value), self.linesep.encode())


def _checked(name, folded, linesep):
    """`folded` when each line break in it is a fold: CRLF and a space or tab."""
    binary = isinstance(folded, bytes)
    cr, lf, space = (b"\r", b"\n", (b" ", b"\t")) if binary else ("\r", "\n", (" ", "\t"))
    body = folded[: -len(linesep)] if folded.endswith(linesep) else folded
    lines = body.split(linesep)
    if any(cr in line or lf in line for line in lines):
        raise UnsafeHeader(name)
    if not all(line.startswith(space) for line in lines[1:]):
        raise UnsafeHeader(name)
    return folded


POLICY = StrictPolicy(linesep="\r\n")


def new_message():
    """An EmailMessage of POLICY."""
    return EmailMessage(policy=POLICY)


def serialized(mail, utf8=False):
    """The bytes of `mail` (with raw UTF-8 headers when `utf8`, for SMTPUTF8),
    read back as a receiver would: UnsafeHeader when a part has other headers
    than it was given, or one whose value decodes to a line break."""
    data = mail.as_bytes(policy=POLICY.clone(utf8=utf8))
    given = list(mail.walk())
    read = list(message_from_bytes(data, policy=policies.compat32).walk())
    if len(read) != len(given):
        raise UnsafeHeader("mail", "was read back as other parts than it was given")
    for expected, part in zip(given, read, strict=True):
        names = [name.lower() for name in expected.keys()]
        for index, (name, raw) in enumerate(part.raw_items()):
            if index >= len(names) or name.lower() != names[index]:
                raise UnsafeHeader(name, "was not among those given")
            if _BREAKS.search(_decoded("".join(_UNFOLD.split(str(raw))))):
                raise UnsafeHeader(name)
        if len(part.keys()) != len(names):
            raise UnsafeHeader(names[-1], "was cut off")
    return data
