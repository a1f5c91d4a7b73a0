"""The texts of the long-term memory bench (section 6): the 50 facts with the question that
asks for each and the word the prompt must carry, the chit-chat that never mentions them, and
random memories and questions for the 10^5-memory search."""

from __future__ import annotations

import random

__all__ = ["FACTS", "filler", "long_filler", "memory_text", "query_text"]

# (said early on, asked at the end, the distinctive text the prompt must carry)
FACTS: tuple[tuple[str, str, str], ...] = (
    ("My sister's name is Ana.", "What's my sister's name again?", "Ana"),
    ("I keep my spare key under the blue pot by the door.", "Where is my spare key?", "blue pot"),
    ("My bike is a green Brompton.", "What kind of bike do I ride?", "Brompton"),
    ("I'm allergic to peanuts, badly.", "Do I have any allergies you know of?", "peanuts"),
    ("My dog is a beagle called Biscuit.", "What's my dog called?", "Biscuit"),
    ("I work as a radiographer at St Mary's.", "What's my job, do you remember?", "radiographer"),
    ("My wifi password is heron-lantern-42.", "What was my wifi password?", "heron-lantern"),
    ("My flight to Lisbon leaves on the 14th.", "When does my flight leave?", "Lisbon"),
    ("My mother's birthday is on the 3rd of June.", "When is my mother's birthday?", "June"),
    ("I drive a silver Skoda Octavia.", "What car do I drive?", "Octavia"),
    ("My favourite band is Khruangbin.", "Which band is my favourite?", "Khruangbin"),
    ("My landlord is called Mr Okafor.", "Who is my landlord?", "Okafor"),
    ("I'm learning Portuguese on Tuesdays.", "Which language am I learning?", "Portuguese"),
    ("My blood type is O negative.", "What's my blood type?", "O negative"),
    ("My daughter goes to Hillcrest Primary.", "Which school does my daughter go to?", "Hillcrest"),
    ("My gym locker combination is 7319.", "What's my locker combination?", "7319"),
    ("My cat Pixel only eats salmon pâté.", "What does my cat eat?", "salmon"),
    ("My dentist is Dr Lindqvist on Elm Street.", "Who is my dentist?", "Lindqvist"),
    ("I take my coffee as a flat white with oat milk.", "How do I take my coffee?", "oat milk"),
    ("My brother lives in Winnipeg now.", "Where does my brother live?", "Winnipeg"),
    ("My passport expires in October 2027.", "When does my passport expire?", "2027"),
    ("My favourite film is Paddington 2.", "What's my favourite film?", "Paddington"),
    ("My partner's name is Tomasz.", "What's my partner's name?", "Tomasz"),
    (
        "I planted tomatoes and basil in the raised bed.",
        "What did I plant in the raised bed?",
        "basil",
    ),
    ("My laptop is a ThinkPad X1 Carbon.", "Which laptop do I have?", "ThinkPad"),
    ("My son plays the cello.", "Which instrument does my son play?", "cello"),
    ("My car insurance renews with Aviva in March.", "Who is my car insurance with?", "Aviva"),
    ("I ran the Berlin marathon in 3 hours 52.", "What was my marathon time?", "3 hours 52"),
    ("My grandmother was born in Cork.", "Where was my grandmother born?", "Cork"),
    ("My bank is Monzo.", "Which bank do I use?", "Monzo"),
    ("My shoe size is 43.", "What's my shoe size?", "43"),
    (
        "My best friend from school is called Priyanka.",
        "Who is my best friend from school?",
        "Priyanka",
    ),
    ("I'm vegetarian since 2019.", "Since when am I vegetarian?", "2019"),
    ("My neighbour's parrot is called Captain.", "What's my neighbour's parrot called?", "Captain"),
    (
        "My wedding anniversary is the 21st of September.",
        "When is my wedding anniversary?",
        "September",
    ),
    (
        "I parked the van on level 4 of the Queen Street car park.",
        "Where did I park the van?",
        "level 4",
    ),
    ("My favourite dish is mushroom risotto.", "What's my favourite dish?", "risotto"),
    ("My phone is a Pixel 8 in mint.", "Which phone do I have?", "Pixel 8"),
    ("My piano teacher is Mrs Abernathy.", "Who is my piano teacher?", "Abernathy"),
    ("My father supports Celtic.", "Which football team does my father support?", "Celtic"),
    (
        "I keep my passport in the top drawer of the oak desk.",
        "Where do I keep my passport?",
        "oak desk",
    ),
    ("My house number is 58.", "What's my house number?", "58"),
    ("My niece Lucia turns six in April.", "How old is my niece turning?", "Lucia"),
    ("My boss is called Henrietta.", "What's my boss called?", "Henrietta"),
    ("My favourite tea is lapsang souchong.", "Which tea is my favourite?", "lapsang"),
    ("My allotment plot is number 12B.", "Which allotment plot is mine?", "12B"),
    ("I'm reading Middlemarch at the moment.", "Which book am I reading?", "Middlemarch"),
    ("My uncle owns a bakery in Tbilisi.", "What does my uncle own?", "Tbilisi"),
    ("My yoga class is on Thursday evenings.", "When is my yoga class?", "Thursday"),
    ("My first car was a yellow Fiat Panda.", "What was my first car?", "Panda"),
)

