"""`mneme chat` prints a streamed reply once: the tokens as they come, never the finished
message again after them."""

from __future__ import annotations

from langgraph.checkpoint.memory import InMemorySaver

from cli.agent_commands import stream_reply
from cli.common import console
from tests.unit.fake_chat import assessment


async def test_a_streamed_reply_is_printed_once(agent_services, fake_chat) -> None:
    from graph.agent import builder

    fake_chat(
        by_tool={"TurnAssessment": [assessment()]},  # the route: no memory to look for
        script=["Your dog is called Biscuit."],
    )
    app = builder.compile(checkpointer=InMemorySaver())
    with console.capture() as out:
        state = await stream_reply(app, "What's my dog called?", user_id="alice", thread_id="t1")
    printed = out.get()
    assert state["messages"][-1].content.startswith("Your dog is called Biscuit.")
    assert printed.count("Biscuit") == 1, printed
    assert printed.startswith("mneme>")
