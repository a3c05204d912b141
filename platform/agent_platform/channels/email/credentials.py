"""The "test connection" of an e-mail channel (POST /v1/channels/{id}/verify):
log in to IMAP and open the INBOX, then log in to SMTP; the answer names
the step that failed (imap_connect, imap_login, imap_select, smtp_connect,
smtp_login) and what the server said."""

import imaplib

from . import servers
from .polling import FOLDER


def verify_credentials(channel):
    """{"ok": True, "details": {...}} or {"ok": False, "error": {...}}; a
    channel without its servers' settings is 409 CHANNEL_NOT_CONFIGURED."""
    servers.require(channel, "imap", "be checked")
    servers.require(channel, "smtp", "be checked")
    try:
        mailbox = _imap(channel.settings)
        _smtp(channel.settings)
    except servers.MailError as error:
        return {"ok": False, "error": error.as_dict()}
    settings = channel.settings
    details = {
        "imap": {"host": settings["imap_host"], "port": servers.port(settings, "imap"), **mailbox},
        "smtp": {"host": settings["smtp_host"], "port": servers.port(settings, "smtp")},
    }
    return {"ok": True, "details": details}


def _imap(settings):
    connection = servers.imap(settings)
    try:
        status, data = connection.select(FOLDER, readonly=True)
        if status != "OK":
            said = b" ".join(part for part in data if isinstance(part, bytes)).decode()
            title = f"The IMAP server cannot open {FOLDER}: {said}"
            raise servers.MailError("IMAP_SELECT_FAILED", title, False, "imap_select")
        return {"mailbox": FOLDER, "messages": int(data[0])}
    except (imaplib.IMAP4.error, OSError, ValueError) as error:
        title = f"The IMAP server failed to open {FOLDER} ({type(error).__name__})"
        raise servers.MailError("IMAP_SELECT_FAILED", title, True, "imap_select") from None
    finally:
        try:
            connection.logout()
        except (imaplib.IMAP4.error, OSError):
            pass


def _smtp(settings):
    servers.smtp(settings).quit()
