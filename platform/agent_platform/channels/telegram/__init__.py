"""The Telegram channel (Bot API).

- `botapi`: the Bot API client (TELEGRAM_API_BASE) and its errors;
- `parser`: an Update into neutral objects (private chats only);
- `intake`: updates stored once each (by update_id), whichever way they came;
- `webhook`: the callback URL (secret header), setWebhook / deleteWebhook;
- `polling`: the getUpdates job, from the offset kept in the database;
- `tasks`: the job that fetches customers' files (getFile) into MEDIA_DIR
  and answers button presses (answerCallbackQuery);
- `sender`: outbound messages (sendMessage, sendPhoto, ...);
- `credentials`: the token check (getMe) behind POST /v1/channels/{id}/verify;
- `adapter`: all of it behind the adapter contract, registered for "telegram".
"""

from ..adapters import register_adapter
from . import polling, tasks
from .adapter import TelegramAdapter
from .credentials import verify_credentials

register_adapter(TelegramAdapter())

__all__ = ["TelegramAdapter", "polling", "tasks", "verify_credentials"]
