"""The one set of limits every write surface applies before anything is written.

A turn is refused, with `InvalidInput` naming the field, when its thread id is empty or over
`MAX_ID_CHARS`, when a side is not a string or is over the process's `MNEME_MAX_MESSAGE_BYTES`
(`TooLarge`), when both sides are empty, or when its time is later than now plus `FUTURE_SKEW`
(a memory cannot be dated after it is written: such a date was how one record could stop a
user's sleep). `remember`, the one write path, checks every turn; the surfaces that write many
turns (`Memory.add`, `Memory.import_`, `mneme ingest`) check them all with `check_turn` first,
so a bad one writes nothing.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from memory.schema import as_utc, utcnow

__all__ = [
    "FUTURE_SKEW",
    "MAX_ID_CHARS",
    "InvalidInput",
    "TooLarge",
    "check_id",
    "check_time",
    "check_turn",
    "size_of",
]

FUTURE_SKEW = timedelta(minutes=5)
"""How far past this machine's clock a memory's time may be: the clock skew between a caller
and the server (the README's Durability names it). Later is refused."""
MAX_ID_CHARS = 512


class InvalidInput(ValueError):
    """The caller passed something that cannot be remembered; the message says what and why."""


class TooLarge(InvalidInput):
    """A message over `MNEME_MAX_MESSAGE_BYTES` (HTTP 413); nothing was written."""


def size_of(text: str) -> int:
    """The size of a message in bytes, as the limit counts it (UTF-8)."""
    return len(text.encode("utf-8", "surrogatepass"))


def check_id(name: str, value: object) -> None:
    """A non-empty string of at most `MAX_ID_CHARS` characters (`InvalidInput` otherwise)."""
    if not isinstance(value, str) or not value.strip():
        raise InvalidInput(f"{name} must be a non-empty string")
    if len(value) > MAX_ID_CHARS:
        raise InvalidInput(f"{name} is {len(value)} characters; at most {MAX_ID_CHARS} allowed")


def check_time(name: str, at: datetime, now: datetime | None = None) -> datetime:
    """`at` as aware UTC when it is no later than now plus `FUTURE_SKEW`; `InvalidInput` else."""
    if not isinstance(at, datetime):
        raise InvalidInput(f"{name} must be a date and time, not {type(at).__name__}")
    when = as_utc(at)
    latest = (now or utcnow()) + FUTURE_SKEW
    if when > latest:
        minutes = int(FUTURE_SKEW.total_seconds() // 60)
        raise InvalidInput(
            f"{name} {when.isoformat()} is in the future: a memory can be dated at most "
            f"{minutes} minutes after now ({latest.isoformat()})"
        )
    return when


def check_turn(
    where: str,
    *,
    limit: int,
    thread_id: str,
    user_text: object,
    agent_text: object,
    at: datetime | None,
    now: datetime | None = None,
) -> None:
    """Everything `remember` refuses about one turn, checked without writing: the thread id,
    each side's type and size (`limit` bytes), that one side says something, the time. Errors
    name the turn as `where` (`"messages[2]"`, `"episodes[0]"`, `"line 3 session 1"`)."""
    prefix = f"{where}." if where else ""
    check_id(f"{prefix}thread_id", thread_id)
    for side, text in (("user_text", user_text), ("agent_text", agent_text)):
        if not isinstance(text, str):
            raise InvalidInput(f"{prefix}{side} must be a string, not {type(text).__name__}")
        size = size_of(text)
        if size > limit:
            raise TooLarge(
                f"{prefix}{side} is {size:,} bytes; at most {limit:,} can be remembered in one "
                "message (MNEME_MAX_MESSAGE_BYTES); split it"
            )
    assert isinstance(user_text, str) and isinstance(agent_text, str)
    if not user_text.strip() and not agent_text.strip():
        raise InvalidInput(f"{prefix}user_text is empty (and so is the reply): nothing to remember")
    if at is not None:
        check_time(f"{prefix}created_at", at, now)
