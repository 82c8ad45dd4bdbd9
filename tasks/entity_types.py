"""The offline guess of what a capitalised name is: a person, a pet, an organisation, a place or
an event, from the words around it in ordinary English ("my cat Miso", "an offer from Shopify",
"we flew to Lisbon", "Dr. Patel"). Cues are read in a fixed order, most specific first; a name
with no cue is a person. An LLM does better when one is configured.

Pure functions: no I/O, no model.
"""

from __future__ import annotations

import re

from memory.schema import EntityType

_PETS = (
    r"(?:dog|cat|puppy|pup|kitten|kitty|pet|parrot|budgie|bird|hamster|guinea pig|rabbit|bunny|"
    r"horse|pony|goldfish|fish|turtle|tortoise|snake|lizard|gecko|ferret|chinchilla|rat|mouse|"
    r"greyhound|labrador|lab|retriever|poodle|terrier|beagle|spaniel|bulldog|collie|husky|"
    r"dachshund|corgi|pug|shepherd|mutt|tabby|doggo)"
)
_RELATIONS = (
    r"(?:mom|mum|mother|dad|father|parents?|sister|brother|sibling|wife|husband|partner|"
    r"girlfriend|boyfriend|fianc[ée]e?|son|daughter|kids?|child|baby|aunt|uncle|cousin|niece|"
    r"nephew|grandma|grandmother|grandpa|grandfather|grandson|granddaughter|friend|buddy|"
    r"roommate|flatmate|neighbou?r|boss|manager|colleague|coworker|co-worker|teammate|mentor|"
    r"teacher|coach|doctor|therapist|physio|dentist|classmate|ex|landlord|tutor|student)"
)
_POSSESSOR = r"(?:my|our|his|her|their|your|a|the)"

