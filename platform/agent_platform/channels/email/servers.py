"""Connections to a channel's mail servers: IMAP for its mailbox, SMTP for
sending, with the standard library's imaplib and smtplib.

Security per server: "ssl" (TLS from the first byte: IMAP 993, SMTP 465),
"starttls" (upgraded: IMAP 143, SMTP 587) or "none" (plain text, for a
server on the same machine); certificates are verified against the host
name. The host is checked like every user-given target (netguard): a
loopback or private address is refused unless EMAIL_ALLOW_PRIVATE_HOSTS,
and the connection goes to the address that was checked, never to a second
DNS answer. SMTP logs in with smtp_username / smtp_password, else the IMAP
ones (one account, as Gmail and Fastmail have).

Failures are MailError: `step` names what failed (imap_connect,
imap_login, imap_select, smtp_connect, smtp_login), `retryable` whether
trying later can help. Passwords never appear in an error.
"""

import imaplib
import smtplib
import socket
import ssl

from flask import current_app

from ... import netguard
from ...errors import Conflict

DEFAULT_SECURITY = {"imap": "ssl", "smtp": "starttls"}
DEFAULT_PORTS = {
    ("imap", "ssl"): 993,
    ("imap", "starttls"): 143,
    ("imap", "none"): 143,
    ("smtp", "ssl"): 465,
    ("smtp", "starttls"): 587,
    ("smtp", "none"): 25,
}
PRIVATE_SETTING = "email.allow_private_hosts"


class MailError(Exception):
    def __init__(self, code, title, retryable=False, step=None):
        super().__init__(f"{code}: {title}")
        self.code, self.title, self.retryable, self.step = code, title, retryable, step

    def as_dict(self):
        return {"code": self.code, "title": self.title, "details": {"step": self.step}}


def security(settings, kind):
    return settings.get(f"{kind}_security") or DEFAULT_SECURITY[kind]


def port(settings, kind):
    return settings.get(f"{kind}_port") or DEFAULT_PORTS[(kind, security(settings, kind))]


def credentials(settings, kind):
    """(username, password) for `kind`; SMTP falls back on the IMAP account."""
    username, password = settings.get(f"{kind}_username"), settings.get(f"{kind}_password")
    if kind == "smtp" and not username:
        username, password = settings.get("imap_username"), settings.get("imap_password")
    return username or settings.get("from_address"), password


def missing(settings, kind):
    """The settings `kind` (imap or smtp) still needs, in the order to set them."""
    needed = [f"{kind}_host"] if not settings.get(f"{kind}_host") else []
    if kind == "smtp" and not settings.get("from_address"):
        needed.append("from_address")
    if not credentials(settings, kind)[1] and (kind == "imap" or settings.get("smtp_username")):
        needed.append(f"{kind}_password")
    return needed


def require(channel, kind, doing):
    """409 CHANNEL_NOT_CONFIGURED naming what `kind` lacks."""
    needed = missing(channel.settings, kind)
    if needed:
        listed = ", ".join(f"settings.{name}" for name in needed)
        raise Conflict(
            f"Channel {channel.id} cannot {doing}: set {listed} first.",
            code="CHANNEL_NOT_CONFIGURED",
        )


def _timeout():
    return current_app.config["EMAIL_TIMEOUT_SECONDS"]


def _address(settings, kind):
    host, number = settings[f"{kind}_host"], port(settings, kind)
    try:
        allow = current_app.config["EMAIL_ALLOW_PRIVATE_HOSTS"]
        return host, number, netguard.check_host(host, number, allow)
    except netguard.UnsafeURL as error:
        title = netguard.refusal(error, PRIVATE_SETTING)
        raise MailError("HOST_NOT_ALLOWED", title, False, f"{kind}_connect") from None


def _pinned(base, ip):
    """`base` connecting to `ip` whatever host name it is given (the name
    still serves for TLS: SNI and the certificate check)."""
    return type(base.__name__, (base,), {"pinned_ip": ip})


class _IMAP(imaplib.IMAP4):
    def _create_socket(self, timeout):
        return socket.create_connection((self.pinned_ip, self.port), timeout)


