"""Writing ebs-3 (scripts/build_suite.py --suite ebs-3): fetch its added sources, derive its added tasks, keep
every text out of the pre-training corpus and out of the other split, write suite.json with each task's kind.
What each task is: ebs3.py and docs/suite.md."""
from __future__ import annotations

import json
import shutil
import subprocess
from collections import Counter
from pathlib import Path

from . import ebs3
from .agreement import make_agreement
from .brown import make_next_sentence_same_doc
from .corpus import CHECK_MIN_WORDS, NGRAM, ngram_hits
from .ebs2 import ATTRIBUTION as EBS2_ATTRIBUTION, TASK_META as EBS2_META
from .minimal_pairs import FAMILIES as PAIR_TASKS, make_minimal_pairs
from .paraphrase import SOURCES as BIBLE_SOURCES, make_paraphrase, read_bibles
from .sources import SOURCES as EBS2_SOURCES, fetch
from .text import SENT_SPLIT, clean, norm, rng_for
from .wic import SOURCE as WORDNET_SOURCE, make_wic, read_wordnet
from .writing import balance, read_tsv, write_gz, write_tsv

DEV_CAP = 2000  # dev rows kept per task at most (balanced): the probe's standard error, not the build, limits
KEPT = ("rt-polarity", "tweet-sentiment", "vader-rating", "word-scramble")  # ebs-2's splits, row for row


def build_ebs3(out: Path, workdir: Path, shared, ebs2_splits, seed: int, allow_mismatch: bool,
               candidates: bool) -> None:
    """ebs-3 into `out`, from what ebs-2's build read (`shared`: build.Shared) and its splits."""
    derived = derive_tasks(fetch_sources(workdir, allow_mismatch), shared, seed)
    splits = {name: (d.train, d.dev) for name, d in derived.items()}
    splits["next-sentence"] = tuple(
        make_next_sentence_same_doc(shared.brown, shared.roles, f"ns-{r}", rng_for(seed, f"ebs3-next-sentence:{r}"))
        for r in ("train", "dev"))
    for name in KEPT:
        splits[name] = ebs2_splits[name]
    removed = check_splits(splits, shared.index, shared.documents)
    pairs = make_minimal_pairs(shared.brown, shared.roles, seed=seed,
                               check=_pair_check(shared.index, shared.documents))
    for name in PAIR_TASKS:
        print(f"[ebs-3] {name}: dev {len(pairs.tasks[name])} pairs, removed "
              f"{pairs.stats[name]['removed_by_checks'] or 'nothing'}")
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    names = list(ebs3.KINDS) if candidates else list(ebs3.ADMITTED)
    tasks = [_write_task(out, name, splits[name], removed[name], derived.get(name)) for name in names]
    tasks += [_write_pairs_task(out, name, pairs.tasks[name], pairs.stats[name]) for name in PAIR_TASKS]
    _write_suite(out, tasks, seed, candidates)
    _verify(out, shared.documents)


def fetch_sources(workdir: Path, allow_mismatch: bool) -> dict[str, Path]:
    """ebs-3's added sources (the Bibles' wheels, WordNet's .deb, which is extracted into the workdir)."""
    paths = fetch(workdir, allow_mismatch, {**BIBLE_SOURCES, "wordnet": WORDNET_SOURCE})
    extra = workdir / "extracted-ebs3"
    if extra.exists():
        shutil.rmtree(extra)
    extra.mkdir(parents=True)
    subprocess.run(["dpkg-deb", "-x", str(paths["wordnet"]), str(extra / "wordnet")], check=True)
    return {**paths, "wordnet-root": extra / "wordnet"}


def derive_tasks(paths: dict[str, Path], shared, seed: int) -> dict:
    return {
        "agreement": make_agreement(shared.brown, shared.roles, seed=seed),
        "bible-paraphrase": make_paraphrase(read_bibles([paths[k] for k in BIBLE_SOURCES]), seed=seed),
        "wordnet-wic": make_wic(read_wordnet(paths["wordnet-root"]), seed=seed, reuse_in_target=True),
    }


def check_splits(splits: dict, index, documents) -> dict[str, Counter]:
    """Each task's rows cleaned (_clean), then rows sharing a word 13-gram with the corpus dropped, in place;
    what each check removed, per task."""
    removed: dict[str, Counter] = {}
    for name, (train, dev) in list(splits.items()):
        splits[name], removed[name] = _clean(name, train, dev, index)
        print(f"[ebs-3] {name}: train {len(splits[name][0])}, dev {len(splits[name][1])}, "
              f"removed {dict(removed[name]) or 'nothing'}")
    _drop_ngram_hits(splits, removed, documents)
    return removed


