"""The e-mail channel: a team's existing mailbox, read over IMAP and
answered over SMTP (the standard library's imaplib, smtplib and email).

- `servers`: connections (TLS, STARTTLS or plain; netguard on the hosts);
- `parser`: a mail's bytes into what is stored (Message-ID, thread, text,
  attachments, and why it must not be answered);
- `text`: HTML to text, quoted history and signatures stripped, text to HTML;
- `intake`: each mail stored once, with its UID, in one transaction;
- `polling`: the IMAP poll job, from the UID kept in the database;
- `sender`: a message as a threaded mail over SMTP;
- `credentials`: the IMAP and SMTP check behind POST /v1/channels/{id}/verify;
- `adapter`: all of it behind the adapter contract, registered for "email".
"""

from ..adapters import register_adapter
from . import polling
from .adapter import EmailAdapter

register_adapter(EmailAdapter())

__all__ = ["EmailAdapter", "polling"]
