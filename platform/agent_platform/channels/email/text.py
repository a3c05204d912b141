"""Text of a mail: HTML to text (a customer's mail with no plain part), the
quoted history and signature stripped off what the agent reads, and the
agent's plain text as a simple HTML part.

Only the standard library: html.parser for HTML, line rules for quotes.
"""

import html
import re
from html.parser import HTMLParser

# Elements whose content is not text a reader sees.
_HIDDEN = {"script", "style", "head", "title", "template"}
_BLOCKS = {
    "p", "div", "br", "tr", "li", "ul", "ol", "table", "h1", "h2", "h3", "h4", "h5", "h6",
    "blockquote", "pre", "hr", "section", "article", "header", "footer",
}  # fmt: skip
# Lines after which everything is quoted history: "On <date>, Ana wrote:"
# (and its translations), Outlook's "-----Original Message-----" and
# "From: ... Sent: ..." header block, forwarded-message separators.
_ATTRIBUTION = re.compile(
    r"^\s*(On\s.{1,300}\swrote:|Le\s.{1,300}\sa\sécrit\s?:|Em\s.{1,300}\sescreveu:|"
    r"El\s.{1,300}\sescribió:|Am\s.{1,300}\sschrieb\s.{1,200}:|Op\s.{1,300}\sschreef\s.{1,200}:)\s*$",
    re.IGNORECASE,
)
_SEPARATOR = re.compile(
    r"^\s*(-{2,}\s*(Original Message|Mensagem original|Message d'origine|Mensaje original|"
    r"Forwarded message|Ursprüngliche Nachricht)\s*-{2,}|_{10,})\s*$",
    re.IGNORECASE,
)
_OUTLOOK_FROM = re.compile(r"^\s*\*?(From|De|Von|Van)\s*:\*?\s", re.IGNORECASE)
_OUTLOOK_NEXT = re.compile(r"^\s*\*?(Sent|Date|Enviado|Envoyé|Gesendet|Verzonden)\s*:", re.I)
# A signature: the standard "-- " delimiter, or a phone's "Sent from my ...".
_SIGNATURE = re.compile(r"^(--\s?|Sent from my .{1,60}|Enviado do meu .{1,60})$", re.IGNORECASE)


# Marks around a <blockquote>'s lines, which come out quoted ("> "), as a
# plain-text mail quotes: stripped() leaves them out of what the agent reads.
_QUOTE_IN, _QUOTE_OUT = "\x00quote-in", "\x00quote-out"


class _TextParser(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.parts, self.hidden = [], 0

    def handle_starttag(self, tag, attrs):
        if tag == "blockquote":
            self.parts.append(f"\n{_QUOTE_IN}\n")
        if tag in _HIDDEN:
            self.hidden += 1
        elif tag in _BLOCKS:
            self.parts.append("\n")
        if tag == "li":
            self.parts.append("- ")

    def handle_endtag(self, tag):
        if tag == "blockquote":
            self.parts.append(f"\n{_QUOTE_OUT}\n")
        if tag in _HIDDEN:
            self.hidden = max(0, self.hidden - 1)
        elif tag in _BLOCKS and tag not in ("li", "br"):
            self.parts.append("\n")

    def handle_data(self, data):
        if not self.hidden:
            self.parts.append(re.sub(r"\s+", " ", data))


def html_to_text(markup):
    """The text a reader of `markup` sees, one line per block."""
    parser = _TextParser()
    parser.feed(markup)
    parser.close()
    lines, depth = [], 0
    for line in "".join(parser.parts).splitlines():
        line = line.strip()
        if line in (_QUOTE_IN, _QUOTE_OUT):
            depth = max(0, depth + (1 if line == _QUOTE_IN else -1))
        else:
            lines.append("> " * depth + line if line else "")
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()


def stripped(text):
    """`text` without the history it quotes and the signature under it: what
    the customer wrote this time. All of it when nothing would be left."""
    lines = text.replace("\r\n", "\n").split("\n")
    kept = []
    for index, line in enumerate(lines):
        if _ends_new_text(line, lines[index + 1 : index + 3]):
            break
        if not line.lstrip().startswith(">"):
            kept.append(line)
    result = "\n".join(kept).strip()
    return result or text.strip()


def _ends_new_text(line, following):
    if _ATTRIBUTION.match(line) or _SEPARATOR.match(line) or _SIGNATURE.match(line.rstrip()):
        return True
    return bool(_OUTLOOK_FROM.match(line)) and any(_OUTLOOK_NEXT.match(n) for n in following)


def to_html(text):
    """Plain `text` as a minimal HTML document: paragraphs, line breaks."""
    paragraphs = re.split(r"\n\s*\n", (text or "").strip())
    body = "".join(
        f"<p>{html.escape(paragraph).replace(chr(10), '<br>')}</p>\n" for paragraph in paragraphs
    )
    return f'<!DOCTYPE html>\n<html><body style="font-family: sans-serif">\n{body}</body></html>\n'
