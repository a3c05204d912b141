"""How the inbox's pages show times: the API's ISO 8601 UTC strings as
"5 min ago" in the list, and as a date and time (UTC) in a thread; a
<time datetime=...> keeps the exact moment for browsers and screen readers."""

from datetime import UTC, datetime

from .blueprint import blp

MINUTE, HOUR, DAY = 60, 3600, 86400


def _moment(stamp):
    return datetime.fromisoformat(stamp.replace("Z", "+00:00"))


@blp.app_template_filter("ago")
def ago(stamp, now=None):
    """A recent time as how long ago; older than a week, its date."""
    moment = _moment(stamp)
    seconds = ((now or datetime.now(UTC)) - moment).total_seconds()
    if seconds < MINUTE:
        return "just now"
    if seconds < HOUR:
        return f"{int(seconds // MINUTE)} min ago"
    if seconds < DAY:
        return f"{int(seconds // HOUR)} h ago"
    if seconds < 7 * DAY:
        return f"{int(seconds // DAY)} d ago"
    return moment.strftime("%d %b %Y")


@blp.app_template_filter("at")
def at(stamp):
    return _moment(stamp).strftime("%d %b %Y, %H:%M UTC")
