"""The approved message templates of the channel's WhatsApp Business
Account, from the Graph API (GET {graph}/{business_account_id}/message_templates),
for people choosing one when the 24-hour window is closed."""

import re

from ...errors import ApiError, Conflict
from .graph import GraphError, client

FIELDS = "name,language,status,components"
LIMIT = 100  # the first page: more approved templates than a person can choose from
_PLACEHOLDER = re.compile(r"\{\{\s*(\d+)\s*\}\}")


def approved_templates(channel):
    """[{"name", "language", "body", "parameters"}] (`parameters`: how many
    {{n}} the body has), sorted by name and language; 409
    TEMPLATES_UNAVAILABLE when the account cannot be asked."""
    settings = channel.settings
    account, token = settings.get("business_account_id"), settings.get("access_token")
    if not account or not token:
        raise Conflict(
            f"Channel {channel.id} cannot list its templates: set settings.business_account_id "
            "and settings.access_token first.",
            code="TEMPLATES_UNAVAILABLE",
        )
    query = {"status": "APPROVED", "fields": FIELDS, "limit": str(LIMIT)}
    try:
        answer = client().get(f"{account}/message_templates", token, query)
    except GraphError as error:
        raise _unavailable(error) from None
    found = [_template(item) for item in _items(answer) if item.get("status") == "APPROVED"]
    return sorted(filter(None, found), key=lambda item: (item["name"], item["language"]))


def _unavailable(error):
    message = f"WhatsApp did not list the approved templates ({error.code}: {error.title})."
    return ApiError(message, code="TEMPLATES_UNAVAILABLE", status=502)


def _items(answer):
    items = answer.get("data")
    return [item for item in items if isinstance(item, dict)] if isinstance(items, list) else []


def _template(item):
    name, language = item.get("name"), item.get("language")
    if not isinstance(name, str) or not isinstance(language, str):
        return None
    body = next((part.get("text") for part in _components(item) if part.get("type") == "BODY"), "")
    body = body if isinstance(body, str) else ""
    numbers = {int(number) for number in _PLACEHOLDER.findall(body)}
    return {"name": name, "language": language, "body": body, "parameters": max(numbers, default=0)}


def _components(item):
    parts = item.get("components")
    return [part for part in parts if isinstance(part, dict)] if isinstance(parts, list) else []
