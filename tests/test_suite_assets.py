"""The embedded suites (electra_bench/assets/suite = ebs-2, electra_bench/assets/ebs-3; built by
scripts/build_suite.py), every test run on each suite that is installed. ebs-3's minimal-pairs tasks
("minimal_pairs": true: dev.tsv.gz only, sentence_good / sentence_bad / paradigm) are checked as such.

Reads only the shipped files, with the standard library (gzip, lzma, json), and
checks that suite.json describes them and that no task text leaks into the
pre-training corpus.  Fast: a few seconds.
"""
from __future__ import annotations

import gzip
import importlib.util
import json
import lzma
import math
import re
from collections import Counter
from pathlib import Path

import pytest


def _suite_dir(folder: str) -> Path:
    spec = importlib.util.find_spec("electra_bench")  # locates the package without importing it
    if spec is not None and spec.submodule_search_locations:
        d = Path(list(spec.submodule_search_locations)[0]) / "assets" / folder
        if d.is_dir():
            return d
    return Path(__file__).resolve().parents[1] / "electra_bench" / "assets" / folder


FOLDERS = {"ebs-2": "suite", "ebs-3": "ebs-3"}  # electra_bench/data/suite.py SUITES, read without importing it
MAX_BYTES = 10_000_000
TASK_FILES = ("train.tsv.gz", "dev.tsv.gz")

# the same normalisation and sentence split as the build (electra_bench/data/suite_build/text.py; recorded in
# suite.json), repeated here so the check reads only the shipped files
_WORD = re.compile(r"[a-z0-9]+")
_SENT_SPLIT = re.compile(r"(?<=[.!?])\s+|(?<=[.!?][\"')\]])\s+")


def norm(text: str) -> str:
    return " ".join(_WORD.findall(text.lower()))


def sentence_keys(text: str, min_words: int) -> set[str]:
    keys = {norm(s) for s in _SENT_SPLIT.split(text)} | {norm(text)}
    return {k for k in keys if len(k.split()) >= min_words}


@pytest.fixture(scope="module", params=list(FOLDERS))
def SUITE(request) -> Path:
    return _suite_dir(FOLDERS[request.param])


