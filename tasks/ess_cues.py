"""The cues the offline Evidence Strength Score reads (`tasks.ess.heuristic_ess`): what a careful
reader would weigh without a model. Named sources, study and method words, numbers and specific
names, hedging (a sign of calibrated claims), absolutes, appeals to popularity or emotion,
personal anecdote and known-debunked claims become cue counts (`cue_scores`), the reasoning type
(`reasoning_type`), the five credibility signals (`signals`), the overall score
(`combined_score`) and the message's topics (`topics_of`). Pure functions: no I/O, no model.
"""

from __future__ import annotations

import re

from memory.schema import ReasoningType
from tasks.keywords import keywords

_I = re.IGNORECASE
_STUDY_STRONG = re.compile(
    r"\b(stud(y|ies)|trials?|randomi[sz]ed|meta-analys[ie]s|systematic review|review of|cohorts?|"
    r"participants|experiments?|a/b tests?|surveys?|surveyed|census|statistics|stats|measured|"
    r"tracked|records|findings?|research(ers)?|data (show|shows|from|suggest|indicate)|"
    r"datasets?|polls?|sample of|logs|metrics|benchmark(s|ed)?|measurements?|profiled|timed|"
    r"followed \S+ \d)\b",
    _I,
)
_STUDY_WEAK = re.compile(r"\b(data|evidence|observed|analysis|figures|numbers)\b", _I)
_FINDING_VERB = re.compile(
    r"\b(show|shows|showed|shown|found|find|finds|estimated?|measured|recorded|observed)\b", _I
)
_METHOD = re.compile(
    r"\b(randomi[sz]ed|controlled|placebo|double[- ]blind|meta-analys[ie]s|systematic review|"
    r"peer[- ]reviewed|pooling|replicated|sample size|confidence interval|significant|"
    r"certainty|independent|across \d|n ?= ?\d|held in every|versus|vs\.?)\b",
    _I,
)
_SOURCE = re.compile(
    r"\b(journal|published (in|by)|the lancet|lancet|jama|nejm|bmj|nature|cochrane('s)?|"
    r"national academ(y|ies)|university|institute|federation|association|agency|department of|"
    r"ministry|office for|bureau of|according to|report(ed)?|doi|et al|https?://\S+)",
    _I,
)
_ACRONYM_SOURCE = re.compile(
    r"\b(WHO|CDC|NIH|NIAID|NASA|NOAA|ONS|IPCC|OECD|IMF|FDA|EPA|BLS|NHS|LSE|MIT|UN|ECB|Fed)\b"
)
_WEAK_SOURCE = re.compile(
    r"\b(twitter|tiktok|facebook|youtube|instagram|reddit|i heard|someone said|they say|"
    r"i read somewhere|a video)\b",
    _I,
)
_EXPERT_ROLE = re.compile(
    r"\b(dr\.|doctors?|gp|professor|prof\.|scientists?|experts?|specialists?|economists?|"
    r"engineers?|physicians?|nurses?|dentists?|pharmacists?|researchers?|surgeons?|vets?|"
    r"cardiologists?|pediatricians?|paediatricians?|lawyers?|accountants?|therapists?|"
    r"chair|director|security lead|lead engineer|consensus|guidelines?|guidance|"
    r"(royal |national )?(society|academy|college|council|commission) of|royal society)\b",
    _I,
)
_EXPERT_VERB = re.compile(
    r"\b(recommends?|recommendations?|advises?|advise|concluded|conclude|state[sd]?|"
    r"audited|inspected|diagnosed)\b",
    _I,
)
_INSTITUTION_SAYS = re.compile(
    r"\b(agency|organi[sz]ation|association|society|academy|academies|institute|council|"
    r"commission|board|authority|federation|service|ministry|department)\b[^.]{0,40}?\b(says|"
    r"said|advises?|recommends?|warns?|states?|concluded|reports?|found)\b",
    _I,
)
_AS_A_PRO = re.compile(
    r"\bas an? [a-z\- ]{0,30}(nurse|doctor|physician|engineer|scientist|lawyer|"
    r"economist|teacher|researcher|pharmacist|pilot|developer|dentist)\b",
    _I,
)
_SAYS = re.compile(
    r"\b(says|said|say|states|stated|told (me|us)|warns?|warned|explained|advised (me|us))\b", _I
)
_HEDGE = re.compile(
    r"\b(suggests?|suggesting|likely|probably|roughly|about|around|approximately|may|might|"
    r"modest(ly)?|moderate|though|limited|small|tend(s)? to|on average|in some cases|"
    r"appears?|some evidence|mostly)\b",
    _I,
)
_ABSOLUTE = re.compile(
    r"\b(always|never|definitely|obviously|clearly|certainly|undeniabl[ey]|proves?|no doubt|"
    r"everyone|everybody|nobody|no one|100%)\b",
    _I,
)
_LOGIC_STRONG = re.compile(
    r"\b(therefore|thus|hence|it follows|follows that|implies|by definition|contradicts?|"
    r"consequently|can't both|cannot both|assum(es|e|ption|ptions)|bounded|"
    r"at least one of|if and only if|can only|only if|unless|one of (those|these|them|the two) (has|have|must)|"
    r"(has|have|must) to be (wrong|false|true)|can't (say|claim|have it both ways)|"
    r"isn't the case|is not the case|inconsistent|contradiction|either\b[^.;?!]{3,120}\bor)\b",
    _I,
)
_IF_THEN = re.compile(
    r"\bif\b[^.;:?!]{3,120}?(\bthen\b|\bwould\b|'d\b|\bmust\b|\bcan't\b|\bcannot\b|\bwill\b)", _I
)
_PREMISE_OPENER = re.compile(r"(^|[.;]\s+)(since|because|given that)\b", _I)
_LOGIC_WEAK = re.compile(r"\b(because|since|so|means|which means|think about it)\b", _I)
_ANECDOTE = re.compile(
    r"\b(my (grand(father|mother|pa|ma|dad|mum|mom)|friend|friend's|neighbou?r|aunt|uncle|"
    r"brother|sister|mom|mum|dad|father|mother|cousin|co-?worker|colleague|kid|son|daughter|"
    r"wife|husband|partner|boss)\b|i know (someone|a guy|a woman|people)|a (friend|co-?worker|"
    r"colleague) of mine|in my experience|i tried|i switched|worked for me|happened to me|"
    r"once i|when i (lived|was|worked|tried)|i('ve| have) (seen|noticed)|"
    r"\b(i|we) (ate|drank|took|used|tried|had|did|bought|went|started|stopped|quit|gave)\b|"
    r"on my team|in my (family|town|office|school|class)|every time i|whenever i|"
    r"\b(i've|i have) (flown|been|had|done|seen|gone|eaten|taken|used|tried|\w+ed)\b)",
    _I,
)
_CONCLUSION = re.compile(
    r"\b(so|therefore|proves?|must|definitely|clearly|obviously|works?|worked|cures?|helps?|"
    r"causes?|makes?|made|went away|never|always|not sure|unreliable|don't need|can't be|"
    r"better|worse|safe|dangerous)\b",
    _I,
)
_SOCIAL = re.compile(
    r"\b(every(one|body) (agrees|knows|says|thinks|believes|already|in this)|every(one|body) "
    r"says so|(nobody|no one) (serious|believes|thinks|i know|sane)|all my friends|"
    r"most people (i know|think|agree|believe)|so do most|common knowledge|"
    r"you (must|have to|need to|should|gotta) (accept|agree|admit|believe)|you should too|"
    r"just (admit|agree|accept)|(are|you're) the only one|get with the times|"
    r"millions of people|can't (all )?be wrong|the majority( of people)?|stop questioning|"
    r"wake up|all the smart people|every expert i follow|only an idiot|any reasonable person|"
    r"(nobody|no one) with (any|half a) (sense|brain)|anyone with (any sense|half a brain)|"
    r"\badmit it\b|literally every(one|body)|every(one|body) (on|in|at) my|all the cool|"
    r"(nobody|no one) \w+s? \S+( \S+)? (anymore|these days)|everyone (does|is doing) it|"
    r"agree with me|every(one|body) else|the whole (internet|world|country|office)|outvoted|"
    r"outnumbered|who are you to|you'd be (stupid|crazy|a fool|an idiot|mad) not to|"
    r"(no one|nobody) takes|every(one|body)('s| is) saying|go with the (crowd|flow|majority))",
    _I,
)
_EMOTION = re.compile(
    r"(think of the children|if you (really |truly )?cared|how can you (live|sleep|support)|"
    r"beg(ging)? you|break my heart|terrified|terrifying|scar(y|iest|ed)|disgusting|\bevil\b|"
    r"makes me sick|how would you feel|devastated|heartless|monster|hurting me|you owe me|"
    r"imagine how|picture a world|anyone with a heart|keeps me up at night|shame on you|"
    r"outrageous|horrif|heartbreaking|cruel|suffer|how dare|people are dying|angry|furious|"
    r"\bsad\b|upset|heartbroken|on my side|if you (ever |really )?(loved|cared)|"
    r"matters so much|\?!|crying|in tears|don't you dare|for my sake|decent person|outraged|"
    r"are you (really )?that|think about the people|lost (their|his|her) (homes|lives|jobs)|"
    r"how can (we|you) not)",
    _I,
)
_EXCLAIM = re.compile(r"!{2,}|!\s*$")
_MYTHS = re.compile(
    r"(vaccines? (cause|causes|causing) autism|mmr[^.]{0,40}autism|autism[^.]{0,40}vaccin|"
    r"only use (about )?10 ?(%|percent) of (our|your|the) brains?|earth is flat|flat earth|"
    r"moon landings? (was|were) (faked|fake|staged)|faked the moon|5g[^.]{0,30}(covid|corona|"
    r"virus)|chemtrails?|sugar makes (kids|children) hyperactive|great wall[^.]{0,60}visible "
    r"from space|cracking (your )?knuckles[^.]{0,30}arthritis|climate change is a hoax|"
    r"global warming is a hoax|goldfish[^.]{0,40}(three|3)[- ]second|"
    r"lightning never strikes (the same place )?twice|bulls? (hate|are angered by) (the colou?r )?"
    r"red|shaving makes (hair|it) grow (back )?(thicker|faster)|homeopath\w* (works|cures)|"
    r"evolution is just a theory|earth is (only )?(6,?000|six thousand) years|vaccines?[^.]{0,30}"
    r"microchips?|bats are blind|lose most (of your )?(body )?heat through (your|the) head|"
    r"blood is blue|tongue map|alcohol (kills brain cells|warms you)|carrots[^.]{0,30}night "
    r"vision|wait \w+ minutes after eating[^.]{0,20}swim|(5g|wi-?fi|microwaves?)[^.]{0,30}"
    r"cause[sd]? cancer|gmos?[^.]{0,20}cause[sd]? cancer|ivermectin[^.]{0,20}cures?|"
    r"hydroxychloroquine[^.]{0,20}cures?|bleach[^.]{0,20}cures?|fluoride[^.]{0,30}mind control|"
    r"holocaust (never happened|is a hoax|was a hoax)|birds aren't real|hollow earth|"
    r"humans (evolved|descended) from (monkeys|chimps|chimpanzees)|"
    r"hair and nails (keep|continue) (growing|to grow) after death|cold weather causes colds|"
    r"flush(es|ing)? (out )?(the )?toxins|detox(es|ing)? (your|the) (body|liver|blood)|"
    r"einstein failed (math|maths)|carbon dating is (a )?(fraud|fake|wrong|lie))",
    _I,
)
_CONSPIRACY = re.compile(
    r"\b(hoax|cover[- ]?up|they don't want you to know|sheeple|do your own research|"
    r"mainstream media (hides|won't)|big pharma)\b",
    _I,
)
_REFUTES = re.compile(
    r"\b(myth|debunked|misconception|contrary to popular belief|no (evidence|link)|"
    r"isn't true|is false|not true|disproved|fact-check\w*|found no|no (increased|higher|"
    r"elevated) risk|no association|not (linked|associated))\b",
    _I,
)
_NEGATION = re.compile(
    r"\b(don't|doesn't|do not|does not|didn't|did not|never|no|not|isn't|"
    r"aren't|wasn't|weren't)\W+(\w+\W+){0,2}$",
    _I,
)
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*\s?%?")
_UNIT = re.compile(
    r"\d\s?(%|°[CF]|kg|kilos?|mg|mmhg|km|miles?|minutes?|hours?|nights?|years?|participants|"
    r"people|adults|children|trials|studies|sign-ups|users)",
    _I,
)
_PROPER = re.compile(r"(?<![.!?]\s)(?<!^)\b[A-Z][a-zA-Z]+")
_URGENT = re.compile(
    r"\b(urgent|emergency|asap|right now|immediately|danger|dangerous|bleeding|chest pain|"
    r"suicid\w*|hurt myself|can't breathe)\b",
    _I,
)
_SENTENCE = re.compile(r"(?<=[.!?])\s+")


