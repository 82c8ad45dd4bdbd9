"""Who a caller is: API keys (kept only as sha256) and the JWT hook, mapped to user ids.

The served graphs' auth handler (`serve/auth.py`) asks `identify` for the user behind a bearer
credential; `mneme keys add` writes a new key's hash with `add_key`. Keys come from
`MNEME_API_KEYS` (`user_id:key` pairs, for tests and development) and `MNEME_API_KEYS_FILE`
(lines `sha256hex user_id`). A JWT is accepted when `MNEME_JWT_SECRET` is set: HS256, the
configured audience, an expiry, and `sub` as the user id. Nothing here logs a credential.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
import secrets
from dataclasses import dataclass
from pathlib import Path

from memory.settings import ConfigError, Settings
from memory.tenant import InvalidTenant, problem, tenant_id

_HASH = re.compile(r"^[0-9a-f]{64}$")


class AuthFailure(Exception):
    """The credential is missing, unknown, expired or malformed (the message is safe to show)."""


def valid_user_id(user_id: str) -> bool:
    """True for a user id that follows the tenant rule (`memory.tenant`)."""
    return problem(user_id) is None


def hash_key(key: str) -> str:
    """The sha256 hex digest a key is stored and compared as."""
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()


def new_key() -> str:
    """A fresh random API key (256 bits)."""
    return "mn_" + secrets.token_urlsafe(32)


@dataclass(frozen=True, slots=True)
class KeyRing:
    """Known key hashes and the user each belongs to, plus the JWT settings."""

    users_by_hash: dict[str, str]
    jwt_secret: str | None = None
    jwt_audience: str | None = None

    @property
    def empty(self) -> bool:
        """True when no credential can authenticate anyone."""
        return not self.users_by_hash and not self.jwt_secret

    def identify(self, credential: str) -> str:
        """The user id behind an API key or a JWT; `AuthFailure` when there is none."""
        credential = credential.strip()
        if not credential:
            raise AuthFailure("missing credential")
        if self.jwt_secret and credential.count(".") == 2 and not credential.startswith("mn_"):
            return self._jwt_user(credential)
        digest = hash_key(credential)
        for known, user in self.users_by_hash.items():
            if hmac.compare_digest(known, digest):
                return user
        raise AuthFailure("unknown API key")

    def _jwt_user(self, token: str) -> str:
        import jwt

        assert self.jwt_secret is not None
        try:
            claims = jwt.decode(
                token,
                self.jwt_secret,
                algorithms=["HS256"],
                audience=self.jwt_audience,
                options={"require": ["sub", "exp", "aud"]},
            )
        except jwt.ExpiredSignatureError:
            raise AuthFailure("token expired") from None
        except jwt.InvalidTokenError:
            raise AuthFailure("invalid token") from None
        user = claims.get("sub")
        if not isinstance(user, str) or not valid_user_id(user):
            raise AuthFailure("token subject is not a usable user id")
        return user


def parse_env_keys(raw: str) -> dict[str, str]:
    """`user_id:key,...` (MNEME_API_KEYS) as key hash -> user id."""
    out: dict[str, str] = {}
    for n, item in enumerate(p.strip() for p in raw.split(",")):
        if not item:
            continue
        user, sep, key = item.partition(":")
        if not sep or not valid_user_id(user.strip()) or len(key.strip()) < 16:
            raise ConfigError(
                f"MNEME_API_KEYS entry {n + 1} is not `user_id:key` with a key of 16+ characters"
            )
        out[hash_key(key.strip())] = user.strip()
    return out


def parse_keys_file(path: Path) -> dict[str, str]:
    """The keys file (`sha256hex user_id` lines, `#` comments) as key hash -> user id."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(
            f"MNEME_API_KEYS_FILE cannot be read ({exc.strerror}); create it with "
            "`mneme keys add --user U` or unset it"
        ) from None
    out: dict[str, str] = {}
    for n, line in enumerate(text.splitlines(), start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        digest, _, user = line.partition(" ")
        if not _HASH.match(digest) or not valid_user_id(user.strip()):
            raise ConfigError(f"MNEME_API_KEYS_FILE line {n} is not `sha256hex user_id`")
        out[digest] = user.strip()
    return out


def load_keyring(settings: Settings) -> KeyRing:
    """Every credential the settings configure."""
    users: dict[str, str] = {}
    if settings.api_keys:
        users |= parse_env_keys(settings.api_keys.get_secret_value())
    if (keys_file := settings.keys_file_to_read) is not None:
        users |= parse_keys_file(keys_file)
    secret = settings.jwt_secret.get_secret_value() if settings.jwt_secret else None
    return KeyRing(users, secret, settings.jwt_audience)


def add_key(path: Path, user_id: str) -> str:
    """Create a key for `user_id`, append its hash to the keys file (mode 0600); the key."""
    try:
        tenant_id(user_id, name="user id")
    except InvalidTenant as exc:
        raise ConfigError(str(exc)) from None
    key = new_key()
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, f"{hash_key(key)} {user_id}\n".encode())
        os.fsync(fd)
    finally:
        os.close(fd)
    return key
