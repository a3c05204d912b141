"""Real mail servers on loopback for the e-mail channel's tests: Dovecot
(Debian's dovecot-imapd, which .ci/run installs) holding the team's mailbox,
and an aiosmtpd server taking what the channel sends.

Dovecot runs with its own configuration in a temporary directory, as the
unprivileged `dovecot` user, with plain-text login on 127.0.0.1; a test
delivers a mail by IMAP APPEND, as a mail server would leave it.
"""

import imaplib
import ipaddress
import shutil
import socket
import ssl
import subprocess
import threading
import time
from datetime import UTC, datetime, timedelta
from email import message_from_bytes, policy
from pathlib import Path

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

MAILBOX, PASSWORD = "help@example.com", "app-password-1"
SPARE = 500  # mailboxes made at start, for new_mailbox()
CONFIG = """
base_dir = {base}/run
state_dir = {base}/state
log_path = {base}/dovecot.log
listen = 127.0.0.1
protocols = imap
ssl = yes
ssl_cert = <{base}/cert.pem
ssl_key = <{base}/key.pem
disable_plaintext_auth = no
auth_mechanisms = plain login
default_login_user = dovenull
default_internal_user = dovecot
default_internal_group = dovecot
first_valid_uid = 1
mail_location = maildir:~/Maildir
passdb {{
  driver = passwd-file
  args = scheme=PLAIN username_format=%u {base}/users
}}
userdb {{
  driver = static
  args = uid=dovecot gid=dovecot home={base}/mail/%u
}}
service imap-login {{
  inet_listener imap {{
    address = 127.0.0.1
    port = {port}
  }}
  inet_listener imaps {{
    address = 127.0.0.1
    port = {tls_port}
  }}
}}
service anvil {{
  chroot =
}}
service imap-login {{
  chroot =
}}
"""


def certificate(directory):
    """A self-signed certificate for 127.0.0.1 and localhost (cert.pem, key.pem
    in `directory`): the path of cert.pem, which a client trusts through
    SSL_CERT_FILE, as it would a real CA."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.now(UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(days=1))
        .not_valid_after(now + timedelta(days=30))
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            ),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    path = Path(directory) / "cert.pem"
    path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    (Path(directory) / "key.pem").write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return path


def server_context(cert_path):
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert_path, cert_path.with_name("key.pem"))
    return context


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Dovecot:
    """`dovecot -c <config>` on a free loopback port, stopped by `stop()`."""

    def __init__(self, base, users=((MAILBOX, PASSWORD),)):
        self.base, self.port, self.tls_port = Path(base), free_port(), free_port()
        self.certificate = certificate(self.base)
        users = [*users, *((f"help{n}@example.com", PASSWORD) for n in range(1, SPARE + 1))]
        for sub in ("run", "state", "mail"):
            (self.base / sub).mkdir(parents=True, exist_ok=True)
        lines = [f"{user}:{{PLAIN}}{password}\n" for user, password in users]
        (self.base / "users").write_text("".join(lines))
        (self.base / "dovecot.conf").write_text(
            CONFIG.format(base=self.base, port=self.port, tls_port=self.tls_port)
        )
        self.base.chmod(0o755)
        shutil.chown(self.base / "mail", "dovecot", "dovecot")
        binary = shutil.which("dovecot") or "/usr/sbin/dovecot"
        subprocess.run([binary, "-c", str(self.base / "dovecot.conf")], check=True)
        self._wait()

    def new_mailbox(self):
        """A mailbox no one used yet (of the SPARE made at start; Dovecot
        would not notice users added in the same second): each test its
        own, with UIDs from 1. Its password is PASSWORD."""
        self._count = getattr(self, "_count", 0) + 1
        assert self._count <= SPARE, "more mailboxes than SPARE"
        return f"help{self._count}@example.com"

    def _wait(self):
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError(f"dovecot did not listen: {self.log()}")

    def log(self):
        path = self.base / "dovecot.log"
        return path.read_text() if path.exists() else ""

    def imap(self, user=MAILBOX, password=PASSWORD):
        connection = imaplib.IMAP4("127.0.0.1", self.port, timeout=10)
        connection.login(user, password)
        return connection

    def deliver(self, raw, user=MAILBOX, password=PASSWORD, arrived=None):
        """APPEND `raw` (bytes) to the user's INBOX, unread, as arrived at
        `arrived` (an aware datetime; now when None); its UID."""
        connection = self.imap(user, password)
        when = imaplib.Time2Internaldate(arrived) if arrived else None
        try:
            status, data = connection.append("INBOX", None, when, raw)
            assert status == "OK", data
            return int(data[0].split(b"APPENDUID ")[1].split()[1].rstrip(b"]"))
        finally:
            connection.logout()

    def empty(self, user=MAILBOX, password=PASSWORD):
        """Delete every mail of the INBOX (UIDs keep growing, as on a real server)."""
        connection = self.imap(user, password)
        try:
            connection.select("INBOX")
            connection.store("1:*", "+FLAGS", "\\Deleted")
            connection.expunge()
        except imaplib.IMAP4.error:
            pass  # an empty mailbox has no 1:*
        finally:
            connection.logout()

    def stop(self):
        pid = (self.base / "run" / "master.pid").read_text().strip()
        subprocess.run(["kill", pid], check=False)


class _Handler:
    def __init__(self, sink):
        self.sink = sink

    async def handle_RCPT(self, server, session, envelope, address, rcpt_options):
        refusal = self.sink.refusal()
        if refusal:
            return refusal
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server, session, envelope):
        with self.sink.lock:
            self.sink.received.append(
                (envelope.mail_from, list(envelope.rcpt_tos), envelope.content)
            )
        return "250 Message accepted for delivery"


class SmtpSink:
    """aiosmtpd on loopback: keeps what it is sent; `refuse_next(reply)`
    answers the next recipient with `reply` ("451 ..." or "550 ...").
    AUTH (without TLS, on loopback) takes the `accounts` {user: password};
    `logins` lists the users that logged in."""

    def __init__(self, accounts=None, tls=None, cert_path=None, smtputf8=False):
        """`tls`: None (plain), "starttls" or "ssl", with the certificate at
        `cert_path` (see certificate()); `smtputf8`: the server offers SMTPUTF8
        (addresses that are not ASCII)."""
        self.received, self.lock, self._refusals, self.logins = [], threading.Lock(), [], []
        self.accounts = accounts if accounts is not None else {}
        context = server_context(cert_path) if tls else None
        self.controller = Controller(
            _Handler(self),
            hostname="127.0.0.1",
            port=free_port(),
            authenticator=self._authenticate,
            auth_require_tls=False,
            ssl_context=context if tls == "ssl" else None,
            tls_context=context if tls == "starttls" else None,
            enable_SMTPUTF8=smtputf8,
        )
        self.controller.start()
        self.port = self.controller.port

    def _authenticate(self, server, session, envelope, mechanism, auth_data):
        user = auth_data.login.decode()
        ok = self.accounts.get(user) == auth_data.password.decode()
        if ok:
            self.logins.append(user)
        return AuthResult(success=ok)

    def refuse_next(self, reply):
        with self.lock:
            self._refusals.append(reply)

    def refusal(self):
        with self.lock:
            return self._refusals.pop(0) if self._refusals else None

    def mails(self):
        """What was received, parsed."""
        with self.lock:
            return [message_from_bytes(raw, policy=policy.default) for _, _, raw in self.received]

    def stop(self):
        self.controller.stop()
