"""`mneme eval convert`: the memeval format (docs/memeval.md) from the benchmarks' published files.

- `locomo`: snap-research/LoCoMo's `data/locomo10.json` (a list of samples). Each sample is one
  conversation; sessions `S<n>` in order, dated from `session_<n>_date_time` ("1:56 pm on 8 May,
  2023"); turns keep their `dia_id` and a shared photo's caption as "[shares <caption>]";
  questions are `<sample id>-q<index>` with LoCoMo's categories by name, evidence ids
  normalised (`D8:6; D9:17` split, `D30:05` -> `D30:5`, repeats and ids that name no turn
  dropped), and questions left without evidence dropped.
- `longmemeval`: LongMemEval's question records (`longmemeval_s_cleaned.json`, a list; one
  record per file; or a directory of such files). Each question is its own conversation: its
  haystack sessions listed by date (`S<n>`, n its place in the source; turns `S<n>:<k>`, role
  user/assistant), evidence
  the `has_answer` turns (their sessions: `answer_session_ids`), abstention questions (`_abs`) left out, and the question dated no
  earlier than a minute after the last session.

- `demo`: a conversation in the demo's format (`cli/data/sample_conversation.json`: sessions
  of user/agent turns `days_ago` a fixed day, and questions with the words their answer must
  contain). Turns are `<session>:<k>`, role user/assistant; a question's evidence is the user
  turns holding all its expected words. The repository's notebooks use it when the benchmarks
  are not beside the clone (`notebooks/data/sample.memeval.jsonl` is this, converted).

Pure data work: no stores, no models.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

LOCOMO_CATEGORIES = {
    1: "multi-hop",
    2: "temporal",
    3: "open-domain",
    4: "single-hop",
    5: "adversarial",
}
_EVIDENCE = re.compile(r"D:?(\d+):(\d+)")  # "D:11:26" is a typo of "D11:26" in the source


class ConvertError(ValueError):
    """The input is not the benchmark's published format; the message says where and why."""