def _write_task(out: Path, name: str, split: tuple, removed: Counter, derived) -> dict:
    """One task's {train,dev}.tsv.gz; its suite.json entry."""
    meta = ebs3.NEW_META.get(name) or EBS2_META[name]
    train, dev = split
    (out / name).mkdir()
    write_tsv(out / name / "train.tsv.gz", meta["text_fields"], train)
    write_tsv(out / name / "dev.tsv.gz", meta["text_fields"], dev)
    entry = {"name": name, "kind": ebs3.KINDS[name], "text_fields": meta["text_fields"], "labels": meta["labels"],
             "regression": meta["regression"], "metrics": meta["metrics"], "primary": meta["primary"],
             "description": meta["description"], "source": meta["source"], "license": meta["license"],
             "derived": meta["derived"], "sizes": {"train": len(train), "dev": len(dev)},
             "label_balance": {"train": balance(train, meta["regression"]),
                               "dev": balance(dev, meta["regression"])},
             "removed_by_checks": dict(removed)}
    if derived is not None:
        entry["derivation_stats"] = _jsonable(derived.stats)
    return entry


def _write_pairs_task(out: Path, name: str, rows, stats: dict) -> dict:
    """A minimal-pairs task: dev only, (good, bad, paradigm), read zero-shot; its suite.json entry."""
    (out / name).mkdir()
    _write_pairs(out / name / "dev.tsv.gz", rows)
    return {"name": name, "kind": "acceptability", "text_fields": ebs3.PAIR_FIELDS, "labels": None,
            "regression": False, "metrics": ["accuracy"], "primary": "accuracy", "minimal_pairs": True,
            "description": ebs3.PAIR_META[name], "source": ebs3.BROWN, "license": ebs3.BROWN_LICENSE,
            "derived": True, "sizes": {"dev": len(rows)},
            "removed_by_checks": stats["removed_by_checks"], "derivation_stats": _jsonable(stats)}