class _IMAPS(imaplib.IMAP4_SSL):
    def _create_socket(self, timeout):
        sock = socket.create_connection((self.pinned_ip, self.port), timeout)
        return self.ssl_context.wrap_socket(sock, server_hostname=self.host)


class _SMTP(smtplib.SMTP):
    def _get_socket(self, host, port, timeout):
        return socket.create_connection((self.pinned_ip, port), timeout, self.source_address)


class _SMTPS(smtplib.SMTP_SSL, _SMTP):
    pass


def imap(settings):
    """A logged-in IMAP4 connection to the channel's mailbox server."""
    host, number, ip = _address(settings, "imap")
    mode, context = security(settings, "imap"), ssl.create_default_context()
    try:
        if mode == "ssl":
            connection = _pinned(_IMAPS, ip)(host, number, ssl_context=context, timeout=_timeout())
        else:
            connection = _pinned(_IMAP, ip)(host, number, timeout=_timeout())
            if mode == "starttls":
                connection.starttls(context)
    except (OSError, imaplib.IMAP4.error) as error:
        raise _unreachable("IMAP", host, number, error, "imap_connect") from None
    _imap_login(connection, settings)
    return connection


def _imap_login(connection, settings):
    username, password = credentials(settings, "imap")
    try:
        connection.login(username, password or "")
    except imaplib.IMAP4.abort as error:
        _close_imap(connection)
        raise MailError(
            "IMAP_UNREACHABLE", f"The IMAP server dropped the login ({error})", True, "imap_login"
        ) from None
    except (imaplib.IMAP4.error, OSError, ValueError) as error:  # ValueError: not ASCII
        _close_imap(connection)
        title = f"The IMAP server refused the login of {username}: {said(error)}"
        raise MailError("IMAP_LOGIN_FAILED", title, False, "imap_login") from None


def _close_imap(connection):
    try:
        connection.shutdown()
    except OSError:
        pass


def smtp(settings):
    """A logged-in (when a password is set) SMTP connection for sending."""
    host, number, ip = _address(settings, "smtp")
    mode, context = security(settings, "smtp"), ssl.create_default_context()
    try:
        if mode == "ssl":
            connection = _pinned(_SMTPS, ip)(host, number, timeout=_timeout(), context=context)
        else:
            connection = _pinned(_SMTP, ip)(host, number, timeout=_timeout())
            if mode == "starttls":
                connection.starttls(context=context)
    except (OSError, smtplib.SMTPException) as error:
        raise _unreachable("SMTP", host, number, error, "smtp_connect") from None
    _smtp_login(connection, settings)
    return connection


def _smtp_login(connection, settings):
    username, password = credentials(settings, "smtp")
    if not password:
        return
    try:
        connection.login(username, password)
    except smtplib.SMTPAuthenticationError as error:
        connection.close()
        title = f"The SMTP server refused the login of {username}: {said(error)}"
        raise MailError("SMTP_LOGIN_FAILED", title, False, "smtp_login") from None
    except (OSError, smtplib.SMTPException, ValueError) as error:  # ValueError: not ASCII
        connection.close()
        retryable = not isinstance(error, smtplib.SMTPNotSupportedError | ValueError)
        title = f"The SMTP login of {username} failed: {said(error)}"
        raise MailError("SMTP_LOGIN_FAILED", title, retryable, "smtp_login") from None


def _unreachable(protocol, host, number, error, step):
    kind = "a TLS error" if isinstance(error, ssl.SSLError) else type(error).__name__
    title = f"The {protocol} server {host}:{number} could not be reached ({kind}: {said(error)})"
    return MailError(f"{protocol}_UNREACHABLE", title, True, step)


def said(error):
    """What the server said, as text (smtplib and imaplib keep bytes)."""
    if isinstance(error, smtplib.SMTPResponseException):
        message = error.smtp_error
        message = message.decode("utf-8", "replace") if isinstance(message, bytes) else message
        return f"{error.smtp_code} {message}"
    if error.args and isinstance(error.args[0], bytes):
        return error.args[0].decode("utf-8", "replace")
    return str(error) or type(error).__name__
