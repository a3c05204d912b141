"""The widget's files: the script sites embed and the hosted chat page.
Plain files in static/, read once: there is nothing to build."""

import html
from functools import cache
from pathlib import Path

STATIC = Path(__file__).resolve().parent / "static"


@cache
def script():
    return (STATIC / "widget.js").read_text()


@cache
def _page_template():
    return (STATIC / "page.html").read_text()


def page(channel):
    """The hosted page of `channel`: the script, opened full-window."""
    title = channel.settings.get("title", channel.name)
    return _page_template().format(
        title=html.escape(title), channel_id=html.escape(channel.id, quote=True)
    )
