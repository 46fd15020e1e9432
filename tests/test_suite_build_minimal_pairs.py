"""ebs-3's minimal pairs (electra_bench/data/suite_build/minimal_pairs.py, pair_sites.py): each family's site
detection and exclusions on hand-written tagged Brown lines, the builder on a small generated fixture (good =
the original, one word differs, balance so a frequency-only scorer sits at exactly 50%, the corpus check,
determinism), and the loader (electra_bench/data/suite.py, task_sources.py) on a suite directory with a
minimal-pairs task."""
import gzip
import json
import lzma
import random
from collections import Counter
from pathlib import Path

import pytest

from electra_bench.data.suite_build.brown import BrownText, detok
from electra_bench.data.suite_build.minimal_pairs import FAMILIES, make_minimal_pairs
from electra_bench.data.suite_build.pair_sites import sentence_options
from electra_bench.data.suite_build.text import norm

from electra_bench.data.task_sources import load_tasks
from electra_bench.errors import BenchError


def _tagged(line):
    pairs = [t.rsplit("/", 1) for t in line.split()]
    return [p[0] for p in pairs], [p[1] for p in pairs]


def _family(line, family):
    """(paradigms of the options, excluded rules) of one family in one tagged line."""
    words, tags = _tagged(line)
    opts, excluded = sentence_options(words, tags)[family]
    return sorted(o.paradigm for o in opts), sorted(k.split(":", 1)[1] for k in excluded.elements())


# --------------------------------------------------------------------------- detection, one family at a time
@pytest.mark.parametrize("line, paradigms, excluded", [
    ("The/at farmers/nns are/ber happy/jj ./.", ["is/are:pl"], []),
    ("It/pps is/bez red/jj ./.", ["is/are:sg"], []),
    ("I/ppss have/hv a/at barn/nn ./.", ["has/have:pl"], []),
    ("The/at old/jj barn/nn was/bedz red/jj ./.", ["was/were:sg"], []),
    ("Is/bez the/at barn/nn red/jj ?/.", [], ["no-adjacent-subject"]),
    ("The/at key/nn to/in the/at barns/nns is/bez lost/vbn ./.", [], ["subject-number"]),
    ("The/at key/nn to/in the/at barn/nn is/bez lost/vbn ./.", [], ["noun-in-phrase"]),
    ("The/at men/nns and/cc the/at women/nns are/ber here/rb ./.", [], ["conjoined-subject"]),
    ("There/ex are/ber farmers/nns here/rb ./.", [], ["existential-there"]),  # agreement.py's rules apply
    ("They/ppss could/md have/hv sold/vbn it/ppo ./.", [], ["infinitive"]),
    ("He/pps said/vbd the/at ``/`` barn/nn is/bez red/jj ''/'' ./.", [], ["quote-fragment"]),
])
def test_subject_verb_sites(line, paradigms, excluded):
    assert _family(line, "pairs-subject-verb") == (paradigms, excluded)


@pytest.mark.parametrize("line, paradigms, excluded", [
    ("The/at key/nn to/in the/at barns/nns is/bez lost/vbn ./.", ["is/are:sg"], []),
    ("The/at keys/nns of/in the/at old/jj barn/nn are/ber lost/vbn ./.", ["is/are:pl"], []),
    ("The/at keys/nns of/in the/at old/jj barn/nn were/bed lost/vbn ./.", [], ["subjunctive-were"]),
    ("The/at farmer/nn who/wps owns/vbz the/at dogs/nns is/bez tired/jj ./.", ["is/are:sg"], []),
    ("The/at barns/nns built/vbn by/in the/at farmer/nn are/ber red/jj ./.", ["is/are:pl"], []),
    ("He/pps said/vbd that/cs the/at key/nn to/in the/at barns/nns is/bez lost/vbn ./.", ["is/are:sg"], []),
    ("The/at key/nn is/bez lost/vbn ./.", [], ["no-intervener"]),
    ("With/in the/at key/nn to/in the/at barns/nns is/bez a/at note/nn ./.", [], ["head-not-clause-initial"]),
    ("The/at farmers/nns of/in the/at barns/nns is/bez odd/jj ./.", [], ["head-number"]),
    ("The/at people/nns of/in the/at town/nn are/ber here/rb ./.", [], ["head-noun"]),
    ("The/at men/nns and/cc the/at key/nn to/in the/at barns/nns is/bez lost/vbn ./.", [], ["conjoined-subject"]),
    ("Half/abn of/in the/at key/nn to/in the/at barns/nns is/bez lost/vbn ./.", [], ["partitive-subject"]),
])
def test_attractor_sites(line, paradigms, excluded):
    assert _family(line, "pairs-attractor") == (paradigms, excluded)


