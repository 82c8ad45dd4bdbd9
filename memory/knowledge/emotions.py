"""Emotion nodes: what a person said they felt in a turn, written at bookkeeping.

The offline appraisal of `memory.sleep.salience` is the reader: each distinct emotion word of the
turn (`emotion_words`) is one Emotion, all with the turn's emotion intensity (`appraise`), felt
by the turn's speaker (the `Name:` label of a transcript) or else the user, as facts name their
subject. A turn without emotion words has none (exclamation marks alone raise salience, but
name no feeling). Recording replaces the episode's emotions, so running it twice is running it
once; deleting the episode deletes them (the store's contract).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memory.schema import USER_SUBJECT, Emotion, Episode, as_utc, stable_uid
from memory.sleep.salience import appraise, emotion_words
from memory.write.contextual import speaker_label

if TYPE_CHECKING:
    from memory.services import Services


def emotions_of(episode: Episode) -> list[Emotion]:
    """The emotions the user's side of `episode` names, by name."""
    speaker, body = speaker_label(episode.user_text or "")
    names = sorted(emotion_words(body))
    if not names:
        return []
    intensity = appraise(episode).emotion
    return [
        Emotion(
            uid=stable_uid(episode.tenant, "emotion", episode.uid, name),
            tenant=episode.tenant,
            episode_uid=episode.uid,
            person=speaker or USER_SUBJECT,
            name=name,
            intensity=intensity,
            felt_at=as_utc(episode.created_at),
        )
        for name in names
    ]


async def record_emotions(services: Services, episode: Episode) -> list[Emotion]:
    """Write the episode's emotions (replacing any it had); what is stored."""
    return await services.graph.emotions.put(episode.tenant, episode.uid, emotions_of(episode))
