"""Word-in-context task ``wordnet-wic`` derived from WordNet 3.0 (Debian ``wordnet-base``): pairs of
WordNet example sentences that contain the same target lemma (same part of speech), labelled "1" when
both examples belong to the same synset (same sense) and "0" when they belong to different synsets of
that lemma.  See `make_wic` for the pairing rules."""
from __future__ import annotations

import re
from collections import Counter, defaultdict
from pathlib import Path
from typing import NamedTuple

from .text import Derived, clean, norm, rng_for

# kind, registry name, version, downloaded file name, sha256 of that file (sources.SOURCES format).
# apt-get saves the file with the epoch url-escaped ("1%3a").
SOURCE = ("deb", "wordnet-base", "1:3.0-37", "wordnet-base_1%3a3.0-37_all.deb",
          "61060d960f9ada8fa120872312eccd3ecebfbab8c4579e4f5a74e1cf67620752")
WORDNET_DIR = "usr/share/wordnet"  # inside the unpacked package

POS_FILES = {"n": "noun", "v": "verb", "a": "adj", "r": "adv"}  # satellite adjectives "s" -> "a"
DEV_FRACTION = 0.25      # share of target lemmas (by lemma string, all POS together) that go to dev
PAIRS_PER_LABEL = 2      # per (lemma, POS): at most this many positive and as many negative pairs
MIN_WORDS = 2            # example sentences with fewer normalised words are dropped
MAX_JACCARD_GAP = 0.1    # a positive is kept only with a negative whose word overlap is this close

_WORD = re.compile(r"[a-z0-9]+")
_QUOTED = re.compile(r'"([^"]+)"')
_ADJ_MARKER = re.compile(r"\((?:a|p|ip)\)$")
_VOWELS = set("aeiou")


class Example(NamedTuple):
    """One WordNet example sentence: the cleaned sentence, POS (n/v/a/r; satellites are "a"), the synset
    offset and the synset's lemmas (lowercase, spaces for underscores) that occur in the sentence."""

    sentence: str
    pos: str
    offset: int
    lemmas: tuple


def _inflections(word: str, pos: str) -> set:
    """Simple regular inflections of one (head) word: -s/-es/-ies, -ed/-d/-ied, -ing, doubled final
    consonant, and -er/-est for adjectives and adverbs."""
    out = {word}
    if len(word) < 2:
        return out
    last = word[-1]
    cons_y = last == "y" and word[-2] not in _VOWELS
    if pos in ("n", "v"):
        out |= {word + "s", word + "es"}
        if cons_y:
            out.add(word[:-1] + "ies")
    if pos == "v":
        out |= {word + "ed", word + "ing"}
        if last == "e":
            out |= {word + "d", word[:-1] + "ing"}
        if cons_y:
            out.add(word[:-1] + "ied")
        if last not in _VOWELS and last not in "wxy" and word[-2] in _VOWELS:
            out |= {word + last + "ed", word + last + "ing"}
        if word.endswith("ie"):
            out.add(word[:-2] + "ying")
    if pos in ("a", "r"):
        out |= {word + "er", word + "est"}
        if last == "e":
            out |= {word + "r", word + "st"}
        if cons_y:
            out |= {word[:-1] + "ier", word[:-1] + "iest"}
        if last not in _VOWELS and last not in "wxy" and word[-2] in _VOWELS:
            out |= {word + last + "er", word + last + "est"}
    return out


def _read_exceptions(wn: Path) -> dict:
    """{pos: {base: {inflected, ...}}} from WordNet's morphological exception lists (single words only)."""
    exc = {}
    for pos, name in POS_FILES.items():
        table = defaultdict(set)
        path = wn / f"{name}.exc"
        if path.exists():
            for line in path.read_text(encoding="latin-1").splitlines():
                parts = line.split()
                if len(parts) >= 2 and "_" not in line:
                    for base in parts[1:]:
                        table[base.lower()].add(parts[0].lower())
        exc[pos] = table
    return exc


def _lemma_patterns(lemma: str, pos: str, exc: dict) -> list:
    """Token sequences that count as an occurrence of `lemma`: the head word (first word of a verb,
    last word otherwise) may be inflected, the other words must match exactly."""
    toks = _WORD.findall(lemma)
    if not toks:
        return []
    head = 0 if pos == "v" else len(toks) - 1
    forms = _inflections(toks[head], pos) | exc[pos].get(toks[head], set())
    if len(toks) == 1:
        forms |= exc[pos].get(lemma, set())
    return [tuple(toks[:head] + [f] + toks[head + 1:]) for f in sorted(forms)]


def _occurs(pattern: tuple, toks: list) -> bool:
    n = len(pattern)
    return any(tuple(toks[i:i + n]) == pattern for i in range(len(toks) - n + 1))


def _parse_line(line: str):
    """(offset, pos, lemmas, gloss) of one data.* synset line, or None for the licence header."""
    if line.startswith(" ") or "|" not in line:
        return None
    head, _, gloss = line.partition("|")
    f = head.split()
    offset, ss_type, w_cnt = int(f[0]), f[2], int(f[3], 16)
    lemmas = []
    for i in range(w_cnt):
        word = _ADJ_MARKER.sub("", f[4 + 2 * i])
        lemmas.append(word.replace("_", " ").lower())
    return offset, ("a" if ss_type == "s" else ss_type), lemmas, gloss.strip()


