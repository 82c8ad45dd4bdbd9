"""A slow chat model (the local stub of `bench.slow_llm`, answering after a delay) costs a turn at
most its latency budget before the reply: route and rerank stop waiting when the budget is spent
and answer with their heuristics (outcome `budget`), the first one says so once in the log, and
`mneme bench turn --slow-llm` reports the time to first token with and without the budget. In
`mneme chat` the log goes to a file, never over the `you>` prompt, and the turn says in one dim
line that it answered without the model."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from rich.console import Console

from bench.slow_llm import slow_llm
from bench.ttft import bench_ttft
from cli import agent_commands
from cli.common import console

pytestmark = pytest.mark.slow

DELAY_S = 2.0
BUDGET_S = 3.0


async def test_bench_turn_reports_time_to_first_token(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MNEME_DATA_DIR", str(tmp_path / "unused"))
    out = Console(record=True, width=160)
    rows = await bench_ttft(delay_s=DELAY_S, budget_s=BUDGET_S, console=out)
    budget, unlimited = rows
    assert budget["label"] == "budget 3 s" and unlimited["label"] == "no budget"
    # With the budget: route and rerank give up once it is spent, then the reply's own wait.
    assert budget["outcomes"]["route"] == {"budget": 3}
    assert budget["outcomes"]["rerank"] == {"budget": 3}
    assert max(budget["ttft_ms"]) < (BUDGET_S + DELAY_S + 5) * 1000, budget  # 5 s: a busy machine
    # Without: each waits for its answer and a retry (2 x 2 requests), then the reply.
    assert unlimited["outcomes"]["route"] == {"fallback": 3}
    assert min(unlimited["ttft_ms"]) >= 5 * DELAY_S * 1000, unlimited
    text = out.export_text()
    assert "time to first token" in text and "CPUs, load average" in text


async def test_chat_logs_to_a_file_and_says_once_per_turn(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "data"
    monkeypatch.setenv("MNEME_DATA_DIR", str(data))
    monkeypatch.setenv("MNEME_TURN_BUDGET_S", str(BUDGET_S))
    monkeypatch.delenv("MNEME_LLM_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    root = logging.getLogger()
    terminal = logging.StreamHandler()  # what the CLI's logging.basicConfig installs
    root.addHandler(terminal)
    lines = iter(["I moved to Utrecht in May.", "Where do I live?"])

    def read(prompt: str) -> str:
        try:
            return next(lines)
        except StopIteration:
            raise EOFError from None

    try:
        async with slow_llm(DELAY_S) as (url, _):
            monkeypatch.setenv("MNEME_LLM_BASE_URL", url)
            with console.capture() as captured:
                await agent_commands.run_chat("ada", "t1", "UTC", False, read=read)
        assert terminal in root.handlers  # given back after the chat
    finally:
        root.removeHandler(terminal)
    shown = captured.get()
    assert "WARNING" not in shown and "mneme.llm" not in shown, shown
    note = "answered without the model: it was slower than the turn's latency budget"
    assert shown.count(note) == 2, shown  # once per turn
    log = (data / "logs" / "chat.log").read_text()
    # one warning a turn: the first stage that ran out; the next skip the model quietly
    said = log.count("within the turn's latency budget (MNEME_TURN_BUDGET_S=3); answering this")
    assert said == 2, log
    assert "chat.log" in shown
