"""The one entry of the suites' build (scripts/build_suite.py parses its command line and calls `build`):
fetch and extract the sources, split the Brown texts into roles, build the pre-training corpus and its
index, make ebs-2's splits, then write ebs-2 (ebs2_build.py) or ebs-3 (ebs3_build.py), which starts from
them."""
from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import NamedTuple

from .brown import brown_roles, read_brown
from .corpus import CorpusIndex, build_corpus
from .ebs2_build import ebs2_splits, verify, write_ebs2
from .ebs3_build import build_ebs3
from .sources import extract, fetch


class Shared(NamedTuple):
    """What both suites' builds read: the extracted sources, the Brown texts and their roles, the corpus
    (documents, where each came from) and the index of its sentences."""

    root: Path
    brown: list
    roles: dict
    documents: list
    corpus_sources: list
    index: CorpusIndex


def prepare(workdir: Path, seed: int, allow_mismatch: bool) -> Shared:
    paths = fetch(workdir, allow_mismatch)
    root = extract(paths, workdir)
    brown = read_brown(root)
    roles = brown_roles(brown, seed)
    print("[brown] roles:", dict(sorted(Counter(roles.values()).items())))
    documents, corpus_sources = build_corpus(root, brown, roles, seed)
    index = CorpusIndex(documents)
    print(f"[corpus] {len(documents)} documents, {len(index.sents)} distinct normalised sentences")
    return Shared(root, brown, roles, documents, corpus_sources, index)


def build(suite: str, out: Path, workdir: Path, seed: int, allow_mismatch: bool = False,
          candidates: bool = False) -> None:
    """Build `suite` ("ebs-2" or "ebs-3") into `out` from the sources in `workdir` (downloaded if absent),
    then read back what was written; SystemExit when a source's sha256 or the overlap check fails.
    `candidates` (ebs-3): write every candidate task, not only the admitted ones."""
    shared = prepare(workdir, seed, allow_mismatch)
    splits = ebs2_splits(shared, seed)
    if suite == "ebs-3":
        build_ebs3(out, workdir, shared, splits, seed, allow_mismatch, candidates)
        return
    write_ebs2(out, shared, splits, seed)
    verify(out, shared.documents)