@pytest.fixture(scope="module")
def suite(SUITE) -> dict:
    return json.loads((SUITE / "suite.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def corpus(SUITE, suite) -> str:
    return lzma.decompress((SUITE / suite["corpus"]).read_bytes()).decode("utf-8")


@pytest.fixture(scope="module")
def corpus_sentences(corpus) -> set[str]:
    out = set()
    for line in corpus.split("\n"):
        for s in _SENT_SPLIT.split(line):
            k = norm(s)
            if k:
                out.add(k)
    return out


PAIR_HEADER = ["sentence_good", "sentence_bad", "paradigm"]


def splits_of(t) -> tuple[str, ...]:
    return ("dev",) if t.get("minimal_pairs") else ("train", "dev")


def labelled(suite) -> list[dict]:
    return [t for t in suite["tasks"] if not t.get("minimal_pairs")]


def pair_tasks(suite) -> list[dict]:
    return [t for t in suite["tasks"] if t.get("minimal_pairs")]


@pytest.fixture(scope="module")
def tables(SUITE, suite) -> dict:
    out = {}
    for t in suite["tasks"]:
        for split in splits_of(t):
            raw = gzip.decompress((SUITE / t["name"] / f"{split}.tsv.gz").read_bytes()).decode("utf-8")
            assert raw.endswith("\n") and "\r" not in raw
            lines = raw[:-1].split("\n")
            out[t["name"], split] = (lines[0].split("\t"), [line.split("\t") for line in lines[1:]])
    return out


def contaminated(texts, corpus_sentences, min_words) -> list[str]:
    return [t for t in texts if sentence_keys(t, min_words) & corpus_sentences]


def test_suite_json_shape(SUITE, suite):
    if suite["name"] == "ebs-2":
        assert suite["version"] == 2 and suite["corpus"] == "corpus.txt.xz" and suite["corpus_sources"]
    else:  # ebs-3 reads ebs-2's corpus; its score is a mean over kinds, and no kind is a single sentiment task
        assert (suite["name"], suite["version"], suite["corpus"]) == ("ebs-3", 3, "../suite/corpus.txt.xz")
        kinds = Counter(t["kind"] for t in suite["tasks"])
        assert all(kinds.values()) and len(kinds) >= 4, kinds
    assert suite["build"]["script"] == "scripts/build_suite.py"
    assert isinstance(suite["build"]["seed"], int)
    for src in suite["build"]["sources"]:
        assert src["name"] and src["version"] and re.fullmatch(r"[0-9a-f]{64}", src["sha256"])
    names = [t["name"] for t in suite["tasks"]]
    assert len(names) == len(set(names)) >= 4
    assert not any("glue" in n.lower() for n in names)
    assert any(len(t["text_fields"]) == 2 for t in suite["tasks"]), "needs a sentence-pair task"
    keys = {"name", "text_fields", "labels", "regression", "metrics", "primary", "description", "source",
            "license", "derived", "sizes", "label_balance"}
    for t in pair_tasks(suite):  # read zero-shot: the interface score/zeroshot.py reads
        assert suite["name"] == "ebs-3" and t["name"].startswith("pairs-"), t["name"]
        assert {k: t[k] for k in ("text_fields", "labels", "regression", "metrics", "primary", "kind",
                                  "minimal_pairs", "derived")} == {
            "text_fields": ["sentence_good", "sentence_bad"], "labels": None, "regression": False,
            "metrics": ["accuracy"], "primary": "accuracy", "kind": "acceptability", "minimal_pairs": True,
            "derived": True}
        assert set(t["sizes"]) == {"dev"} and t["source"] and t["license"] and t["description"]
        stats = t["derivation_stats"]
        assert stats["pairs"] == t["sizes"]["dev"] == sum(stats["final_per_paradigm"].values())
        assert stats["site_excluded_by_rule"] and "removed_by_checks" in t
    for t in labelled(suite):
        assert keys <= set(t), t["name"]
        assert t["text_fields"] in (["sentence"], ["sentence1", "sentence2"])
        assert t["primary"] in t["metrics"]
        assert t["metrics"] in (["accuracy"], ["mcc"], ["spearman", "pearson"], ["accuracy", "f1"], ["mcc", "accuracy"])
        assert (t["labels"] is None) == t["regression"]
        if not t["regression"]:
            assert len(t["labels"]) >= 2 and len(set(t["labels"])) == len(t["labels"])
        assert isinstance(t["derived"], bool) and t["source"] and t["license"] and t["description"]
        assert set(t["sizes"]) == {"train", "dev"} and set(t["label_balance"]) == {"train", "dev"}


def test_files_match_suite_json(SUITE, suite):
    expected = {"suite.json", "ATTRIBUTION.md"} | ({suite["corpus"]} if "/" not in suite["corpus"] else set())
    expected |= {f"{t['name']}/{split}.tsv.gz" for t in suite["tasks"] for split in splits_of(t)}
    present = {p.relative_to(SUITE).as_posix() for p in SUITE.rglob("*") if p.is_file()}
    present = {p for p in present if "__pycache__" not in p}
    assert present == expected


def test_total_size(SUITE):
    total = sum(p.stat().st_size for p in SUITE.rglob("*") if p.is_file())
    assert total <= MAX_BYTES, total


def test_gzip_is_reproducible(SUITE, suite):
    for t in suite["tasks"]:
        for split in splits_of(t):
            head = (SUITE / t["name"] / f"{split}.tsv.gz").read_bytes()[:10]
            assert head[:2] == b"\x1f\x8b" and head[4:8] == b"\0\0\0\0", "gzip mtime must be 0"


def test_present_tables(suite, tables):
    for t in pair_tasks(suite):
        header, rows = tables[t["name"], "dev"]
        assert header == PAIR_HEADER and len(rows) == t["sizes"]["dev"] > 0
        assert all(len(r) == 3 and all(x.strip() == x and x for x in r) for r in rows)
        assert Counter(r[2] for r in rows) == Counter(t["derivation_stats"]["final_per_paradigm"])
    for t in labelled(suite):
        for split in ("train", "dev"):
            header, rows = tables[t["name"], split]
            assert header == t["text_fields"] + ["label"]
            assert len(rows) == t["sizes"][split] > 0
            assert all(len(r) == len(header) for r in rows)
            assert all(x.strip() == x and x for r in rows for x in r)
            labels = [r[-1] for r in rows]
            if t["regression"]:
                values = [float(x) for x in labels]
                assert all(math.isfinite(v) for v in values)
                bal = t["label_balance"][split]
                assert bal["min"] == min(values) and bal["max"] == max(values)
            else:
                assert set(labels) <= set(t["labels"])
                assert dict(Counter(labels)) == t["label_balance"][split]
                counts = Counter(labels).values()
                assert max(counts) <= 2 * min(counts), "labels should be balanced-ish"
        assert t["sizes"]["dev"] >= 1000


def test_train_dev_disjoint_and_deduplicated(suite, tables):
    for t in pair_tasks(suite):  # dev only: a sentence once per task
        goods = [norm(r[0]) for r in tables[t["name"], "dev"][1]]
        assert len(goods) == len(set(goods)), f"{t['name']} repeats a sentence"
    for t in labelled(suite):
        keys = {}
        for split in ("train", "dev"):
            _, rows = tables[t["name"], split]
            k = [tuple(norm(x) for x in r[:-1]) for r in rows]
            assert len(k) == len(set(k)), f"{t['name']}/{split} has duplicates"
            keys[split] = set(k)
        assert not keys["train"] & keys["dev"], t["name"]


def test_corpus_format(corpus):
    assert corpus.endswith("\n") and not corpus.endswith("\n\n")
    assert "\t" not in corpus and "\r" not in corpus
    assert "\n\n\n" not in corpus
    docs = corpus[:-1].split("\n\n")
    assert len(docs) > 100
    assert all(line.strip() == line and line for d in docs for line in d.split("\n"))
    assert len(corpus.encode("utf-8")) > 5_000_000


def test_no_task_text_in_corpus(suite, tables, corpus_sentences):
    min_words = suite["build"]["check"]["min_words"]
    report = {}
    for t in suite["tasks"]:
        texts = [x for split in splits_of(t) for r in tables[t["name"], split][1]
                 for x in (r[:2] if t.get("minimal_pairs") else r[:-1])]
        report[t["name"]] = contaminated(texts, corpus_sentences, min_words)[:3]
    assert not any(report.values()), report


def test_overlap_check_can_fail(suite, corpus, corpus_sentences):
    """The leak check detects a corpus sentence planted in a task text."""
    min_words = suite["build"]["check"]["min_words"]
    sent = next(s for l in corpus.split("\n") for s in _SENT_SPLIT.split(l) if len(norm(s).split()) >= 8)
    planted = "What a film. " + sent.upper()
    assert contaminated([planted], corpus_sentences, min_words) == [planted]
    assert contaminated(["zzqx wibble flarn snorp vlim"], corpus_sentences, min_words) == []


def test_attribution_names_every_source(SUITE, suite):
    text = (SUITE / "ATTRIBUTION.md").read_text(encoding="utf-8")
    for src in suite["build"]["sources"]:
        assert src["name"] in text, src["name"]
    for src in suite.get("corpus_sources", []):
        if not src["title"].startswith("Brown Corpus"):
            assert src["title"].split(";")[0] in text, src["title"]
    assert "Brown Corpus" in text


# --------------------------------------------------------------------------- minimal pairs (ebs-3)
def one_word_diff(good: str, bad: str) -> list[tuple[str, str]]:
    a, b = norm(good).split(), norm(bad).split()
    return [(x, y) for x, y in zip(a, b) if x != y] if len(a) == len(b) else [("<length>", "<length>")]


def frequency_only(rows, table) -> float:
    """A scorer that prefers the sentence whose differing word is more frequent in `table` (ties: the
    alphabetically first word): any fixed preference per word pair."""
    right = 0
    for good, bad, _p in rows:
        (a, b), = one_word_diff(good, bad)
        right += (table.get(a, 0), b) > (table.get(b, 0), a)
    return right / len(rows)


@pytest.fixture(scope="module")
def unigrams(corpus) -> Counter:
    return Counter(norm(corpus).split())


def test_minimal_pairs_differ_in_one_word_of_the_paradigm(suite, tables):
    for t in pair_tasks(suite):
        for good, bad, paradigm in tables[t["name"], "dev"][1]:
            diff = one_word_diff(good, bad)
            assert len(diff) == 1, (t["name"], good, bad)
            pair, side = paradigm.split(":")
            assert set(diff[0]) == set(pair.split("/")) and side, (t["name"], paradigm, diff)


def test_minimal_pairs_frequency_only_scorer_is_at_exactly_half(suite, tables, unigrams):
    """Every word pair is as often on the good side as on the bad, so the corpus's unigram frequencies (or
    the reverse preference) score exactly 50%; a set cut unevenly would not (the last assertion)."""
    for t in pair_tasks(suite):
        rows = tables[t["name"], "dev"][1]
        sides = Counter(one_word_diff(g, b)[0] for g, b, _p in rows)
        assert all(n == sides[(b, a)] for (a, b), n in sides.items()), t["name"]
        assert frequency_only(rows, unigrams) == 0.5, t["name"]
        assert frequency_only(rows, {w: -n for w, n in unigrams.items()}) == 0.5, t["name"]
        first = rows[0][2]
        lopsided = [r for r in rows if r[2] != first] + [r for r in rows if r[2] == first][:1]
        assert frequency_only(lopsided, unigrams) != 0.5, t["name"]