def _count(pattern: re.Pattern[str], text: str, cap: int = 4) -> int:
    return min(cap, len(pattern.findall(text)))


def _clamp(value: float) -> float:
    return round(min(1.0, max(0.0, value)), 3)


def _myths(text: str) -> int:
    """Known-debunked claims asserted (not refuted) in the text."""
    asserted = 0
    for sentence in _SENTENCE.split(text):
        match = _MYTHS.search(sentence)
        if match is None or _REFUTES.search(sentence):
            continue
        if not _NEGATION.search(sentence[: match.start()]):  # "vaccines don't cause autism"
            asserted += 1
    return asserted


def cue_scores(text: str) -> dict[ReasoningType, float]:
    """How strongly the text shows each reasoning type (0: no cue at all)."""
    numbers = _count(_NUMBER, text)
    study = _count(_STUDY_STRONG, text) + 0.3 * _count(_STUDY_WEAK, text)
    sourced = bool(_SOURCE.search(text) or _ACRONYM_SOURCE.search(text))
    empirical = study + 0.8 * min(2, _count(_METHOD, text)) + 0.5 * numbers
    if numbers and _FINDING_VERB.search(text):
        empirical += 0.5
    if study == 0 and not sourced:
        empirical *= 0.6  # numbers alone are specificity, not a study
    # A role alone ("call the dentist") is no appeal to authority; what the expert says is.
    role = 0.6 * _count(_EXPERT_ROLE, text, 2) + 1.5 * bool(_AS_A_PRO.search(text))
    expert = role + _count(_EXPERT_VERB, text, 2) + 1.2 * bool(_INSTITUTION_SAYS.search(text))
    if role:
        expert += 0.5 * bool(_SAYS.search(text)) + 0.5 * sourced
    logical = (
        _count(_LOGIC_STRONG, text)
        + _count(_IF_THEN, text, 2)
        + bool(_PREMISE_OPENER.search(text))
        + 0.4 * _count(_LOGIC_WEAK, text, 3)
    )
    anecdote = 1.2 * _count(_ANECDOTE, text, 2) if _CONCLUSION.search(text) else 0.0
    return {
        ReasoningType.DEBUNKED_CLAIM: 3.0 * _myths(text) + 1.5 * _count(_CONSPIRACY, text, 2),
        ReasoningType.SOCIAL_PRESSURE: 1.5 * _count(_SOCIAL, text),
        ReasoningType.EMOTIONAL_APPEAL: 1.2 * _count(_EMOTION, text)
        + 0.3 * bool(_EXCLAIM.search(text)),
        ReasoningType.ANECDOTAL: anecdote,
        ReasoningType.EMPIRICAL: empirical,
        ReasoningType.EXPERT: expert,
        ReasoningType.LOGICAL: logical,
    }


