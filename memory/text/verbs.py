"""English verb forms: what a base verb looks like in the past, as a participle and in its
other inflections ("run" -> ran, run; "scrap" -> scrapped, scrapping). Grammar, no data set:
the irregular verbs of everyday English and the spelling rules of the regular ones.

Used by the goal rules (`memory.knowledge.goal_reading`) to tell a completed "I ran the
marathon" from "I'm running" or "to run", and to match a class of verbs in any tense.
"""

from __future__ import annotations

from functools import lru_cache

_IRREGULAR = {
    "be": ("was were", "been"), "beat": ("beat", "beaten"), "become": ("became", "become"),
    "begin": ("began", "begun"), "bite": ("bit", "bitten"), "break": ("broke", "broken"),
    "bring": ("brought", "brought"), "build": ("built", "built"), "buy": ("bought", "bought"),
    "catch": ("caught", "caught"), "choose": ("chose", "chosen"), "come": ("came", "come"),
    "cut": ("cut", "cut"), "do": ("did", "done"), "draw": ("drew", "drawn"),
    "drink": ("drank", "drunk"), "drive": ("drove", "driven"), "eat": ("ate", "eaten"),
    "fall": ("fell", "fallen"), "feel": ("felt", "felt"), "fight": ("fought", "fought"),
    "find": ("found", "found"), "fly": ("flew", "flown"), "forget": ("forgot", "forgotten"),
    "freeze": ("froze", "frozen"), "get": ("got", "got gotten"), "give": ("gave", "given"),
    "go": ("went", "gone"), "grow": ("grew", "grown"), "have": ("had", "had"),
    "hear": ("heard", "heard"), "hide": ("hid", "hidden"), "hit": ("hit", "hit"),
    "hold": ("held", "held"), "keep": ("kept", "kept"), "know": ("knew", "known"),
    "lay": ("laid", "laid"), "lead": ("led", "led"), "learn": ("learned learnt", "learned learnt"),
    "leave": ("left", "left"), "lend": ("lent", "lent"), "let": ("let", "let"),
    "lose": ("lost", "lost"), "make": ("made", "made"), "meet": ("met", "met"),
    "pay": ("paid", "paid"), "put": ("put", "put"), "quit": ("quit quitted", "quit quitted"),
    "read": ("read", "read"), "ride": ("rode", "ridden"), "rise": ("rose", "risen"),
    "run": ("ran", "run"), "say": ("said", "said"), "see": ("saw", "seen"),
    "sell": ("sold", "sold"), "send": ("sent", "sent"), "set": ("set", "set"),
    "shoot": ("shot", "shot"), "sing": ("sang", "sung"), "sit": ("sat", "sat"),
    "sleep": ("slept", "slept"), "speak": ("spoke", "spoken"), "spend": ("spent", "spent"),
    "stand": ("stood", "stood"), "steal": ("stole", "stolen"), "swim": ("swam", "swum"),
    "take": ("took", "taken"), "teach": ("taught", "taught"), "tell": ("told", "told"),
    "think": ("thought", "thought"), "throw": ("threw", "thrown"),
    "understand": ("understood", "understood"), "wake": ("woke", "woken"),
    "wear": ("wore", "worn"), "win": ("won", "won"), "withdraw": ("withdrew", "withdrawn"),
    "write": ("wrote", "written"),
}  # fmt: skip
_VOWELS = frozenset("aeiou")


def _doubles(base: str) -> bool:
    """Whether a regular verb doubles its last consonant ("stop" -> "stopped", "scrap" ->
    "scrapping"): one syllable ending consonant-vowel-consonant (not w, x, y)."""
    if len(base) < 3 or base[-1] in _VOWELS or base[-1] in "wxy":
        return False
    vowels = [i for i, ch in enumerate(base) if ch in _VOWELS]
    return len(vowels) == 1 and vowels[0] == len(base) - 2 and base[-3] not in _VOWELS


@lru_cache(maxsize=4096)
def perfective(base: str) -> frozenset[str]:
    """The past tense and past participle of a base verb, lower case ("run" -> ran, run)."""
    base = base.lower()
    if base in _IRREGULAR:
        past, participle = _IRREGULAR[base]
        return frozenset(f"{past} {participle}".split())
    if base.endswith("e"):
        return frozenset({base + "d"})
    if base.endswith("y") and len(base) > 1 and base[-2] not in _VOWELS:
        return frozenset({base[:-1] + "ied"})
    if _doubles(base):
        return frozenset({base + base[-1] + "ed"})
    return frozenset({base + "ed"})


@lru_cache(maxsize=4096)
def inflections(base: str) -> frozenset[str]:
    """Every form of a base verb: base, third person, -ing, past and participle."""
    base = base.lower()
    if base.endswith("ie"):
        ing = base[:-2] + "ying"
    elif base.endswith("e") and not base.endswith(("ee", "ye", "oe")):
        ing = base[:-1] + "ing"
    elif _doubles(base) or base in {"quit", "begin", "forget", "swim", "run", "win", "hit"}:
        ing = base + base[-1] + "ing"
    else:
        ing = base + "ing"
    if base.endswith(("s", "sh", "ch", "x", "z", "o")):
        third = base + "es"
    elif base.endswith("y") and len(base) > 1 and base[-2] not in _VOWELS:
        third = base[:-1] + "ies"
    else:
        third = base + "s"
    return frozenset({base, third, ing}) | perfective(base)
