"""Word lists of the offline fact heuristic (`tasks.facts.patterns`): general English, no data set.

They name what people say about themselves (relations, occupations, diets, activities, drinks,
languages, animals, vehicles and phones) and how a request to the assistant is scoped (code,
answer length, format, language, name, tone). Each list is world knowledge, not phrasing taken
from any conversation; the heuristic must keep working on sentences it has never seen.
"""

from __future__ import annotations

from memory.text import relations

PARTNER = relations.PARTNER
FAMILY = relations.FAMILY
RELATIONS = relations.RELATIONS
"""Relations (shared with the memory layer: `memory.text.relations`)."""

OCCUPATIONS = frozenset(
    """engineer developer analyst designer teacher nurse doctor student manager lawyer chef cook
    writer author artist scientist researcher consultant accountant architect programmer
    pharmacist electrician plumber mechanic photographer journalist professor lecturer therapist
    counselor counsellor dentist vet veterinarian pilot firefighter officer salesperson barista
    waiter waitress cashier musician painter freelancer founder ceo cto cfo intern paramedic
    surgeon librarian translator editor baker farmer carpenter driver coach trainer
    physiotherapist psychologist economist entrepreneur director administrator clerk technician
    specialist assistant secretary recruiter marketer producer scientist actor actress dancer
    singer banker broker agent planner instructor tutor caregiver carer midwife optician
    radiologist surveyor""".split()
)
DIETS = frozenset(
    "vegetarian vegan pescatarian pescetarian keto paleo flexitarian carnivore gluten-free".split()
)
EXERCISE = frozenset(
    """run running jog jogging swim swimming cycle cycling bike biking yoga pilates gym climb
    climbing bouldering hike hiking tennis football soccer basketball volleyball row rowing box
    boxing dance dancing ski skiing surf surfing skate skating workout crossfit lift lifting
    squash badminton golf karate judo martial walk walking marathon triathlon spin
    spinning""".split()
)
"""Ways to keep fit: a habit naming one is the `habit:exercise` attribute."""
DRINK_WORDS = frozenset(
    """coffee coffees espresso espressos latte lattes cappuccino cappuccinos americano mocha
    macchiato cortado flat white tea teas matcha chai juice smoothie smoothies water beer wine
    kombucha soda sodas coke cola pop lemonade seltzer sparkling drink drinks""".split()
)
"""Drinks (their families, for "quit coffee" ending a habit of espressos, are
`memory.knowledge.facts.DRINK_FAMILIES`)."""
LANGUAGES = frozenset(
    """english french spanish portuguese italian german dutch japanese chinese mandarin cantonese
    korean arabic russian polish swedish norwegian danish finnish greek turkish hindi urdu
    hebrew thai vietnamese indonesian czech hungarian romanian ukrainian catalan basque welsh
    irish latin swahili""".split()
)
ANIMALS = frozenset(
    """dog dogs cat cats puppy kitten parrot hamster rabbit bunny fish goldfish turtle tortoise
    horse pony snake lizard gecko bird budgie beagle labrador poodle terrier retriever spaniel
    collie bulldog chihuahua dachshund husky pug greyhound whippet shepherd corgi dalmatian boxer
    rottweiler doberman schnauzer pomeranian maltese labradoodle cockapoo mutt tabby""".split()
)
CAR_WORDS = frozenset(
    """car cars suv van truck pickup hatchback sedan convertible volkswagen vw tesla toyota
    honda ford bmw audi renault peugeot fiat volvo kia hyundai mercedes nissan mazda subaru
    skoda citroen citroën porsche jeep chevrolet chevy dacia seat mini lexus jaguar""".split()
)
PHONE_WORDS = frozenset(
    "phone smartphone iphone pixel galaxy samsung oneplus xiaomi nokia motorola huawei".split()
)
INSTRUMENTS = frozenset(
    """guitar piano violin viola cello drums drum ukulele saxophone sax flute clarinet bass
    trumpet trombone harp keyboard accordion banjo mandolin harmonica oboe""".split()
)
WORKPLACES = frozenset(
    """school hospital university college company startup start-up bank firm agency clinic
    restaurant cafe café shop store factory office lab laboratory studio charity council
    ministry hotel bakery library museum airline airport warehouse pharmacy practice nursery
    garage salon gym newspaper magazine""".split()
)
"""Nouns that end the name of a workplace written in lower case ("a secondary school")."""
PROGRAMMING = frozenset(
    """typescript javascript python java kotlin swift rust go golang ruby php scala haskell
    elixir c c++ c# csharp sql bash r julia dart lua perl""".split()
)

