"""Section 6: long-term memory. Does a fact said long ago reach the prompt, at what prompt cost,
and how fast is a memory search in a big database?

* **Fact retention**: one private conversation on the latency-0 fake in this process, through
  ``App`` and ``ChatService.chat`` with a 2,000-token history budget: 50 facts in the first 50
  turns, 200 turns of chit-chat that never mention them, then one natural question per fact in
  the same conversation. A question counts when the request the fake received carries the
  fact's distinctive word (the question itself never does).
* **Prompt size**: ``usage.prompt_tokens`` of every turn of that run, and the history part of
  each request (everything between the system messages and the new user message).
* **Search at 10^5 memories**: memories spread over 1,000 private chats, written by the real
  ``MemoryStore.add`` (one transaction each, as the bot writes them) in a child process that
  runs while the conversation above is measured; then timed ``MemoryStore.search`` calls.

Run ``python -m bench.memory seed PATH MEMORIES CHATS`` to seed a database alone.
"""

from __future__ import annotations

import asyncio
import random
import re
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from bench.common import make_settings, private
from bot.app import App
from bot.config import MemorySettings
from bot.context import Scope
from bot.llm.tokens import get_counter
from bot.memory.store import MemoryStore
from bot.storage.sqlite import SQLiteStore
from bot.testing.fake_llm import FakeLLM

HISTORY_BUDGET = 2000  # history.max_tokens of the retention run
FILLER_TURNS = 200
SAMPLE_TURNS = (10, 50, 100, 200, 250)
SEARCH_MEMORIES = 100_000
SEARCH_CHATS = 1000
SEARCH_CALLS = 500
SEARCH_WARMUP = 20
RETENTION_USER = "4242"
PROJECT = Path(__file__).resolve().parent.parent  # bench/ is not installed; children run here

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


@dataclass(slots=True)
class RetentionFigures:
    questions: int = 0
    carried: int = 0
    missed: list[str] = field(default_factory=list)  # the distinctive text of each miss
    prompt_tokens: list[int] = field(default_factory=list)  # usage, one per turn, turn 1 first
    history_tokens: list[int] = field(default_factory=list)  # history part of each request
    embedding_requests: int = 0  # /embeddings calls the fake received

    @property
    def share(self) -> float:
        return self.carried / self.questions if self.questions else float("nan")


@dataclass(frozen=True, slots=True)
class SearchFigures:
    memories: int
    chats: int
    seed_s: float
    calls: int
    p50_s: float
    p95_s: float
    hit_share: float  # searches that returned at least one memory


@dataclass(frozen=True, slots=True)
class EmbeddingFailure:
    error: str  # the embeddings run raised: the section still prints the rest


@dataclass(frozen=True, slots=True)
class MemoryFigures:
    retention: RetentionFigures
    search: SearchFigures
    with_embeddings: RetentionFigures | EmbeddingFailure | None = None


def embeddings_configurable() -> bool:
    """Whether this version of the bot has ``memory.embeddings.model`` to set."""
    field_info = MemorySettings.model_fields.get("embeddings")
    settings_type = field_info.annotation if field_info is not None else None
    return isinstance(settings_type, type) and "model" in getattr(settings_type, "model_fields", {})


def _carries(text: str, needle: str) -> bool:
    return re.search(rf"\b{re.escape(needle)}\b", text, re.IGNORECASE) is not None


def _history_tokens(messages: list[dict[str, object]]) -> int:
    counter = get_counter("gpt-4o-mini")
    lead = 0
    while lead < len(messages) and messages[lead].get("role") == "system":
        lead += 1
    return counter.count_messages(messages) - counter.count_messages(
        [*messages[:lead], messages[-1]]
    )