_TITLE = re.compile(r"\b(?:Dr|Mr|Mrs|Ms|Mx|Prof|Sir|Dame|Aunt|Uncle|Auntie|Grandma|Grandpa)\.?\s+$")
_PET_BEFORE = re.compile(
    rf"(?:\b{_POSSESSOR}\s+(?:\w+\s+){{0,2}}{_PETS}s?\s*,?\s+(?:(?:called|named)\s+)?"
    rf"|\b{_PETS}s?\s+(?:called|named)\s+)$",
    re.IGNORECASE,
)
_PET_AFTER = re.compile(
    rf"^(?:,\s+{_POSSESSOR}\s+(?:\w+\s+){{0,2}}{_PETS}\b"
    rf"|\s+(?:is|was)\s+(?:a|an|my|our)\s+(?:\w+\s+){{0,2}}{_PETS}\b"
    r"|\s+(?:wags|barks|meows|purrs|chirps)\b)",
    re.IGNORECASE,
)
_ORG_SUFFIX = re.compile(
    r"\b(?:Inc|Corp|Ltd|LLC|GmbH|PLC|University|College|School|Academy|Bank|Company|Co|Labs?|"
    r"Institute|Hospital|Clinic|Foundation|Group|Agency|Studios?|Systems|Technologies|Tech|"
    r"Solutions|Association|Club|Council|Ministry|Department|Society|Partners|Capital|Media|"
    r"Software|Airlines|Motors|Bakery|Cafe|Café|Restaurant|Store|Shop)$"
)
_ORG_BEFORE = re.compile(
    r"(?:\bwork(?:s|ed|ing)?\s+(?:at|for|with)|\bjobs?\s+(?:at|with)|\bjoin(?:s|ed|ing)?"
    r"|\bhired\s+(?:by|at)|\boffers?\s+from|\binterview(?:s|ed|ing)?\s+(?:at|with|for)"
    r"|\bintern(?:s|ed|ing|ship)?\s+(?:at|with)|\bstart(?:s|ed|ing)?\s+(?:at|with)"
    r"|\bemployed\s+(?:at|by)|\bteam\s+at|\boffice\s+at|\bquit|\bleft\s+my\s+job\s+at"
    r"|\bapplied\s+(?:to|at|for)|\bvolunteer(?:s|ed|ing)?\s+(?:at|with|for)"
    r"|\b(?:start-?up|company|firm|agency|brand|employer|client|charity|nonprofit|business|"
    r"organi[sz]ation|band|label)\s+(?:called\s+|named\s+)?)\s*(?:the\s+)?$",
    re.IGNORECASE,
)
_ORG_AFTER = re.compile(
    r"^(?:'s)?\s+(?:office|offices|headquarters|hq|ceo|hr|recruiter|stock|shares|app|website)\b",
    re.IGNORECASE,
)
_PERSON_BEFORE = re.compile(
    rf"(?:\b{_POSSESSOR}\s+(?:\w+\s+)?{_RELATIONS}s?\s*,?\s+(?:(?:called|named)\s+)?"
    r"|\b(?:with|and|told|asked|met|called|texted|emailed|thanked|visited)\s+)$",
    re.IGNORECASE,
)
_PERSON_AFTER = re.compile(
    rf"^(?:,\s+{_POSSESSOR}\s+(?:\w+\s+)?{_RELATIONS}\b"
    r"|\s+and\s+I\b|\s+(?:said|says|told|asked|thinks|thought|texted|called|wants|loves|is\s+"
    r"my)\b)",
    re.IGNORECASE,
)
_EVENT_WORD = re.compile(
    r"\b(?:Festival|Conference|Wedding|Marathon|Summit|Party|Concert|Cup|Championship|Expo|"
    r"Fair|Olympics|Week|Gala)$"
)
_EVENT_AFTER = re.compile(
    r"^\s+(?:marathon|festival|conference|wedding|concert|race|tournament|summit|fair|gala)\b",
    re.IGNORECASE,
)
_PLACE_WORD = re.compile(
    r"(?:^(?:Lake|Mount|Mt|Port|Fort|Cape|Isle|San|Santa|St)\s"
    r"|\s(?:City|Street|St|Road|Rd|Avenue|Ave|Park|Lake|River|Mountains?|Beach|Island|Islands|"
    r"Bay|Valley|County|Square|Bridge|Falls|Canyon|Coast|Heights|Hills|Springs|Village|Town|"
    r"Airport|Station|Province|State|Republic|Kingdom)$)"
)
_PLACE_BEFORE = re.compile(
    r"(?:\b(?:in|near|around|outside|across)\s+"
    r"|\b(?:go|goes|went|going|gone|fly|flew|flying|drive|drove|driving|travel\w*|trip|trips|"
    r"move|moved|moving|back|return\w*|head\w*|arriv\w*|hik\w*|road\s+trip|holiday|vacation|"
    r"honeymoon|commute|relocat\w*|live|lives|lived|living|born|based|raised|grew\s+up)\s+"
    r"(?:up\s+|down\s+|over\s+|back\s+|out\s+)?(?:to|from|in|at|into|through)\s+"
    r"|\bvisit(?:s|ed|ing)?\s+|\bcity\s+of\s+)(?:the\s+)?$",
    re.IGNORECASE,
)
_PLACES = frozenset(
    """Afghanistan Albania Algeria Argentina Armenia Australia Austria Bangladesh Belgium Bolivia
    Brazil Bulgaria Cambodia Cameroon Canada Chile China Colombia Croatia Cuba Cyprus Czechia
    Denmark Ecuador Egypt England Estonia Ethiopia Finland France Germany Ghana Greece Guatemala
    Hungary Iceland India Indonesia Iran Iraq Ireland Israel Italy Jamaica Japan Jordan Kenya
    Korea Latvia Lebanon Lithuania Luxembourg Malaysia Mexico Morocco Nepal Netherlands Nigeria
    Norway Pakistan Panama Peru Philippines Poland Portugal Romania Russia Scotland Senegal Serbia
    Singapore Slovakia Slovenia Spain Sweden Switzerland Syria Taiwan Tanzania Thailand Tunisia
    Turkey Uganda Ukraine Uruguay Venezuela Vietnam Wales Zimbabwe Europe Asia Africa America
    Amsterdam Athens Bangkok Barcelona Beijing Berlin Bogota Boston Brussels Budapest Cairo
    Chicago Copenhagen Delhi Dubai Dublin Edinburgh Florence Geneva Hamburg Helsinki Istanbul
    Jakarta Kyoto Lagos Lima Lisbon London Madrid Manchester Melbourne Miami Milan Montreal
    Moscow Mumbai Munich Nairobi Naples Oslo Osaka Paris Prague Rome Santiago Seattle Seoul
    Shanghai Stockholm Sydney Tokyo Toronto Vancouver Venice Vienna Warsaw Zurich Porto Lyon
    Marseille Seville Valencia Krakow Denver Austin Portland Atlanta Dallas Houston Phoenix""".split()
)
_MULTI_WORD_PLACES = frozenset(
    {
        "New York",
        "Los Angeles",
        "San Francisco",
        "Hong Kong",
        "New Zealand",
        "South Africa",
        "United States",
        "United Kingdom",
        "Buenos Aires",
        "Rio de Janeiro",
        "Mexico City",
        "New Delhi",
        "Sri Lanka",
        "Costa Rica",
        "Las Vegas",
        "New Orleans",
        "Cape Town",
    }
)


def entity_type(name: str, before: str, after: str) -> EntityType:
    """What `name` is, given the text `before` and `after` it (see the module docstring)."""
    before, after = before[-60:], after[:60]
    if _TITLE.search(before):
        return EntityType.PERSON
    if _PET_BEFORE.search(before) or _PET_AFTER.match(after):
        return EntityType.PET
    if _ORG_SUFFIX.search(name) or _ORG_BEFORE.search(before) or _ORG_AFTER.match(after):
        return EntityType.ORGANIZATION
    if _PERSON_BEFORE.search(before) or _PERSON_AFTER.match(after):
        return EntityType.PERSON
    if _EVENT_WORD.search(name) or _EVENT_AFTER.match(after):
        return EntityType.EVENT
    if (
        name in _MULTI_WORD_PLACES
        or name in _PLACES
        or _PLACE_WORD.search(name)
        or _PLACE_BEFORE.search(before)
        or before[-4:].lower() == "the "
    ):
        return EntityType.PLACE
    return EntityType.PERSON


def named_at_start(after: str) -> bool:
    """True when a capitalised word opening a sentence is a name by what follows it ("Luna, our
    kitten, ...", "Anna and I ...", "Marcus said ...")."""
    return bool(_PERSON_AFTER.match(after) or _PET_AFTER.match(after))