def _load(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConvertError(f"{path} is not readable JSON ({type(exc).__name__}: {exc})") from None


# --------------------------------------------------------------------------- LoCoMo


def locomo_date(text: str) -> str:
    """'1:56 pm on 8 May, 2023' -> '2023-05-08T13:56'."""
    try:
        when = datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y")
    except ValueError:
        raise ConvertError(f"unreadable LoCoMo session date {text!r}") from None
    return when.strftime("%Y-%m-%dT%H:%M")


def locomo_evidence(values: list[str]) -> list[str]:
    """Evidence ids as turn ids: `D8:6; D9:17` split, leading zeros of the turn dropped."""
    out: list[str] = []
    for value in values:
        for session, turn in _EVIDENCE.findall(value):
            out.append(f"D{int(session)}:{int(turn)}")
    return out


def locomo_conversation(sample: dict[str, Any]) -> dict[str, Any]:
    """One LoCoMo sample as a memeval conversation."""
    try:
        conv = sample["conversation"]
        numbers = sorted(
            int(k.split("_")[1]) for k in conv if re.fullmatch(r"session_\d+", k) and conv[k]
        )
        sessions = []
        known: set[str] = set()
        for n in numbers:
            turns = []
            for turn in conv[f"session_{n}"]:
                text = str(turn["text"])
                if turn.get("blip_caption"):
                    text = f"{text} [shares {turn['blip_caption']}]"
                turns.append(
                    {"id": turn["dia_id"], "speaker": turn["speaker"], "role": None, "text": text}
                )
                known.add(turn["dia_id"])
            date = conv.get(f"session_{n}_date_time")
            sessions.append(
                {"id": f"S{n}", "date": locomo_date(date) if date else None, "turns": turns}
            )
        questions = []
        for i, qa in enumerate(sample["qa"]):
            # Ids that name no turn are dropped; a question left with none is dropped.
            cited = locomo_evidence(list(qa.get("evidence") or []))
            evidence = list(dict.fromkeys(e for e in cited if e in known))
            if not evidence:
                continue
            answer = qa.get("answer", qa.get("adversarial_answer"))
            questions.append(
                {
                    "id": f"{sample['sample_id']}-q{i}",
                    "question": qa["question"],
                    "date": None,
                    "category": LOCOMO_CATEGORIES.get(int(qa["category"]), str(qa["category"])),
                    "answer": answer if answer is None else str(answer),
                    "evidence": evidence,
                    "evidence_sessions": sorted({f"S{e.split(':')[0][1:]}" for e in evidence}),
                }
            )
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        if isinstance(exc, ConvertError):
            raise
        raise ConvertError(
            f"sample {sample.get('sample_id', '?') if isinstance(sample, dict) else '?'} is not "
            f"LoCoMo's format ({type(exc).__name__}: {exc})"
        ) from None
    return {
        "id": sample["sample_id"],
        "source": "locomo10",
        "sessions": sessions,
        "questions": questions,
    }


def convert_locomo(path: Path) -> Iterator[dict[str, Any]]:
    """Every conversation of LoCoMo's `locomo10.json`."""
    data = _load(path)
    if not isinstance(data, list):
        raise ConvertError(f"{path}: expected LoCoMo's list of samples")
    for sample in data:
        yield locomo_conversation(sample)


# --------------------------------------------------------------------------- LongMemEval


def lme_date(text: str) -> datetime:
    """'2023/05/20 (Sat) 12:36' -> a datetime."""
    try:
        return datetime.strptime(re.sub(r"\s*\(\w+\)\s*", " ", text.strip()), "%Y/%m/%d %H:%M")
    except ValueError:
        raise ConvertError(f"unreadable LongMemEval date {text!r}") from None


def lme_conversation(record: dict[str, Any]) -> dict[str, Any] | None:
    """One LongMemEval question as a memeval conversation (None for an abstention question)."""
    try:
        qid = str(record["question_id"])
        if qid.endswith("_abs"):
            return None
        # Sessions keep their place in the source as their id (`S<n>`) and are listed by date.
        dated = sorted(
            enumerate(zip(record["haystack_dates"], record["haystack_sessions"], strict=True), 1),
            key=lambda item: lme_date(item[1][0]),
        )
        session_ids = list(record.get("haystack_session_ids") or [])
        answer_sessions = set(record.get("answer_session_ids") or [])
        sessions, evidence, evidence_sessions = [], [], []
        for n, (date, turns) in dated:
            out = []
            for k, turn in enumerate(turns, start=1):
                tid = f"S{n}:{k}"
                role = str(turn["role"])
                out.append({"id": tid, "speaker": role, "role": role, "text": str(turn["content"])})
                if turn.get("has_answer"):
                    evidence.append(tid)
            sessions.append(
                {"id": f"S{n}", "date": lme_date(date).strftime("%Y-%m-%dT%H:%M"), "turns": out}
            )
            if session_ids[n - 1] in answer_sessions:
                evidence_sessions.append(f"S{n}")
        # Evidence in the source's order (session place, then turn), not by date.
        evidence.sort(key=lambda t: tuple(int(x) for x in t[1:].split(":")))
        evidence_sessions.sort(key=lambda sid: int(sid[1:]))
        asked = lme_date(record["question_date"])
        if dated:
            asked = max(asked, lme_date(dated[-1][1][0]) + timedelta(minutes=1))
        question = {
            "id": qid,
            "question": record["question"],
            "date": asked.strftime("%Y-%m-%dT%H:%M"),
            "category": record["question_type"],
            "answer": str(record["answer"]),
            "evidence": evidence,
            "evidence_sessions": evidence_sessions,
        }
    except (KeyError, TypeError, ValueError) as exc:
        if isinstance(exc, ConvertError):
            raise
        raise ConvertError(
            f"question {record.get('question_id', '?') if isinstance(record, dict) else '?'} is "
            f"not LongMemEval's format ({type(exc).__name__}: {exc})"
        ) from None
    return {"id": qid, "source": "longmemeval", "sessions": sessions, "questions": [question]}


def convert_longmemeval(path: Path) -> Iterator[dict[str, Any]]:
    """Every non-abstention question of a LongMemEval file (a list or one record) or directory."""
    files = sorted(path.glob("*.json")) if path.is_dir() else [path]
    for file in files:
        data = _load(file)
        for record in data if isinstance(data, list) else [data]:
            if not isinstance(record, dict):
                raise ConvertError(f"{file}: expected LongMemEval question records")
            conversation = lme_conversation(record)
            if conversation is not None:
                yield conversation


DEMO_DAY = datetime(2026, 1, 15)
"""The day the demo format's `days_ago` counts back from (the questions are asked on it)."""


def convert_demo(path: Path) -> Iterator[dict[str, Any]]:
    """The demo-format conversation at `path` as one memeval conversation."""
    data = _load(path)
    try:
        sessions, turns_of = [], {}
        for s in data["sessions"]:
            hour, minute = (int(x) for x in str(s.get("time", "12:00")).split(":"))
            day = DEMO_DAY - timedelta(days=int(s["days_ago"]))
            turns = []
            for k, t in enumerate(s["turns"], start=1):
                turns.append(
                    {
                        "id": f"{s['id']}:{2 * k - 1}",
                        "speaker": "user",
                        "role": "user",
                        "text": str(t["user"]),
                    }
                )
                turns.append(
                    {
                        "id": f"{s['id']}:{2 * k}",
                        "speaker": "assistant",
                        "role": "assistant",
                        "text": str(t["agent"]),
                    }
                )
            date = day.replace(hour=hour, minute=minute).isoformat(timespec="minutes")
            sessions.append({"id": str(s["id"]), "date": date, "turns": turns})
            turns_of[str(s["id"])] = turns
        questions = []
        for n, q in enumerate(data["questions"]):
            words = [str(w).lower() for w in q["expect"]]
            evidence = [
                (sid, t["id"])
                for sid, turns in turns_of.items()
                for t in turns
                if t["role"] == "user"
                and all(re.search(rf"\b{re.escape(w)}\b", t["text"].lower()) for w in words)
            ]
            if not evidence:
                continue
            questions.append(
                {
                    "id": f"demo-q{n}",
                    "question": str(q["question"]),
                    "date": DEMO_DAY.isoformat(timespec="minutes"),
                    "category": "single-hop",
                    "answer": ", ".join(map(str, q["expect"])),
                    "evidence": [tid for _, tid in evidence],
                    "evidence_sessions": sorted({sid for sid, _ in evidence}),
                }
            )
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise ConvertError(f"{path}: not the demo format ({type(exc).__name__}: {exc})") from None
    yield {
        "id": str(data.get("user_id", "demo")),
        "source": "mneme-demo",
        "sessions": sessions,
        "questions": questions,
    }


CONVERTERS = {"locomo": convert_locomo, "longmemeval": convert_longmemeval, "demo": convert_demo}


def convert(benchmark: str, raw: Path, out: Path) -> int:
    """Write `raw` of `benchmark` as memeval JSONL to `out` (atomically); the conversations."""
    try:
        converter = CONVERTERS[benchmark]
    except KeyError:
        raise ConvertError(
            f"unknown benchmark {benchmark!r}; use one of {sorted(CONVERTERS)}"
        ) from None
    if not raw.exists():
        raise ConvertError(f"{raw} does not exist")
    lines = [json.dumps(c, ensure_ascii=False) for c in converter(raw)]
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.with_name(f".{out.name}.partial")
    partial.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    partial.replace(out)
    return len(lines)
