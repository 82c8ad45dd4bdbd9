"""The memeval format (docs/memeval.md): reading a file and turning its turns into
episodes, shared by `mneme eval retrieval` and `mneme ingest`.

How a turn becomes an episode (docs/adr/0016-eval-turns-to-episodes.md): a turn between two
people (`role` null) is one episode whose user text is `Speaker: text`; a `user` turn and the
`assistant` turn that answers it form one episode, as in the agent. Turns of a session are
`TURN_SPACING` apart from the session's date; a session without a date goes `SESSION_GAP` after
the previous one, and a session dated before the previous one starts just after it, so the time
order stays the conversation order. Turn ids are opaque and never stored.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from memory.schema import as_utc
from memory.write.limits import check_time

TURN_SPACING = timedelta(seconds=30)
"""Turns of a session are this far apart (sessions carry one date, turns none)."""
SESSION_GAP = timedelta(days=1)
"""A session without a date is placed this long after the previous one."""
ROLES = (None, "user", "assistant")
HELP = (
    "see docs/memeval.md: id, sessions[].turns[].{id, speaker, role, text}, "
    "questions[].{id, question, evidence}"
)


class EvalInputError(ValueError):
    """The data file is not memeval; the message names the line and the problem."""


@dataclass(slots=True)
class Conversation:
    """One memeval line."""

    id: str
    sessions: list[dict[str, Any]]
    questions: list[dict[str, Any]]


@dataclass(frozen=True, slots=True)
class Placed:
    """One episode of a conversation, placed in time."""

    session: int
    """Index of its session in the conversation."""
    session_id: str
    position: int
    """Index of the episode in its session: with the session, the episode's source (its uid)."""
    turn_ids: list[str]
    user_text: str
    agent_text: str
    at: datetime


def parse_date(value: object) -> datetime | None:
    """An ISO 8601 date as aware UTC, or None when missing or unreadable."""
    if not isinstance(value, str) or not value.strip():
        return None
    try:
        return as_utc(datetime.fromisoformat(value.strip()))
    except ValueError:
        return None


def _check_line(row: Any, *, questions: bool) -> Conversation:
    """The conversation of one line; KeyError/TypeError/ValueError say what is wrong."""
    if not isinstance(row, dict):
        raise TypeError("the line is not a JSON object")
    conv = Conversation(str(row["id"]), list(row["sessions"]), list(row.get("questions") or []))
    if questions:
        conv.questions = list(row["questions"])
    for s, session in enumerate(conv.sessions, start=1):
        if not isinstance(session, dict):
            raise TypeError(f"session {s} is not an object")
        date = session.get("date")
        when = None if date is None else parse_date(date)
        if date is not None and when is None:
            raise ValueError(f"session {s} has date {date!r}, not ISO 8601 (2024-05-01T13:56)")
        if when is not None:  # no later than now plus the skew (`memory.write.limits`)
            check_time(f"session {s} date", when)
        for t, turn in enumerate(session["turns"], start=1):
            where = f"session {s} turn {t}"
            if not isinstance(turn, dict):
                raise TypeError(f"{where} is not an object")
            turn["id"], turn["speaker"]
            if not isinstance(turn["text"], str):
                raise TypeError(f"{where}: text must be a string")
            if turn.get("role") not in ROLES:
                raise ValueError(
                    f"{where}: role {turn.get('role')!r} is not user, assistant or null"
                )
    for q in conv.questions:
        q["id"], q["question"], q["evidence"]
    return conv


def read_memeval(path: Path, *, questions: bool = True) -> list[Conversation]:
    """Read a whole memeval JSONL file; `EvalInputError` names the first bad line and why.

    `questions=False` accepts conversations without questions (`mneme ingest`).
    """
    if not path.is_file():
        raise EvalInputError(f"{path} does not exist; pass a memeval .jsonl file")
    out: list[Conversation] = []
    n = 0
    try:
        with path.open(encoding="utf-8") as handle:
            for n, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                try:
                    out.append(_check_line(json.loads(line), questions=questions))
                except json.JSONDecodeError as exc:
                    raise EvalInputError(f"{path}:{n} is not JSON ({exc}); {HELP}") from None
                except RecursionError:
                    raise EvalInputError(
                        f"{path}:{n} is nested too deeply to be a conversation; {HELP}"
                    ) from None
                except KeyError as exc:
                    raise EvalInputError(f"{path}:{n} has no field {exc}; {HELP}") from None
                except (TypeError, ValueError) as exc:
                    raise EvalInputError(f"{path}:{n}: {exc}; {HELP}") from None
    except UnicodeDecodeError:
        raise EvalInputError(
            f"{path} is not UTF-8 text after line {n} (a binary file?); {HELP}"
        ) from None
    except OSError as exc:
        raise EvalInputError(f"{path} cannot be read ({exc.strerror or exc})") from None
    return out


def episodes_of(session: dict[str, Any]) -> Iterator[tuple[list[str], str, str]]:
    """(turn ids, user_text, agent_text) per episode of a session (see the module docstring)."""
    turns = session["turns"]
    i = 0
    while i < len(turns):
        turn = turns[i]
        role = turn.get("role")
        text = str(turn["text"])
        if role == "user":
            nxt = turns[i + 1] if i + 1 < len(turns) else None
            if nxt is not None and nxt.get("role") == "assistant":
                yield [turn["id"], nxt["id"]], text, str(nxt["text"])
                i += 2
                continue
            yield [turn["id"]], text, ""
        elif role == "assistant":
            yield [turn["id"]], "", text
        else:
            yield [turn["id"]], f"{turn['speaker']}: {text}", ""
        i += 1


def placed(conv: Conversation) -> Iterator[Placed]:
    """Every episode of the conversation in order, with its time; empty turns are left out."""
    clock: datetime | None = None
    for index, session in enumerate(conv.sessions):
        date = parse_date(session.get("date"))
        base = date or ((clock + SESSION_GAP) if clock else datetime(2000, 1, 1, tzinfo=UTC))
        if clock is not None and base <= clock:
            base = clock + TURN_SPACING  # keep the chain in conversation order
        for n, (ids, user_text, agent_text) in enumerate(episodes_of(session)):
            at = base + n * TURN_SPACING
            if not user_text.strip() and not agent_text.strip():
                yield Placed(index, str(session.get("id", index + 1)), n, ids, "", "", at)
                continue
            clock = at
            yield Placed(
                index, str(session.get("id", index + 1)), n, ids, user_text, agent_text, at
            )
