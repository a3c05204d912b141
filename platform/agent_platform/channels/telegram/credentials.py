"""Channel health: does the bot token work (getMe), and is it the bot named
in settings.bot_username? Behind POST /v1/channels/{id}/verify."""

from ...errors import Conflict
from .botapi import BotApiError, client

FIELDS = ("id", "username", "first_name", "can_join_groups", "can_read_all_group_messages")


def verify_credentials(channel):
    """{"ok": True, "details": {...the bot}} or {"ok": False, "error": {...}};
    a channel without a bot_token is 409 CHANNEL_NOT_CONFIGURED."""
    token = channel.settings.get("bot_token")
    if not token:
        raise Conflict(
            f"Channel {channel.id} cannot be checked: set settings.bot_token first.",
            code="CHANNEL_NOT_CONFIGURED",
        )
    try:
        bot = client(token).call("getMe")
    except BotApiError as error:
        return {"ok": False, "error": error.as_dict()}
    named = channel.settings.get("bot_username")
    if named and named.lower() != str(bot.get("username", "")).lower():
        title = f"The token is the bot @{bot.get('username')}, not @{named}"
        return {
            "ok": False,
            "error": {"code": "BOT_USERNAME_MISMATCH", "title": title, "details": None},
        }
    return {"ok": True, "details": {name: bot[name] for name in FIELDS if name in bot}}
