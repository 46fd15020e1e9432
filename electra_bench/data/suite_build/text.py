"""Text helpers shared by every part of the suite build: the normalisation that dedupe and the leak check
use, the sentence split, one-line cleaning and seeded RNGs that do not depend on PYTHONHASHSEED."""
from __future__ import annotations

import random
import re
import unicodedata
from typing import NamedTuple

_WORD = re.compile(r"[a-z0-9]+")
SENT_SPLIT = re.compile(r"(?<=[.!?])\s+|(?<=[.!?][\"')\]])\s+")


def norm(text: str) -> str:
    """Normalisation used for dedupe and overlap checks: lowercase ASCII alnum words."""
    return " ".join(_WORD.findall(text.lower()))


def sentences(text: str) -> list[str]:
    return [s for s in SENT_SPLIT.split(text) if s.strip()]


def clean(text: str) -> str:
    """One line of UTF-8 text: NFC, no tabs/newlines, single spaces."""
    text = unicodedata.normalize("NFC", text)
    text = text.replace("\ufeff", "")
    return re.sub(r"\s+", " ", text).strip()


def rng_for(seed: int, name: str) -> random.Random:
    # str seeds are hashed with sha512 by random.Random: independent of PYTHONHASHSEED
    return random.Random(f"{seed}:{name}")


class Derived(NamedTuple):
    """A derived task as its builder returns it: rows are (*texts, label) with every text `clean`ed and
    the label a string; `stats` holds the counts docs/suite.md reports (candidates, what each rule
    dropped, what `reject` dropped, the final balance)."""

    train: list
    dev: list
    stats: dict


def never(texts) -> bool:
    """The default `reject`: keep every candidate (the build passes the corpus and cross-task check)."""
    return False
