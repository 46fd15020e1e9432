"""ebs-3's next-sentence (electra_bench/data/suite_build/brown.py make_next_sentence_same_doc): negatives come from the
same held-out text, at least `gap` sentences later, so a topic shift cannot give them away; built from the
tagged Brown-format fixture the agreement test uses."""
from collections import Counter
from pathlib import Path

from electra_bench.data.suite_build.agreement import parse_brown_file
from electra_bench.data.suite_build.brown import detok, make_next_sentence_same_doc
from electra_bench.data.suite_build.text import rng_for

FIXTURE = Path(__file__).resolve().parent / "fixtures/suite_build/brown/package"


def build(role_of_all="ns-train", gap=3):
    docs = [parse_brown_file(p) for p in sorted(FIXTURE.glob("c[a-r][0-9][0-9]"))]
    roles = {d.doc_id: role_of_all for d in docs}
    return docs, make_next_sentence_same_doc(docs, roles, role_of_all, rng_for(1, "t"), gap=gap)


def test_pairs_are_balanced_and_from_one_text_with_the_gap():
    docs, rows = build()
    assert rows and Counter(r[2] for r in rows)["1"] == Counter(r[2] for r in rows)["0"]
    where = {}
    for d in docs:
        for i, words in enumerate(d.sents):
            where.setdefault(detok(words), []).append((d.doc_id, i))
    for a, b, label in rows:
        pairs = [(da, ia, db, ib) for da, ia in where[a] for db, ib in where[b] if da == db]
        assert pairs, (a, b)  # both sentences of one text
        if label == "1":
            assert any(ib == ia + 1 for _, ia, _, ib in pairs)
        else:
            assert any(ib >= ia + 3 for _, ia, _, ib in pairs)


def test_each_sentence_is_used_once_and_other_roles_are_left_alone():
    docs, rows = build()
    used = Counter(t for r in rows for t in r[:2])
    available = Counter(detok(w) for d in docs for w in d.sents)  # the template fixture repeats some sentences
    assert all(n <= available[t] for t, n in used.items())
    roles = {d.doc_id: "corpus" for d in docs}
    assert make_next_sentence_same_doc(docs, roles, "ns-train", rng_for(1, "t")) == []
