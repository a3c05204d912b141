"""The website channel: an embeddable chat widget.

- `adapter`: the type's settings and its side of the adapter contract
  (a reply is "sent" once it is stored where the visitor's widget reads it);
- `visitors`: the public visitor API behind /widget/<channel_id>/api/...:
  who the visitor is (a random token, or a user id the site signs), their
  messages in through the common inbound path, replies out by polling;
- `identity`: the visitor token and the site's HMAC identity verification;
- `assets/`: the served script (widget.js) and the hosted chat page.

Importing the package registers the adapter.
"""

from ..adapters import register_adapter
from .adapter import WebsiteAdapter

register_adapter(WebsiteAdapter())

__all__ = ["WebsiteAdapter"]
