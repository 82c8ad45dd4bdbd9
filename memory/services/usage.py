"""LLM usage accounting: what one node (or one bookkeeping run) spent, and the process totals.

`Usage` counts the requests, tokens and outcomes of one node's LLM tasks; its `update()` is the
state update of the `usage` channel, whose reducer is `merge_usage`. `UsageTotals` (owned by the
process's `ChatModels`, fed by `tasks.llm`) adds up every task since start for `mneme bench`.
"""

from __future__ import annotations

from typing import Any

Outcome = str
"""How a task ended: ok, retried, fallback, error, offline or budget (the turn's latency budget
ran out before the model answered)."""


def empty_usage() -> dict[str, Any]:
    """A usage record with nothing counted."""
    return {
        "llm_calls": 0,
        "input_tokens": 0,
        "output_tokens": 0,
        "retries": 0,
        "fallbacks": 0,
        "errors": 0,
        "offline": 0,
        "tasks": {},
    }


def merge_usage(left: dict[str, Any] | None, right: dict[str, Any] | None) -> dict[str, Any]:
    """Reducer: add `right`'s counts to `left`; a `right` marked `reset` starts a new turn."""
    if not right:
        return left or empty_usage()
    base = empty_usage() if right.get("reset") or not left else left
    out = {**empty_usage(), **{k: v for k, v in base.items() if k != "reset"}}
    out["tasks"] = {name: dict(counts) for name, counts in base.get("tasks", {}).items()}
    for key, value in right.items():
        if key in ("tasks", "reset"):
            continue
        if isinstance(value, int | float):
            out[key] = out.get(key, 0) + value
    for name, counts in right.get("tasks", {}).items():
        mine = out["tasks"].setdefault(name, {})
        for key, value in counts.items():
            if isinstance(value, int | float):
                mine[key] = mine.get(key, 0) + value
            else:
                mine[key] = value
    return out


class UsageTotals:
    """LLM counters by task since the process started."""

    def __init__(self) -> None:
        self.by_task: dict[str, dict[str, int]] = {}

    def _entry(self, task: str) -> dict[str, int]:
        return self.by_task.setdefault(
            task, {"calls": 0, "input_tokens": 0, "output_tokens": 0, "fallbacks": 0}
        )

    def add(self, task: str, calls: int, inp: int, out: int) -> None:
        """Count requests and tokens."""
        entry = self._entry(task)
        entry["calls"] += calls
        entry["input_tokens"] += inp
        entry["output_tokens"] += out

    def fallback(self, task: str) -> None:
        """Count a heuristic answer."""
        self._entry(task)["fallbacks"] += 1

    def snapshot(self) -> dict[str, dict[str, int]]:
        """A copy of the counters."""
        return {task: dict(counts) for task, counts in self.by_task.items()}

    def calls(self) -> int:
        """Requests sent since start, all tasks."""
        return sum(entry["calls"] for entry in self.by_task.values())

    def reset(self) -> None:
        """Forget every count."""
        self.by_task.clear()


class Usage:
    """Counts the LLM work of one node (or one bookkeeping run) for the state's `usage`."""

    def __init__(self) -> None:
        self.data = empty_usage()

    def _task(self, task: str) -> dict[str, Any]:
        tasks: dict[str, dict[str, Any]] = self.data["tasks"]
        return tasks.setdefault(
            task, {"calls": 0, "input_tokens": 0, "output_tokens": 0, "outcome": "none"}
        )

    def request(self, task: str, tokens: tuple[int, int], seconds: float) -> None:
        """Count one request sent to the endpoint and the (input, output) tokens it reported."""
        inp, out = tokens
        self.data["llm_calls"] += 1
        self.data["input_tokens"] += inp
        self.data["output_tokens"] += out
        entry = self._task(task)
        entry["calls"] += 1
        entry["input_tokens"] += inp
        entry["output_tokens"] += out
        entry["seconds"] = round(entry.get("seconds", 0.0) + seconds, 3)

    def outcome(self, task: str, outcome: Outcome) -> None:
        """Record how a task ended: ok, retried, fallback, error, offline or budget."""
        self._task(task)["outcome"] = outcome
        if outcome == "retried":
            self.data["retries"] += 1
        elif outcome in ("fallback", "error", "budget"):
            self.data["fallbacks"] += 1
            if outcome == "error":
                self.data["errors"] += 1
        elif outcome == "offline":
            self.data["offline"] += 1

    def update(self, *, reset: bool = False) -> dict[str, Any]:
        """The state update for the `usage` channel."""
        return {**self.data, "reset": True} if reset else dict(self.data)
