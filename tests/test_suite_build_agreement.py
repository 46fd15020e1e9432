"""The ebs-3 "agreement" acceptability task (electra_bench/data/suite_build/agreement.py), built from a small tagged
Brown-format fixture (tests/fixtures/suite_build/brown/package, template sentences plus hand-written
subjunctive / infinitive / quoted-fragment / headline cases)."""
import math
import random
from collections import Counter
from pathlib import Path

import pytest

from electra_bench.data.suite_build.agreement import PAIRS, flip, make_agreement, parse_brown_file, site_exclusions
from electra_bench.data.suite_build.brown import detok
from electra_bench.data.suite_build.text import norm

FIXTURE = Path(__file__).resolve().parent / "fixtures/suite_build/brown/package"
ROLES = {"ca01": "ns-train", "ca02": "ns-train", "ca03": "wo-train", "ca04": "wo-train", "ca05": "ns-train",
         "ca06": "wo-dev", "ca07": "ns-dev", "ca08": "wo-dev"}
PAIR_SET = {frozenset((sg, pl)) for sg, pl, _a, _b in PAIRS}


@pytest.fixture(scope="module")
def docs():
    return [parse_brown_file(p) for p in sorted(FIXTURE.glob("c[a-r][0-9][0-9]"))]


@pytest.fixture(scope="module")
def built(docs):
    return make_agreement(docs, ROLES)


@pytest.fixture(scope="module")
def sources(docs):
    """norm(sentence) -> (detokenised sentence, tokens, tags) for every fixture sentence."""
    out = {}
    for d in docs:
        for words, tags in zip(d.sents, d.tags):
            out.setdefault(norm(detok(words)), (detok(words), words, tags))
    return out


PARTNER = {**{sg: pl for sg, pl, _a, _b in PAIRS}, **{pl: sg for sg, pl, _a, _b in PAIRS}}


def _diff(a: str, b: str):
    ta, tb = norm(a).split(), norm(b).split()
    if len(ta) != len(tb):
        return None
    return [(x, y) for x, y in zip(ta, tb) if x != y]


def _source_of_flip(text, sources):
    """The source sentences that ``text`` differs from in exactly one token, that token being one of the
    listed pairs: [(source key, (source word, flipped word))]."""
    toks = norm(text).split()
    hits = []
    for i, w in enumerate(toks):
        if w in PARTNER:
            key = " ".join(toks[:i] + [PARTNER[w]] + toks[i + 1:])
            if key in sources:
                assert _diff(key, text) == [(PARTNER[w], w)]
                hits.append((key, (PARTNER[w], w)))
    return hits


def _nb_accuracy(train, dev):
    """Multinomial naive Bayes on lower-cased word unigrams, add-one smoothing."""
    counts, n = {"0": Counter(), "1": Counter()}, Counter()
    for text, label in train:
        counts[label].update(norm(text).split())
        n[label] += 1
    vocab = len(set(counts["0"]) | set(counts["1"]))
    total = {c: sum(counts[c].values()) for c in counts}
    right = 0
    for text, label in dev:
        score = {c: math.log(n[c] / len(train)) + sum(math.log((counts[c][w] + 1) / (total[c] + vocab))
                                                       for w in norm(text).split()) for c in counts}
        right += max(sorted(score), key=score.get) == label
    return right / len(dev)


def test_parse_brown_file_reads_nltk_form(docs):
    d = docs[0]
    assert d.doc_id == "ca01" and d.genre == "a"
    assert d.heads[0] is True  # the -hl line
    assert all(len(w) == len(t) for w, t in zip(d.sents, d.tags))
    assert d.tags[1][-1] == "."


def test_labels_balanced_and_cells_equal(built):
    for split, rows in (("train", built.train), ("dev", built.dev)):
        labels = Counter(label for _t, label in rows)
        assert labels["0"] == labels["1"] > 20, (split, labels)
        cells = built.stats[split]["final_per_cell"]
        for sg, pl, _a, _b in PAIRS:
            four = [cells.get(k, 0) for k in (f"1:{sg}", f"1:{pl}", f"0:{sg}->{pl}", f"0:{pl}->{sg}")]
            assert len(set(four)) == 1, (split, sg, four)
        assert sum(cells.values()) == len(rows)
        assert len({norm(t) for t, _l in rows}) == len(rows)  # no repeated sentence within a split


def test_flips_change_exactly_one_listed_token(built, sources):
    for rows in (built.train, built.dev):
        for text, label in rows:
            if label == "1":
                assert norm(text) in sources
                continue
            assert norm(text) not in sources  # a flip is never itself a Brown sentence
            hits = _source_of_flip(text, sources)
            assert len(hits) == 1, (text, hits)
            assert frozenset(hits[0][1]) in PAIR_SET


def test_train_dev_disjoint_and_sources_used_once(built, sources):
    train = {norm(t) for t, _l in built.train}
    dev = {norm(t) for t, _l in built.dev}
    assert not train & dev
    used = Counter()
    for text, label in built.train + built.dev:
        keys = [norm(text)] if label == "1" else [k for k, _p in _source_of_flip(text, sources)]
        for k in set(keys):
            used[k] += 1
    originals = {norm(t) for t, l in built.train + built.dev if l == "1"}
    flipped_sources = {k for t, l in built.train + built.dev if l == "0" for k, _p in _source_of_flip(t, sources)}
    assert not originals & flipped_sources
    assert max(used.values()) == 1


