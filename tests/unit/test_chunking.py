"""The deterministic splitter: whole sentences, bounded chunk count, same input same output."""

from __future__ import annotations

from memory.text.chunking import MAX_CHUNKS, split_sentences, split_text, split_turn


def test_sentences_split_at_ends_and_paragraphs() -> None:
    text = "I moved to Lisbon. It rains a lot!  Do you like rain?\n\nNew paragraph here"
    assert split_sentences(text) == [
        "I moved to Lisbon.",
        "It rains a lot!",
        "Do you like rain?",
        "New paragraph here",
    ]


def test_short_turn_gives_one_chunk_per_side() -> None:
    out = split_turn("My dog is called Pixel.", "Pixel is a lovely name.")
    assert [(d.role, d.text) for d in out] == [
        ("user", "My dog is called Pixel."),
        ("agent", "Pixel is a lovely name."),
    ]
    assert split_turn("", "Hi.") == split_turn("   ", "Hi.")


def test_chunks_keep_every_word_and_respect_the_cap() -> None:
    text = " ".join(f"Sentence {i} talks about item {i}." for i in range(5000))
    chunks = split_text(text)
    assert len(chunks) <= MAX_CHUNKS
    assert " ".join(chunks).split() == text.split()
    assert split_text(text) == chunks  # deterministic


def test_one_giant_sentence_is_kept_whole() -> None:
    text = "word " * 10_000
    chunks = split_text(text)
    assert len(chunks) == 1 and chunks[0].split() == text.split()
