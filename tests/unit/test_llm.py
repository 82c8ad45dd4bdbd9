"""The LLM plumbing: validation, the one retry that shows the error, fallbacks, usage counts."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from langchain_core.messages import HumanMessage
from pydantic import BaseModel, Field

from memory.services import ChatModels, Tier
from memory.services.usage import Usage, empty_usage, merge_usage
from tasks import llm
from tasks.llm import generate, structured
from tests.conftest import make_settings
from tests.unit.fake_chat import Delay, ScriptedChatModel


class Answer(BaseModel):
    """A test schema."""

    label: str = Field(pattern="^(yes|no)$")
    confidence: float = Field(ge=0, le=1)


def heuristic() -> Answer:
    return Answer(label="no", confidence=0.0)


PROMPT = [HumanMessage(content="Is the sky blue?")]


def scripted(**kwargs: object) -> tuple[ScriptedChatModel, ChatModels]:
    """A scripted model and chat models that answer every tier with it."""
    model = ScriptedChatModel(**kwargs)  # type: ignore[arg-type]
    return model, ChatModels(make_settings(Path("/nonexistent")), override=model)


async def test_valid_answer_is_returned_and_counted() -> None:
    model, chat = scripted(script=[{"label": "yes", "confidence": 0.9}])
    usage = Usage()
    out = await structured("t", Answer, PROMPT, fallback=heuristic, chat=chat, usage=usage)
    assert out == Answer(label="yes", confidence=0.9)
    assert model.tools_called() == ["Answer"]
    assert usage.data["llm_calls"] == 1
    assert usage.data["input_tokens"] == 11 and usage.data["output_tokens"] == 7
    assert usage.data["tasks"]["t"]["outcome"] == "ok"
    assert usage.data["fallbacks"] == 0
    assert chat.totals.snapshot()["t"] == {
        "calls": 1,
        "input_tokens": 11,
        "output_tokens": 7,
        "fallbacks": 0,
    }


async def test_invalid_answer_is_retried_with_the_error_shown() -> None:
    model, chat = scripted(
        script=[{"label": "maybe", "confidence": 3}, {"label": "yes", "confidence": 1}]
    )
    usage = Usage()
    out = await structured("t", Answer, PROMPT, fallback=heuristic, chat=chat, usage=usage)
    assert out.label == "yes"
    assert usage.data["llm_calls"] == 2 and usage.data["retries"] == 1
    assert usage.data["tasks"]["t"]["outcome"] == "retried"
    retry = model.calls[1]["messages"]
    assert "could not be used" in retry[-1].content
    assert "label" in retry[-1].content and "confidence" in retry[-1].content
    assert "maybe" in retry[-2].content  # the model sees what it said


async def test_two_invalid_answers_fall_back_to_the_heuristic(caplog) -> None:
    _, chat = scripted(script=[{"label": "maybe"}, "I think yes"])
    usage = Usage()
    with caplog.at_level(logging.WARNING, logger="mneme.llm"):
        out = await structured("t", Answer, PROMPT, fallback=heuristic, chat=chat, usage=usage)
    assert out == heuristic()
    assert usage.data["llm_calls"] == 2
    assert usage.data["fallbacks"] == 1 and usage.data["tasks"]["t"]["outcome"] == "fallback"
    assert "did not validate twice" in caplog.text


async def test_a_text_answer_instead_of_a_call_is_retried() -> None:
    model, chat = scripted(script=["yes it is", {"label": "yes", "confidence": 0.5}])
    out = await structured("t", Answer, PROMPT, fallback=heuristic, chat=chat, usage=Usage())
    assert out.label == "yes"
    assert "did not call the function" in model.calls[1]["messages"][-1].content


async def test_check_failure_is_retried() -> None:
    _, chat = scripted(
        script=[{"label": "no", "confidence": 0.5}, {"label": "yes", "confidence": 0.5}]
    )
    usage = Usage()
    out = await structured(
        "t",
        Answer,
        PROMPT,
        fallback=heuristic,
        chat=chat,
        usage=usage,
        check=lambda a: "label must be yes" if a.label != "yes" else None,
    )
    assert out.label == "yes" and usage.data["retries"] == 1


async def test_endpoint_error_falls_back_without_retry(caplog) -> None:
    model, chat = scripted(script=[ConnectionError("connection refused")])
    usage = Usage()
    with caplog.at_level(logging.WARNING, logger="mneme.llm"):
        out = await structured("t", Answer, PROMPT, fallback=heuristic, chat=chat, usage=usage)
    assert out == heuristic()
    assert len(model.calls) == 1
    assert usage.data["errors"] == 1 and usage.data["tasks"]["t"]["outcome"] == "error"
    assert "connection refused" in caplog.text


async def test_slow_endpoint_times_out_and_falls_back() -> None:
    model = ScriptedChatModel(script=[Delay(5.0, {"label": "yes", "confidence": 1})])
    settings = make_settings(Path("/nonexistent"), llm_timeout_s=0.05)
    chat = ChatModels(settings, override=model)
    usage = Usage()
    out = await structured("t", Answer, PROMPT, fallback=heuristic, chat=chat, usage=usage)
    assert out == heuristic() and usage.data["errors"] == 1
    assert chat.totals.snapshot()["t"]["fallbacks"] == 1


async def test_offline_mode_uses_the_heuristic_without_calls() -> None:
    chat = ChatModels(make_settings(Path("/nonexistent")))
    usage = Usage()
    out = await structured("t", Answer, PROMPT, fallback=heuristic, chat=chat, usage=usage)
    assert out == heuristic()
    assert usage.data["llm_calls"] == 0 and usage.data["offline"] == 1
    assert await generate("r", PROMPT, chat=chat, usage=usage) is None


async def test_generate_returns_text_or_none(caplog) -> None:
    _, chat = scripted(script=["  Hello there.  ", "", RuntimeError("boom")])
    usage = Usage()
    assert await generate("r", PROMPT, chat=chat, usage=usage) == "Hello there."
    with caplog.at_level(logging.WARNING, logger="mneme.llm"):
        assert await generate("r", PROMPT, chat=chat, usage=usage) is None
        assert await generate("r", PROMPT, chat=chat, usage=usage) is None
    assert usage.data["llm_calls"] == 3 and usage.data["fallbacks"] == 2
    assert "empty answer" in caplog.text and "boom" in caplog.text


def test_usage_reducer_sums_and_resets() -> None:
    a = Usage()
    a.data.update(llm_calls=2, input_tokens=10)
    a.data["tasks"] = {"route": {"calls": 2, "outcome": "ok"}}
    b = {"llm_calls": 1, "input_tokens": 5, "tasks": {"route": {"calls": 1, "outcome": "retried"}}}
    merged = merge_usage(a.update(reset=True), b)
    assert merged["llm_calls"] == 3 and merged["input_tokens"] == 15
    assert merged["tasks"]["route"] == {"calls": 3, "outcome": "retried"}
    assert "reset" not in merged
    fresh = merge_usage(merged, {**empty_usage(), "llm_calls": 1, "reset": True})
    assert fresh["llm_calls"] == 1 and fresh["tasks"] == {}


def test_chat_models_follow_settings() -> None:
    off = ChatModels(make_settings(Path("/nonexistent")))
    assert off.offline and off.get(Tier.FAST) is None
    local = ChatModels(
        make_settings(
            Path("/nonexistent"), llm_base_url="http://127.0.0.1:9/v1", llm_model_respond="smol"
        )
    )
    chat = local.get(Tier.RESPOND, max_tokens=99)
    assert chat is not None and not local.offline
    assert chat.model_name == "smol"  # type: ignore[attr-defined]
    assert chat.extra_body == {"max_tokens": 99}  # type: ignore[attr-defined]
    assert chat.max_retries == 0  # type: ignore[attr-defined]
    assert local.get(Tier.RESPOND, max_tokens=99) is chat  # built once
    assert local.get(Tier.FAST, model="other").model_name == "other"  # type: ignore[union-attr]
    hosted = ChatModels(make_settings(Path("/nonexistent"), llm_api_key="sk-test"))
    model = hosted.get(Tier.STRUCTURED, max_tokens=50)
    assert model.max_tokens == 50 and not model.extra_body  # type: ignore[union-attr]


def test_describe_error_is_one_line() -> None:
    assert llm.describe_error(TimeoutError()) == "timed out"
    assert llm.describe_error(ValueError("bad\nmore")) == "ValueError: bad"


@pytest.mark.parametrize("tier", list(Tier))
def test_model_names_per_tier(tier: Tier) -> None:
    settings = make_settings(
        Path("/nonexistent"), llm_model_fast="f", llm_model_structured="s", llm_model_respond="r"
    )
    assert (
        ChatModels(settings).model_name(tier)
        == {"fast": "f", "structured": "s", "respond": "r"}[tier.value]
    )