def test_attractor_patterns_are_named():
    words, tags = _tagged("The/at farmer/nn who/wps owns/vbz the/at dogs/nns is/bez tired/jj ./.")
    assert [o.pattern for o in sentence_options(words, tags)["pairs-attractor"][0]] == ["is/are:relative"]
    words, tags = _tagged("The/at barns/nns built/vbn by/in the/at farmer/nn are/ber red/jj ./.")
    assert [o.pattern for o in sentence_options(words, tags)["pairs-attractor"][0]] == ["is/are:participle"]


@pytest.mark.parametrize("line, paradigms, excluded", [
    ("This/dt barn/nn is/bez red/jj ./.", ["this/these:sg"], []),
    ("These/dts red/jj barns/nns are/ber old/jj ./.", ["this/these:pl"], []),
    ("He/pps sold/vbd those/dts barns/nns ./.", ["that/those:pl"], []),
    ("This/dt is/bez red/jj ./.", [], ["not-before-noun"]),
    ("I/ppss like/vb these/dts ./.", [], ["not-determiner"]),
    ("This/dt kind/nn of/in barn/nn is/bez old/jj ./.", [], ["invariant-noun"]),
    ("That/cs is/bez the/at barn/nn ./.", [], []),  # the complementiser is never a site
])
def test_determiner_sites(line, paradigms, excluded):
    assert _family(line, "pairs-determiner-noun") == (paradigms, excluded)


@pytest.mark.parametrize("line, paradigms, excluded", [
    ("The/at farmer/nn saw/vbd himself/ppl ./.", ["himself/themselves:sg"], []),
    ("He/pps hurt/vbd himself/ppl ./.", ["himself/herself:m", "himself/themselves:sg"], []),
    ("The/at woman/nn hurt/vbd herself/ppl ./.", ["herself/themselves:sg", "himself/herself:f"], []),
    ("They/ppss hurt/vbd themselves/ppls ./.",
     ["herself/themselves:pl", "himself/themselves:pl", "itself/themselves:pl"], []),
    ("The/at barn/nn itself/ppl is/bez red/jj ./.", ["itself/themselves:sg"], []),
    ("Himself/ppl ,/, he/pps left/vbd ./.", [], ["no-antecedent"]),
    ("They/ppss told/vbd him/ppo about/in himself/ppl ./.", [], ["mixed-antecedents"]),
    ("Everyone/pn hurt/vbd himself/ppl ./.", [], ["indefinite-antecedent"]),
    ("Each/dt farmer/nn hurt/vbd himself/ppl ./.", [], ["indefinite-antecedent"]),
    ("The/at committee/nn praised/vbd itself/ppl ./.", [], ["collective-antecedent"]),
])
def test_anaphor_sites(line, paradigms, excluded):
    assert _family(line, "pairs-anaphor") == (paradigms, excluded)


@pytest.mark.parametrize("line, paradigms, excluded", [
    ("He/pps went/vbd home/nr ./.", ["went/gone:past"], []),
    ("He/pps has/hvz gone/vbn home/nr ./.", ["went/gone:participle"], []),
    ("The/at letter/nn was/bedz written/vbn by/in him/ppo ./.", ["wrote/written:participle"], []),
    ("He/pps had/hvd went/vbd home/nr ./.", [], ["aux-before-past"]),
    ("I/ppss seen/vbn it/ppo ./.", [], ["participle-after-subject"]),
    ("The/at written/vbn word/nn is/bez old/jj ./.", [], ["adjectival-participle"]),
    ("He/pps said/vbd ``/`` they/ppss went/vbd home/nr ''/'' ./.", [], ["quote-fragment"]),
    ("He/pps came/vbd home/nr ./.", [], []),  # come/came/come: the participle is a present form, not listed
])
def test_irregular_sites(line, paradigms, excluded):
    assert _family(line, "pairs-irregular") == (paradigms, excluded)


