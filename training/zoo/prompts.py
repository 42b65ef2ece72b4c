"""Instructions for self-distillation and held-out evaluation, built offline and deterministically.

Three kinds, as the model cards report them: ``chat`` (prose questions), ``code`` (write or explain
Python) and ``rewrite`` (rewrite, summarise, correct or annotate a given text). Training prompts and
held-out prompts never share a topic, a coding task or a source passage: topics and tasks are split
by list, passages by the corpus's CRC split (training.lab_family.corpus.is_held_out).
"""
from __future__ import annotations

import functools
import random
import re

CHAT_TEMPLATES = [
    "Explain {t} in simple terms.",
    "What is {t}? Answer in a short paragraph.",
    "Why is {t} important?",
    "Give me three practical tips about {t}.",
    "Describe {t} to a ten-year-old.",
    "What are the main advantages and disadvantages of {t}?",
    "Write a short story that involves {t}.",
    "Write a short poem about {t}.",
    "What are some common misconceptions about {t}?",
    "How would you teach a beginner about {t}?",
    "Summarize the history of {t}.",
    "Write a short blog post introduction about {t}.",
    "What questions should I ask to learn more about {t}?",
    "Compare {t} with something from everyday life.",
]
# More ways people ask (prompt mix "chat", the shipped EAGLE-3 recipe's): conversational openings, requests for a format,
# an audience, an opinion. None is, or paraphrases, a held-out template below.
MORE_CHAT_TEMPLATES = [
    "I keep hearing about {t}. What is it all about?",
    "Could you give me an overview of {t}?",
    "How does {t} work?",
    "What is the most interesting fact about {t}?",
    "My friend asked me about {t} and I did not know what to say. Help me explain it.",
    "Write a few paragraphs about {t}.",
    "What do experts say about {t}?",
    "Give me a quick introduction to {t}.",
    "List five facts about {t}.",
    "Explain {t} step by step.",
    "Write an encyclopedia-style entry about {t}.",
    "What is the difference between {t} and {u}?",
    "How has {t} changed over time?",
    "What would the world be like without {t}?",
    "Write a short speech about {t}.",
    "Explain {t} as if I were a university student.",
    "Is {t} good or bad? Give a balanced answer.",
    "What are the key ideas behind {t}?",
    "Write a dialogue between a teacher and a student about {t}.",
    "Give me a fun lesson plan about {t}.",
    "What are the first things a curious person should read about {t}?",
    "Write a letter to a friend describing {t}.",
    "Answer briefly: what is {t} used for?",
    "Help me write an essay introduction about {t}.",
    "What surprising connections are there between {t} and {u}?",
    "Describe a day in the life of someone who works with {t}.",
]
HELDOUT_CHAT_TEMPLATES = [
    "Can you tell me about {t}?",
    "I want to understand {t}. Where should I start?",
    "Write a friendly explanation of {t} for a newsletter.",
    "What should everyone know about {t}?",
]
CHAT_TOPICS = """photosynthesis; the water cycle; gravity; black holes; volcanoes; earthquakes; the immune
system; vaccines; climate change; recycling; renewable energy; solar panels; wind turbines; electric cars;
the internet; computer viruses; password security; machine learning; neural networks; the stock market;
inflation; saving money; budgeting; compound interest; healthy eating; sleep; exercise; meditation;
stress; friendship; teamwork; leadership; public speaking; time management; learning a new language;
reading books; writing a resume; job interviews; remote work; gardening; composting; bees; coral reefs;
rainforests; deserts; the moon; Mars; the solar system; stars; the Big Bang; atoms; electricity;
magnets; light; sound; rainbows; clouds; thunderstorms; hurricanes; the ocean; whales; dinosaurs;
evolution; DNA; the heart; the brain; memory; dreams; coffee; tea; chocolate; bread baking; cooking
pasta; pizza; the Roman Empire; ancient Egypt; the pyramids; the printing press; the industrial
revolution; democracy; elections; human rights; museums; music; jazz; painting; photography; movies;
video games; chess; football; the Olympic Games; running a marathon; cycling; hiking; camping; travel
on a budget; airplanes; trains; bridges; skyscrapers; cities; traffic; public transport; libraries;
schools; homework; exams; mathematics; prime numbers; probability; statistics; geometry; algebra;
the number zero; clocks and time zones; calendars; maps; the compass; the wheel; fire; dogs; cats;
birds; migration of animals; honey; plastic pollution; air pollution; clean water; deforestation;
volunteering; kindness; gratitude; habits; procrastination; motivation; creativity; curiosity;
smartphones; social media; online privacy; email etiquette; open source software; cloud computing;
databases; robots; 3D printing; space exploration; satellites; GPS; weather forecasts; seasons;
tides; glaciers; rivers; mountains; islands; forests; agriculture; irrigation; rice; coffee farming;
fashion; recycling clothes; minimalism; moving to a new city; first aid; handwashing; allergies;
vitamins; hydration; posture; walking; yoga; swimming; tennis; basketball; board games; puzzles;
magic tricks; riddles; comedy; storytelling; poetry; novels; newspapers; podcasts; radio; television""".replace("\n", " ")
HELDOUT_CHAT_TOPICS = """the aurora borealis; octopuses; bicycles; lighthouses; origami; tornadoes;
the Silk Road; submarines; vaccines for pets; quantum computers; the Great Barrier Reef; mushrooms;
sourdough starters; noise pollution; bats; the metric system; typewriters; elevators; sleep in
animals; volcanic islands; paper money; batteries; sunscreen; honeybees in winter""".replace("\n", " ")

