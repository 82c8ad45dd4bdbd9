"""extract: one LLM call turns an episode into chunks, prospective questions, topics, entities.

This is the bookkeeping's only LLM task (at most two requests with the retry). Chunks must be
taken from the conversation and cover most of it; otherwise the retry shows the model why, and
the fallback is the deterministic splitter with no questions plus keyword topics and
capitalised-name entities.
"""

from __future__ import annotations

import re
from typing import Any

from langchain_core.messages import HumanMessage, SystemMessage
from pydantic import BaseModel, Field, field_validator

from memory.chunking import Derivative, split_turn
from memory.schema import EntityType, Episode, topic_slug
from memory.services.chat import ChatModels
from memory.services.usage import Usage
from nodes.content import bounded, without_recall_echo
from nodes.keywords import STOPWORDS
from nodes.keywords import entities as name_entities
from nodes.keywords import topics as keyword_topics
from nodes.llm import structured

EXTRACT_CHARS = 12000
"""Episodes longer than this are chunked by the splitter; the model still names topics/entities."""
MIN_COVERAGE = 0.6
"""Share of the user's content words the chunks must contain."""


class ExtractedEntity(BaseModel):
    """A named thing the conversation mentions."""

    name: str = Field(min_length=1, max_length=100)
    type: EntityType


class Chunk(BaseModel):
    """A self-contained piece of the conversation and questions it would answer."""

    text: str = Field(min_length=1, description="a self-contained passage from the conversation")
    questions: list[str] = Field(
        default_factory=list, description="up to 4 questions this passage answers"
    )

    @field_validator("questions", mode="after")
    @classmethod
    def _at_most_four(cls, value: list[str]) -> list[str]:
        return [q.strip() for q in value if q and q.strip()][:4]


class Extraction(BaseModel):
    """What bookkeeping needs from one episode."""

    chunks: list[Chunk] = Field(min_length=1, max_length=15)
    topics: list[str] = Field(default_factory=list, description="1-3 word topics")
    entities: list[ExtractedEntity] = Field(default_factory=list)

    @field_validator("topics", mode="after")
    @classmethod
    def _topics(cls, value: list[str]) -> list[str]:
        return [t for t in value if t.strip()][:8]

    @field_validator("entities", mode="after")
    @classmethod
    def _entities(cls, value: list[ExtractedEntity]) -> list[ExtractedEntity]:
        return value[:15]


SYSTEM = """You index a conversation turn for a long-term memory. Split it into 1 to 15 \
self-contained chunks (copy the wording; resolve "I" to "the user" where helpful; keep every \
fact, name, number and date). For each chunk give up to 4 short questions a person might later \
ask that the chunk answers. Give up to 8 short topics and the named entities (Person, Place, \
Organization, Object, Project or Event). Call the function `Extraction`."""


def extraction_prompt(episode: Episode) -> list[SystemMessage | HumanMessage]:
    """The extraction prompt for an episode."""
    return [
        SystemMessage(content=SYSTEM),
        HumanMessage(content=f"Conversation turn:\n{bounded(episode.content, EXTRACT_CHARS)}"),
    ]


def _content_words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9]+", text.lower()) if w not in STOPWORDS and len(w) > 2}


def check_extraction(episode: Episode) -> Any:
    """A check that chunks come from the conversation and cover most of what the user said."""
    source = _content_words(bounded(episode.content, EXTRACT_CHARS))
    said = _content_words(episode.user_text) or source

    def check(value: Extraction) -> str | None:
        if len(episode.content) > EXTRACT_CHARS or not source:
            return None  # chunks are not used for long episodes (see `derivatives_from`)
        covered: set[str] = set()
        for i, chunk in enumerate(value.chunks, start=1):
            words = _content_words(chunk.text)
            if words and len(words & source) / len(words) < 0.5:
                return f"chunk {i} is not taken from the conversation; copy its wording"
            covered |= words & said
        if len(covered) / len(said) < MIN_COVERAGE:
            return "the chunks leave out much of what the user said; keep every fact"
        return None

    return check


def heuristic_extraction(episode: Episode) -> Extraction:
    """The fallback: no chunks of its own (the splitter makes them), keyword topics, names."""
    text = f"{episode.user_text}\n{without_recall_echo(episode.agent_text)}".strip()
    return Extraction(
        chunks=[Chunk(text=episode.user_text or episode.content)],
        topics=keyword_topics(episode.user_text or text, 5),
        entities=[ExtractedEntity(name=n, type=t) for n, t in name_entities(text)],
    )


def derivatives_from(
    episode: Episode, extraction: Extraction, *, fallback: bool
) -> list[Derivative]:
    """Derivatives to index: the model's chunks, or the deterministic splitter's."""
    if fallback or len(episode.content) > EXTRACT_CHARS:
        return split_turn(episode.user_text, without_recall_echo(episode.agent_text))
    return [
        Derivative(text=c.text.strip(), questions=tuple(c.questions), role="chunk")
        for c in extraction.chunks
        if c.text.strip()
    ]


def topic_slugs(extraction: Extraction) -> list[str]:
    """Unique topic slugs of an extraction, in order."""
    return list(dict.fromkeys(topic_slug(t) for t in extraction.topics if t.strip()))


async def extract(
    episode: Episode, *, chat: ChatModels, usage: Usage, model: str | None = None
) -> tuple[Extraction, bool]:
    """Run the extraction for an episode; returns it and whether it is the heuristic fallback."""
    used_fallback = False

    def fallback() -> Extraction:
        nonlocal used_fallback
        used_fallback = True
        return heuristic_extraction(episode)

    value = await structured(
        "extract",
        Extraction,
        extraction_prompt(episode),
        fallback=fallback,
        chat=chat,
        usage=usage,
        model=model,
        max_tokens=1536,
        check=check_extraction(episode),
    )
    return value, used_fallback