# --------------------------------------------------------------------------- the builder on a generated fixture
NOUNS_SG = ["barn", "farmer", "horse", "wagon", "fence", "field", "house", "road", "tree", "dog", "cart", "mill"]
NOUNS_PL = [n + "s" for n in NOUNS_SG]
ADJ = ["red", "old", "tall", "quiet", "wide", "small", "green", "dry"]


def _fixture_lines(rng):
    """Tagged sentences with every family's sites, in unequal numbers per side (so balance must drop some)."""
    out = []
    for i in range(60):
        n, a, b = rng.choice(NOUNS_SG), rng.choice(ADJ), rng.choice(ADJ)
        m = rng.choice(NOUNS_PL)
        out.append(f"The/at {a}/jj {n}/nn is/bez very/ql {b}/jj today/nr ./.")
        if i % 3:
            out.append(f"The/at {a}/jj {m}/nns are/ber very/ql {b}/jj now/rb ./.")
        out.append(f"This/dt {a}/jj {n}/nn stood/vbd near/in the/at {b}/jj road/nn ./.")
        if i % 2:
            out.append(f"These/dts {a}/jj {m}/nns stood/vbd by/in the/at {b}/jj road/nn ./.")
        out.append(f"The/at {a}/jj key/nn to/in the/at {m}/nns is/bez {b}/jj again/rb ./.")
        if i % 4 == 0:
            out.append(f"The/at {a}/jj keys/nns to/in the/at {n}/nn are/ber {b}/jj again/rb ./.")
        out.append(f"He/pps saw/vbd the/at {a}/jj {n}/nn by/in the/at {b}/jj road/nn ./.")
        if i % 2:
            out.append(f"She/pps had/hvd seen/vbn the/at {a}/jj {n}/nn at/in the/at {b}/jj mill/nn ./.")
        out.append(f"The/at {a}/jj {n}/nn hurt/vbd itself/ppl on/in the/at {b}/jj fence/nn ./.")
        if i % 3 == 0:
            out.append(f"The/at {a}/jj {m}/nns hurt/vbd themselves/ppls on/in the/at {b}/jj fence/nn ./.")
        if i % 5 == 0:
            out.append(f"She/pps hurt/vbd herself/ppl on/in the/at {b}/jj {n}/nn ./.")
            out.append(f"He/pps hurt/vbd himself/ppl on/in the/at {a}/jj {n}/nn ./.")
    # a sentence and its own flip are both in the texts: neither may yield a pair by that flip
    out.append("The/at lone/jj miller/nn is/bez very/ql tired/jj today/nr ./.")
    out.append("The/at lone/jj miller/nn are/ber very/ql tired/jj today/nr ./.")
    out.append("The/at planted/jj sentence/nn is/bez in/in the/at corpus/nn today/nr ./.")
    return out


@pytest.fixture(scope="module")
def fixture_docs():
    rng = random.Random(7)
    lines = _fixture_lines(rng)
    docs, roles = [], {}
    for d in range(4):
        chunk = lines[d::4]
        words, tags = zip(*(_tagged(line) for line in chunk))
        doc_id = f"ca{d + 1:02d}"
        docs.append(BrownText(doc_id, "a", list(words), [False] * len(chunk), list(tags)))
        roles[doc_id] = ("ns-train", "ns-dev", "wo-train", "wo-dev")[d]
    # a text of the pre-training corpus: never read
    words, tags = _tagged("The/at hidden/jj barn/nn is/bez red/jj today/nr ./.")
    docs.append(BrownText("ca05", "a", [words], [False], [tags]))
    roles["ca05"] = "corpus"
    return docs, roles


PLANTED = "The planted sentence is in the corpus today."


def _check(pairs):
    return ["in-corpus" if PLANTED in (g, b) else None for g, b in pairs]


