"""The user's turn as the nodes see it: plain text out of any message shape, bounded in size.

A message may carry a 200k-character paste or non-text parts (images, files). Prompts get a
bounded excerpt, the stored episode gets the text whole (up to `MNEME_MAX_MESSAGE_BYTES`, larger
is refused) with a note naming any non-text parts left out, the thread state keeps a bounded
copy, and nothing downstream ever sees raw content parts.
"""

from __future__ import annotations

from typing import Any, NotRequired

from langchain_core.messages import AnyMessage, BaseMessage, HumanMessage
from pydantic import ConfigDict, with_config
from typing_extensions import TypedDict

from memory.text.questions import OFFLINE_ECHO

PROMPT_CHARS = 4000
"""How much of the user's message a decision prompt (route, ESS, rerank) sees."""

STORE_CHARS = 20000
"""How much of the agent's reply an episode stores (the user's side is stored whole)."""

THREAD_CHARS = 8000
"""How much of a long user message the thread state keeps (the episode keeps all of it)."""

HISTORY_CHARS = 2000
"""How much of each earlier message the reply prompt shows."""

RECALL_HEADER = "Here is what I remember that may help:"
"""First line of an offline reply that quotes memories; such quotes are not new information."""


@with_config(ConfigDict(use_attribute_docstrings=True))
class Turn(TypedDict):
    """The user's latest message as the nodes see it (the agent state's `turn`)."""

    text: str
    """Its text, stripped (bounded to `THREAD_CHARS` in the state; stored whole)."""
    chars: int
    """The length of the whole text, in characters."""
    dropped_parts: list[str]
    """Kinds of the non-text content parts left out (`image_url`, `file`, ...)."""
    empty: bool
    """True when it holds no text."""
    missing: bool
    """True when the thread holds no user message at all."""
    message_id: NotRequired[str | None]
    """The message's own id, when it has one (its identity in the thread)."""


def is_question(text: str) -> bool:
    """True when a fragment only asks something (it holds no fact to recall)."""
    return text.rstrip().endswith("?")


def without_recall_echo(agent_text: str) -> str:
    """An agent reply minus memories it quoted back (so they are not remembered twice)."""
    if OFFLINE_ECHO.match(agent_text):
        return ""
    if not agent_text.startswith(RECALL_HEADER):
        return agent_text
    lines = agent_text.splitlines()[1:]
    return "\n".join(line for line in lines if not line.startswith("- (")).strip()


def content_text(content: str | list[Any]) -> tuple[str, list[str]]:
    """The text of message content and the kinds of non-text parts it dropped."""
    if isinstance(content, str):
        return content, []
    texts: list[str] = []
    dropped: list[str] = []
    for part in content:
        if isinstance(part, str):
            texts.append(part)
        elif isinstance(part, dict) and part.get("type") == "text":
            texts.append(str(part.get("text", "")))
        elif isinstance(part, dict):
            dropped.append(str(part.get("type", "unknown")))
        else:
            dropped.append(type(part).__name__)
    return "\n".join(t for t in texts if t), dropped


def bounded(text: str, limit: int) -> str:
    """`text` cut to `limit` characters, with a note saying how much was cut."""
    if len(text) <= limit:
        return text
    cut = len(text) - limit
    return f"{text[:limit]}\n[... {cut:,} more characters not kept]"


def last_human(messages: list[AnyMessage]) -> BaseMessage | None:
    """The most recent user message, or None."""
    for message in reversed(messages):
        if isinstance(message, HumanMessage) or getattr(message, "type", "") == "human":
            return message
    return None


def read_turn(messages: list[AnyMessage]) -> Turn:
    """Describe the user's latest message for the nodes (the `turn` state value)."""
    message = last_human(messages)
    if message is None:
        return Turn(text="", chars=0, dropped_parts=[], empty=True, missing=True)
    text, dropped = content_text(message.content)
    text = text.strip()
    return Turn(
        text=text,
        chars=len(text),
        dropped_parts=dropped,
        empty=not text,
        missing=False,
        message_id=message.id,
    )


def stored_user_text(turn: Turn) -> str:
    """The user's side as stored: verbatim, noting any non-text parts left out."""
    text = str(turn.get("text", ""))
    dropped = turn.get("dropped_parts") or []
    if dropped:
        text += f"\n[non-text content not kept: {', '.join(sorted(set(dropped)))}]"
    return text


def prompt_text(turn: Turn) -> str:
    """The user's message as a decision prompt sees it (bounded)."""
    return bounded(str(turn.get("text", "")), PROMPT_CHARS)
