"""LoCoMo, a public data set we did not write, read for :mod:`bench.recall_public`.

LoCoMo (Maharana et al., 2024, github.com/snap-research/locomo) holds 10 long conversations
between two people, about 590 messages each over 19-32 dated sessions, and questions about them,
each annotated with the messages that hold its answer (``evidence``, dialogue ids such as
``D1:3``). Recall measured on it is measured on text nobody here chose to suit the product.

The file (2.8 MB, CC BY-NC 4.0) is never committed: it is read from ``--data PATH``, else
``$PARLOUR_LOCOMO``, else :data:`CACHE`, which is filled from :data:`URL` when empty (checked
against :data:`SHA256`, so every run reads the same bytes).

What is kept: category 5 (adversarial: the answer is not in the conversation) and questions
without evidence are left out. A shared photo is kept as its caption, as a person would say it.
A handful of evidence ids are malformed in the file (``D8:6; D9:17``, ``D:11:26``, ``D30:05``):
they are read leniently, and ids naming no message of their conversation are dropped and counted.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
import urllib.request
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

URL = "https://raw.githubusercontent.com/snap-research/locomo/main/data/locomo10.json"
SHA256 = "79fa87e90f04081343b8c8debecb80a9a6842b76a7aa537dc9fdf651ea698ff4"
CACHE = Path("~/.cache/parlour-bench/locomo10.json")
ENV = "PARLOUR_LOCOMO"
# LoCoMo's categories as the figures name them (5, adversarial, is left out)
CATEGORIES = {4: "single facts", 2: "dates", 3: "open questions", 1: "several turns"}
_SESSION = re.compile(r"session_(\d+)")
_EVIDENCE = re.compile(r"D:?(\d+):0*(\d+)")


@dataclass(frozen=True, slots=True)
class Utterance:
    dia_id: str  # "D3:12": session 3, message 12
    speaker: str
    text: str  # with a shared photo's caption: "... [shares a photo: a dog on a beach]"
    at: float  # the session's date and time, seconds since the epoch (read as UTC)


@dataclass(frozen=True, slots=True)
class Question:
    text: str
    answer: str
    category: int
    evidence: tuple[str, ...]  # dia ids of the messages that answer it, each known, no repeats


@dataclass(frozen=True, slots=True)
class Conversation:
    sample_id: str
    speakers: tuple[str, str]
    utterances: tuple[Utterance, ...]  # in the order they were said
    questions: tuple[Question, ...]
    dropped_ids: int  # evidence ids that name no message of this conversation


class DataMissing(Exception):
    """The data set could not be found or fetched; the message says where to put it."""


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _where_to_put(path: Path, why: str) -> str:
    return (
        f"LoCoMo is not available ({why}): download {URL} and put it at {path},"
        f" or pass --data PATH, or set {ENV}=PATH."
    )


def locate(data: Path | None) -> Path:
    """The data file: ``data``, else ``$PARLOUR_LOCOMO``, else :data:`CACHE`, downloaded
    into it when missing. Raises :class:`DataMissing` with one sentence on failure."""
    chosen = data or (Path(os.environ[ENV]) if os.environ.get(ENV) else None)
    if chosen is not None:
        if not chosen.is_file():
            raise DataMissing(_where_to_put(chosen, f"no file at {chosen}"))
        if _sha256(chosen.read_bytes()) != SHA256:  # another version: figures not comparable
            sys.stderr.write(f"warning: {chosen} is not the LoCoMo file the figures were made on\n")
        return chosen
    path = CACHE.expanduser()
    if path.is_file() and _sha256(path.read_bytes()) == SHA256:
        return path
    try:
        with urllib.request.urlopen(URL, timeout=60) as response:
            body: bytes = response.read()
    except (OSError, ValueError) as exc:
        raise DataMissing(_where_to_put(path, f"download failed: {exc}")) from exc
    if _sha256(body) != SHA256:
        raise DataMissing(_where_to_put(path, "the download's sha256 did not match"))
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".part")
    partial.write_bytes(body)
    partial.replace(path)
    return path


def session_time(text: str) -> float:
    """``"1:56 pm on 8 May, 2023"`` as seconds since the epoch, read as UTC."""
    when = datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y")
    return when.replace(tzinfo=UTC).timestamp()


def _utterances(conversation: dict[str, Any]) -> list[Utterance]:
    sessions = sorted(
        (int(m.group(1)), key) for key in conversation if (m := _SESSION.fullmatch(key))
    )
    said: list[Utterance] = []
    for _, key in sessions:
        at = session_time(conversation[f"{key}_date_time"])
        for message in conversation[key]:
            text = str(message["text"])
            if message.get("blip_caption"):
                text += " [shares a photo: " + str(message["blip_caption"]) + "]"
            said.append(Utterance(str(message["dia_id"]), str(message["speaker"]), text, at))
    return said


def _evidence(ids: list[str], known: set[str]) -> tuple[tuple[str, ...], int]:
    """The question's evidence ids read leniently, known ones only, and how many were not."""
    found: list[str] = []
    dropped = 0
    for raw in ids:
        for part in re.split(r"[;,\s]+", raw.strip()):
            match = _EVIDENCE.fullmatch(part)
            dia_id = f"D{match.group(1)}:{match.group(2)}" if match else part
            if dia_id in known:
                if dia_id not in found:
                    found.append(dia_id)
            elif part:
                dropped += 1
    return tuple(found), dropped


def parse(samples: list[dict[str, Any]]) -> list[Conversation]:
    conversations = []
    for sample in samples:
        talk = sample["conversation"]
        said = _utterances(talk)
        known = {u.dia_id for u in said}
        questions: list[Question] = []
        dropped = 0
        for qa in sample["qa"]:
            category = int(qa["category"])
            if category not in CATEGORIES:
                continue
            evidence, lost = _evidence(list(qa.get("evidence") or []), known)
            dropped += lost
            if evidence:
                answer = str(qa.get("answer", ""))
                questions.append(Question(str(qa["question"]), answer, category, evidence))
        speakers = (str(talk["speaker_a"]), str(talk["speaker_b"]))
        conversations.append(
            Conversation(str(sample["sample_id"]), speakers, tuple(said), tuple(questions), dropped)
        )
    return conversations


def load(path: Path) -> list[Conversation]:
    samples: list[dict[str, Any]] = json.loads(path.read_text(encoding="utf-8"))
    return parse(samples)