@pytest.fixture(scope="module")
def built(fixture_docs):
    docs, roles = fixture_docs
    return make_minimal_pairs(docs, roles, seed=11, check=_check)


@pytest.fixture(scope="module")
def fixture_sources(fixture_docs):
    docs, roles = fixture_docs
    return {detok(w) for d in docs if roles[d.doc_id] != "corpus" for w in d.sents}


def _diff(good, bad):
    a, b = good.split(), bad.split()
    assert len(a) == len(b)
    return [(x, y) for x, y in zip(a, b) if x != y]


def frequency_only(rows, table):
    """Accuracy of a scorer that prefers the sentence whose differing word (normalised) is more frequent in
    `table`; ties go to the alphabetically first word. Any fixed choice per word pair would do."""
    right = 0
    for good, bad, _p in rows:
        (a, b), = [(x, y) for x, y in zip(norm(good).split(), norm(bad).split()) if x != y]
        pick = a if (table.get(a, 0), b) > (table.get(b, 0), a) else b
        right += pick == a
    return right / len(rows)


def test_every_family_has_pairs(built):
    assert set(built.tasks) == set(FAMILIES)
    for f in FAMILIES:
        assert len(built.tasks[f]) >= 8, (f, built.stats[f])
        assert built.stats[f]["pairs"] == len(built.tasks[f]) == sum(built.stats[f]["final_per_paradigm"].values())


def test_good_is_the_original_and_one_word_differs(built, fixture_sources):
    for f, rows in built.tasks.items():
        for good, bad, paradigm in rows:
            assert good in fixture_sources, (f, good)
            assert bad not in fixture_sources, (f, bad)
            (a, b), = _diff(good, bad)
            pair, side = paradigm.split(":")
            assert {a.lower().strip("."), b.lower().strip(".")} <= set(pair.split("/")), (paradigm, a, b)
        assert len({g for g, _b, _p in rows}) == len(rows), f  # a sentence once per family


def test_balanced_so_frequency_alone_is_at_chance(built):
    rng = random.Random(3)
    for f, rows in built.tasks.items():
        sides = Counter(tuple(_diff(g, b)[0]) for g, b, _p in rows)
        assert all(n == sides[(b, a)] for (a, b), n in sides.items()), (f, sides)
        words = {w for g, b, _p in rows for w in norm(g + " " + b).split()}
        corpus_like = Counter(w for g, _b, _p in rows for w in norm(g).split())
        for table in (corpus_like, {w: rng.random() for w in words}, {w: -corpus_like[w] for w in words}):
            assert frequency_only(rows, table) == 0.5, f
        assert built.stats[f]["balance_dropped"], f  # the fixture is unbalanced: the surplus was dropped


def test_the_frequency_check_can_fail(built):
    """Power check for the test above: leaving out some rows of one side moves the scorer off 50%."""
    rows = built.tasks["pairs-subject-verb"]
    lopsided = [r for r in rows if not r[2].endswith(":pl")] + [r for r in rows if r[2].endswith(":pl")][:3]
    table = Counter(w for g, _b, _p in rows for w in norm(g).split())
    assert frequency_only(lopsided, table) != 0.5


def test_exclusions_and_checks_are_counted(built):
    sv = built.stats["pairs-subject-verb"]
    assert sv["removed_by_checks"] == {"in-corpus": 1}
    assert sv["site_excluded"].get("is/are:flip-is-a-source") == 1  # "miller is" (its flip is a source)
    texts = {t for rows in built.tasks.values() for r in rows for t in r[:2]}
    assert PLANTED not in texts
    assert not any("miller" in t for t in texts)  # the sentence whose flip is a source sentence
    assert not any("hidden" in t for t in texts)  # a text of the corpus role
    assert built.stats["pairs-anaphor"]["final_per_paradigm"].get("himself/herself:m", 0) > 0


def test_deterministic(fixture_docs, built):
    docs, roles = fixture_docs
    again = make_minimal_pairs(docs, roles, seed=11, check=_check)
    assert again.tasks == built.tasks and again.stats == built.stats
    other = make_minimal_pairs(docs, roles, seed=12, check=_check)
    assert other.tasks != built.tasks