_PRESSURE = (ReasoningType.SOCIAL_PRESSURE, ReasoningType.EMOTIONAL_APPEAL)
_ARGUMENT = (
    ReasoningType.EMPIRICAL,
    ReasoningType.EXPERT,
    ReasoningType.LOGICAL,
    ReasoningType.ANECDOTAL,
)


def reasoning_type(scores: dict[ReasoningType, float]) -> ReasoningType:
    """Pick the type: debunked claims first, then pressure unless real evidence outweighs it
    two to one, then the strongest kind of argument; nothing strong enough is no_argument."""
    if scores[ReasoningType.DEBUNKED_CLAIM] >= 3.0:
        return ReasoningType.DEBUNKED_CLAIM
    best_arg = max(_ARGUMENT, key=lambda t: scores[t])
    best_push = max(_PRESSURE, key=lambda t: scores[t])
    if scores[best_push] >= 1.0 and scores[best_push] * 2.0 >= scores[best_arg]:
        return best_push
    if scores[best_arg] >= 1.0:
        return best_arg
    if scores[ReasoningType.DEBUNKED_CLAIM] >= 1.5:
        return ReasoningType.DEBUNKED_CLAIM
    return ReasoningType.NO_ARGUMENT


_PRIOR: dict[ReasoningType, float] = {
    ReasoningType.EMPIRICAL: 0.85,
    ReasoningType.EXPERT: 0.75,
    ReasoningType.LOGICAL: 0.65,
    ReasoningType.ANECDOTAL: 0.3,
    ReasoningType.EMOTIONAL_APPEAL: 0.1,
    ReasoningType.SOCIAL_PRESSURE: 0.1,
    ReasoningType.DEBUNKED_CLAIM: 0.05,
    ReasoningType.NO_ARGUMENT: 0.1,
}
"""How much each way of arguing is worth as evidence before looking at the details."""
_CAP: dict[ReasoningType, float] = {
    ReasoningType.ANECDOTAL: 0.4,
    ReasoningType.EMOTIONAL_APPEAL: 0.25,
    ReasoningType.SOCIAL_PRESSURE: 0.25,
    ReasoningType.DEBUNKED_CLAIM: 0.15,
    ReasoningType.NO_ARGUMENT: 0.3,
}
"""Whatever its details, a message arguing this way scores at most this."""


