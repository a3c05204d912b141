"""A text message's `metadata.buttons` ({"text", "data"} each, as the
Telegram sender takes them) as a Cloud API interactive message: reply
buttons when there are at most three and every text fits a button's 20
characters, else a list (up to ten rows: the text cut to a row title's 24
characters, in full in its 72-character description). A press comes back as
an `interactive` message whose metadata.interactive.id is the button's data.
`metadata.buttons_label` names the list's button (default "Choose")."""

from ..senders import SendError

BODY_CHARS = 1024
BUTTON_CHARS = 20
MAX_BUTTONS = 3
ROW_CHARS, DESCRIPTION_CHARS, MAX_ROWS = 24, 72, 10
ID_CHARS = 256


def interactive(text, metadata):
    """The `interactive` object of the request body."""
    given = metadata["buttons"]
    if not isinstance(given, list) or not 1 <= len(given) <= MAX_ROWS:
        raise SendError("INVALID_BUTTONS", f"metadata.buttons must list 1 to {MAX_ROWS}")
    buttons = [_checked(button, index) for index, button in enumerate(given)]
    body = {"text": (text or "")[:BODY_CHARS] or "…"}
    if len(buttons) <= MAX_BUTTONS and all(len(t) <= BUTTON_CHARS for t, _ in buttons):
        replies = [{"type": "reply", "reply": {"id": d, "title": t}} for t, d in buttons]
        return {"type": "button", "body": body, "action": {"buttons": replies}}
    label = str(metadata.get("buttons_label") or "Choose")[:BUTTON_CHARS]
    rows = [_row(text, data) for text, data in buttons]
    return {"type": "list", "body": body, "action": {"button": label, "sections": [{"rows": rows}]}}


def _row(text, data):
    row = {"id": data, "title": _cut(text, ROW_CHARS)}
    if len(text) > ROW_CHARS:
        row["description"] = _cut(text, DESCRIPTION_CHARS)
    return row


def _cut(text, limit):
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _checked(button, index):
    where = f"metadata.buttons[{index}]"
    text = button.get("text") if isinstance(button, dict) else None
    if not isinstance(text, str) or not text.strip():
        raise SendError("INVALID_BUTTONS", f"{where} needs a text")
    data = button.get("data")
    if not isinstance(data, str) or not 1 <= len(data) <= ID_CHARS:
        reason = f"{where} needs data of 1 to {ID_CHARS} characters (no url buttons)"
        raise SendError("INVALID_BUTTONS", reason)
    return button["text"].strip(), data
