"""Plain text out of what trainings are made from: HTML pages and uploaded
files. Standard library only."""

from html.parser import HTMLParser

from .. import charsets
from ..nul_text import nul_replaced
from ..turns import give_way_if_due

# Elements whose text is not content.
_SKIPPED = {"script", "style", "noscript", "template", "svg", "head", "iframe", "object"}
# Elements that start a new line of text.
_BLOCKS = {
    "address", "article", "aside", "blockquote", "br", "dd", "div", "dl", "dt",
    "figcaption", "figure", "footer", "form", "h1", "h2", "h3", "h4", "h5", "h6",
    "header", "hr", "li", "main", "nav", "ol", "p", "pre", "section", "table",
    "td", "th", "tr", "ul",
}  # fmt: skip
_VOID = {"br", "hr", "img", "input", "meta", "link", "area", "base", "col", "embed", "source"}
# Markup parsed at a time, the loop given its turn between (every
# turns.TURN_SECONDS, as any long work does): parsing is about
# 0.3 s a megabyte of markup-heavy HTML, and an uploaded document of 4.9 MB
# held every other request 1.4 s.
FEED_CHARS = 8192
# The most fed at once: what follows a long tag once it closes is parsed in
# the same feed.
MAX_FEED_CHARS = 1 << 20


class _TextParser(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.lines = [[]]
        self.title = []
        self.skipping = []  # open skipped elements
        self.in_title = False

    def handle_starttag(self, tag, attrs):
        if tag == "title":
            self.in_title = True
        elif tag in _SKIPPED and tag not in _VOID:
            self.skipping.append(tag)
        if tag in _BLOCKS:
            self.lines.append([])

    def handle_endtag(self, tag):
        if tag == "title":
            self.in_title = False
        elif self.skipping and tag == self.skipping[-1]:
            self.skipping.pop()
        if tag in _BLOCKS:
            self.lines.append([])

    def close(self):
        # A tag or comment still open at the end of the document is hidden,
        # as a browser hides it. HTMLParser.close (before Python 3.13) reads
        # it as text one "<" at a time, each looking for a ">" to the end:
        # "<!" 500,000 times took 6.6 s.
        pending = self.rawdata
        if len(pending) > FEED_CHARS and pending.startswith("<") and self.cdata_elem is None:
            self.rawdata = ""
        super().close()

    def handle_data(self, data):
        if self.in_title:
            self.title.append(data)
        elif not self.skipping:
            self.lines[-1].append(data)


def html_to_text(html):
    """(title, text) of an HTML document: visible text, one block per line."""
    parser = _TextParser()
    start = 0
    while start < len(html):
        end = start + _step(parser)
        parser.feed(html[start:end])
        give_way_if_due()
        start = end
    parser.close()
    lines = (" ".join("".join(parts).split()) for parts in parser.lines)
    return " ".join("".join(parser.title).split()), "\n".join(line for line in lines if line)


def _step(parser):
    """What to feed next. What the parser holds back (a tag, comment or
    script not closed yet) it scans again from its start at every feed: fed
    as much again as it holds (up to MAX_FEED_CHARS), its scans add up to a
    few times its length rather than to its square over FEED_CHARS (an open
    tag of 1 MB of attributes took 10.7 s)."""
    return min(max(FEED_CHARS, len(parser.rawdata)), MAX_FEED_CHARS)


def decode_text(raw, charset=None):
    """Bytes to text: the declared charset (if it is one: charsets.py), else
    UTF-8 (with or without BOM), else Windows-1252 (which accepts any
    byte). A NUL (a fetched page's, or one past the start of a file
    looks_binary reads) is kept as U+FFFD."""
    for encoding in filter(None, (charsets.readable(charset), "utf-8-sig")):
        try:
            return nul_replaced(raw.decode(encoding))
        except (LookupError, UnicodeDecodeError):
            continue
    return nul_replaced(raw.decode("cp1252", errors="replace"))


def looks_binary(raw):
    return b"\x00" in raw[:8192]