def signals(text: str, kind: ReasoningType) -> dict[str, float]:
    """The five credibility signals of a text (each 0-1)."""
    words = len(text.split())
    numbers = _count(_NUMBER, text)
    units = _count(_UNIT, text, 3)
    proper = _count(_PROPER, text)
    study = _count(_STUDY_STRONG, text, 3)
    method = _count(_METHOD, text, 3)
    hedges = _count(_HEDGE, text, 3)
    absolutes = _count(_ABSOLUTE, text, 3)
    named = _count(_SOURCE, text, 2) + _count(_ACRONYM_SOURCE, text, 2)
    expert = min(2, _count(_EXPERT_ROLE, text, 2) + bool(_AS_A_PRO.search(text)))
    pressure = _count(_SOCIAL, text, 3) + _count(_EMOTION, text, 3)
    specificity = 0.1 + 0.12 * numbers + 0.06 * proper + 0.06 * units + 0.1 * (words >= 15)
    grounding = 0.1 + 0.2 * study + 0.08 * min(numbers, 3) + 0.12 * min(named, 2) + 0.1 * method
    if kind is ReasoningType.ANECDOTAL:
        grounding = max(grounding, 0.3)  # something happened to someone, once
    rigor = 0.2 + 0.15 * method + 0.08 * hedges + 0.08 * study - 0.1 * absolutes
    if kind is ReasoningType.LOGICAL:
        rigor += 0.3
    source = 0.1 + 0.22 * min(named, 2) + 0.18 * expert + 0.06 * study
    if _WEAK_SOURCE.search(text):
        source = min(source, 0.2)
    objectivity = 0.75 + 0.05 * hedges - 0.25 * pressure - 0.08 * absolutes
    objectivity -= 0.1 * bool(_EXCLAIM.search(text))
    if kind is ReasoningType.ANECDOTAL:
        objectivity -= 0.15
    return {
        "specificity": _clamp(specificity),
        "grounding": _clamp(grounding),
        "rigor": _clamp(rigor),
        "source_quality": _clamp(source),
        "objectivity": _clamp(objectivity),
    }


