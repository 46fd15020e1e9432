"""Splitting and writing the suites' tasks: a class-balanced train/dev split, gzip TSV files written with a
fixed mtime (so a rebuild is byte-identical) and read back, and the label balance suite.json records."""
from __future__ import annotations

import gzip
import statistics
from collections import Counter, defaultdict
from pathlib import Path

from .text import clean


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



def read_tsv(path: Path):
    lines = gzip.decompress(path.read_bytes()).decode("utf-8").rstrip("\n").split("\n")
    return lines[0].split("\t"), [l.split("\t") for l in lines[1:]]