INSTRUCTION_SCOPES: dict[str, tuple[frozenset[str], tuple[str, ...]]] = {
    "code": (
        PROGRAMMING | frozenset("code coding snippet snippets example examples".split()),
        ("code", "programming", "function", "script", "snippet", "example", "implement"),
    ),
    "length": (
        frozenset(
            """short shorter brief concise long longer detailed length terse sentence sentences
            words paragraph paragraphs lines""".split()
        ),
        ("answer", "reply", "response", "length"),
    ),
    "format": (
        frozenset("bullet bullets markdown table tables list lists heading headings emoji".split()),
        ("answer", "reply", "format"),
    ),
    "name": (frozenset(), ("name", "address", "call")),
    "language": (LANGUAGES, ("answer", "reply", "language")),
    "tone": (
        frozenset("formal informal casual friendly polite jokes humour humor swear".split()),
        ("answer", "reply", "tone"),
    ),
    "units": (
        frozenset("metric imperial celsius fahrenheit kilometres miles kilograms pounds".split()),
        (
            "units",
            "measurement",
            "temperature",
            "distance",
            "far",
            "weight",
            "heavy",
            "speed",
            "hot",
            "cold",
        ),
    ),
}
"""Instruction topics: the words that identify each, and the concepts a request must touch for
the instruction to apply ("code" applies to a request to write a function). Topics without
concepts of their own (length, format, language, tone) apply to every answer."""
GENERAL_SCOPES = frozenset({"length", "format", "language", "tone", "name"})

STANDING = (
    r"(?i)\b(always|never|from now on|going forward|in (?:the )?future|by default|every time|"
    r"whenever|when you|each time|no more|stop|keep (?:your|the|it|them|answers|replies|things)|prefer|"
    r"instead|switch to|change to|stick to|go back to|call me|refer to me|address me|no need to|"
    r"(?:don't|do not) (?:ever|use|write|give|call|answer|reply|add|include|bother)|"
    r"(?:don't|do not) have to|any ?more)\b"
)
"""Words that make a request to the assistant a standing one, not a one-off."""
FAVOURITE_SYNONYMS = {
    "movie": "film",
    "movies": "film",
    "films": "film",
    "writer": "author",
    "novelist": "author",
    "authors": "author",
    "series": "show",
    "tv show": "show",
    "programme": "show",
    "program": "show",
    "track": "song",
    "tune": "song",
    "dish": "food",
    "meal": "food",
    "group": "band",
    "artist": "musician",
    "singer": "musician",
}
"""Words for the same kind of favourite, so "favourite writer" replaces "favourite author"."""
HEDGES = frozenset("maybe perhaps probably might possibly guess suppose".split())
AFFIRMATIONS = (
    "yes",
    "yeah",
    "yep",
    "yup",
    "right",
    "correct",
    "exactly",
    "indeed",
    "sure",
    "of course",
    "absolutely",
    "definitely",
    "that's right",
)
IRREGULAR_THIRD = {
    "have": "has",
    "do": "does",
    "go": "goes",
    "am": "is",
    "are": "is",
    "'m": " is",
    "'re": " is",
    "'ve": " has",
    "don't": "doesn't",
    "haven't": "hasn't",
    "aren't": "isn't",
    "am not": "is not",
}
NOT_PRESENT = frozenset(
    """was were did had will would can could should might must may shall went got made took came
    saw said told gave found felt left kept met ran swam began drove flew bought sold thought
    brought taught caught won lost spent sent built wrote read put let set cut hit quit heard
    became grew knew threw drew ate drank sang rang sat stood understood wore woke chose rode
    forgot paid meant hurt broke spoke stole""".split()
)
ADVERBS = frozenset(
    """just finally recently now still also actually already officially currently really both all
    usually often always sometimes never mostly generally normally basically literally
    honestly even only""".split()
)
EVALUATIONS = frozenset(
    """amazing awesome awful beautiful best blast boring brutal bummer challenging cool crazy
    difficult exciting exhausting fantastic fun great hard horrible incredible insane intense
    lovely nightmare overwhelming perfect rough scary stressful struggle terrible tiring tough
    unreal wild wonderful worst""".split()
)
"""Words of a judgement ("my job was tough", "my car is the best"): how the speaker feels about
a thing at the moment, not a value of it that a later statement replaces. States a later
statement does replace ("my knee is fine now", "better", "okay") are not among them."""
INTENSIFIERS = frozenset(
    """so really very pretty super totally such quite a an the bit little kind sort of absolutely
    incredibly truly just kinda""".split()
)
"""Words that only grade a judgement ("pretty tough", "such a blast")."""
