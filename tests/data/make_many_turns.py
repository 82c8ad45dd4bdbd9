"""Write `many_turns.memeval.jsonl`: one person's history of 56 sessions with an assistant, and
24 questions that each need many turns at once (the order of events, a project from start to
finish, what changed, how often something came up).

Six storylines run through the history, each told over five to eight sessions months apart,
between sessions of everyday small talk; every storyline event is one user turn (the evidence).
The phrasing of the questions is general, not tuned to any retriever. Deterministic: run
`python tests/data/make_many_turns.py` to rewrite the file.
"""

from __future__ import annotations

import json
import random
from datetime import datetime, timedelta
from pathlib import Path

STORIES: dict[str, list[str]] = {
    "kitchen": [
        "We finally hired a contractor, Brennan & Sons, to redo our kitchen.",
        "I picked dark green tiles with brass fittings for the new kitchen.",
        "The builders tore out the old cabinets today, the house is full of dust.",
        "Bad news: the kitchen work is already 4,000 pounds over budget because of damp.",
        "The new worktop arrived cracked and we have to wait three weeks for another one.",
        "The kitchen is finished at last and I cooked our first dinner in it.",
    ],
    "running": [
        "I started running again, three slow kilometres around the reservoir.",
        "I ran my first 10k race in 58 minutes and I'm so proud.",
        "I hurt my knee on a downhill run and the physio told me to rest for a month.",
        "Back to running after the knee injury, slowly building up again.",
        "I finished the Bristol half marathon in just under two hours!",
        "I signed up for the Berlin marathon next September.",
    ],
    "job": [
        "I have an interview next week at Helix Labs for a data engineering role.",
        "Helix Labs offered me the job, with a better salary than I have now.",
        "I handed in my resignation at the insurance firm today, it felt strange.",
        "First day at Helix Labs: the team seems friendly and the office is huge.",
        "My manager at Helix said I will lead the new pipeline project.",
    ],
    "spanish": [
        "I downloaded a language app and started learning Spanish from zero.",
        "I joined an evening Spanish class at the community college on Tuesdays.",
        "In Sevilla I managed to order dinner and chat with the waiter in Spanish.",
        "I passed the B1 Spanish exam, all those Tuesday evenings paid off.",
        "I now read a Spanish novel a month without a dictionary.",
    ],
    "wedding": [
        "My sister Ruth just got engaged to her boyfriend Marco!",
        "Ruth and Marco booked an old barn in Devon for the wedding venue.",
        "I went dress shopping with Ruth and she cried when she found the one.",
        "I'm terrified about giving the speech at Ruth's wedding.",
        "Ruth's wedding was beautiful and my speech made people laugh.",
    ],
    "sleep": [
        "I keep waking up at 3am and I can't get back to sleep.",
        "My doctor suggested I stop drinking coffee after noon for the insomnia.",
        "I tried melatonin for a week, it helps me fall asleep but I feel groggy.",
        "I'm sleeping much better since I stopped looking at my phone in bed.",
        "The insomnia came back during the busy weeks at work.",
    ],
}

SMALL_TALK = [
    "The weather has been grey all week.",
    "I watched a documentary about octopuses last night.",
    "I made a big pot of vegetable soup for the week.",
    "Traffic was awful on the way home.",
    "I spent Sunday reading in the garden.",
    "My neighbour's cat keeps sitting on our car.",
    "I tried a new recipe for banana bread.",
    "The train was delayed again this morning.",
    "I finally cleaned out the garage.",
    "We played board games with friends on Saturday.",
    "I bought a new pair of shoes for work.",
    "The supermarket was out of oat milk again.",
    "I listened to a podcast about the Roman empire.",
    "We had a barbecue even though it rained.",
]

REPLIES = [
    "Thanks for telling me, I'll keep that in mind.",
    "That sounds like a lot. How do you feel about it?",
    "Good to hear from you. Anything else on your mind?",
    "I see. Keep me posted on how it goes.",
]