CODE_TASKS = """reverses a string; checks whether a number is prime; returns the factorial of n;
computes the n-th Fibonacci number; counts the vowels in a string; removes duplicates from a list while
keeping order; returns the largest element of a list; merges two sorted lists; checks whether a string is
a palindrome; flattens a nested list; counts word frequencies in a text; converts Celsius to Fahrenheit;
computes the average of a list of numbers; finds the second largest number in a list; reads a text file
and returns its lines; writes a list of strings to a file; sorts a list of dictionaries by a key; returns
the GCD of two numbers; checks whether two strings are anagrams; capitalizes every word in a sentence;
implements binary search; implements bubble sort; returns all even numbers from a list; sums the digits
of an integer; converts a binary string to an integer; generates a random password; validates an email
address with a regular expression; returns the transpose of a matrix; multiplies two matrices; finds the
most common element of a list; splits a list into chunks of size n; computes the running total of a list;
returns the intersection of two lists; checks whether a year is a leap year; converts a dictionary to a
list of tuples; counts lines in a file; finds the longest word in a sentence; rotates a list by k
positions; checks balanced parentheses; implements a stack class; implements a queue class; parses a CSV
line into fields; computes the distance between two points; converts seconds to hours, minutes and
seconds; returns the prime factors of a number; computes the power set of a list; finds all pairs that
sum to a target; returns the n largest items of a list; removes punctuation from a string; counts the
uppercase letters in a string; computes a moving average; reads a JSON file into a dictionary""".replace("\n", " ")
HELDOUT_CODE_TASKS = """returns the median of a list; checks whether a list is sorted; computes the
least common multiple of two numbers; counts the consonants in a string; interleaves two lists; returns
the digits of a number as a list; converts a string to title case without using title(); finds the
missing number in a list from 1 to n""".replace("\n", " ")
CODE_TEMPLATES = [
    "Write a Python function that {t}.",
    "Write a Python function that {t}. Include a docstring and an example.",
    "How do I write Python code that {t}?",
    "Show me a short Python program that {t}, and explain it.",
]
HELDOUT_CODE_TEMPLATES = ["Please write a Python function that {t}, with a short explanation."]
SNIPPET_TEMPLATES = [
    "Explain what this Python code does:\n\n```python\n{s}\n```",
    "Add comments to this Python code:\n\n```python\n{s}\n```",
    "Is there a bug in this code? Explain.\n\n```python\n{s}\n```",
]
REWRITE_TEMPLATES = [
    "Rewrite the following text in simpler words:\n\n{s}",
    "Summarize this text in two sentences:\n\n{s}",
    "Correct any grammar mistakes in this text and return it:\n\n{s}",
    "Rewrite this paragraph in a more formal tone:\n\n{s}",
    "Turn this text into a bulleted list of key points:\n\n{s}",
    "Paraphrase the following passage:\n\n{s}",
]
HELDOUT_REWRITE_TEMPLATES = [
    "Rewrite this text so a beginner can understand it:\n\n{s}",
    "Summarize the following in one short paragraph:\n\n{s}",
]
KINDS = ("chat", "code", "rewrite")
# build_prompts' mixes: instruction i is chat when i % cycle is in chat_slots, code when it is 1 (a coding task every
# other time, else a snippet to explain), rewriting otherwise. "default": half chat (the shipped data); "chat": three
# quarters chat, drawn from MORE_CHAT_TEMPLATES too (training only).
PROMPT_MIXES = {"default": (4, (0, 2)), "chat": (8, (0, 2, 3, 4, 6, 7))}


def _split(text: str) -> list[str]:
    return [t.strip() for t in text.split(";") if t.strip()]


