"""Local users: salted scrypt password hashes, and who is labelling in this browser session.

With no users in the project the app runs as one local annotator (and ``goldset app`` refuses to
listen beyond loopback); once a user exists, every session must log in.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import ipaddress
import re
import secrets

LOCAL_ANNOTATOR = "local"
# Names that label without being users: a golden set's imported labels, and machine labellers.
IMPORT_ANNOTATOR = "import"
MACHINE_PREFIX = "machine:"

# scrypt cost 2**14 × 8 × 1 (16 MiB of memory a check; its time is in bench/README.md): cheap for a
# login, slow for a guesser. The parameters are stored with each hash, so they can be raised later.
SCRYPT_N, SCRYPT_R, SCRYPT_P = 2**14, 8, 1
SALT_BYTES, KEY_BYTES = 16, 32
USER_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@-]{0,63}")
# NIST SP 800-63B: a password a person chooses has at least 8 characters. Length is the one
# rule (no composition rules, which the same guideline advises against).
MIN_PASSWORD_LENGTH = 8

ROLES = ("annotator", "reviewer", "admin")  # what a user may be, least to most


def validate_user_name(name: str) -> str:
    """Return ``name`` if it is a valid user name, else raise ValueError saying why."""
    if name.startswith(MACHINE_PREFIX):
        raise ValueError(f"{name!r}: names starting with {MACHINE_PREFIX!r} are for machine labels")
    if not USER_NAME.fullmatch(name):
        raise ValueError(
            f"invalid user name {name!r}: use 1-64 letters, digits, '.', '_', '@' or '-', "
            "starting with a letter or digit"
        )
    if name == LOCAL_ANNOTATOR:
        raise ValueError(f"{LOCAL_ANNOTATOR!r} is reserved for the single local annotator")
    if name == IMPORT_ANNOTATOR:
        raise ValueError(f"{IMPORT_ANNOTATOR!r} is reserved for labels imported from a golden set")
    return name


def validate_password(password: str) -> str:
    """Return ``password`` if it may be set as a user's password, else raise ValueError saying
    why: the one password rule, which every way of setting a password goes through (as
    :func:`hash_password` checks it)."""
    if len(password) < MIN_PASSWORD_LENGTH:
        raise ValueError(f"a password needs at least {MIN_PASSWORD_LENGTH} characters")
    try:
        password.encode("utf-8")
    except UnicodeEncodeError:  # bytes of another encoding, from a terminal: none can sign in
        raise ValueError(
            "a password must be UTF-8 text: this one holds bytes that are not"
        ) from None
    return password


def _scrypt(password: str, salt: bytes, n: int, r: int, p: int) -> bytes:
    # scrypt needs 128·n·r bytes; allow twice that so raised parameters keep working.
    memory = 2 * 128 * n * r
    return hashlib.scrypt(
        password.encode("utf-8"), salt=salt, n=n, r=r, p=p, maxmem=memory, dklen=KEY_BYTES
    )


def hash_password(password: str) -> str:
    """Return a salted scrypt hash of ``password`` as ``scrypt$n$r$p$salt$key`` (base64 parts).
    Raises ValueError for a password :func:`validate_password` refuses."""
    validate_password(password)
    salt = secrets.token_bytes(SALT_BYTES)
    key = _scrypt(password, salt, SCRYPT_N, SCRYPT_R, SCRYPT_P)
    encoded = (base64.b64encode(part).decode("ascii") for part in (salt, key))
    return "$".join(["scrypt", str(SCRYPT_N), str(SCRYPT_R), str(SCRYPT_P), *encoded])


def verify_password(password: str, stored_hash: str) -> bool:
    """Tell whether ``password`` matches ``stored_hash`` (made by :func:`hash_password`)."""
    try:
        scheme, n, r, p, salt, key = stored_hash.split("$")
        if scheme != "scrypt":
            return False
        expected = base64.b64decode(key)
        actual = _scrypt(password, base64.b64decode(salt), int(n), int(r), int(p))
    except ValueError:
        return False
    return hmac.compare_digest(actual, expected)


def new_token() -> str:
    """A fresh random secret (256 bits, URL-safe): a session cookie or a one-time ticket."""
    return secrets.token_urlsafe(32)


def token_hash(token: str) -> str:
    """The hash under which a token is stored. A plain SHA-256 suffices (unlike passwords):
    a 256-bit random token cannot be guessed, so it needs no slow hash."""
    return hashlib.sha256(token.encode("ascii", "replace")).hexdigest()


# Checked when a sign-in names no user, so that it costs what a wrong password costs and does
# not tell which names exist. The hash of a random password nobody kept, made with the current
# scrypt parameters (a test holds them equal), fixed here so that no first unknown name pays
# for making it.
DECOY_HASH = (
    "scrypt$16384$8$1$UIS3JF2G7JX496NDIZvBRw==$LprC6KLTDgHe6/C+w5fLZgBRtFVmesePoBvILVOBzCw="
)


def check_login(name: str, password: str, stored_hash: str | None) -> bool:
    """Tell whether a login is valid; ``stored_hash`` is None when the user does not exist."""
    if stored_hash is None:
        verify_password(password, DECOY_HASH)
        return False
    return verify_password(password, stored_hash)


def is_loopback(host: str) -> bool:
    """Tell whether ``host`` names this machine only (``localhost``, 127.0.0.0/8, ``::1``)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