def read_wordnet(root: Path) -> list:
    """Every example sentence of WordNet (the double-quoted parts of each synset's gloss in
    `root`/usr/share/wordnet/data.{noun,verb,adj,adv}; `root` may also be that directory itself) as an
    `Example`, in file order.  `lemmas` lists the synset's lemmas found in the sentence (case-insensitive
    on `norm` words; the head word may carry a regular inflection or one from WordNet's *.exc lists);
    it may be empty."""
    root = Path(root)
    wn = root / WORDNET_DIR if (root / WORDNET_DIR).is_dir() else root
    exc = _read_exceptions(wn)
    examples = []
    for pos, name in POS_FILES.items():
        for line in (wn / f"data.{name}").read_text(encoding="latin-1").splitlines():
            parsed = _parse_line(line)
            if parsed is None:
                continue
            offset, ss_pos, lemmas, gloss = parsed
            for quoted in _QUOTED.findall(gloss):
                sent = clean(quoted)
                if not sent:
                    continue
                toks = _WORD.findall(sent.lower())
                found = []
                for lemma in dict.fromkeys(lemmas):
                    if any(_occurs(p, toks) for p in _lemma_patterns(lemma, ss_pos, exc)):
                        found.append(lemma)
                examples.append(Example(sent, ss_pos, offset, tuple(found)))
    return examples


def jaccard(a: str, b: str) -> float:
    """Jaccard similarity of the `norm` word sets of two texts."""
    x, y = set(norm(a).split()), set(norm(b).split())
    return len(x & y) / len(x | y) if x | y else 0.0


def make_wic(examples, seed: int = 20240601, dev_fraction: float = DEV_FRACTION,
             pairs_per_label: int = PAIRS_PER_LABEL, max_jaccard_gap: float = MAX_JACCARD_GAP,
             reuse_in_target: bool = False) -> Derived:
    """Word-in-context pairs: rows (sentence1, sentence2, label).  Both sentences are WordNet examples that
    contain the same target lemma with the same POS; label "1" when both examples belong to the same
    synset, "0" when they belong to different synsets of that lemma.  The task format has two text
    fields only, so the target word is NOT given separately: it is the word the two sentences share
    (they may share other words too; the model has to find it).

    Rules, in order:
    - examples with fewer than MIN_WORDS normalised words are dropped; so is every example whose
      normalised text occurs more than once in WordNet (same sentence under two synsets is ambiguous);
    - a (lemma, POS) is a target when it has a synset with >= 2 examples containing it (a positive is
      possible) and another synset with an example containing it (a negative is possible);
    - targets are split into train/dev by lemma string (all POS of a lemma on one side; lemma-disjoint,
      like WiC), seeded, `dev_fraction` of lemmas to dev;
    - targets are visited in seeded random order; each yields k positive and k negative pairs with
      k = min(`pairs_per_label`, what its still-unused examples allow), so labels are balanced per
      lemma and therefore per POS and per split; every example sentence is used in at most one pair
      (hence no sentence is in both train and dev).  With `reuse_in_target` a sentence of a positive may
      also be used in one negative of the same target (same split; about doubles the yield, since a
      target whose positive synset has only 2 examples has nothing left for a negative otherwise);
    - each negative is chosen among the lemma's candidate cross-synset pairs as the one whose word-overlap
      (Jaccard of `norm` word sets) is closest to that of the positive it is matched with; a positive
      without a negative within `max_jaccard_gap` is skipped, so overlap is (nearly) not predictive;
    - the order of the two sentences in a pair and the order of rows are seeded-random.
    """
    stats = {"examples": len(examples)}
    drops = Counter()
    ok = _kept_examples(examples, drops)
    stats["examples kept"] = len(ok)
    by_target, targets = _targets(examples, ok, stats, drops)
    lemmas = sorted({t[0] for t in targets})
    rng_for(seed, "wic-split").shuffle(lemmas)
    n_dev = round(len(lemmas) * dev_fraction)
    dev_lemmas = set(lemmas[:n_dev])
    stats["lemmas train/dev"] = [len(lemmas) - n_dev, n_dev]
    rows, per_target, used = _pair_rows(examples, by_target, targets, dev_lemmas, rng_for(seed, "wic-pairs"),
                                        pairs_per_label, max_jaccard_gap, reuse_in_target, drops)
    stats["targets by pairs per label"] = {str(k): v for k, v in sorted(per_target.items())}
    stats["example sentences used"] = len(used)
    stats["drops"] = dict(drops)
    out = {}
    for split in ("train", "dev"):
        r = rows[split]
        rng_for(seed, f"wic-order-{split}").shuffle(r)
        stats[f"{split} by label"] = dict(sorted(Counter(x[2] for x in r).items()))
        stats[f"{split} by POS/label"] = dict(sorted(Counter(f"{x[3]}/{x[2]}" for x in r).items()))
        out[split] = [x[:3] for x in r]
    return Derived(out["train"], out["dev"], stats)