def _functions(source: str, max_chars: int) -> list[str]:
    """Top-level or method functions of moderate length, dedented."""
    import textwrap

    out, lines = [], source.split("\n")
    starts = [i for i, line in enumerate(lines) if re.match(r"\s*def \w+\(", line)]
    for i in starts:
        indent = len(lines[i]) - len(lines[i].lstrip())
        j = i + 1
        while j < len(lines) and (not lines[j].strip() or len(lines[j]) - len(lines[j].lstrip()) > indent):
            j += 1
        body = textwrap.dedent("\n".join(lines[i:j])).strip()
        if 120 <= len(body) <= max_chars:
            out.append(body)
    return out


def _passages(docs: list[str], max_chars: int) -> list[str]:
    out = []
    for doc in docs:
        for para in re.split(r"\n\s*\n", doc):
            para = " ".join(para.split())
            if 160 <= len(para) <= max_chars and not para.startswith((">>>", "*", "-", "|")) and para.count("(") < 6:
                out.append(para)
    return out


@functools.lru_cache(maxsize=1)
def default_corpus():
    """The whole standard library's corpus (training.lab_family.corpus), read once per process: parsing every
    module takes seconds, and build_prompts only reads it."""
    from training.lab_family.corpus import build_corpus

    return build_corpus()


def build_prompts(split: str = "train", n: int = 2400, seed: int = 0, corpus=None,
                  mix: str = "default", chat_topics: list[str] | None = None) -> list[tuple[str, str]]:
    """``n`` (kind, instruction) pairs. Mix "default": about half chat, a quarter code, a quarter rewriting.
    Mix "chat" (training only): three quarters chat, from CHAT_TEMPLATES and MORE_CHAT_TEMPLATES, an eighth each
    code and rewriting. chat_topics (training only): the chat topics instead of CHAT_TOPICS (topics.py)."""
    if mix not in PROMPT_MIXES or (mix != "default" and split != "train"):
        raise ValueError(f"prompt mix {mix!r} is not one of {', '.join(PROMPT_MIXES)} (all but default: training only)")
    if chat_topics is not None and split != "train":
        raise ValueError("chat_topics replace the training topics: the held-out split keeps its own")
    cycle, chat_slots = PROMPT_MIXES[mix]
    rng = random.Random(f"zoo-prompts-{split}-{seed}")
    corpus = corpus or default_corpus()
    held = split != "train"
    topics = _split(HELDOUT_CHAT_TOPICS if held else CHAT_TOPICS) if chat_topics is None else list(chat_topics)
    tasks = _split(HELDOUT_CODE_TASKS if held else CODE_TASKS)
    code_docs = corpus.code_heldout if held else corpus.code_train
    prose_docs = corpus.prose_heldout if held else corpus.prose_train
    snippets = [s for doc in code_docs for s in _functions(doc, 700)]
    passages = _passages(prose_docs, 700)
    rng.shuffle(snippets)
    rng.shuffle(passages)
    chat_t = HELDOUT_CHAT_TEMPLATES if held else CHAT_TEMPLATES + (MORE_CHAT_TEMPLATES if mix == "chat" else [])
    code_t = HELDOUT_CODE_TEMPLATES if held else CODE_TEMPLATES
    rew_t = HELDOUT_REWRITE_TEMPLATES if held else REWRITE_TEMPLATES
    out = []
    for i in range(n):
        r = i % cycle
        if r in chat_slots:
            template = rng.choice(chat_t)
            fill = {"t": rng.choice(topics)}
            if "{u}" in template:
                fill["u"] = rng.choice([t for t in topics if t != fill["t"]])
            out.append(("chat", template.format(**fill)))
        elif r == 1:
            if i % (2 * cycle) == 1 or not snippets:
                out.append(("code", rng.choice(code_t).format(t=rng.choice(tasks))))
            else:
                out.append(("code", rng.choice(SNIPPET_TEMPLATES).format(s=snippets[(i // 8) % len(snippets)])))
        else:
            out.append(("rewrite", rng.choice(rew_t).format(s=passages[(i // 4) % len(passages)])))
    # no duplicates (templated chat prompts can repeat); keep order
    seen, unique = set(), []
    for kind, text in out:
        if text not in seen:
            seen.add(text)
            unique.append((kind, text))
    return unique


def heldout_prompts(per_kind: int = 4, seed: int = 0) -> dict[str, list[str]]:
    """Fixed held-out evaluation prompts, ``per_kind`` of each kind (never seen in training)."""
    prompts = build_prompts("heldout", n=per_kind * 16, seed=seed)
    return {kind: [t for k, t in prompts if k == kind][:per_kind] for kind in KINDS}
