"""Tests of the ``bible-paraphrase`` builder (electra_bench/data/suite_build/paraphrase.py) on small fixtures: a
synthetic multi-translation "bible" with controlled word overlap, and two tiny fake
``pythonbible_*/plain_text_bible.py`` files in the real packages' format."""
import zipfile
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest

from electra_bench.data.suite_build.paraphrase import bcv, jaccard, make_paraphrase, read_bibles, words
from electra_bench.data.suite_build.text import rng_for

FIXTURE = Path(__file__).parent / "fixtures" / "suite_build" / "bible"
BOOKS = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 40, 41, 42, 43, 44]
CHAPTERS = 3
VERSES = 20
# translation -> probability that a word is replaced by that translation's own variant
TRANSLATIONS = {"aa": 0.05, "bb": 0.1, "cc": 0.15, "dd": 0.3}
TEMPLATE_SHARE = 0.5
TEMPLATE_CHANGE = 0.6
FUNCTION = ["and", "the", "of", "unto", "he", "said", "to", "in", "that", "they"]


def synthetic_bibles(seed=7, books=BOOKS):
    """Verses of 6-22 words: function words plus words of a chapter vocabulary; about half of a chapter's
    verses vary one chapter template (formulaic verses, so some verses of a chapter overlap a lot, as
    in the real text).  Each translation swaps words for its own variants with its own probability;
    every text is unique."""
    rng = rng_for(seed, "fixture")
    bibles = {t: {} for t in TRANSLATIONS}
    seen = set()
    for b in books:
        for c in range(1, CHAPTERS + 1):
            vocab = [f"w{b}x{c}x{i}" for i in range(30)] + FUNCTION
            template = [rng.choice(vocab) for _ in range(14)]
            for v in range(1, VERSES + 1):
                if rng.random() < TEMPLATE_SHARE:
                    base = [rng.choice(vocab) if rng.random() < TEMPLATE_CHANGE else w for w in template]
                else:
                    base = [rng.choice(vocab) for _ in range(rng.randint(6, 22))]
                vid = b * 1_000_000 + c * 1000 + v
                for t, p in TRANSLATIONS.items():
                    while True:
                        text = " ".join(w + t if rng.random() < p else w for w in base)
                        text = text[0].upper() + text[1:] + "."
                        if text not in seen:
                            break
                    seen.add(text)
                    bibles[t][vid] = text
    return bibles


@pytest.fixture(scope="module")
def built():
    bibles = synthetic_bibles()
    where = {}
    for t, verses in bibles.items():
        for vid, text in verses.items():
            assert text not in where, "fixture texts must be unique"
            where[text] = (t, vid)
    return bibles, where, make_paraphrase(bibles, seed=11, train_size=10_000, dev_size=10_000, dev_fraction=0.4)


def accuracy_threshold(train_x, train_y, dev_x, dev_y):
    """Best train threshold on one score (either direction), its accuracy on dev."""
    train_x, train_y, dev_x, dev_y = map(np.asarray, (train_x, train_y, dev_x, dev_y))
    best = (-1, 0.0, 1)
    for t in np.unique(train_x):
        for sign in (1, -1):
            acc = np.mean(((sign * (train_x - t)) >= 0) == train_y)
            if acc > best[0]:
                best = (acc, t, sign)
    _, t, sign = best
    return float(np.mean(((sign * (dev_x - t)) >= 0) == dev_y))


def bow_features(rows, dim=128):
    """Hashed bag of words: words in both sentences, words in only one, plus the length difference."""
    x = np.zeros((len(rows), 2 * dim + 2))
    for i, (a, b, *_) in enumerate(rows):
        sa, sb = set(words(a)), set(words(b))
        for w in sa & sb:
            x[i, sum(map(ord, w)) * 31 % dim] += 1
        for w in sa ^ sb:
            x[i, dim + sum(map(ord, w)) * 31 % dim] += 1
        x[i, -2] = abs(len(words(a)) - len(words(b))) / 10
        x[i, -1] = 1.0
    return x


def logreg_accuracy(train_rows, train_y, dev_rows, dev_y, steps=150, lr=0.5):
    xt, xd = bow_features(train_rows), bow_features(dev_rows)
    scale = xt.std(0) + 1e-6
    scale[-1] = 1.0
    xt, xd = xt / scale, xd / scale
    w = np.zeros(xt.shape[1])
    y = np.asarray(train_y, dtype=float)
    for _ in range(steps):
        p = 1 / (1 + np.exp(-xt @ w))
        w -= lr * (xt.T @ (p - y) / len(y) + 1e-3 * w)
    return float(np.mean((xd @ w > 0) == np.asarray(dev_y, dtype=bool)))


def labels(rows):
    return [r[2] == "1" for r in rows]


def test_balanced_and_sized(built):
    _, _, d = built
    for rows in (d.train, d.dev):
        assert len(rows) >= 60
        assert sum(labels(rows)) * 2 == len(rows)
        assert all(len(r) == 3 and r[2] in ("0", "1") for r in rows)
    assert d.stats["train_final"]["1"] == d.stats["train_final"]["0"] == len(d.train) // 2


def test_pairs_are_what_the_label_says(built):
    _, where, d = built
    for rows in (d.train, d.dev):
        for a, b, y in rows:
            (ta, va), (tb, vb) = where[a], where[b]
            assert ta != tb
            if y == "1":
                assert va == vb
            else:
                assert va != vb and bcv(va)[:2] == bcv(vb)[:2]


def test_both_orders_of_translation_pairs(built):
    _, where, d = built
    pos_pairs = {(where[a][0], where[b][0]) for a, b, y in d.train if y == "1"}
    assert any((tb, ta) in pos_pairs for ta, tb in pos_pairs)