def combined_score(kind: ReasoningType, sig: dict[str, float]) -> float:
    """Half the type's prior, half the weighted signals, capped for weak ways of arguing."""
    detail = (
        0.25 * sig["grounding"]
        + 0.2 * sig["rigor"]
        + 0.2 * sig["source_quality"]
        + 0.15 * sig["specificity"]
        + 0.2 * sig["objectivity"]
    )
    score = 0.5 * _PRIOR[kind] + 0.5 * detail
    return _clamp(min(score, _CAP.get(kind, 1.0)))


_NOT_TOPICS = frozenset(
    """study studies trial trials research data found find finds show shows showed shown
    published measured according report reported evidence experts expert says said agree agrees
    everyone everybody nobody accept admit believe cared care please sure think thought feel
    people percent average roughly about around since because therefore definitely clearly
    obviously always never seriously honestly literally actually basically already still""".split()
)


def topics_of(text: str, limit: int = 3) -> list[str]:
    """Subject words of a message, leaving out argument cues, adverbs and contractions."""
    words = [
        w
        for w in keywords(text, 12)
        if w not in _NOT_TOPICS and not w.endswith("ly") and "'" not in w and "-" not in w
    ]
    return words[:limit]


def _summary(text: str) -> str:
    first = _SENTENCE.split(text.strip(), maxsplit=1)[0] if text.strip() else ""
    return f"The user says: {first[:200]}" if first else ""