# --------------------------------------------------------------------------- the loader
PAIR_ENTRY = {"name": "pairs-x", "kind": "acceptability", "text_fields": ["sentence_good", "sentence_bad"],
              "labels": None, "regression": False, "metrics": ["accuracy"], "primary": "accuracy",
              "minimal_pairs": True, "description": "d", "source": "s", "license": "l"}
PLAIN_ENTRY = {"name": "plain", "text_fields": ["sentence"], "labels": ["0", "1"], "regression": False,
               "metrics": ["accuracy"], "primary": "accuracy"}


def _suite(root, entry=PAIR_ENTRY, rows=("The barn is red.\tThe barn are red.\tis/are:sg",
                                          "The barns are red.\tThe barns is red.\tis/are:pl")):
    root.mkdir(parents=True)
    with lzma.open(root / "corpus.txt.xz", "wt", encoding="utf-8") as f:
        f.write("Some prose.\n")
    (root / "suite.json").write_text(json.dumps({"name": "m", "version": 1, "corpus": "corpus.txt.xz",
                                                 "tasks": [PLAIN_ENTRY, entry]}))
    for name, head, body in (("plain", "sentence\tlabel", ["a\t0", "b\t1"]),
                             (entry["name"], "sentence_good\tsentence_bad\tparadigm", list(rows))):
        (root / name).mkdir()
        for split in ("train", "dev") if name == "plain" else ("dev",):
            with gzip.open(root / name / f"{split}.tsv.gz", "wt", encoding="utf-8") as f:
                f.write(head + "\n" + "\n".join(body) + "\n")
    return root


def test_loader_reads_pairs_as_good_bad_without_label(tmp_path):
    tasks = {t.name: t for t in load_tasks(str(_suite(tmp_path / "s")))}
    pair = tasks["pairs-x"]
    assert pair.spec.minimal_pairs and not tasks["plain"].spec.minimal_pairs
    assert list(pair.splits) == ["dev"]
    assert [(e.text_a, e.text_b, e.label) for e in pair.splits["dev"]] == [
        ("The barn is red.", "The barn are red.", None), ("The barns are red.", "The barns is red.", None)]
    assert pair.spec.labels is None and pair.spec.metrics == ("accuracy",) and pair.spec.kind == "acceptability"


@pytest.mark.parametrize("row, message", [
    ("The barn is red.\tThe barn are red.", r"dev.tsv.gz:3: 2 tab-separated fields, expected 3"),
    ("The barn is red.\t\tis/are:sg", r"dev.tsv.gz:3: an empty sentence"),
    ("The barn is red.\tThe barn is red.\tis/are:sg", r"dev.tsv.gz:3: the good and the bad sentence are the same"),
])
def test_a_malformed_row_is_one_line_naming_file_and_line(tmp_path, row, message):
    root = _suite(tmp_path / "s", rows=("The barn is red.\tThe barn are red.\tis/are:sg", row))
    with pytest.raises(BenchError, match=message) as e:
        load_tasks(str(root))
    assert "\n" not in str(e.value) and str(root / "pairs-x" / "dev.tsv.gz") in str(e.value)


@pytest.mark.parametrize("change", [{"labels": ["0", "1"]}, {"regression": True}, {"metrics": ["accuracy", "f1"]},
                                    {"text_fields": ["sentence"]}, {"minimal_pairs": "yes"}])
def test_a_bad_minimal_pairs_entry_is_refused(tmp_path, change):
    root = _suite(tmp_path / "s", entry={**PAIR_ENTRY, **change})
    with pytest.raises(BenchError, match=r"suite.json: task 'pairs-x': (a minimal-pairs task has 2 text_fields|"
                                         r"minimal_pairs must be true or false)"):
        load_tasks(str(root))


def test_missing_dev_split_is_named(tmp_path):
    root = _suite(tmp_path / "s")
    (root / "pairs-x" / "dev.tsv.gz").unlink()
    with pytest.raises(BenchError, match=r"pairs-x/dev.tsv.gz: missing dev split of minimal-pairs task 'pairs-x'"):
        load_tasks(str(root))