QUESTIONS: list[tuple[str, str, list[tuple[str, int]] | str]] = [
    ("What happened with my kitchen renovation, from start to finish?", "project", "kitchen"),
    ("Summarise how my running went over the months.", "project", "running"),
    ("Tell me the story of my job change.", "project", "job"),
    ("How did my Spanish learning go overall?", "project", "spanish"),
    ("Summarise everything about my sister's wedding.", "project", "wedding"),
    ("What have I told you about my sleep problems over time?", "project", "sleep"),
    ("In what order did the running milestones happen?", "order", "running"),
    (
        "What happened first, the job offer or the half marathon?",
        "order",
        [("job", 1), ("running", 4)],
    ),
    (
        "Did the kitchen get finished before or after Ruth's wedding?",
        "order",
        [("kitchen", 5), ("wedding", 4)],
    ),
    (
        "Which came first: passing the Spanish exam or starting at Helix Labs?",
        "order",
        [("spanish", 3), ("job", 3)],
    ),
    ("In what order did the kitchen problems come up?", "order", [("kitchen", 3), ("kitchen", 4)]),
    (
        "What happened first, my knee injury or the engagement of my sister?",
        "order",
        [("running", 2), ("wedding", 0)],
    ),
    (
        "Did I hand in my resignation before or after the trip to Sevilla?",
        "order",
        [("job", 2), ("spanish", 2)],
    ),
    (
        "What changed in my Spanish between when I started and now?",
        "change",
        [("spanish", 0), ("spanish", 3), ("spanish", 4)],
    ),
    (
        "How did my sleep change after I stopped using my phone in bed?",
        "change",
        [("sleep", 3), ("sleep", 4)],
    ),
    (
        "How has my running changed since I started again?",
        "change",
        [("running", 0), ("running", 1), ("running", 4), ("running", 5)],
    ),
    ("What changed at work for me this year?", "change", [("job", 1), ("job", 3), ("job", 4)]),
    (
        "How did the cost and schedule of the kitchen work change?",
        "change",
        [("kitchen", 3), ("kitchen", 4)],
    ),
    (
        "How many times did I mention trouble sleeping?",
        "count",
        [("sleep", 0), ("sleep", 2), ("sleep", 4)],
    ),
    (
        "How many races have I run or signed up for?",
        "count",
        [("running", 1), ("running", 4), ("running", 5)],
    ),
    ("How often did Ruth come up in our conversations?", "count", "wedding"),
    (
        "How many times did something go wrong with the kitchen?",
        "count",
        [("kitchen", 3), ("kitchen", 4)],
    ),
    (
        "What were all the things that helped or did not help my insomnia?",
        "project",
        [("sleep", 1), ("sleep", 2), ("sleep", 3)],
    ),
    (
        "What were my feelings around the wedding speech, before and after?",
        "change",
        [("wedding", 3), ("wedding", 4)],
    ),
]


def build() -> dict[str, object]:
    rng = random.Random(15)
    # Place every storyline event in its own session, in story order, spread over the year.
    slots = list(range(56))
    events = [(name, i) for name, lines in STORIES.items() for i in range(len(lines))]
    assert len(events) == 32
    chosen = sorted(rng.sample(slots, len(events)))
    # Keep each story in order: assign sessions story by story, interleaved by sampling.
    by_story: dict[str, list[int]] = {name: [] for name in STORIES}
    order = [name for name, _ in events]
    rng.shuffle(order)
    for session, name in zip(chosen, order, strict=True):
        by_story[name].append(session)
    at = {(name, i): s for name, ss in by_story.items() for i, s in enumerate(sorted(ss))}
    story_of = {s: key for key, s in at.items()}
    start = datetime(2025, 1, 6, 19, 0)
    sessions = []
    turn_id: dict[tuple[str, int], str] = {}
    for s in range(56):
        date = start + timedelta(days=6 * s + rng.randint(0, 3), minutes=rng.randint(0, 90))
        turns = []
        users = [rng.choice(SMALL_TALK) for _ in range(rng.randint(2, 3))]
        key = story_of.get(s)
        if key is not None:
            users.insert(rng.randint(0, len(users)), STORIES[key[0]][key[1]])
        for j, text in enumerate(users):
            uid = f"S{s + 1}:{2 * j + 1}"
            if key is not None and text == STORIES[key[0]][key[1]]:
                turn_id[key] = uid
            turns.append({"id": uid, "speaker": "user", "role": "user", "text": text})
            turns.append(
                {
                    "id": f"S{s + 1}:{2 * j + 2}",
                    "speaker": "assistant",
                    "role": "assistant",
                    "text": rng.choice(REPLIES),
                }
            )
        sessions.append(
            {"id": f"S{s + 1}", "date": date.isoformat(timespec="minutes"), "turns": turns}
        )
    questions = []
    for n, (text, category, evidence) in enumerate(QUESTIONS):
        keys = (
            [(evidence, i) for i in range(len(STORIES[evidence]))]
            if isinstance(evidence, str)
            else evidence
        )
        ids = [turn_id[k] for k in keys]
        questions.append(
            {
                "id": f"mt-q{n}",
                "question": text,
                "date": None,
                "category": category,
                "answer": None,
                "evidence": ids,
                "evidence_sessions": sorted({i.split(":")[0] for i in ids}),
            }
        )
    return {"id": "many-turns", "source": "mneme", "sessions": sessions, "questions": questions}


if __name__ == "__main__":
    out = Path(__file__).with_name("many_turns.memeval.jsonl")
    out.write_text(json.dumps(build(), ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {out}")
