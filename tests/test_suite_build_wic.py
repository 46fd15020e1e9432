"""wordnet-wic (electra_bench/data/suite_build/wic.py): reading WordNet data files and pairing examples."""
from collections import defaultdict
from pathlib import Path

import numpy as np

from electra_bench.data.suite_build.text import norm, rng_for
from electra_bench.data.suite_build.wic import Example, jaccard, make_wic, read_wordnet

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "suite_build" / "wordnet"


def _by_sentence(examples):
    return {e.sentence: e for e in examples}


def _targets(row, index):
    """Lemmas (with POS) that both sentences of a row contain."""
    a, b = index[row[0]], index[row[1]]
    assert a.pos == b.pos
    return {(lemma, a.pos) for lemma in set(a.lemmas) & set(b.lemmas)}


def _check_rows(d, examples, max_uses=1):
    index = _by_sentence(examples)
    side_lemmas = {}
    seen = {}
    for split, rows in (("train", d.train), ("dev", d.dev)):
        labels = [r[2] for r in rows]
        assert labels.count("1") == labels.count("0"), split
        lemmas = set()
        for row in rows:
            a, b = index[row[0]], index[row[1]]
            shared = _targets(row, index)
            assert shared, row  # both sentences contain the target lemma, same POS
            if row[2] == "1":
                assert a.offset == b.offset, row
            else:
                assert row[2] == "0" and a.offset != b.offset, row
            for s in row[:2]:
                # each sentence in at most `max_uses` pairs, all on one side
                assert seen.get(s, (split, 0))[0] == split, (s, split)
                assert seen.get(s, (split, 0))[1] < max_uses, s
                seen[s] = (split, seen.get(s, (split, 0))[1] + 1)
            lemmas |= {lemma for lemma, _ in shared}
        side_lemmas[split] = lemmas
    assert not side_lemmas["train"] & side_lemmas["dev"]  # lemma-disjoint


def test_read_fixture():
    ex = read_wordnet(FIXTURE)
    assert len(ex) == 27  # the licence header lines are skipped
    index = _by_sentence(ex)
    assert index["The children ran to the store"].lemmas == ("run",)  # verb.exc
    assert index["She is running a relief operation in the Sudan"].lemmas == ("run",)
    assert index["the banks closed early on Friday"].lemmas == ("bank",)
    assert index["he turned on all the lights in the hall"].lemmas == ("light",)
    assert index["water flowed into the cave"].lemmas == ("flow",)  # "run" is not in it
    assert index["remote stations"].pos == "a"  # satellite -> adjective, "(a)" marker stripped
    assert set(index["a light-colored powder"].lemmas) == {"light", "light-colored"}
    offsets = {e.offset for e in ex if e.pos == "v"}
    text = (FIXTURE / "data.verb").read_bytes()
    for off in offsets:  # byte offsets in the fixture are consistent
        assert text[off:off + 8] == f"{off:08d}".encode()


def test_make_wic_fixture():
    ex = read_wordnet(FIXTURE)
    d = make_wic(ex, seed=1, dev_fraction=0.4, max_jaccard_gap=1.0)
    assert d.train and d.dev
    _check_rows(d, ex)
    assert make_wic(ex, seed=1, dev_fraction=0.4, max_jaccard_gap=1.0) == d  # deterministic


def _synthetic(n_lemmas=300, seed=0):
    """Nonce lemmas with 3 senses each; each sense has its own context words (drawn from a shared pool,
    so what a sense word means for the label carries over to unseen lemmas), examples add filler words."""
    rng = rng_for(seed, "synthetic-wordnet")
    sense_pool = [f"sense{i}" for i in range(400)]
    fillers = [f"fill{i}" for i in range(30)]
    ex = []
    offset = 1000
    for li in range(n_lemmas):
        pos = "nvar"[li % 4]
        lemma = f"wug{li}"
        for _ in range(3):
            sense = rng.sample(sense_pool, 3)
            for _ in range(rng.choice((2, 3, 4))):
                words = [lemma] + rng.sample(sense, 2) + rng.sample(fillers, 3)
                rng.shuffle(words)
                ex.append(Example(" ".join(words), pos, offset, (lemma,)))
            offset += 100
    return ex


def _features(rows, dim=64):
    x = np.zeros((len(rows), 2 * dim + 1))
    for r, (a, b, _) in enumerate(rows):
        wa, wb = set(norm(a).split()), set(norm(b).split())
        for w in wa & wb:
            kind = 0 if w.startswith("sense") else 1 if w.startswith("fill") else 2
            x[r, kind] += 1
        for w in wa ^ wb:
            x[r, 3 + sum(map(ord, w)) % (2 * dim - 2)] += 1
        x[r, -1] = 1.0
    return x


def _logreg(x, y, steps=200, lr=0.5, l2=1e-3):
    w = np.zeros(x.shape[1])
    for _ in range(steps):
        p = 1 / (1 + np.exp(-(x @ w)))
        w -= lr * (x.T @ (p - y) / len(y) + l2 * w)
    return w


def test_synthetic_split_and_shuffled_label_control():
    ex = _synthetic()
    d = make_wic(ex)
    _check_rows(d, ex)
    assert len(d.dev) >= 100 and len(d.train) >= 3 * len(d.dev) * 0.7
    for split in ("train", "dev"):  # balanced per POS
        by = d.stats[f"{split} by POS/label"]
        for pos in "nvar":
            assert by.get(f"{pos}/0", 0) == by.get(f"{pos}/1", 0)
    # overlap matching: word overlap alone is (nearly) not predictive
    mean_j = defaultdict(list)
    for a, b, y in d.train:
        mean_j[y].append(jaccard(a, b))
    assert abs(np.mean(mean_j["1"]) - np.mean(mean_j["0"])) < 0.05

    xtr, xdv = _features(d.train), _features(d.dev)
    ytr = np.array([r[2] == "1" for r in d.train], float)
    ydv = np.array([r[2] == "1" for r in d.dev], float)
    # positive control: the sense signal (shared sense words) is learnable and carries to unseen lemmas
    acc = np.mean(((xdv @ _logreg(xtr, ytr)) > 0) == ydv)
    assert acc > 0.8, acc
    # shuffled-label control: the same classifier trained on shuffled labels is at chance on dev
    accs = []
    for s in range(3):
        yshuf = np.random.default_rng(s).permutation(ytr)
        accs.append(np.mean(((xdv @ _logreg(xtr, yshuf)) > 0) == ydv))
    se = 0.5 / np.sqrt(len(ydv))
    assert abs(np.mean(accs) - 0.5) < 3 * se, accs


def test_seed_changes_split():
    ex = _synthetic(n_lemmas=40)
    a, b = make_wic(ex, seed=1), make_wic(ex, seed=2)
    assert a.dev != b.dev and make_wic(ex, seed=1) == a


def test_reuse_in_target_keeps_splits_apart():
    ex = _synthetic(n_lemmas=80)
    strict, reuse = make_wic(ex), make_wic(ex, reuse_in_target=True)
    _check_rows(reuse, ex, max_uses=2)
    assert len(reuse.train) + len(reuse.dev) > len(strict.train) + len(strict.dev)