def _write_suite(out: Path, tasks: list, seed: int, candidates: bool) -> None:
    """suite.json (the tasks, the build's check and every source's pin) and ATTRIBUTION.md."""
    sources = {**EBS2_SOURCES, **BIBLE_SOURCES, "wordnet": WORDNET_SOURCE}
    suite = {
        "name": ebs3.SUITE_NAME, "version": ebs3.SUITE_VERSION, "title": ebs3.SUITE_TITLE, "corpus": ebs3.CORPUS,
        "candidates": candidates, "tasks": tasks,
        "build": {"script": "scripts/build_suite.py", "seed": seed,
                  "check": {"normalisation": "lowercase, ASCII [a-z0-9]+ words joined by one space",
                            "sentence_split": SENT_SPLIT.pattern, "min_words": CHECK_MIN_WORDS,
                            "ngram": NGRAM},
                  "command": "python scripts/build_suite.py --suite ebs-3 --workdir DIR"
                             + (" --candidates" if candidates else ""),
                  "sources": [{"key": k, "registry": kind, "name": n, "version": ver, "file": f, "sha256": d}
                              for k, (kind, n, ver, f, d) in sources.items()]},
    }
    (out / "suite.json").write_text(json.dumps(suite, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    attribution = (EBS2_ATTRIBUTION.replace("ebs-2 (electra-bench suite v2)", "ebs-3 (electra-bench suite v3)")
                   .replace("## Downstream tasks", "## ebs-2's tasks") + ebs3.ATTRIBUTION_EXTRA)
    (out / "ATTRIBUTION.md").write_text(attribution, encoding="utf-8")


def _clean(name, train, dev, index):
    """Drop a row with a text in the pre-training corpus, a dev row sharing a text with train, a duplicate row;
    cap dev at DEV_CAP keeping the label balance; counts of each."""
    removed = Counter()
    train_texts = set()
    kept_train = []
    seen = set()
    for row in train:
        keys = tuple(norm(t) for t in row[:-1])
        if keys in seen:
            removed["duplicate"] += 1
            continue
        if any(index.sentence_hits(t) for t in row[:-1]):
            removed["in-corpus"] += 1
            continue
        seen.add(keys)
        train_texts.update(keys)
        kept_train.append(row)
    kept_dev = []
    for row in dev:
        keys = tuple(norm(t) for t in row[:-1])
        if keys in seen:
            removed["duplicate"] += 1
            continue
        if any(k in train_texts for k in keys):
            removed["text-in-train"] += 1
            continue
        if any(index.sentence_hits(t) for t in row[:-1]):
            removed["in-corpus"] += 1
            continue
        seen.add(keys)
        kept_dev.append(row)
    if len(kept_dev) > DEV_CAP and name != "vader-rating":
        by = {}
        for row in kept_dev:
            by.setdefault(row[-1], []).append(row)
        per = DEV_CAP // len(by)
        allowed = {id(r) for rows in by.values() for r in rows[:per]}
        removed["dev-cap"] += len(kept_dev) - len(allowed)
        kept_dev = [r for r in kept_dev if id(r) in allowed]
    return (kept_train, kept_dev), removed


def _drop_ngram_hits(splits, removed, documents) -> None:
    """A row any of whose texts shares a word 13-gram with the corpus goes (quotations: a Bible verse in a
    novel)."""
    texts, owner = {}, {}
    for name, (train, dev) in splits.items():
        flat = []
        for split, rows in (("train", train), ("dev", dev)):
            for i, row in enumerate(rows):
                for t in row[:-1]:
                    owner[(name, len(flat))] = (split, i)
                    flat.append(t)
        texts[name] = flat
    _, bad = ngram_hits(texts, documents)
    drop = {(name,) + owner[(name, i)] for name, i in bad}
    for name, (train, dev) in list(splits.items()):
        keep = ([r for i, r in enumerate(train) if (name, "train", i) not in drop],
                [r for i, r in enumerate(dev) if (name, "dev", i) not in drop])
        n = len(train) + len(dev) - len(keep[0]) - len(keep[1])
        if n:
            removed[name][f"{NGRAM}-gram-in-corpus"] += n
        splits[name] = keep


def _pair_check(index, documents):
    """The corpus checks for minimal pairs, before they are balanced: a pair goes when either sentence is a
    corpus sentence (normalised, 4+ words) or shares a word 13-gram with the corpus."""
    def check(pairs):
        _, bad = ngram_hits({"pairs": [t for p in pairs for t in p]}, documents)
        hit = {i // 2 for _name, i in bad}
        return ["in-corpus" if any(index.sentence_hits(t) for t in p) else
                f"{NGRAM}-gram-in-corpus" if n in hit else None for n, p in enumerate(pairs)]
    return check


def _write_pairs(path: Path, rows) -> None:
    lines = ["\t".join(ebs3.PAIR_FIELDS + ["paradigm"])]
    for r in rows:
        vals = [clean(x) for x in r]
        assert all(v and "\t" not in v for v in vals) and vals[0] != vals[1], r
        lines.append("\t".join(vals))
    write_gz(path, ("\n".join(lines) + "\n").encode("utf-8"))


def _jsonable(obj):
    if isinstance(obj, dict):
        return {str(k) if not isinstance(k, str) else k: _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, (int, float, str, bool)) or obj is None:
        return obj
    return str(obj)


def _verify(out: Path, documents) -> None:
    """Read back what was written: headers, sizes, labels balanced, no text in both splits or in the corpus
    (sentences and word 13-grams)."""
    suite = json.loads((out / "suite.json").read_text(encoding="utf-8"))
    problems = 0
    all_texts = {}
    for t in suite["tasks"]:
        if t.get("minimal_pairs"):
            header, rows = read_tsv(out / t["name"] / "dev.tsv.gz")
            assert header == t["text_fields"] + ["paradigm"], header
            assert len(rows) == t["sizes"]["dev"]
            sides, one_word = Counter(), 0
            for r in rows:
                a, b = norm(r[0]).split(), norm(r[1]).split()
                diff = [(x, y) for x, y in zip(a, b) if x != y] if len(a) == len(b) else []
                one_word += len(diff) == 1
                sides.update(diff[:1])
            unbalanced = sum(abs(n - sides[(b, a)]) for (a, b), n in sides.items()) // 2
            problems += (len(rows) - one_word) + unbalanced
            all_texts[t["name"]] = [x for r in rows for x in r[:2]]
            print(f"  {t['name']:17s} kind={t['kind']:16s} minimal pairs, dev={len(rows):5d} "
                  f"not-one-word={len(rows) - one_word} unbalanced={unbalanced}")
            continue
        keys, texts = {}, []
        for split in ("train", "dev"):
            header, rows = read_tsv(out / t["name"] / f"{split}.tsv.gz")
            assert header == t["text_fields"] + ["label"], header
            assert len(rows) == t["sizes"][split]
            keys[split] = {norm(x) for r in rows for x in r[:-1]}
            texts.extend(x for r in rows for x in r[:-1])
        shared = len(keys["train"] & keys["dev"])
        # next-sentence and paraphrase reuse no sentence across splits by construction; report any
        problems += shared
        all_texts[t["name"]] = texts
        print(f"  {t['name']:17s} kind={t['kind']:16s} train={t['sizes']['train']:6d} dev={t['sizes']['dev']:5d} "
              f"train/dev-shared-texts={shared} balance={t['label_balance']['dev']}")
    gram, _ = ngram_hits(all_texts, documents)
    for name, n in gram.items():
        print(f"  {name:17s} texts sharing a {NGRAM}-gram with the corpus: {n}")
        problems += n
    total = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    print(f"\n  total size of {out}: {total} bytes ({total / 1e6:.2f} MB)")
    if problems:
        raise SystemExit(f"ebs-3 overlap check FAILED: {problems} problems")
    print("  ebs-3 overlap check passed: 0 problems")
