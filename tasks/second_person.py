"""What the user said of themselves, said back to them: the first person turned to the second
("my sister" -> "your sister"), and a fact about the user ("The user works as ...") to "you
work as ...". Pure functions over English text, for the offline answer (`tasks.offline_answer`).
"""

from __future__ import annotations

import re

# One pass over the words, so "I" -> "you" and "you" -> "I" do not undo each other.
_SWAP = {
    "i": "you",
    "i'm": "you're",
    "i've": "you've",
    "i'd": "you'd",
    "i'll": "you'll",
    "me": "you",
    "my": "your",
    "mine": "yours",
    "myself": "yourself",
    "we": "you",
    "we're": "you're",
    "we've": "you've",
    "our": "your",
    "ours": "yours",
    "us": "you",
    "ourselves": "yourselves",
    "am": "are",
    "you": "me",
    "your": "my",
    "yours": "mine",
}
_SUBJECT_BEFORE = frozenset(
    "can could do did does will would should shall may might must are were have had if that "
    "what when where why how because and but so while though whether".split()
)
_WORD = re.compile(r"\b(?:I'm|I've|I'd|I'll|we're|we've|[A-Za-z]+)\b")
_I_WAS = re.compile(r"\b(I|we) was\b", re.IGNORECASE)


def second_person(text: str) -> str:
    """What the user said of themselves, said back to them ("my sister" -> "your sister")."""
    text = _I_WAS.sub(lambda m: f"{m.group(1)} were", text)

    def swap(m: re.Match[str]) -> str:
        word = m.group()
        low = word.lower()
        if low == "you":  # the subject ("can you", "what you think") or the object ("told you")
            before = re.findall(r"[A-Za-z']+|[.!?;:]", text[: m.start()])[-1:]
            subject = not before or before[0].lower() in _SUBJECT_BEFORE or before[0] in ".!?;:"
            out = "I" if subject else "me"
            return out if out == "I" or not word[:1].isupper() else "Me"
        if low == "us" and word == "US":
            return word  # the country
        if low not in _SWAP or (low == "i" and word != "I"):
            return word
        out = _SWAP[low]
        # "I", "I'm" are capitals wherever they stand; other words only at a sentence start
        capital = word[:1].isupper() and not low.startswith("i")
        return out[:1].upper() + out[1:] if capital else out

    return _WORD.sub(swap, text)


_USER = re.compile(r"\bthe user (\w+)", re.IGNORECASE)
_IRREGULAR = {"is": "are", "was": "were", "has": "have", "does": "do"}


def _base(verb: str) -> str:
    """A third-person singular verb in the second person ("works" -> "work")."""
    low = verb.lower()
    if low in _IRREGULAR:
        return _IRREGULAR[low]
    if low.endswith("ies") and len(low) > 4:
        return verb[:-3] + "y"
    if low.endswith(("sses", "shes", "ches", "xes", "zes", "oes")):
        return verb[:-2]
    if low.endswith("s") and not low.endswith("ss"):
        return verb[:-1]
    return verb


def fact_to_you(text: str) -> str:
    """A fact about the user ("The user works as ...") said to them ("you work as ...")."""
    text = re.sub(r"\bthe user's\b", "your", text, flags=re.IGNORECASE)

    def subject(m: re.Match[str]) -> str:
        # The verb after "the user" agrees with "you" where "the user" is a subject: at the
        # start of the fact, after one opening word ("Mostly the user is"), or opening a clause
        # ("..., so the user has"); as an object ("Sam met the user at") it stays.
        before = re.findall(r"[A-Za-z']+|[.!?;:,]", text[: m.start()])
        if (
            len(before) > 1
            and before[-1] not in ".!?;:,"
            and before[-1].lower() not in (_SUBJECT_BEFORE)
        ):
            return m.group()
        return f"you {_base(m.group(1))}"

    text = _USER.sub(subject, text)
    return re.sub(r"\bthe user\b", "you", text, flags=re.IGNORECASE)