def test_excluded_sites_never_flipped(built, sources):
    """A subjunctive "were", an infinitive "have" (after a modal, to, did), a site in a quoted fragment and
    a headline never yield a label-0 row; the other site of those sentences still may."""
    changed = Counter()
    for text, label in built.train + built.dev:
        if label == "0":
            for key, (a, b) in _source_of_flip(text, sources):
                src_words, src_tags = sources[key][1], sources[key][2]
                changed[(a, b)] += 1
                if a == "were":
                    low = [w.lower() for w in src_words]
                    assert "if" not in low and "wish" not in low and low[0] != "were", text
                if a == "have":
                    pos = [j for j, w in enumerate(src_words) if w.lower() == "have"]
                    assert not any(src_tags[j - 1] in ("md", "to", "dod") for j in pos if j > 0), text
        assert norm(text) not in ("farmers is happy", "farmers are happy")  # the headline
        assert "plan are sound" not in norm(text)  # inside a quoted fragment
        assert "there is farmers" not in norm(text)  # existential there
    assert changed[("were", "was")] > 0 and changed[("have", "has")] > 0
    excl = built.stats["train"]["site_excluded_by_rule"]
    for rule in ("subjunctive-were", "conditional-context", "infinitive", "quote-fragment", "existential-there"):
        assert excl.get(rule, 0) > 0, (rule, excl)
    # the hand-written sentences whose other site is valid can still be used, unchanged at the excluded site
    texts = " | ".join(norm(t) for t, _l in built.train + built.dev)
    assert "if the farmer was careful" not in texts and "might has lost" not in texts



def _tagged(line):
    pairs = [t.rsplit("/", 1) for t in line.split()]
    return [p[0] for p in pairs], [p[1] for p in pairs]


@pytest.mark.parametrize("line, expected", [
    ("If/cs he/pps were/bed rich/jj ,/, he/pps would/md buy/vb a/at farm/nn ./.", ["conditional-context"]),
    ("Were/bed she/pps to/to leave/vb now/rb ,/, the/at farm/nn would/md fail/vb ./.", ["subjunctive-were"]),
    ("She/pps said/vbd it/pps were/bed true/jj ./.", ["subjunctive-were"]),
    ("They/ppss could/md have/hv sold/vbn the/at barn/nn ./.", ["infinitive"]),
    ("Did/dod they/ppss have/hv a/at market/nn ?/.", ["infinitive"]),
    ("He/pps wants/vbz to/to have/hv a/at garden/nn ./.", ["infinitive"]),
    ("Let/vb them/ppo have/hv it/ppo ./.", ["infinitive"]),
    ("They/ppss have/hv sold/vbn the/at barn/nn ./.", [None]),
    ("The/at farmers/nns were/bed calm/jj and/cc this/dt barn/nn is/bez red/jj ./.", [None, None, None]),
    ("There/ex are/ber farmers/nns near/in the/at barn/nn ./.", ["existential-there"]),
    ("The/at committee/nn is/bez calm/jj ./.", ["collective-noun"]),
    ("Half/abn of/in the/at farmers/nns are/ber calm/jj ./.", ["partitive-subject"]),
    ("I/ppss like/vb these/dts ./.", ["not-determiner"]),
    ("These/dts kind/nn of/in barns/nns ./.", ["not-determiner"]),
    ("This/dt kind/nn of/in barn/nn is/bez old/jj ./.", ["invariant-noun", "partitive-subject"]),
    ("That/cs is/bez the/at barn/nn that/wps he/pps saw/vbd ./.", [None]),
    ("He/pps said/vbd the/at ``/`` barn/nn is/bez red/jj ''/'' ./.", ["quote-fragment"]),
    ("``/`` The/at barn/nn is/bez red/jj ,/, ''/'' he/pps said/vbd ./.", [None]),
    ("The/at farmer/nn saw/vbd himself/ppl ./.", [None]),
])
def test_site_rules(line, expected):
    words, tags = _tagged(line)
    assert [why for _i, why in site_exclusions(words, tags)] == expected


def test_case_is_kept():
    words = ["Is", "the", "jury", "here", "?"]
    assert flip(words, 0)[0] == "Are"
    assert flip(["THIS", "barn", "is", "red", "."], 0)[0] == "THESE"
    assert flip(["they", "saw", "themselves", "."], 2)[2] == "himself"


def test_bag_of_words_does_not_give_the_label_away(built):
    # shuffled-label control: chance
    labels = [label for _t, label in built.train]
    random.Random(0).shuffle(labels)
    shuffled = [(t, label) for (t, _l), label in zip(built.train, labels)]
    assert abs(_nb_accuracy(shuffled, built.dev) - 0.5) < 0.1
    # the balanced design: true labels, still chance for a bag of words
    assert abs(_nb_accuracy(built.train, built.dev) - 0.5) < 0.1


def test_bag_of_words_catches_an_unbalanced_design(docs, built):
    """Power check for the test above: flipping only singular -> plural (label 0) against plural originals
    (label 1), the same bag-of-words classifier wins by a wide margin."""
    sg_words = {sg for sg, _pl, _a, _b in PAIRS}
    def leaky(split_docs):
        rows = []
        for d in split_docs:
            for words, tags, head in zip(d.sents, d.tags, d.heads):
                if head:
                    continue
                sites = [i for i, w in enumerate(words) if w.lower() in sg_words and "-" not in tags[i]]
                if sites:
                    rows.append((detok(flip(words, sites[0])), "0"))
                else:
                    rows.append((detok(words), "1"))
        return rows
    train = leaky([d for d in docs if ROLES[d.doc_id].endswith("train")])
    dev = leaky([d for d in docs if ROLES[d.doc_id].endswith("dev")])
    assert _nb_accuracy(train, dev) > 0.7
