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
from functools import cache

LOCAL_ANNOTATOR = "local"
# Names that label without being users: a golden set's imported labels, and machine labellers.
IMPORT_ANNOTATOR = "import"
MACHINE_PREFIX = "machine:"

# scrypt cost: 2**14 × 8 × 1 takes ~16 MB and ~50 ms per check: cheap for a login, slow for
# a guesser. The parameters are stored with each hash, so they can be raised later.
SCRYPT_N, SCRYPT_R, SCRYPT_P = 2**14, 8, 1
SALT_BYTES, KEY_BYTES = 16, 32
USER_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@-]{0,63}")

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


def _scrypt(password: str, salt: bytes, n: int, r: int, p: int) -> bytes:
    # scrypt needs 128·n·r bytes; allow twice that so raised parameters keep working.
    memory = 2 * 128 * n * r
    return hashlib.scrypt(
        password.encode("utf-8"), salt=salt, n=n, r=r, p=p, maxmem=memory, dklen=KEY_BYTES
    )


def hash_password(password: str) -> str:
    """Return a salted scrypt hash of ``password`` as ``scrypt$n$r$p$salt$key`` (base64 parts)."""
    if not password:
        raise ValueError("the password must not be empty")
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


@cache
def _decoy_hash() -> str:
    """A hash checked when a login names no known user, so that such a login takes as long
    as a wrong password and does not reveal which names exist."""
    return hash_password(secrets.token_hex(8))


def check_login(name: str, password: str, stored_hash: str | None) -> bool:
    """Tell whether a login is valid; ``stored_hash`` is None when the user does not exist."""
    if stored_hash is None:
        verify_password(password, _decoy_hash())
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
