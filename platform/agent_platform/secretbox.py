"""The key that encrypts stored secrets, kept outside the database.

Channel credentials, model API keys, MCP headers and webhook signing secrets
are stored as `enc:v1:<Fernet token>`, so a copied database file or backup
gives none of them away. The keys come from `secrets.key` (the keys
themselves, comma-separated) or else from a key file: `secrets.key_file`, by
default `secrets.key` beside the configuration file (beside the database when
there is none). The first key encrypts; every key decrypts (MultiFernet), so
a rotation never leaves a value unreadable half-way. During a rotation the
previous keys wait in `<key file>.old`, which is read as well.

A stored value without the prefix is plain text written before encryption
existed; the start-up step (services/secrets.py) encrypts it.
"""

import base64
import os
import threading
from pathlib import Path

from .config import ConfigError, config_file, resolve_path
from .private import make_dirs, open_new

PREFIX = "enc:v1:"
KEY_FILE_NAME = "secrets.key"
_CACHE_LIMIT = 4096


class SecretsError(ConfigError):
    """The key is missing, unreadable or does not open the stored secrets."""


def is_encrypted(stored):
    return isinstance(stored, str) and stored.startswith(PREFIX)


def default_key_file(config_file, database_path):
    """`secrets.key` beside the configuration file, else beside the database."""
    anchor = config_file if config_file else database_path
    return resolve_path(anchor).parent / KEY_FILE_NAME


def new_key():
    """A new key, as Fernet makes one: 32 random bytes, url-safe base64."""
    return base64.urlsafe_b64encode(os.urandom(32)).decode("ascii")


def _is_key(text):
    """Whether Fernet takes `text` as a key (32 bytes once decoded)."""
    try:
        return len(base64.urlsafe_b64decode(text)) == 32
    except ValueError:  # binascii.Error, bad padding or characters, is one
        return False


def _multi_fernet(keys):
    # cryptography (about 4 MB in memory) is loaded with the first secret
    # sealed or opened: gunicorn's master, and a worker that never touches
    # a stored secret, do without it.
    from cryptography.fernet import Fernet, MultiFernet

    return MultiFernet([Fernet(key) for key in keys])


def parse_keys(text, origin):
    """The keys of `text` (one per line or comma-separated), each checked."""
    raw = [part.strip() for part in text.replace(",", "\n").splitlines()]
    keys = [part for part in raw if part and not part.startswith("#")]
    if not all(_is_key(key) for key in keys):
        raise SecretsError(
            f"{origin} does not hold a valid key (32 url-safe base64-encoded bytes, "
            "as `agent-platform secrets generate-key` prints)"
        )
    return keys


class KeyFile:
    """Keys kept in a file (mode 0600) and, during a rotation, `<file>.old`."""

    def __init__(self, path):
        self.path = Path(path)
        self.old = self.path.with_name(self.path.name + ".old")

    def describe(self):
        return f"the key file {self.path}"

    def stamp(self):
        """What changes when the file is replaced (by a rotation)."""
        try:
            stat = self.path.stat()
        except FileNotFoundError:
            return None
        return (stat.st_ino, stat.st_mtime_ns)

    def load(self):
        """The keys, the file's first; [] when there is no key file."""
        keys = []
        for path in (self.path, self.old):
            try:
                keys += parse_keys(path.read_text(), f"the key file {path}")
            except FileNotFoundError:
                continue
            except OSError as error:
                raise SecretsError(f"cannot read the key file {path}: {error.strerror}") from error
        return keys

    def create(self):
        """Write a new key; if another process wrote one first, keep theirs."""
        try:
            make_dirs(self.path.parent)
            write_new(self.path, new_key())
        except FileExistsError:
            pass
        except OSError as error:
            raise SecretsError(
                f"cannot create the key file {self.path}: {error.strerror}; "
                "create the directory or set secrets.key_file to a writable place"
            ) from error


class KeyList:
    """Keys given in the configuration (`secrets.key`), never written."""

    def __init__(self, text):
        self.text = text

    def describe(self):
        return "the key given in secrets.key (AGENT_PLATFORM_SECRETS_KEY)"

    def stamp(self):
        return None

    def load(self):
        return parse_keys(self.text, "secrets.key (AGENT_PLATFORM_SECRETS_KEY)")


