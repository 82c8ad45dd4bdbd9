"""The CLI prints stored text with its control characters shown, never obeyed by the terminal."""

from __future__ import annotations

from rich.console import Console

from cli.agent_commands import memories_table
from cli.common import printable, safe
from memory.schema import utcnow


def test_control_characters_are_shown_escaped() -> None:
    assert printable("red \x1b[31mALERT\x1b[0m\x07 ok\n\tnext") == (
        "red \\x1b[31mALERT\\x1b[0m\\x07 ok\n\tnext"
    )
    assert safe("[bold]x[/]\x00") == "\\[bold]x\\[/]\\x00"


def test_a_stored_escape_sequence_reaches_the_terminal_escaped() -> None:
    now = utcnow()
    memory = {
        "content": "User: \x1b]0;pwned\x07\x1b[2Jhello",
        "created_at": now.isoformat(),
        "thread_id": "t\x1b[1m",
        "score": 0.5,
        "rank": 1,
        "fragments": ["\x1b[31mred\x1b[0m"],
    }
    console = Console(record=True, width=200, force_terminal=True)
    console.print(memories_table([memory], now))
    text = console.export_text()
    assert "\x1b]0;pwned" not in text and "\x1b[2J" not in text
    assert "\\x1b]0;pwned\\x07" in text