def _kept_examples(examples, drops: Counter) -> list[int]:
    """Indices of the examples the task may use: long enough, unique in WordNet, with a synset lemma."""
    norm_count = Counter(norm(e.sentence) for e in examples)
    ok = []
    for i, e in enumerate(examples):
        if len(norm(e.sentence).split()) < MIN_WORDS:
            drops["short sentence"] += 1
        elif norm_count[norm(e.sentence)] > 1:
            drops["duplicate sentence"] += 1
        elif not e.lemmas:
            drops["no synset lemma found in sentence"] += 1
        else:
            ok.append(i)
    return ok


def _targets(examples, ok: list[int], stats: dict, drops: Counter) -> tuple[dict, list]:
    """(lemma, pos) -> synset offset -> [example index]; and the targets, the (lemma, pos) with a positive
    and a negative possible."""
    by_target = defaultdict(lambda: defaultdict(list))
    for i in ok:
        e = examples[i]
        for lemma in e.lemmas:
            by_target[(lemma, e.pos)][e.offset].append(i)
    stats["lemma/POS with examples"] = len(by_target)
    multi = {t: s for t, s in by_target.items() if len(s) >= 2}
    stats["lemma/POS with examples in >= 2 synsets"] = len(multi)
    stats["synsets with >= 2 examples of a lemma/POS"] = sum(
        1 for s in by_target.values() for ex in s.values() if len(ex) >= 2)
    targets = sorted(t for t, s in multi.items() if any(len(ex) >= 2 for ex in s.values()))
    stats["targets (positive and negative possible)"] = len(targets)
    drops["lemma/POS without a positive or a negative"] = len(by_target) - len(targets)
    return by_target, targets


def _pair_rows(examples, by_target: dict, targets: list, dev_lemmas: set, rng, pairs_per_label: int,
               max_jaccard_gap: float, reuse_in_target: bool, drops: Counter) -> tuple[dict, Counter, set]:
    """Targets in seeded order, each its pairs of still-unused examples: rows (s1, s2, label, pos) per
    split; how many targets gave k pairs per label; the examples used."""
    order = list(targets)
    rng.shuffle(order)
    used = set()
    rows = {"train": [], "dev": []}
    per_target = Counter()
    for target in order:
        synsets = {o: [i for i in ex if i not in used] for o, ex in by_target[target].items()}
        pairs = _pairs_for(synsets, pairs_per_label, rng, examples, max_jaccard_gap, drops, reuse_in_target)
        if not pairs:
            drops["target yielding no pair"] += 1
            continue
        split = "dev" if target[0] in dev_lemmas else "train"
        per_target[len(pairs) // 2] += 1
        for a, b, label in pairs:
            used.update((a, b))
            if rng.random() < 0.5:
                a, b = b, a
            rows[split].append((examples[a].sentence, examples[b].sentence, label, target[1]))
    return rows, per_target, used


def _pairs_for(synsets: dict, k_max: int, rng, examples, max_gap: float, drops: Counter,
               reuse: bool = False) -> list:
    """Up to `k_max` positive pairs (same synset, disjoint examples) and as many negative pairs (two
    synsets) from the unused examples of one target, all examples distinct; negatives matched on
    Jaccard overlap to the positives.  Returns [(i, j, label)], positives and negatives equal in number."""
    offsets = sorted(synsets)
    pos_cands = []
    for o in offsets:
        ex = list(synsets[o])
        rng.shuffle(ex)
        for a in range(0, len(ex) - 1, 2):
            pos_cands.append((ex[a], ex[a + 1]))
    rng.shuffle(pos_cands)
    chosen, taken, neg_taken = [], set(), set()
    for a, b in pos_cands:
        if len(chosen) // 2 >= k_max:
            break
        if a in taken or b in taken:
            continue
        # a negative needs two unused examples from different synsets, not taken by this positive
        if reuse:
            left = {o: [i for i in ex if i not in neg_taken] for o, ex in synsets.items()}
        else:
            left = {o: [i for i in ex if i not in taken and i not in (a, b)] for o, ex in synsets.items()}
        negs = [(x, y) for n1, o1 in enumerate(offsets) for o2 in offsets[n1 + 1:]
                for x in left[o1] for y in left[o2]]
        if not negs:
            drops["positive leaving no disjoint negative"] += 1
            break
        target_j = jaccard(examples[a].sentence, examples[b].sentence)
        best = min(abs(jaccard(examples[x].sentence, examples[y].sentence) - target_j) for x, y in negs)
        if best > max_gap:
            drops["positive without an overlap-matched negative"] += 1
            continue
        close = [p for p in negs
                 if abs(jaccard(examples[p[0]].sentence, examples[p[1]].sentence) - target_j) == best]
        x, y = close[rng.randrange(len(close))]
        chosen += [(a, b, "1"), (x, y, "0")]
        taken.update((a, b, x, y))
        neg_taken.update((x, y))
    return chosen
