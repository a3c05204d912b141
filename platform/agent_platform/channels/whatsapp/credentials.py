"""Channel health: do the channel's settings reach its number on the Graph API?"""

from ...errors import Conflict
from .graph import GraphError, client

FIELDS = ("display_phone_number", "verified_name", "quality_rating", "code_verification_status")


def verify_credentials(channel):
    """GET {graph}/{phone_number_id} with the access token: {"ok": True,
    "details": {...the number's fields}} or {"ok": False, "error": {...}}.
    A channel without the two settings is 409 CHANNEL_NOT_CONFIGURED."""
    settings = channel.settings
    for name in ("phone_number_id", "access_token"):
        if not settings.get(name):
            raise Conflict(
                f"Channel {channel.id} cannot be checked: set settings.{name} first.",
                code="CHANNEL_NOT_CONFIGURED",
            )
    number_id = settings["phone_number_id"]
    try:
        answer = client().get(number_id, settings["access_token"], {"fields": ",".join(FIELDS)})
    except GraphError as error:
        return {"ok": False, "error": error.as_dict()}
    if str(answer.get("id", number_id)) != number_id:
        title = f"The Graph API answered for number {answer.get('id')}, not {number_id}"
        error = {"code": "PHONE_NUMBER_MISMATCH", "title": title, "details": None}
        return {"ok": False, "error": error}
    details = {name: answer[name] for name in FIELDS if name in answer}
    return {"ok": True, "details": {"phone_number_id": number_id, **details}}
