"""The WhatsApp Cloud API channel.

- `intake`: the callback URL (subscription check, signed event POSTs) to
  stored messages, statuses and event-log entries, in one transaction;
- `parser`: a webhook payload into neutral objects, every type;
- `signature`: X-Hub-Signature-256 over the raw bytes;
- `graph`: the Graph API client (WHATSAPP_GRAPH_API_BASE) and its errors;
- `sender`: outbound messages;
- `adapter`: the above behind the adapter contract, registered for "whatsapp";
- `tasks`: the media download and read-receipt job;
- `credentials`: the channel health check behind POST /v1/channels/{id}/verify.

Importing the package registers the adapter (and, through `tasks`, its job).
"""

from ..adapters import register_adapter
from . import tasks
from .adapter import WhatsAppAdapter
from .credentials import verify_credentials
from .sender import WhatsAppSender

register_adapter(WhatsAppAdapter())

__all__ = ["WhatsAppAdapter", "WhatsAppSender", "tasks", "verify_credentials"]