async def measure_retention(
    db_path: Path, *, memory: dict[str, object] | None = None
) -> RetentionFigures:
    """Facts, filler, then a question per fact, all in one private conversation."""
    # The bench's own data must not give answers away: no question or filler names a fact.
    said = [question for _, question, _ in FACTS] + [filler(n) for n in range(FILLER_TURNS)]
    for text in said:
        if any(_carries(text, needle) for _, _, needle in FACTS):
            raise ValueError(f"{text!r} names a fact")
    figures = RetentionFigures()
    async with FakeLLM() as fake:
        settings = make_settings(
            fake.base_url,
            db_path,
            history={"max_tokens": HISTORY_BUDGET},
            memory={"enabled": True, **(memory or {})},
        )
        ctx = private(RETENTION_USER, "Sam")
        async with App(settings) as app:

            async def turn(text: str) -> list[dict[str, object]]:
                reply = await app.service.chat(ctx, text)
                figures.prompt_tokens.append(reply.usage.prompt_tokens)
                messages: list[dict[str, object]] = fake.chat_requests[-1].json["messages"]
                figures.history_tokens.append(_history_tokens(messages))
                figures.embedding_requests += len(fake.embedding_requests)
                fake.requests.clear()
                return messages

            for fact, _, _ in FACTS:
                await turn(fact)
            for n in range(FILLER_TURNS):
                await turn(filler(n))
            for _, question, needle in FACTS:
                messages = await turn(question)
                prompt = "\n".join(str(m.get("content", "")) for m in messages)
                figures.questions += 1
                if _carries(prompt, needle):
                    figures.carried += 1
                else:
                    figures.missed.append(needle)
    return figures


# -- 10^5 memories ---------------------------------------------------------------------------

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


def _memory_text(rng: random.Random) -> str:
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


def _query_text(rng: random.Random) -> str:
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


async def seed_memories(path: Path, memories: int, chats: int) -> None:
    """``memories`` memories over ``chats`` private chats, each written by ``MemoryStore.add``."""
    rng = random.Random(6)
    store = SQLiteStore(path)
    await store.open()
    try:
        memory_store = MemoryStore(store)
        contexts = [private(str(10_000 + n)) for n in range(chats)]
        for n in range(memories):
            await memory_store.add(contexts[n % chats], _memory_text(rng))
    finally:
        await store.close()


async def seed_in_child(path: Path, memories: int, chats: int) -> asyncio.subprocess.Process:
    """Start the seeder in its own process (its own core) and return it, running."""
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bench.memory",
        "seed",
        str(path),
        str(memories),
        str(chats),
        cwd=PROJECT,
    )


async def measure_search(
    path: Path, memories: int, chats: int, seed_s: float, calls: int = SEARCH_CALLS
) -> SearchFigures:
    rng = random.Random(7)
    store = SQLiteStore(path)
    await store.open()
    try:
        memory_store = MemoryStore(store)
        times: list[float] = []
        hits = 0
        for n in range(SEARCH_WARMUP + calls):
            asker = private(str(10_000 + rng.randrange(chats)))
            audience = memory_store.audience(asker, asker.conversation_key(Scope.CHAT))
            query = _query_text(rng)
            started = time.perf_counter()
            found = await memory_store.search(audience, query)
            elapsed = time.perf_counter() - started
            if n >= SEARCH_WARMUP:
                times.append(elapsed)
                hits += bool(found)
    finally:
        await store.close()
    cuts = statistics.quantiles(times, n=100, method="inclusive")
    return SearchFigures(
        memories, chats, seed_s, calls, statistics.median(times), cuts[94], hits / calls
    )


async def measure_memory(root: Path, *, embeddings_model: str | None = None) -> MemoryFigures:
    """The whole section; the 10^5-memory seeder runs beside the conversation runs."""
    search_db = root / "memories.db"
    started = time.perf_counter()
    seeder = await seed_in_child(search_db, SEARCH_MEMORIES, SEARCH_CHATS)
    try:
        retention = await measure_retention(root / "retention.db")
        with_embeddings: RetentionFigures | EmbeddingFailure | None = None
        if embeddings_model is not None:
            try:
                with_embeddings = await measure_retention(
                    root / "retention-embeddings.db",
                    memory={"embeddings": {"model": embeddings_model}},
                )
            except Exception as exc:  # a feature still being built must not sink the table
                with_embeddings = EmbeddingFailure(f"failed: {exc!r}"[:200])
        if await seeder.wait() != 0:
            raise RuntimeError(f"the memory seeder failed with exit code {seeder.returncode}")
    finally:
        if seeder.returncode is None:
            seeder.terminate()
            await seeder.wait()
    seed_s = time.perf_counter() - started
    search = await measure_search(search_db, SEARCH_MEMORIES, SEARCH_CHATS, seed_s)
    return MemoryFigures(retention, search, with_embeddings)


def main(argv: list[str]) -> int:
    if len(argv) != 4 or argv[0] != "seed":
        sys.stderr.write("usage: python -m bench.memory seed PATH MEMORIES CHATS\n")
        return 2
    asyncio.run(seed_memories(Path(argv[1]), int(argv[2]), int(argv[3])))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