_OPENERS = (
    "Honestly,",
    "So,",
    "Anyway,",
    "By the way,",
    "Funny thing,",
    "Random thought:",
    "Okay so",
    "Hmm,",
)
_CHAT = (
    "the weather has been so grey all week",
    "I watched a documentary about octopuses last night",
    "do you think it will rain tomorrow afternoon",
    "I need to sort out the recycling before the weekend",
    "what is a good way to stay focused in the afternoon",
    "the neighbours were playing loud music again",
    "I finally cleaned the windows today",
    "any tips for falling asleep earlier",
    "I found a nice podcast about history",
    "the train was late again this morning",
    "what should I cook for dinner that is quick",
    "I am thinking about repainting the hallway",
    "tell me a fun fact about space",
    "how many steps a day is reasonable",
    "I bought new curtains and they look great",
    "the supermarket was packed today",
    "what is the difference between weather and climate",
    "I keep forgetting to water the houseplants",
    "is it worth learning to touch type",
    "the sunset was lovely this evening",
    "recommend a board game for four people",
    "I tried a new recipe with lentils",
    "how do I get better at small talk",
    "my back hurts a bit from sitting all day",
    "why do leaves change colour in autumn",
)


def filler(n: int) -> str:
    """The n-th chit-chat message: ordinary, and never about any of :data:`FACTS`."""
    return f"{_OPENERS[n % len(_OPENERS)]} {_CHAT[(n * 7) % len(_CHAT)]}."


def long_filler(n: int, sentences: int = 6) -> str:
    """A long chit-chat message (about 100 tokens): turns the token budget trims long before
    ``history.max_turns`` would."""
    return " ".join(filler(n * sentences + k) for k in range(sentences))


_RELATIONS = ("sister", "brother", "cousin", "aunt", "uncle", "niece", "nephew", "neighbour")
_NAMES = ("Ana", "Ravi", "Chloe", "Mateo", "Ingrid", "Kwame", "Yuki", "Bram", "Leila", "Otto")
_PETS = ("dog", "cat", "rabbit", "parrot", "tortoise", "hamster")
_PET_NAMES = ("Biscuit", "Pixel", "Mochi", "Rex", "Juniper", "Pickle", "Nova", "Bean")
_THINGS = ("spare key", "passport", "bike lock", "charger", "umbrella", "tax papers")
_PLACES = ("blue pot", "top drawer", "hall cupboard", "glovebox", "bookshelf", "shoe rack")
_COLOURS = ("green", "red", "silver", "black", "yellow", "white")
_BRANDS = ("Brompton", "Trek", "Skoda", "Fiat", "Volvo", "Toyota", "Giant", "Peugeot")
_FOODS = ("peanuts", "shellfish", "gluten", "lactose", "sesame", "kiwi")
_JOBS = ("radiographer", "teacher", "plumber", "accountant", "nurse", "designer", "chef")
_CITIES = ("Lisbon", "Oslo", "Kyoto", "Denver", "Nairobi", "Porto", "Tallinn", "Quito")
_LANGS = ("Portuguese", "Japanese", "Welsh", "Korean", "Italian", "Swahili")
_DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday")
_HOBBIES = ("climbing", "pottery", "chess", "running", "knitting", "sailing")


def memory_text(rng: random.Random) -> str:
    """A random fact of the kind the bot remembers (the 10^5-memory search corpus)."""
    c = rng.choice
    templates = (
        lambda: f"My {c(_RELATIONS)}'s name is {c(_NAMES)}",
        lambda: f"My {c(_PETS)} is called {c(_PET_NAMES)}",
        lambda: f"I keep my {c(_THINGS)} in the {c(_PLACES)}",
        lambda: f"My {c(('bike', 'car', 'scooter'))} is a {c(_COLOURS)} {c(_BRANDS)}",
        lambda: f"I'm allergic to {c(_FOODS)}",
        lambda: f"I work as a {c(_JOBS)} in {c(_CITIES)}",
        lambda: f"My flight to {c(_CITIES)} leaves on the {rng.randint(1, 28)}th",
        lambda: f"I'm learning {c(_LANGS)} on {c(_DAYS)}s",
        lambda: f"My {c(_RELATIONS)} lives in {c(_CITIES)}",
        lambda: f"I go {c(_HOBBIES)} every {c(_DAYS)} evening",
        lambda: f"My favourite colour is {c(_COLOURS)}",
        lambda: f"The gate code at work is {rng.randint(1000, 9999)}",
    )
    return c(templates)()


def query_text(rng: random.Random) -> str:
    """A random question of the kind that searches those memories."""
    c = rng.choice
    return c(
        (
            f"What's my {c(_RELATIONS)}'s name?",
            f"What is my {c(_PETS)} called?",
            f"Where do I keep my {c(_THINGS)}?",
            "What kind of bike do I have?",
            "Am I allergic to anything?",
            "What do I do for work?",
            f"When is my flight to {c(_CITIES)}?",
            "Which language am I learning?",
            f"Where does my {c(_RELATIONS)} live?",
            f"Which day do I go {c(_HOBBIES)}?",
            "What's my favourite colour?",
            "What is the gate code at work?",
        )
    )