def test_books_disjoint_and_verse_ids_used_once(built):
    _, where, d = built
    books = {}
    for split, rows in (("train", d.train), ("dev", d.dev)):
        books[split] = {bcv(where[t][1])[0] for r in rows for t in r[:2]}
    assert books["train"] and books["dev"] and not books["train"] & books["dev"]
    assert books["dev"] <= set(d.stats["dev_books"])
    assert any(b > 39 for b in books["dev"]) and any(b <= 39 for b in books["dev"])  # stratified OT/NT
    assert not {t for r in d.train for t in r[:2]} & {t for r in d.dev for t in r[:2]}
    seen = set()
    for rows in (d.train, d.dev):
        for a, b, _ in rows:
            ids = {where[a][1], where[b][1]}
            assert not ids & seen
            seen |= ids


def test_overlap_alone_is_near_chance_after_matching(built):
    _, _, d = built
    def score(rows):
        return [jaccard(a, b) for a, b, _ in rows]
    acc = accuracy_threshold(score(d.train), labels(d.train), score(d.dev), labels(d.dev))
    assert acc < 0.62
    assert abs(acc - d.stats["overlap_baseline_dev_acc"]) < 1e-9
    # the candidates before the per-bin matching are still separable by overlap: matching does the work
    assert d.stats["overlap_baseline_dev_acc_unmatched"] > 0.7


def test_overlap_would_work_without_matching(built):
    """The check above can fail: on unmatched items of the same fixture overlap separates the labels."""
    bibles, _, d = built
    rng = rng_for(4, "naive")
    tr = naive_rows(bibles, {b for b in BOOKS if b not in d.stats["dev_books"]}, rng)
    dv = naive_rows(bibles, set(d.stats["dev_books"]), rng)
    def score(rows):
        return [jaccard(a, b) for a, b, _ in rows]
    assert accuracy_threshold(score(tr), labels(tr), score(dv), labels(dv)) > 0.75


def naive_rows(bibles, books, rng):
    """Unmatched items: same verse in two translations vs a random other verse of the chapter."""
    names = sorted(bibles)
    by_ch = defaultdict(list)
    for vid in bibles[names[0]]:
        by_ch[bcv(vid)[:2]].append(vid)
    rows = []
    for (b, _), vids in sorted(by_ch.items()):
        if b not in books:
            continue
        for v in vids:
            ta, tb = rng.sample(names, 2)
            if rng.random() < 0.5:
                rows.append((bibles[ta][v], bibles[tb][v], "1"))
            else:
                w = rng.choice([x for x in vids if x != v])
                rows.append((bibles[ta][v], bibles[tb][w], "0"))
    return rows


def test_shuffled_label_control(built):
    bibles, _, d = built
    rng = rng_for(3, "control")
    train_y = labels(d.train)
    shuffled = train_y[:]
    rng.shuffle(shuffled)
    assert abs(logreg_accuracy(d.train, shuffled, d.dev, labels(d.dev)) - 0.5) < 0.12
    scores_t = [jaccard(a, b) for a, b, _ in d.train]
    scores_d = [jaccard(a, b) for a, b, _ in d.dev]
    assert abs(accuracy_threshold(scores_t, shuffled, scores_d, labels(d.dev)) - 0.5) < 0.12
    # the same classifier is not vacuous: with true labels on unmatched items it separates them
    train_books = {b for b in BOOKS if b not in d.stats["dev_books"]}
    tr = naive_rows(bibles, train_books, rng)
    dv = naive_rows(bibles, set(d.stats["dev_books"]), rng)
    assert logreg_accuracy(tr, labels(tr), dv, labels(dv)) > 0.75


SMALL = [1, 2, 3, 4, 40, 41]


def test_deterministic_capped_and_length_rule():
    bibles = synthetic_bibles(books=SMALL)
    vid = next(iter(bibles["aa"]))
    bibles["cc"][vid] = "Jesus wept."  # under MIN_WORDS in one translation: the verse goes
    a = make_paraphrase(bibles, seed=5, train_size=30, dev_size=20, dev_fraction=0.4, neg_pairs=1)
    b = make_paraphrase(bibles, seed=5, train_size=30, dev_size=20, dev_fraction=0.4, neg_pairs=1)
    assert a.train == b.train and a.dev == b.dev and a.stats == b.stats
    assert len(a.train) == 30 and len(a.dev) == 20
    assert sum(labels(a.train)) == 15 and sum(labels(a.dev)) == 10
    assert a.stats["dropped_length"] == 1
    assert all(bibles[t][vid] not in r[:2] for t in bibles for r in a.train + a.dev)


def test_read_bibles_fixture(tmp_path):
    bibles = read_bibles(FIXTURE)
    assert sorted(bibles) == ["tsa", "tsb"]
    a, b = bibles["tsa"], bibles["tsb"]
    assert sorted(a) == [1001001, 1001002, 1002001, 40011035]
    assert a[1001001] == "In the beginning God created the heaven and the earth."
    assert a[1001002] == "And the earth was without form, and void; and darkness was upon the face of the deep."
    assert b[1002001] == "A Psalm of David. And the heavens and the earth were finished, and all their host."
    assert b[1001002].endswith("and the Spirit of God's.")
    assert a[40011035] == b[40011035] == "Jesus wept."
    for verses in bibles.values():
        for text in verses.values():
            assert text == text.strip() and "\n" not in text and not text[0].isdigit()
    # the same from a wheel
    whl = tmp_path / "pythonbible_tsa-0.0.2-py3-none-any.whl"
    with zipfile.ZipFile(whl, "w") as zf:
        zf.write(FIXTURE / "pythonbible_tsa" / "plain_text_bible.py", "pythonbible_tsa/plain_text_bible.py")
    assert read_bibles([whl]) == {"tsa": a}