def write_new(path, content):
    """Create `path` (0600) holding `content` whole, or raise FileExistsError:
    written beside it first and linked into place, so no reader ever sees a
    half-written key."""
    temporary = _written_beside(Path(path), content)
    try:
        os.link(temporary, path)
        _sync_directory(path)
    finally:
        temporary.unlink(missing_ok=True)


def replace(path, content):
    """Write `path` (0600) whole, replacing it atomically and durably."""
    os.replace(_written_beside(Path(path), content), path)
    _sync_directory(path)


def _written_beside(path, content):
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open_new(temporary) as handle:
        handle.write((content + "\n").encode())
        handle.flush()
        os.fsync(handle.fileno())
    return temporary


def _sync_directory(path):
    """Make a rename or link in `path`'s directory survive a power cut: a key
    lost that way would make every secret encrypted with it unreadable."""
    descriptor = os.open(Path(path).parent, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


class KeyRing:
    """Encrypts with the first key, decrypts with any. Decrypted values are
    remembered (by their token: each encryption makes a new one), so hot paths
    such as every inbound callback pay a dictionary lookup, not a decryption
    (about 14 µs each). When the key file is replaced (a rotation, maybe by
    another process) the keys are read again."""

    def __init__(self, source):
        self.source = source
        self.stamp = source.stamp()
        self.keys, self.fernet = self._load()
        self.plain = {}
        self.lock = threading.Lock()

    def refresh(self):
        """Read the keys again if the key file changed; True if it did."""
        stamp = self.source.stamp()
        if stamp == self.stamp:
            return False
        with self.lock:
            self.stamp = stamp
            self.keys, self.fernet = self._load()
        return True

    def _load(self):
        """The keys, in order, once each; their Fernet is made when first needed."""
        return list(dict.fromkeys(self.source.load())), None

    def _ready(self):
        if not self.keys:
            raise SecretsError(f"no key to encrypt or decrypt secrets: {self.source.describe()}")
        if self.fernet is None:
            self.fernet = _multi_fernet(self.keys)
        return self.fernet

    def seal(self, text):
        self.refresh()
        return PREFIX + self._ready().encrypt(text.encode()).decode("ascii")

    def open(self, stored):
        """The plain text of a stored value (one without the prefix is plain already)."""
        if not is_encrypted(stored):
            return stored
        found = self.plain.get(stored)
        if found is None:
            found = self._decrypt(stored)
            if len(self.plain) >= _CACHE_LIMIT:
                self.plain.clear()
            self.plain[stored] = found
        return found

    def _decrypt(self, stored):
        token = stored[len(PREFIX) :].encode("ascii")
        fernet = self._ready()
        from cryptography.fernet import InvalidToken  # loaded by _ready

        try:
            return fernet.decrypt(token).decode()
        except InvalidToken:
            if self.refresh():
                return self._decrypt(stored)
            raise SecretsError(
                f"a stored secret cannot be decrypted with {self.source.describe()}"
            ) from None

    def opens(self, stored):
        """Does a key of the ring decrypt `stored`?"""
        try:
            self._decrypt(stored)
        except SecretsError:
            return False
        return True

    def rotate(self, stored):
        """`stored` encrypted with the first key (plain text is encrypted)."""
        if not is_encrypted(stored):
            return self.seal(stored)
        token = self._ready().rotate(stored[len(PREFIX) :].encode("ascii"))
        return PREFIX + token.decode("ascii")


_state = {"ring": None}


def configure(source):
    """Use the keys of `source` (a KeyFile or KeyList) from now on."""
    _state["ring"] = KeyRing(source)
    return _state["ring"]


def configure_from(config, config_path=None):
    """Use the keys the configuration names: secrets.key, else the key file."""
    if config["SECRETS_KEY"]:
        return configure(KeyList(config["SECRETS_KEY"]))
    path = config["SECRETS_KEY_FILE"]
    if path:
        return configure(KeyFile(resolve_path(path)))
    return configure(KeyFile(default_key_file(config_file(config_path), config["DATABASE_PATH"])))


def ring():
    found = _state["ring"]
    if found is None:
        raise SecretsError("secrets are not configured: build the app first")
    return found


def seal(text):
    return ring().seal(text)


def unseal(stored):
    return ring().open(stored)
